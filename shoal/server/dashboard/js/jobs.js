// The jobs list, filtered by state, queue and user, with why each waits. It follows the
// watch stream (GET /api/v1/jobs?watch=true, server-sent events read with fetch, since an
// EventSource cannot send the Authorization header) and polls where the server has none.

import { api, enc, open, readEvents } from "./api.js";
import { h, replace, stateBadge, when } from "./dom.js";

const STATES = ["", "Pending", "Running", "Succeeded", "Failed", "Cancelled"];
const PAGE = 200;
const POLL_MS = 2000;

export async function jobsPage(view, ctx) {
  const filters = {};
  for (const key of ["state", "queue", "user"]) {
    const value = ctx.params.get(key);
    if (value) filters[key] = value;
  }
  const query = new URLSearchParams({ ...filters, limit: String(PAGE) });
  const body = h("tbody", { id: "jobs-body" });
  const status = h("span", { class: "muted", id: "jobs-live" });
  replace(view, h("h1", {}, "Jobs"), filterForm(filters), status,
    h("table", { id: "jobs" },
      h("thead", {}, h("tr", {}, ["Name", "User", "Queue", "Priority", "State", "Tasks",
        "Why it waits", "Updated"].map((x) => h("th", {}, x)))),
      body));
  const jobs = new Map();
  const draw = () => replace(body, [...jobs.values()].map(jobRow));
  const watched = new URLSearchParams({ watch: "true", ...filters });
  if (await watch(`/api/v1/jobs?${watched}`, jobs, draw, status, ctx.signal)) return;
  status.textContent = "refreshed every 2 s";
  while (!ctx.signal.aborted) {
    const page = await api(`/api/v1/jobs?${query}`, { signal: ctx.signal });
    jobs.clear();
    for (const job of page.items) jobs.set(job.metadata.name, job);
    draw();
    await sleep(POLL_MS);
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Follows the watch stream into `jobs`, reconnecting when it ends, until the page is left
 * (true); false at once where the server has no watch (it answers the list as JSON). */
async function watch(url, jobs, draw, status, signal) {
  let pending = false;
  const changed = (type, data) => {
    const job = JSON.parse(data);
    if (type === "DELETED") jobs.delete(job.metadata.name);
    else jobs.set(job.metadata.name, job);
    if (!pending) {
      pending = true;
      requestAnimationFrame(() => { pending = false; draw(); });
    }
  };
  for (;;) {
    let answer;
    try {
      answer = await open(url, signal);
    } catch (err) {
      if (signal.aborted) return true;
      if (!err.status) throw err;
      return false;
    }
    if (!(answer.headers.get("Content-Type") || "").startsWith("text/event-stream")) {
      await answer.body.cancel();
      return false;
    }
    status.textContent = "live";
    jobs.clear(); // a new stream starts with every job that matches now
    try {
      await readEvents(answer, changed);
    } catch (err) {
      if (signal.aborted) return true;
    }
    if (signal.aborted) return true;
    status.textContent = "reconnecting…";
    await sleep(POLL_MS);
  }
}

function filterForm(filters) {
  const state = h("select", { name: "state" },
    STATES.map((x) => h("option", { value: x, selected: x === (filters.state || "") }, x || "any")));
  const queue = h("input", { name: "queue", value: filters.queue || "", size: 12 });
  const user = h("input", { name: "user", value: filters.user || "", size: 12 });
  const form = h("form", { class: "filters", id: "job-filters" },
    h("label", {}, "State", state), h("label", {}, "Queue", queue), h("label", {}, "User", user),
    h("button", { type: "submit" }, "Filter"));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const chosen = new URLSearchParams();
    for (const [key, input] of [["state", state], ["queue", queue], ["user", user]]) {
      if (input.value.trim()) chosen.set(key, input.value.trim());
    }
    location.hash = `#/jobs?${chosen}`;
  });
  return form;
}

function counts(taskCounts) {
  return Object.entries(taskCounts || {}).map(([k, v]) => `${v} ${k.toLowerCase()}`).join(", ");
}

function jobRow(job) {
  const reason = job.status.pendingReason;
  return h("tr", { "data-job": job.metadata.name },
    h("td", {}, h("a", { href: `#/job/${enc(job.metadata.name)}` }, job.metadata.name)),
    h("td", {}, job.metadata.user || ""), h("td", {}, job.spec.queue),
    h("td", {}, job.spec.priorityClassName || ""),
    h("td", {}, stateBadge(job.status.state), job.status.deleting ? " (deleting)" : ""),
    h("td", {}, counts(job.status.taskCounts)),
    h("td", { class: "reason" }, reason ? `${reason.kind}: ${reason.message}` : ""),
    h("td", { class: "muted" }, when(job.status.updateTime)));
}
