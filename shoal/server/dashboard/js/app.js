// The dashboard's shell: the login, the navigation and the hash routes (#/jobs,
// #/job/NAME, ...). Each page is a function (view, ctx) that draws itself into `view`;
// ctx.signal is aborted when the user leaves the page (its streams and timers stop).

import { api, token } from "./api.js";
import { h, replace, showError } from "./dom.js";
import { auditPage, usersPage } from "./admin.js";
import { jobPage } from "./job.js";
import { jobsPage } from "./jobs.js";
import { nodesPage } from "./nodes.js";
import { treePage } from "./tree.js";
import { usagePage } from "./usage.js";

const ROUTES = {
  tree: treePage, nodes: nodesPage, jobs: jobsPage, job: jobPage, usage: usagePage,
  users: usersPage, audit: auditPage,
};

const view = document.getElementById("view");
let me = null;
let leaving = null;

function loginPage(message) {
  me = null;
  document.getElementById("nav").hidden = true;
  document.getElementById("logout").hidden = true;
  document.getElementById("who").textContent = "";
  const input = h("input", { type: "password", id: "token", autocomplete: "off",
                             placeholder: "a Shoal API token" });
  const form = h("form", { class: "login card", id: "login" },
    h("h1", {}, "Log in to Shoal"),
    h("p", { class: "muted" }, "Paste your API token (`shoal up` writes the admin's to ",
      h("code", {}, ".shoal/admin.token"), "). It is kept in this tab only."),
    h("label", { for: "token" }, "Token"), input,
    h("button", { type: "submit" }, "Log in"),
    message ? h("p", { class: "bad" }, message) : null);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    token.set(input.value.trim());
    await start();
  });
  replace(view, form);
  input.focus();
}

async function start() {
  me = null;
  if (!token.get()) return loginPage();
  try {
    me = await api("/api/v1/users/me");
  } catch (err) {
    token.clear();
    return loginPage(`The token was refused: ${err.message}`);
  }
  document.getElementById("nav").hidden = false;
  document.getElementById("logout").hidden = false;
  document.getElementById("who").textContent = `${me.name}${me.admin ? " (admin)" : ""}`;
  for (const link of document.querySelectorAll("nav [data-admin]")) link.hidden = !me.admin;
  if (!location.hash || location.hash === "#/login") location.hash = "#/tree";
  else route();
}

async function route() {
  if (!me) return;
  if (leaving) leaving.abort();
  leaving = new AbortController();
  showError(null);
  const [page, ...rest] = location.hash.replace(/^#\/?/, "").split("/");
  const name = (page || "tree").split("?")[0];
  const arg = decodeURIComponent(rest.join("/").split("?")[0] || "");
  const params = new URLSearchParams(location.hash.split("?")[1] || "");
  const draw = ROUTES[name] || ROUTES.tree;
  for (const link of document.querySelectorAll("nav a")) {
    link.classList.toggle("active", link.getAttribute("href") === `#/${name === "job" ? "jobs" : name}`);
  }
  replace(view, h("p", { class: "muted" }, "Loading…"));
  try {
    await draw(view, { me, arg, params, signal: leaving.signal });
  } catch (err) {
    showError(err);
  }
}

window.addEventListener("hashchange", route);
window.addEventListener("shoal-unauthorized", () => {
  if (!me) return; // the login itself: start() says why
  token.clear();
  loginPage("The server no longer accepts this token: log in again.");
});
document.getElementById("logout").addEventListener("click", () => {
  token.clear();
  if (leaving) leaving.abort();
  loginPage();
});
start();
