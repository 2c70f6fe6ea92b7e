// hearth's web page: posts a chat message (or a question's form) in the background, shows
// the reply's text as the model writes it (a preview: the log read afterwards holds the
// reply that counts) and reads the conversation again once it is answered or waits for
// the member. Every page works without this script; it only saves the wait for a whole page.
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

// Reads the server-sent events of a streamed answer: the preview grows with each `delta`,
// empties on `restart`; `done` says how the turn stands.
async function stream(response, preview) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let id = null;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let name = "message";
      let data = "";
      for (const line of block.split("\n")) {
        if (line.startsWith("event: ")) name = line.slice(7);
        else if (line.startsWith("data: ")) data += line.slice(6);
      }
      const event = data ? JSON.parse(data) : {};
      if (name === "accepted") id = event.id;
      else if (name === "restart") preview.textContent = "";
      else if (name === "delta") preview.textContent += event.text;
      else if (name === "done") return event;
    }
  }
  return { id, kind: "working" };
}

// Posts `body` to `action` asking for the streamed answer, and settles the page after it.
async function post(action, body, sent) {
  const log = document.getElementById("log");
  const preview = document.createElement("p");
  preview.className = "hearth streaming";
  preview.setAttribute("aria-busy", "true");
  preview.textContent = "";
  log.appendChild(preview);
  try {
    const response = await fetch(action, {
      method: "POST",
      body,
      credentials: "same-origin",
      headers: { Accept: "text/event-stream" },
    });
    if (!response.ok) {
      sent.textContent = "Not sent (" + response.status + "). Reload the page and try again.";
      preview.remove();
      return;
    }
    const done = await stream(response, preview);
    if ((done.kind === "working" || done.kind === "delayed") && done.id) {
      await follow(done.id);
    } else {
      await refreshLog();
    }
  } catch (error) {
    sent.textContent = "Not sent: hearth could not be reached. Try again.";
  }
}

function note(text) {
  const sent = document.createElement("p");
  sent.className = "sending";
  sent.textContent = text;
  document.getElementById("log").appendChild(sent);
  return sent;
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
    await post("/chat", body, note("Sent: " + text));
  });
  // A question's form is in the log, which is read again: listen where it lives.
  log.addEventListener("submit", async (event) => {
    const asked = event.target;
    if (!asked.classList || !asked.classList.contains("question-form")) return;
    event.preventDefault();
    const body = new URLSearchParams(new FormData(asked, event.submitter));
    asked.closest(".question").remove();
    await post("/chat/answer", body, note("Answer sent."));
  });
  form.elements.text.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      form.requestSubmit();
    }
  });
});
