// DOM helpers: every node is built with createElement/textContent (never innerHTML with API text).

/**
 * h("div.card#id", {attrs}, ...children): a small element builder.
 * attrs: `class`, `text`, `dataset`, `on` ({event: handler}), `aria-*`, other attributes;
 * `hidden`, `disabled`, `checked` as booleans. Children: nodes, strings (as text) or arrays.
 */
export function h(spec, attrs, ...children) {
  const [tagAndClasses, id] = spec.split("#");
  const [tag, ...classes] = tagAndClasses.split(".");
  const node = document.createElement(tag || "div");
  if (id) node.id = id;
  if (classes.length) node.className = classes.join(" ");
  if (attrs && (typeof attrs !== "object" || attrs instanceof Node || Array.isArray(attrs))) {
    children.unshift(attrs);
    attrs = null;
  }
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = [node.className, value].filter(Boolean).join(" ");
    else if (key === "text") node.textContent = String(value);
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key === "on") for (const [ev, fn] of Object.entries(value)) node.addEventListener(ev, fn);
    else if (key === "hidden" || key === "disabled" || key === "checked" || key === "open") node[key] = Boolean(value);
    else if (key === "value") node.value = value;
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    if (Array.isArray(child)) append(node, child);
    else if (child instanceof Node) node.append(child);
    else node.append(document.createTextNode(String(child)));
  }
}

export const $ = (sel, root = document) => root.querySelector(sel);
export const $$ = (sel, root = document) => Array.from(root.querySelectorAll(sel));

/** Replace the children of `node` (an id or a node). */
export function fill(node, ...children) {
  const target = typeof node === "string" ? document.getElementById(node) : node;
  target.replaceChildren();
  append(target, children);
  return target;
}

/** Verbatim guideline text: lines kept, "- " bullets shown as list items (text only). */
export function verbatim(text, cls = "verbatim") {
  const box = h(`blockquote.${cls}`);
  let list = null;
  for (const raw of String(text || "").split("\n")) {
    const bullet = raw.match(/^(\s*)[-•]\s+(.*)$/);
    if (bullet) {
      if (!list) { list = h("ul"); box.append(list); }
      const li = h("li", bullet[2]);
      if (bullet[1].length) li.className = "sub";
      list.append(li);
    } else {
      list = null;
      if (raw.trim()) box.append(h("p", raw));
    }
  }
  return box;
}

export function formatDate(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  return d.toLocaleString("en-GB", { dateStyle: "medium", timeStyle: "short" });
}

/** Announce a short message to screen readers (and show it as a toast). */
export function announce(message, kind = "info") {
  const region = document.getElementById("toast");
  if (!region) return;
  const item = h(`div.toast.toast-${kind}`, { role: kind === "error" ? "alert" : "status" }, message);
  region.append(item);
  setTimeout(() => item.remove(), 3000);
}

/** Open another tab (main.js listens): navigate("guideline", "1.1.1"). */
export function navigate(tab, arg) {
  window.dispatchEvent(new CustomEvent("ng12:go", { detail: { tab, arg } }));
}

/** A link-looking button that opens a recommendation in the guideline viewer. */
export function viewerLink(recId, page, label) {
  const text = label || `Open ${recId} on page ${page} in the guideline viewer`;
  return h("a.viewer-link", {
    href: `#guideline/${encodeURIComponent(recId)}`, dataset: { rec: recId },
  }, h("span", { "aria-hidden": "true" }, "§ "), text);
}
