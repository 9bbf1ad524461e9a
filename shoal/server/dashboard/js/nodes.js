// Nodes with their GPUs and what holds each (GET /api/v1/placements: the tasks bound to a
// node now). Admins can cordon, uncordon and drain a node.

import { api, enc } from "./api.js";
import { action, amount, h, quantities, replace, stateBadge } from "./dom.js";

export async function nodesPage(view, ctx) {
  const [nodes, placed] = await Promise.all([
    api("/api/v1/nodes", { signal: ctx.signal }),
    api("/api/v1/placements", { signal: ctx.signal }),
  ]);
  const onNode = new Map();
  for (const p of placed) {
    if (!onNode.has(p.node)) onNode.set(p.node, []);
    onNode.get(p.node).push(p);
  }
  replace(view, h("h1", {}, "Nodes"),
    nodes.length ? nodes.map((n) => card(n, onNode.get(n.name) || [], ctx, view))
      : h("p", { class: "muted" }, "No nodes."));
}

function card(node, tasks, ctx, view) {
  const holders = new Map();
  for (const t of tasks) for (const gpu of t.gpus) holders.set(gpu, t);
  const gpus = [];
  for (let i = 0; i < amount(node.capacity, "gpu"); i += 1) {
    const t = holders.get(i);
    gpus.push(h("div", { class: t ? "gpu held" : "gpu", "data-gpu": i },
      h("strong", {}, `GPU ${i}`), " ",
      t ? h("a", { href: `#/job/${enc(t.job)}` }, `${t.job}/${t.task}`) : h("span", { class: "muted" }, "free"),
      t ? h("span", { class: "muted" }, ` ${t.user || ""} · ${t.queue}`) : null));
  }
  const cpuOnly = tasks.filter((t) => t.gpus.length === 0);
  return h("div", { class: "card node", "data-node": node.name },
    h("div", { class: "actions" },
      h("strong", {}, node.name), stateBadge(node.state),
      node.draining ? h("span", { class: "bad", "data-draining": "" }, "draining") : null,
      node.reason ? h("span", { class: "muted" }, node.reason) : null,
      ctx.me.admin ? adminActions(node, ctx, view) : null),
    h("div", { class: "muted" }, `capacity ${quantities(node.capacity)}`,
      Object.keys(node.labels).length ? ` · labels ${quantities(node.labels)}` : ""),
    gpus.length ? h("div", { class: "gpus" }, gpus) : null,
    cpuOnly.length ? h("div", { class: "muted" }, "Without GPUs: ",
      cpuOnly.map((t, i) => [i ? ", " : "", h("a", { href: `#/job/${enc(t.job)}` }, `${t.job}/${t.task}`)])) : null);
}

function adminActions(node, ctx, view) {
  const post = (verb) => async () => {
    await api(`/api/v1/nodes/${enc(node.name)}/${verb}`, { method: "POST" });
    await nodesPage(view, ctx);
  };
  return h("span", { class: "actions", "data-admin": "" },
    node.unschedulable ? action("Uncordon", post("uncordon"), { "data-action": "uncordon" })
      : action("Cordon", post("cordon"), { "data-action": "cordon" }),
    action("Drain", async () => {
      if (window.confirm(`Drain ${node.name}: cordon it and evict its tasks?`)) await post("drain")();
    }, { class: "danger", "data-action": "drain" }));
}
