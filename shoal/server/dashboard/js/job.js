// One job: its status and why it waits, its tasks, its events, and a task's log, followed
// while the task runs (`logs?follow=true`, streamed with fetch). Admins can set its
// priority class; its owner (or an admin) can cancel it.

import { api, enc, open, readText } from "./api.js";
import { action, h, replace, stateBadge, table, when } from "./dom.js";

const REFRESH_MS = 2000;
const LOG_CHARS = 200000;

export async function jobPage(view, ctx) {
  const name = ctx.arg;
  const summary = h("div", { id: "job-summary" });
  const tasks = h("div", { id: "job-tasks" });
  const events = h("div", { id: "job-events" });
  const logs = h("div", { id: "job-logs" });
  replace(view, h("h1", {}, "Job ", h("span", { id: "job-name" }, name)),
    summary, h("h2", {}, "Tasks"), tasks, h("h2", {}, "Log"), logs, h("h2", {}, "Events"), events);
  let logsShown = false;
  for (;;) {
    const path = `/api/v1/jobs/${enc(name)}`;
    const [job, taskPage, eventPage] = await Promise.all([
      api(path, { signal: ctx.signal }),
      api(`${path}/tasks?limit=500`, { signal: ctx.signal }),
      api(`${path}/events?limit=500`, { signal: ctx.signal }),
    ]);
    replace(summary, summaryCard(job, ctx, () => jobPage(view, ctx)));
    replace(tasks, table(["Task", "State", "Node", "GPUs", "Started", "Exit code", "Retries"],
      taskPage.items.map((t) => h("tr", { "data-task": t.name },
        h("td", {}, t.name), h("td", {}, stateBadge(t.state)), h("td", {}, t.node || ""),
        h("td", {}, t.gpus.join(", ")), h("td", {}, when(t.startTime)),
        h("td", {}, t.exitCode ?? ""), h("td", { class: "num" }, t.retries)))));
    replace(events, table(["Time", "Event", "Task", "Cause"],
      eventPage.items.map((e) => h("tr", {},
        h("td", { class: "muted" }, when(e.time)), h("td", {}, e.kind,
          e.source || e.target ? ` ${e.source || ""} → ${e.target || ""}` : ""),
        h("td", {}, e.task || ""), h("td", {}, e.cause)))));
    if (!logsShown) {
      logsShown = true;
      replace(logs, logView(name, taskPage.items.map((t) => t.name), ctx));
    }
    const ended = ["Succeeded", "Failed", "Cancelled"].includes(job.status.state);
    if (ended || ctx.signal.aborted) return;
    await new Promise((resolve) => setTimeout(resolve, REFRESH_MS));
    if (ctx.signal.aborted) return;
  }
}

function summaryCard(job, ctx, redraw) {
  const reason = job.status.pendingReason;
  const name = job.metadata.name;
  return h("div", { class: "card" },
    h("div", { class: "actions" }, stateBadge(job.status.state),
      h("span", {}, `user ${job.metadata.user || "-"} · queue ${job.spec.queue} · priority `
        + `${job.spec.priorityClassName || "default"} · submitted ${when(job.metadata.creationTimestamp)}`)),
    reason ? h("p", { class: "reason" }, `Why it waits: ${reason.kind}: ${reason.message}`) : null,
    h("div", { class: "actions" },
      ["Succeeded", "Failed", "Cancelled"].includes(job.status.state) ? null
        : action("Cancel", async () => {
          if (!window.confirm(`Cancel job ${name}?`)) return;
          await api(`/api/v1/jobs/${enc(name)}/cancel`, { method: "POST" });
          await redraw();
        }, { class: "danger" }),
      ctx.me.admin ? priorityControl(job, redraw) : null));
}

function priorityControl(job, redraw) {
  const select = h("select", { id: "priority-class" },
    h("option", { value: "", disabled: true, selected: !job.spec.priorityClassName }, "priority class…"));
  api("/api/v1/priority-classes").then((classes) => {
    for (const pc of classes) {
      select.append(h("option", { value: pc.name, selected: pc.name === job.spec.priorityClassName },
        `${pc.name} (${pc.value})`));
    }
  }).catch(() => {});
  return h("span", { class: "actions", "data-admin": "" }, select,
    action("Set priority", async () => {
      await api(`/api/v1/jobs/${enc(job.metadata.name)}/priority`,
        { method: "POST", json: { priorityClass: select.value } });
      await redraw();
    }));
}

function logView(job, taskNames, ctx) {
  const pre = h("pre", { class: "log", id: "log" });
  const note = h("span", { class: "muted", id: "log-state" });
  const chooser = h("select", { id: "log-task" }, taskNames.map((t) => h("option", { value: t }, t)));
  const stream = h("select", { id: "log-stream" }, ["stdout", "stderr"].map((x) => h("option", { value: x }, x)));
  let reading = null;
  const show = async () => {
    if (reading) reading.abort();
    reading = new AbortController();
    ctx.signal.addEventListener("abort", () => reading.abort(), { once: true });
    pre.textContent = "";
    note.textContent = "following…";
    const url = `/api/v1/jobs/${enc(job)}/logs?task=${enc(chooser.value)}&stream=${stream.value}&follow=true`;
    try {
      const answer = await open(url, reading.signal);
      await readText(answer, (text) => {
        const atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
        pre.textContent = (pre.textContent + text).slice(-LOG_CHARS);
        if (atEnd) pre.scrollTop = pre.scrollHeight;
      });
      note.textContent = "the task has ended";
    } catch (err) {
      if (err.name !== "AbortError") note.textContent = `no log: ${err.message}`;
    }
  };
  chooser.addEventListener("change", show);
  stream.addEventListener("change", show);
  if (taskNames.length) show();
  return h("div", {}, h("div", { class: "actions" }, chooser, stream, note), pre);
}
