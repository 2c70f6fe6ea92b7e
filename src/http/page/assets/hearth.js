// hearth's web page: posts a chat message in the background, follows it while hearth
// works on it and reads the conversation again once it is answered or waits for the
// member. Every page works without this script; it only saves the wait for a whole page.
"use strict";

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function refreshLog() {
  const response = await fetch("/chat/log", { credentials: "same-origin" });
  if (response.ok) {
    // The server renders and escapes the log; it is shown as it comes.
    document.getElementById("log").innerHTML = await response.text();
  }
}

// The log changes only when the message is answered or waits for the member (history is
// written with the answer), so only the message's status is asked for meanwhile.
async function follow(id) {
  for (let round = 0; round < 600; round += 1) {
    const response = await fetch("/chat/messages/" + encodeURIComponent(id), {
      credentials: "same-origin",
      headers: { Accept: "application/json" },
    });
    if (!response.ok) break;
    const status = await response.json();
    if (!status.working) break;
    await sleep(1000);
  }
  await refreshLog();
}

function newNonce() {
  const bytes = new Uint8Array(32);
  crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

document.addEventListener("DOMContentLoaded", () => {
  const form = document.getElementById("chat-form");
  if (!form) return;
  const log = document.getElementById("log");
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const text = form.elements.text.value;
    if (!text.trim()) return;
    const body = new URLSearchParams(new FormData(form));
    form.elements.text.value = "";
    form.elements.nonce.value = newNonce();
    const sent = document.createElement("p");
    sent.className = "sending";
    sent.textContent = "Sent: " + text;
    log.appendChild(sent);
    const waiting = document.createElement("p");
    waiting.className = "sending";
    waiting.textContent = "hearth is working on it…";
    log.appendChild(waiting);
    try {
      const response = await fetch("/chat", {
        method: "POST",
        body,
        credentials: "same-origin",
        headers: { Accept: "application/json" },
      });
      if (response.status !== 202) {
        sent.textContent = "Not sent (" + response.status + "). Reload the page and try again.";
        return;
      }
      const accepted = await response.json();
      if (accepted.kind === "question") {
        // The turn waits for the member's answer: their next message is it.
        await refreshLog();
        const question = document.createElement("p");
        question.className = "question";
        question.textContent = accepted.text;
        log.appendChild(question);
        form.elements.text.focus();
        return;
      }
      await follow(accepted.id);
    } catch (error) {
      sent.textContent = "Not sent: hearth could not be reached. Try again.";
    }
  });
  form.elements.text.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      form.requestSubmit();
    }
  });
});
