// Guideline viewer: browse recommendations by section or search, the Part B symptom tables, and one
// recommendation on its printed page(s), rendered by the server from the active index's own PDF
// with the quote highlighted (GET /guideline/pages/{page}.png?highlight={id}).
import { get, fetchImage } from "./api.js";
import { $, h, fill, verbatim } from "./dom.js";
import { actionBadge, actionInfo } from "./vocab.js";

const SCALE = 1.5;
const PAGE_SIZE = 25;
let mode = "recs";
let offset = 0;
let sectionsLoaded = false;
let searchTimer = null;
let current = null;

export function init() {
  $("#browse-recs").addEventListener("click", () => setMode("recs"));
  $("#browse-tables").addEventListener("click", () => setMode("tables"));
  $("#browse-form").addEventListener("submit", (e) => { e.preventDefault(); offset = 0; browse(); });
  $("#section-select").addEventListener("change", () => { offset = 0; browse(); });
  $("#browse-q").addEventListener("input", () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(() => { offset = 0; browse(); }, 250);
  });
}

export async function show(recId) {
  if (!sectionsLoaded) { sectionsLoaded = true; loadSections().then(browse); }
  if (recId && recId !== current) await open(recId);
}

function setMode(next) {
  mode = next;
  $("#browse-recs").setAttribute("aria-pressed", String(mode === "recs"));
  $("#browse-tables").setAttribute("aria-pressed", String(mode === "tables"));
  $("#section-field").hidden = mode !== "recs";
  offset = 0;
  browse();
}

async function loadSections() {
  try {
    const data = await get("/guideline/sections");
    $("#section-select").replaceChildren(h("option", { value: "" }, "All sections"),
      ...data.sections.map((s) => h("option", { value: s.id }, `${s.id} ${s.title} (${s.recommendation_ids.length})`)));
  } catch (err) {
    $("#browse-count").textContent = `Sections unavailable: ${err.message}`;
  }
}

async function browse() {
  const q = $("#browse-q").value.trim();
  const list = $("#browse-list");
  try {
    if (mode === "recs") {
      const params = new URLSearchParams({ limit: PAGE_SIZE, offset });
      if ($("#section-select").value) params.set("section", $("#section-select").value);
      if (q) params.set("q", q);
      const data = await get(`/guideline/recommendations?${params}`);
      $("#browse-count").textContent = `${data.total} recommendation${data.total === 1 ? "" : "s"}${q ? ` matching “${q}”` : ""}`;
      fill(list, data.items.map((r) => h("li.browse-item", { dataset: { rec: r.id } },
        h("a", { href: `#guideline/${r.id}`, "aria-current": r.id === current ? "true" : null },
          h("span.rec-id", r.id), h("span.rec-page", ` p.${r.page}`), h("span.rec-snippet", r.text.split("\n")[0].slice(0, 110))))));
      pager(data.total);
    } else {
      const data = await get(`/guideline/symptom-tables${q ? `?q=${encodeURIComponent(q)}` : ""}`);
      $("#browse-count").textContent = `${data.items.length} symptom-table row${data.items.length === 1 ? "" : "s"}${q ? ` matching “${q}”` : ""}`;
      fill(list, data.items.slice(0, 200).map((row) => h("li.browse-item.table-row",
        h("p.row-head", h("strong", row.symptom), ` → ${row.cancer}`),
        row.text ? h("p.row-text", row.text) : null,
        h("p.row-refs", `${row.table ? row.table + ", " : ""}page ${row.page}: `,
          row.recommendation_ids.map((id, i) => [i ? ", " : "", h("a", { href: `#guideline/${id}` }, id)])))));
      fill("browse-pager");
    }
  } catch (err) {
    fill(list, h("li.error-text", { role: "alert" }, err.message));
  }
}

function pager(total) {
  const box = $("#browse-pager");
  if (total <= PAGE_SIZE) { fill(box); return; }
  fill(box,
    h("button.secondary.small", { type: "button", disabled: offset === 0, on: { click: () => { offset = Math.max(0, offset - PAGE_SIZE); browse(); } } }, "‹ Previous"),
    h("span.hint", ` ${offset + 1}–${Math.min(total, offset + PAGE_SIZE)} of ${total} `),
    h("button.secondary.small", { type: "button", disabled: offset + PAGE_SIZE >= total, on: { click: () => { offset += PAGE_SIZE; browse(); } } }, "Next ›"));
}

async function open(recId) {
  current = recId;
  const view = $("#rec-view");
  view.setAttribute("aria-busy", "true");
  fill(view, h("p.loading", `Loading ${recId}…`));
  let rec;
  try {
    rec = await get(`/guideline/recommendations/${encodeURIComponent(recId)}`);
  } catch (err) {
    fill(view, h("div.alert.alert-error", { role: "alert" }, err.message));
    view.setAttribute("aria-busy", "false");
    return;
  }
  const info = actionInfo(rec.action);
  const pages = [...new Set(rec.highlights.map((b) => b.page))];
  if (!pages.length) pages.push(rec.page);
  const figures = pages.map((page) => h("figure.page-figure", { dataset: { page } },
    h("div.page-frame", h("p.loading", `Rendering page ${page}…`)),
    h("figcaption", `Page ${page} of the NG12 PDF (index ${rec.index_version}), recommendation ${rec.id} highlighted.`)));
  fill(view,
    h("header.rec-view-head",
      h("h2", `NG12 ${rec.id}`, h("span.section-title", ` · ${rec.section} ${rec.section_title || ""}`)),
      h("p", actionBadge(rec.action), " ", h("span.hint", info.timeframe)),
      h("p.hint", `Printed page ${rec.page}${rec.page_end && rec.page_end !== rec.page ? `–${rec.page_end}` : ""} · index ${rec.index_version}`)),
    verbatim(rec.text, "verbatim cite rec-text"),
    h("div.pages", figures));
  for (const a of document.querySelectorAll("#browse-list a[aria-current]")) a.removeAttribute("aria-current");
  const link = document.querySelector(`#browse-list [data-rec="${CSS.escape(rec.id)}"] a`);
  if (link) link.setAttribute("aria-current", "true");
  await Promise.all(figures.map((fig) => loadPage(fig, rec)));
  view.setAttribute("aria-busy", "false");
}

async function loadPage(fig, rec) {
  const page = Number(fig.dataset.page);
  const frame = fig.querySelector(".page-frame");
  try {
    const src = await fetchImage(`/guideline/pages/${page}.png?highlight=${encodeURIComponent(rec.id)}&scale=${SCALE}`);
    const img = h("img.page-img", { alt: `NG12 page ${page} with recommendation ${rec.id} highlighted`, src });
    await new Promise((resolve) => { img.onload = resolve; img.onerror = resolve; });
    const boxes = rec.highlights.filter((b) => b.page === page);
    const width = img.naturalWidth / SCALE;
    const height = img.naturalHeight / SCALE;
    const marks = boxes.map((b) => {
      const mark = h("span.hl-box", { "aria-hidden": "true" });
      mark.style.left = `${(b.x0 / width) * 100}%`;
      mark.style.top = `${(b.top / height) * 100}%`;
      mark.style.width = `${((b.x1 - b.x0) / width) * 100}%`;
      mark.style.height = `${((b.bottom - b.top) / height) * 100}%`;
      return mark;
    });
    fill(frame, img, ...marks);
    if (marks.length) marks[0].scrollIntoView({ block: "center", behavior: "instant" });
  } catch (err) {
    fill(frame, h("p.alert.alert-error", { role: "alert" }, `Page ${page} could not be shown: ${err.message}`));
  }
}
