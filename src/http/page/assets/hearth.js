// hearth's web page: posts a chat message in the background and reads the conversation
// again while hearth works on it, so replies show as they come. Every page works without
// this script; it only saves the wait for a whole page.
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

async function follow(id) {
  for (let round = 0; round < 600; round += 1) {
    await refreshLog();
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
