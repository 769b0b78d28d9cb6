// About: static text in index.html; the served index version and guideline edition filled in here.
import { get } from "./api.js";
import { $, h, fill } from "./dom.js";

let served = null;
let isAdmin = false;

export function init({ me }) { isAdmin = Boolean(me && me.roles.includes("admin")); }

export function show() { loadServedVersion(); }

/** The active index version (any signed-in user), with the edition details when an admin. */
export async function loadServedVersion() {
  try {
    const lex = await get("/guideline/lexicon");
    served = { index_version: lex.index_version };
  } catch (err) {
    fill("about-index", `unavailable (${err.message})`);
    return;
  }
  const chip = $("#served-version");
  chip.textContent = `Index ${served.index_version}`;
  chip.hidden = false;
  fill("about-index", served.index_version);
  if (!isAdmin) return;
  try {
    const listed = await get("/admin/indexes");
    const active = listed.versions.find((v) => v.version === listed.active_version);
    if (!active) return;
    const g = active.guideline || {};
    const dl = $("#about-guideline");
    for (const old of dl.querySelectorAll(".extra")) old.remove();
    const add = (term, value) => { if (value) dl.append(h("dt.extra", term), h("dd.extra", String(value))); };
    add("Last updated", g.last_updated);
    add("First published", g.published);
    add("Pages", g.page_count);
    add("Recommendations", active.recommendation_count);
    add("Activated", active.activated_at);
    add("Source PDF", g.source_sha256 ? `sha256 ${g.source_sha256.slice(0, 16)}…` : "");
  } catch (err) { /* the admin details are optional here */ }
}

/** The guideline edition an answer named (assessments and chat answers carry it). */
export function noteGuideline(guideline) {
  if (!guideline || !guideline.last_updated) return;
  const dl = $("#about-guideline");
  if (dl.querySelector(".edition")) return;
  dl.append(h("dt.edition", "Edition"), h("dd.edition", `${guideline.title || "NG12"}, last updated ${guideline.last_updated}`));
}
