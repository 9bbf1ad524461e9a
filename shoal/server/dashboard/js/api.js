// The JSON API, asked with the token the user logged in with. The token lives in
// sessionStorage (gone when the tab closes) and goes in every request's Authorization
// header: the dashboard sees exactly what the API lets that token see.

const KEY = "shoal.token";

export const token = {
  get: () => sessionStorage.getItem(KEY),
  set: (value) => sessionStorage.setItem(KEY, value),
  clear: () => sessionStorage.removeItem(KEY),
};

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

function headers(extra = {}) {
  return { Authorization: `Bearer ${token.get() || ""}`, ...extra };
}

async function failure(answer) {
  let message = `${answer.status} ${answer.statusText}`;
  try {
    const body = await answer.json();
    message = body.errors.map((e) => (e.path ? `${e.message} (${e.path})` : e.message)).join("; ");
  } catch {
    // not a JSON API error: keep the status line
  }
  if (answer.status === 401) window.dispatchEvent(new CustomEvent("shoal-unauthorized"));
  return new ApiError(answer.status, message);
}

/** One request; the answer's JSON (or text), null for 204. `json`: a body sent as JSON. */
export async function api(path, { method = "GET", json, signal } = {}) {
  const init = { method, headers: headers(), signal };
  if (json !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(json);
  }
  const answer = await fetch(path, init);
  if (!answer.ok) throw await failure(answer);
  if (answer.status === 204) return null;
  const type = answer.headers.get("Content-Type") || "";
  return type.includes("json") ? answer.json() : answer.text();
}

/** Opens a streamed answer (a followed log, a watch); the Response, or throws ApiError. */
export async function open(path, signal) {
  const answer = await fetch(path, { headers: headers(), signal });
  if (!answer.ok) throw await failure(answer);
  return answer;
}

/** Feeds the text of a streamed answer to `onText` as it arrives, until it ends. */
export async function readText(answer, onText) {
  const reader = answer.body.pipeThrough(new TextDecoderStream()).getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    onText(value);
  }
}

/** Server-sent events of a streamed answer: onEvent(type, data) for each; comments skipped. */
export async function readEvents(answer, onEvent) {
  let buffer = "";
  await readText(answer, (text) => {
    buffer += text.replace(/\r\n/g, "\n");
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let type = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "event") type = value;
        else if (field === "data") data.push(value);
      }
      if (data.length) onEvent(type, data.join("\n"));
    }
  });
}

export const enc = encodeURIComponent;
