// The usage report (GET /api/v1/usage?step=day): GPU-, CPU-hours and the GPU-hours wasted
// by preemption and failures per queue, user, GPU type or node, with inline SVG plots: a
// bar per row and a line per row over the days.

import { api } from "./api.js";
import { h, replace, s, table } from "./dom.js";

const DAY = 86400000;
const COLORS = ["#2a7ab0", "#3c9d4e", "#e0a800", "#c0392b", "#8e44ad", "#16a085"];

/** Hours, to about two significant digits: a test's seconds and a year's thousands alike. */
function hours(seconds) {
  const value = seconds / 3600;
  if (value >= 100) return value.toFixed(0);
  return value >= 1 ? value.toFixed(1) : value.toPrecision(2);
}

export async function usagePage(view, ctx) {
  const until = ctx.params.get("until") || new Date(Date.now() + DAY).toISOString().slice(0, 10);
  const since = ctx.params.get("since")
    || new Date(Date.parse(until) - 7 * DAY).toISOString().slice(0, 10);
  const by = ctx.params.get("by") || "queue";
  const query = new URLSearchParams({ by, since: `${since}T00:00:00Z`, until: `${until}T00:00:00Z`, step: "day" });
  let report;
  try {
    report = await api(`/api/v1/usage?${query}`, { signal: ctx.signal });
  } catch (err) {
    if (err.status !== 404) throw err;
    replace(view, h("h1", {}, "Usage"), h("p", { class: "muted" }, "This server keeps no usage report."));
    return;
  }
  const rows = report.rows;
  replace(view, h("h1", {}, "Usage"), form(by, since, until),
    rows.length ? [
      h("h2", {}, "GPU-hours"), bars(rows),
      h("h2", {}, "GPU-hours per day"), lines(rows.slice(0, COLORS.length), report),
    ] : h("p", { class: "muted" }, "Nothing ran in this span."),
    h("h2", {}, "Report"),
    table(["Key", "Tasks", "GPU-hours", "CPU-hours", "Wasted GPU-hours (preempted)",
      "Wasted GPU-hours (failed)"].map((x, i) => h("th", { class: i ? "num" : "" }, x)),
    [...rows, report.total].map((r) => h("tr", { "data-key": r.key },
      h("td", {}, r.key), h("td", { class: "num" }, r.tasks),
      h("td", { class: "num" }, hours(r.gpuSeconds)), h("td", { class: "num" }, hours(r.cpuSeconds)),
      h("td", { class: "num" }, hours(r.wastedGpuSeconds.preempted || 0)),
      h("td", { class: "num" }, hours(r.wastedGpuSeconds.failed || 0)))), { id: "usage" }));
}

function form(by, since, until) {
  const choose = h("select", { name: "by" }, ["queue", "user", "gpu-type", "node", "job"]
    .map((x) => h("option", { value: x, selected: x === by }, x)));
  const from = h("input", { type: "date", name: "since", value: since });
  const to = h("input", { type: "date", name: "until", value: until });
  const el = h("form", { class: "filters" }, h("label", {}, "By", choose),
    h("label", {}, "Since", from), h("label", {}, "Until", to), h("button", { type: "submit" }, "Show"));
  el.addEventListener("submit", (event) => {
    event.preventDefault();
    location.hash = `#/usage?${new URLSearchParams({ by: choose.value, since: from.value, until: to.value })}`;
  });
  return el;
}

function bars(rows) {
  const width = 640;
  const left = 140;
  const high = Math.max(1, ...rows.map((r) => r.gpuSeconds));
  const chart = s("svg", { class: "chart", id: "usage-bars", width, height: rows.length * 22 + 10,
                           viewBox: `0 0 ${width} ${rows.length * 22 + 10}` });
  rows.forEach((r, i) => {
    const y = 5 + i * 22;
    const w = ((width - left - 80) * r.gpuSeconds) / high;
    chart.append(s("text", { x: 6, y: y + 13 }, r.key),
      s("rect", { x: left, y, width: Math.max(1, w), height: 16, fill: COLORS[0] }),
      s("text", { x: left + w + 6, y: y + 13 }, hours(r.gpuSeconds)));
  });
  return chart;
}

/** The days of the report's span (at most 400), each row's GPU-hours on each: a line. */
function lines(rows, report) {
  const width = 640;
  const height = 200;
  const pad = 30;
  const days = [];
  for (let t = Date.parse(report.since); t < Date.parse(report.until) && days.length < 400; t += DAY) {
    days.push(new Date(t).toISOString().slice(0, 10));
  }
  const chart = s("svg", { class: "chart", id: "usage-lines", width, height, viewBox: `0 0 ${width} ${height}` });
  if (!days.length) return chart;
  const perDay = rows.map((r) => {
    const got = new Map((r.series || []).map((p) => [p.start.slice(0, 10), p.gpuSeconds]));
    return days.map((day) => got.get(day) || 0);
  });
  const high = Math.max(1e-9, ...perDay.flat());
  const x = (i) => pad + ((width - 2 * pad) * i) / Math.max(1, days.length - 1);
  const y = (value) => height - pad - ((height - 2 * pad) * value) / high;
  chart.append(s("line", { x1: pad, y1: height - pad, x2: width - pad, y2: height - pad, stroke: "#999" }),
    s("text", { x: 2, y: pad - 8 }, `${hours(high)} GPU-h`),
    s("text", { x: pad, y: height - 8 }, days[0]),
    s("text", { x: width - pad - 60, y: height - 8 }, days[days.length - 1]));
  perDay.forEach((values, i) => {
    const points = values.map((v, d) => `${x(d)},${y(v)}`).join(" ");
    chart.append(s("polyline", { points, fill: "none", stroke: COLORS[i], "stroke-width": 2 }),
      ...values.map((v, d) => s("circle", { cx: x(d), cy: y(v), r: 3, fill: COLORS[i] })),
      s("text", { x: width - 120, y: 14 + i * 14, fill: COLORS[i] }, rows[i].key));
  });
  return chart;
}
