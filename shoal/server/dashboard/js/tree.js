// The virtual-cluster tree with a usage bar per cluster, drawn as `shoal vc tree` draws it
// (shoal/cli/vc_tree.py): the bar spans what the cluster could ever use (its ceiling, or the
// whole cluster); green is used within its guarantee, yellow borrowed beyond it, the hatched
// part guaranteed but unused. Admins can edit or delete a declared cluster.

import { api, enc } from "./api.js";
import { action, amount, h, replace, shown } from "./dom.js";

export async function treePage(view, ctx) {
  const [root, vcs] = await Promise.all([
    api("/api/v1/cluster", { signal: ctx.signal }),
    api("/api/v1/virtual-clusters", { signal: ctx.signal }),
  ]);
  const byName = new Map(vcs.map((vc) => [vc.name, vc]));
  const dim = amount(root.guaranteed, "gpu") > 0 ? "gpu" : "cpu";
  const capacity = amount(root.guaranteed, dim);
  const rows = [];
  const grow = (children, depth) => {
    for (const name of children) {
      const vc = byName.get(name);
      if (!vc || !vc.status) continue;
      rows.push(row(vc.status, vc, dim, capacity, depth, ctx, view));
      for (const virtual of vc.status.virtualNodes || []) rows.push(virtualRow(virtual, dim, depth + 1));
      grow(vc.status.children, depth + 1);
    }
  };
  rows.push(row(root, null, dim, capacity, 0, ctx, view));
  grow(root.children, 1);
  replace(view, h("h1", {}, "Virtual clusters"),
    h("p", { class: "muted" }, `Bars in ${dim === "gpu" ? "GPUs" : "CPUs"}: green used within the `
      + "guarantee, yellow borrowed beyond it, hatched guaranteed but idle."),
    h("div", { class: "card", id: "vc-tree" }, rows),
    h("div", { id: "vc-editor" }));
}

function bar(used, guaranteed, scale) {
  const width = (x) => `${Math.min(100, (100 * x) / scale)}%`;
  const within = Math.min(used, guaranteed);
  const borrowed = Math.max(0, used - guaranteed);
  const owed = Math.max(0, guaranteed - used);
  return h("span", { class: "bar", title: `${used} used of ${scale}` },
    h("span", { class: "used", style: `width:${width(within)}` }),
    h("span", { class: "borrowed", style: `width:${width(borrowed)}` }),
    h("span", { class: "owed", style: `width:${width(owed)}` }));
}

function row(status, vc, dim, capacity, depth, ctx, view) {
  const isRoot = vc === null;
  const used = amount(status.used, dim);
  const guaranteed = amount(status.guaranteed, dim);
  const ceiling = status.ceiling ? status.ceiling[dim] : undefined;
  const scale = Math.max(1, ceiling === undefined ? capacity : Math.min(ceiling, capacity) || 1);
  const unit = dim === "gpu" ? "GPUs" : "CPUs";
  const words = isRoot
    ? `${shown(used, dim)}/${shown(capacity, dim)} ${unit} used`
    : `${shown(used, dim)} ${unit} used, ${shown(guaranteed, dim)} guaranteed, max `
      + `${ceiling === undefined ? "-" : shown(ceiling, dim)}`;
  const borrowed = amount(status.borrowed, dim);
  return h("div", { class: "tree-row", "data-vc": status.name, style: `padding-left:${depth * 1.6}em` },
    h("span", { class: "name" }, status.name),
    bar(used, isRoot ? scale : guaranteed, scale),
    h("span", { class: "usage" }, words),
    borrowed ? h("span", { class: "borrowed-text", style: "color:#a77800" }, `${shown(borrowed, dim)} borrowed`) : null,
    h("span", { class: "muted" }, `${shown(amount(status.available, dim), dim)} available; jobs `
      + `${status.runningJobs} running, ${status.pendingJobs} waiting`),
    vc && vc.state === "Closed" ? h("span", { class: "bad" }, "closed") : null,
    status.reservation && status.reservation !== "reserved"
      ? h("span", { class: "bad" }, `waiting for its fixed-size nodes: ${status.reservation}`) : null,
    ctx.me.admin && vc && !vc.name.startsWith("job:") && vc.name !== "default"
      ? adminActions(vc, ctx, view) : null);
}

function virtualRow(virtual, dim, depth) {
  const size = amount(virtual.total, dim);
  const used = amount(virtual.used, dim);
  return h("div", { class: "tree-row muted", style: `padding-left:${depth * 1.6}em` },
    h("span", { class: "name" }, virtual.name), bar(used, size, Math.max(1, size)),
    `${shown(used, dim)}/${shown(size, dim)} used, virtual node on ${virtual.node}`);
}

/** The document a PUT replaces the cluster with: its spec as the API shows it. */
function document_(vc) {
  const spec = { ...vc };
  for (const key of ["name", "guaranteed", "status"]) delete spec[key];
  return { apiVersion: "shoal/v1", kind: "VirtualCluster", metadata: { name: vc.name }, spec };
}

function adminActions(vc, ctx, view) {
  const redraw = () => treePage(view, ctx);
  return h("span", { class: "actions", "data-admin": "" },
    action("Edit", async () => {
      const text = h("textarea", { rows: 16, id: "vc-document" }, JSON.stringify(document_(vc), null, 2));
      replace(document.getElementById("vc-editor"), h("div", { class: "card" },
        h("h2", {}, `Replace virtual cluster ${vc.name}`), text,
        h("div", { class: "actions" },
          action("Save", async () => {
            await api(`/api/v1/virtual-clusters/${enc(vc.name)}`,
              { method: "PUT", json: JSON.parse(text.value) });
            await redraw();
          }),
          action("Cancel", async () => replace(document.getElementById("vc-editor"))))));
    }),
    action("Delete", async () => {
      if (!window.confirm(`Delete virtual cluster ${vc.name}?`)) return;
      await api(`/api/v1/virtual-clusters/${enc(vc.name)}`, { method: "DELETE" });
      await redraw();
    }, { class: "danger" }),
    action("Drain and delete", async () => {
      if (!window.confirm(`Close ${vc.name} now and delete it once its last job has ended?`)) return;
      await api(`/api/v1/virtual-clusters/${enc(vc.name)}?drain=true`, { method: "DELETE" });
      await redraw();
    }, { class: "danger" }));
}
