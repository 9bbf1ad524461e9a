// For admins: the users (revoke a user's tokens, issue a new one) and the audit log of
// every change (GET /api/v1/audit, newest first). The navigation shows these pages to
// admins only, and the API refuses everyone else.

import { api, enc } from "./api.js";
import { action, h, replace, table } from "./dom.js";

export async function usersPage(view, ctx) {
  const users = await api("/api/v1/users", { signal: ctx.signal });
  const issued = h("p", { id: "issued", class: "muted" });
  const redraw = () => usersPage(view, ctx);
  replace(view, h("h1", {}, "Users"), issued,
    table(["Name", "Admin", "Queues", ""], users.map((u) => h("tr", { "data-user": u.name },
      h("td", {}, u.name), h("td", {}, u.admin ? "yes" : ""), h("td", {}, (u.queues || []).join(", ")),
      h("td", { class: "actions", "data-admin": "" },
        action("Revoke tokens", async () => {
          if (!window.confirm(`Revoke every token of ${u.name}?`)) return;
          const answer = await api(`/api/v1/users/${enc(u.name)}/tokens`, { method: "DELETE" });
          issued.textContent = `Revoked ${answer.revoked} token(s) of ${u.name}.`;
        }, { class: "danger" }),
        action("New token", async () => {
          const answer = await api(`/api/v1/users/${enc(u.name)}/tokens`, { method: "POST" });
          replace(issued, `New token for ${answer.name} (shown once): `, h("code", {}, answer.token));
        }),
        action("Delete", async () => {
          if (!window.confirm(`Delete user ${u.name}? Their tokens are revoked; their jobs stay.`)) return;
          await api(`/api/v1/users/${enc(u.name)}`, { method: "DELETE" });
          await redraw();
        }, { class: "danger" }))))));
}

export async function auditPage(view, ctx) {
  const query = new URLSearchParams({ limit: "100" });
  for (const key of ["actor", "action", "after"]) {
    if (ctx.params.get(key)) query.set(key, ctx.params.get(key));
  }
  const page = await api(`/api/v1/audit?${query}`, { signal: ctx.signal });
  const actor = h("input", { name: "actor", value: ctx.params.get("actor") || "", size: 12 });
  const verb = h("input", { name: "action", value: ctx.params.get("action") || "", size: 16 });
  const form = h("form", { class: "filters" }, h("label", {}, "Actor", actor),
    h("label", {}, "Action", verb), h("button", { type: "submit" }, "Filter"));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const chosen = new URLSearchParams();
    if (actor.value.trim()) chosen.set("actor", actor.value.trim());
    if (verb.value.trim()) chosen.set("action", verb.value.trim());
    location.hash = `#/audit?${chosen}`;
  });
  const next = new URLSearchParams(query);
  next.delete("limit");
  if (page.next !== null && page.next !== undefined) next.set("after", page.next);
  replace(view, h("h1", {}, "Audit log"), form,
    table(["Time", "Actor", "Action", "Target", "Detail"], page.items.map((e) => h("tr", { "data-audit": e.id },
      h("td", { class: "muted" }, e.at), h("td", {}, e.actor), h("td", {}, e.action),
      h("td", {}, e.target), h("td", {}, e.detail))), { id: "audit" }),
    page.next !== null && page.next !== undefined ? h("p", {}, h("a", { href: `#/audit?${next}` }, "Older")) : null);
}
