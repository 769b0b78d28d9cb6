// Suggestions as you type, from the served lexicon (GET /api/v1/guideline/lexicon): the guideline's
// wording and the synonyms the assessment reads. One listbox, moved under the focused textarea;
// the textarea keeps focus (aria-activedescendant), arrows choose, Enter/Tab accept, Esc closes.
import { get } from "./api.js";
import { $, h } from "./dom.js";

const MAX = 8;
let entries = null;
let loading = null;
let state = null;  // {field, start, end, options, active}

async function lexicon() {
  if (entries) return entries;
  if (!loading) {
    loading = get("/guideline/lexicon").then((lex) => {
      const seen = new Set();
      entries = [];
      for (const term of lex.terms) {
        const label = term.label || term.concept.replace(/_/g, " ");
        for (const [text, via] of [[label, null], ...term.synonyms.map((s) => [s, s])]) {
          const key = `${text.toLowerCase()}|${label}`;
          if (!text || seen.has(key)) continue;
          seen.add(key);
          entries.push({ text: text.toLowerCase(), label, via: via && via.toLowerCase() !== label.toLowerCase() ? via : null, kind: term.kind });
        }
      }
      return entries;
    }).catch(() => { loading = null; entries = null; return []; });
  }
  return loading;
}

function currentLine(field) {
  const pos = field.selectionStart;
  const value = field.value;
  const start = value.lastIndexOf("\n", pos - 1) + 1;
  let end = value.indexOf("\n", pos);
  if (end < 0) end = value.length;
  return { start, end, before: value.slice(start, pos) };
}

function rank(list, query) {
  const scored = [];
  for (const e of list) {
    const i = e.text.indexOf(query);
    if (i < 0) continue;
    const wordStart = i === 0 || /\W/.test(e.text[i - 1]);
    if (!wordStart) continue;
    scored.push([i === 0 ? 0 : 1, e.via ? 1 : 0, e.text.length, e]);
  }
  scored.sort((a, b) => a[0] - b[0] || a[1] - b[1] || a[2] - b[2]);
  const out = [];
  const labels = new Set();
  for (const [, , , e] of scored) {
    if (labels.has(e.label)) continue;
    labels.add(e.label);
    out.push(e);
    if (out.length === MAX) break;
  }
  return out;
}

async function update(field) {
  const list = await lexicon();
  if (document.activeElement !== field) return;
  const line = currentLine(field);
  const typed = line.before.toLowerCase().replace(/^\s+/, "");
  let query = typed.trim();
  let start = line.start + (line.before.length - line.before.replace(/^\s+/, "").length);
  let options = query.length >= 2 ? rank(list, query) : [];
  if (!options.length) {  // the last word(s) of a longer line: "3 weeks of haemat" -> haematuria
    const m = typed.match(/([a-z][a-z-]{2,}(?: [a-z-]+)?)$/);
    if (m && m[1] !== query) {
      query = m[1];
      start = line.start + line.before.length - m[1].length;
      options = rank(list, query);
    }
  }
  if (!options.length || (options.length === 1 && options[0].label.toLowerCase() === query)) { close(); return; }
  state = { field, start, end: line.start + line.before.length, options, active: -1 };
  render();
}

function render() {
  const box = $("#suggest-list");
  const { field, options, active } = state;
  box.replaceChildren(...options.map((o, i) => h("div.option", {
    role: "option", id: `suggest-${i}`, "aria-selected": String(i === active),
    on: { mousedown: (e) => { e.preventDefault(); accept(i); } },
  }, h("span.opt-label", o.label), o.via ? h("span.opt-via", ` (you typed it as “${o.via}”)`) : null,
    o.kind ? h("span.opt-kind", ` ${o.kind.replace(/_/g, " ")}`) : null)));
  field.closest(".suggest-field").append(box);
  box.hidden = false;
  field.setAttribute("aria-activedescendant", active >= 0 ? `suggest-${active}` : "");
  if (active < 0) field.removeAttribute("aria-activedescendant");
  const status = $("#suggest-status");
  if (status) status.textContent = `${options.length} suggestion${options.length === 1 ? "" : "s"}; use the down arrow to choose.`;
}

function close() {
  if (state && state.field) state.field.removeAttribute("aria-activedescendant");
  state = null;
  const box = $("#suggest-list");
  if (box) { box.hidden = true; box.replaceChildren(); }
}

function accept(i) {
  const { field, start, end, options } = state;
  const label = options[i].label;
  const value = field.value;
  const after = value.slice(end);
  const rest = after.indexOf("\n") < 0 ? "" : after.slice(after.indexOf("\n"));
  const tail = after.slice(0, after.indexOf("\n") < 0 ? after.length : after.indexOf("\n"));
  // keep the words typed after the caret on this line only if the caret was mid-line
  field.value = value.slice(0, start) + label + tail + rest;
  const caret = start + label.length;
  field.setSelectionRange(caret, caret);
  close();
  field.dispatchEvent(new Event("input", { bubbles: true }));
  close();
}

export function attach(field) {
  field.setAttribute("aria-autocomplete", "list");
  field.setAttribute("aria-controls", "suggest-list");
  field.addEventListener("focus", () => { lexicon(); });
  field.addEventListener("input", (e) => { if (e.isTrusted !== false) update(field); });
  field.addEventListener("blur", () => setTimeout(() => { if (state && state.field === field) close(); }, 100));
  field.addEventListener("keydown", (e) => {
    if (!state || state.field !== field) return;
    const n = state.options.length;
    if (e.key === "ArrowDown") { e.preventDefault(); state.active = (state.active + 1) % n; render(); }
    else if (e.key === "ArrowUp") { e.preventDefault(); state.active = (state.active - 1 + n) % n; render(); }
    else if ((e.key === "Enter" || e.key === "Tab") && state.active >= 0) { e.preventDefault(); accept(state.active); }
    else if (e.key === "Escape") { e.preventDefault(); close(); }
  });
}
