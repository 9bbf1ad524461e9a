// Building the page from data: every string goes in as a text node or an attribute value,
// never as HTML, so nothing the API returns can inject markup.

const SVG = "http://www.w3.org/2000/svg";

function build(el, attrs, children) {
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else if (key === "class") el.setAttribute("class", value);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}

/** An HTML element: h("a", {href: "#/jobs"}, "Jobs"). */
export const h = (tag, attrs, ...children) => build(document.createElement(tag), attrs, children);

/** An SVG element. */
export const s = (tag, attrs, ...children) => build(document.createElementNS(SVG, tag), attrs, children);

export function replace(el, ...children) {
  el.replaceChildren();
  build(el, {}, children);
  return el;
}

export function table(headers, rows, attrs = {}) {
  return h("table", attrs,
    h("thead", {}, h("tr", {}, headers.map((x) => (typeof x === "string" ? h("th", {}, x) : x)))),
    h("tbody", {}, rows));
}

export function when(seconds) {
  if (seconds === null || seconds === undefined) return "";
  return new Date(seconds * 1000).toISOString().replace("T", " ").slice(0, 19);
}

/** A quantity ("4", "500m", "8Gi", 2) in its canonical unit: millicores, MiB, a count. */
export function amount(quantities, name) {
  const value = quantities ? quantities[name] : undefined;
  if (value === undefined || value === null) return 0;
  if (typeof value === "number") return name === "cpu" ? value * 1000 : value;
  const text = String(value);
  if (name === "cpu") return text.endsWith("m") ? Number(text.slice(0, -1)) : Number(text) * 1000;
  if (name === "memory") {
    const units = { Ki: 1 / 1024, Mi: 1, Gi: 1024, Ti: 1024 ** 2 };
    const unit = text.slice(-2);
    return unit in units ? Number(text.slice(0, -2)) * units[unit] : Number(text) / 2 ** 20;
  }
  return Number(text);
}

export function shown(value, name) {
  return name === "cpu" ? String(value / 1000) : String(value);
}

export function quantities(q) {
  return Object.entries(q || {}).map(([k, v]) => `${k}=${v}`).join(", ");
}

export function stateBadge(state) {
  return h("span", { class: `state state-${state}`, "data-state": state }, state);
}

/** Shows an error above the page (none: hides it); an aborted request is no error. */
export function showError(err) {
  if (err && err.name === "AbortError") return;
  const el = document.getElementById("error");
  el.hidden = !err;
  el.textContent = err ? String(err.message || err) : "";
}

/** A button that runs `action` and shows what went wrong, if anything. */
export function action(label, run, attrs = {}) {
  return h("button", {
    type: "button", ...attrs,
    onclick: async (event) => {
      event.target.disabled = true;
      try {
        showError(null);
        await run();
      } catch (err) {
        showError(err);
      } finally {
        event.target.disabled = false;
      }
    },
  }, label);
}
