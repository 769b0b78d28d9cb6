// Admin tab: upload a PDF (multipart POST /admin/ingestions), the job list with live stage and
// progress (polled), each job's report, index versions (activate / roll back, confirmed), the
// version diff side by side, and the chunk browser. STALE or unused criteria are always flagged.
import { call, get, post } from "./api.js";
import { $, h, fill, formatDate, announce } from "./dom.js";

const MAX_BYTES = 50 * 1024 * 1024;
const DONE = new Set(["SUCCESS", "FAILURE", "REVOKED"]);
const CHUNK_PAGE = 20;
let pollTimer = null;
let indexes = { active_version: "", versions: [] };
let chunkOffset = 0;
let selectedJob = null;
let knownDone = new Set();

export function init() {
  $("#upload-form").addEventListener("submit", (e) => { e.preventDefault(); upload(); });
  $("#jobs-refresh").addEventListener("click", loadJobs);
  $("#rollback-btn").addEventListener("click", rollback);
  $("#diff-form").addEventListener("submit", (e) => { e.preventDefault(); diff(); });
  $("#diff-changed").addEventListener("change", () => { if (lastDiff) renderDiff(lastDiff); });
  $("#chunk-form").addEventListener("submit", (e) => { e.preventDefault(); chunkOffset = 0; loadChunks(); });
  $("#chunk-version").addEventListener("change", () => { chunkOffset = 0; $("#chunk-type").value = ""; loadChunks(); });
  $("#chunk-type").addEventListener("change", () => { chunkOffset = 0; loadChunks(); });
}

export async function show() {
  await Promise.all([loadJobs(), loadIndexes()]);
  loadChunks();
}

/* ---------- confirmation dialog ---------- */

function confirmAction(title, ...body) {
  const dialog = $("#confirm-dialog");
  $("#confirm-title").textContent = title;
  fill("confirm-body", ...body);
  dialog.returnValue = "";
  dialog.showModal();
  $("#confirm-cancel").focus();
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok"), { once: true });
  });
}

/* ---------- upload and jobs ---------- */

async function upload() {
  const file = $("#pdf-file").files[0];
  const msg = $("#upload-msg");
  const error = $("#upload-error");
  msg.textContent = "";
  error.textContent = "";
  if (!file) { error.textContent = "Choose the NG12 PDF to upload."; $("#pdf-file").focus(); return; }
  if (file.size > MAX_BYTES) { error.textContent = `${file.name} is ${(file.size / 1048576).toFixed(1)} MB; the limit is 50 MB.`; return; }
  if (!/\.pdf$/i.test(file.name) && file.type !== "application/pdf") { error.textContent = `${file.name} is not a PDF: choose the guideline's PDF file.`; return; }
  const form = new FormData();
  form.append("pdf", file, file.name);
  form.append("activate", $("#upload-activate").checked ? "true" : "false");
  $("#upload-btn").disabled = true;
  msg.textContent = `Uploading ${file.name}…`;
  try {
    const reply = await call("POST", "/admin/ingestions", form);
    if (reply.status === "unchanged") {
      msg.textContent = `Unchanged: ${file.name} is the PDF version ${reply.version} was built from; nothing to ingest.`;
    } else {
      msg.textContent = `Accepted: job ${reply.job_id.slice(0, 8)} is queued. Its progress is shown in the job list.`;
      selectedJob = reply.job_id;
      announce("Ingestion job queued.");
    }
    $("#pdf-file").value = "";
    await loadJobs();
  } catch (err) {
    msg.textContent = "";
    error.textContent = err.code === "ingestion_running"
      ? `Refused: an ingestion is already running (job ${String(err.extra.job_id || "").slice(0, 8)}); wait for it to finish.`
      : `Refused (${err.status}${err.code ? " " + err.code : ""}): ${err.message}`;
  } finally {
    $("#upload-btn").disabled = false;
  }
}

function stateBadge(state) {
  const map = { SUCCESS: ["✓", "done", "ok"], FAILURE: ["✗", "failed", "bad"], REVOKED: ["✗", "cancelled", "bad"],
    PENDING: ["…", "queued", "wait"], STARTED: ["▶", "running", "run"], PROGRESS: ["▶", "running", "run"], RETRY: ["↻", "retrying", "run"] };
  const [icon, label, cls] = map[state] || ["•", String(state).toLowerCase(), "wait"];
  return h(`span.badge.state.s-${cls}`, { dataset: { state } }, h("span.icon", { "aria-hidden": "true" }, icon), ` ${label}`);
}

async function loadJobs() {
  let jobs;
  try {
    jobs = (await get("/admin/ingestions")).jobs;
  } catch (err) {
    fill("jobs", h("p.error-text", { role: "alert" }, `The job list could not be loaded: ${err.message}`));
    clearTimeout(pollTimer);
    pollTimer = setTimeout(loadJobs, 5000);  // keep watching: a running job still finishes
    return;
  }
  if (!jobs.length) fill("jobs", h("p.hint", "No ingestion jobs yet."));
  else {
    fill("jobs", h("div.table-wrap", h("table.data.jobs-table",
      h("thead", h("tr", ["Job", "File", "Started", "State", "Stage and progress", ""].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", jobs.map((j) => {
        const pct = j.progress === null || j.progress === undefined ? null : Math.round(j.progress * 100);
        return h("tr.job", { dataset: { job: j.job_id, state: j.state } },
          h("td", h("code", j.job_id.slice(0, 8))), h("td", j.filename || "(worker's PDF)"), h("td", formatDate(j.created_at)),
          h("td", stateBadge(j.state)),
          h("td.progress-cell", h("span.stage", j.stage || "waiting"),
            DONE.has(j.state) ? null : h("progress", { max: 100, value: pct ?? 0, "aria-label": `Job ${j.job_id.slice(0, 8)} progress` }),
            pct !== null && !DONE.has(j.state) ? h("span.pct", ` ${pct}%`) : null,
            j.error ? h("span.error-text", ` ${j.error}`) : null),
          h("td", DONE.has(j.state) ? h("button.secondary.small", {
            type: "button", on: { click: () => { selectedJob = j.job_id; renderReport(j); } },
          }, "Report") : null));
      })))));
  }
  const running = jobs.some((j) => !DONE.has(j.state));
  clearTimeout(pollTimer);
  if (running) pollTimer = setTimeout(loadJobs, 1000);
  const newlyDone = jobs.filter((j) => DONE.has(j.state) && !knownDone.has(j.job_id));
  for (const j of jobs) if (DONE.has(j.state)) knownDone.add(j.job_id);
  if (newlyDone.length) {
    await loadIndexes();
    const mine = newlyDone.find((j) => j.job_id === selectedJob);
    if (mine) renderReport(mine);
  } else if (selectedJob) {
    const j = jobs.find((x) => x.job_id === selectedJob && DONE.has(x.state));
    if (j && !$("#job-report").hasChildNodes()) renderReport(j);
  }
}

function renderReport(job) {
  const r = job.result || {};
  const report = r.report || r;
  const coverage = report.criteria_coverage || report.criteria || {};
  const stale = coverage.stale || [];
  const warnings = report.warnings || [];
  const counts = report.counts || {};
  const body = [h("h3", `Report of job ${job.job_id.slice(0, 8)}`)];
  if (job.state === "FAILURE") body.push(h("p.alert.alert-error", { role: "alert" }, `Failed: ${job.error || "see the worker's log"}. Nothing served changed.`));
  if (r.version) {
    body.push(h("p", "Built version ", h("strong", r.version), ` (${r.status || ""}). `,
      r.status === "active" ? "It is being served." : "Review the diff below, then activate it."));
  }
  if (stale.length) {
    body.push(h("div.alert.alert-warning.stale", { role: "alert" },
      h("strong", `⚠ ${stale.length} STALE criteria: `),
      "the text of these recommendations changed since their criteria were curated; they are not evaluated until re-curated: ",
      stale.join(", ")));
  } else if (r.version) {
    body.push(h("p.ok-text", "✓ No STALE criteria."));
  }
  if (warnings.length) body.push(h("div.warnings", h("h4", `Warnings (${warnings.length})`), h("ul", warnings.map((w) => h("li", w)))));
  const countRows = Object.entries(counts);
  if (countRows.length) {
    body.push(h("details.counts", h("summary", `Counts (${countRows.length})`),
      h("table.data.compact", h("tbody", countRows.map(([k, v]) => h("tr", h("th", { scope: "row" }, k.replace(/_/g, " ")), h("td", String(v))))))));
  }
  const cov = Object.entries(coverage).filter(([k]) => k !== "stale");
  if (cov.length) {
    body.push(h("details.coverage", h("summary", "Criteria coverage"),
      h("table.data.compact", h("tbody", cov.map(([k, v]) => h("tr", h("th", { scope: "row" }, k.replace(/_/g, " ")),
        h("td", Array.isArray(v) ? (v.length ? v.join(", ") : "none") : String(v))))))));
  }
  fill("job-report", h("div.report", { "aria-live": "polite" }, body));
}

/* ---------- index versions ---------- */

function criteriaFlag(v) {
  const stale = v.stale_criteria || [];
  const unused = v.unused_criteria || [];
  if (!stale.length && !unused.length) return h("span.badge.flag.f-ok", h("span.icon", { "aria-hidden": "true" }, "✓"), " none stale");
  return h("span.flags",
    stale.length ? h("span.badge.flag.f-stale", { title: stale.join(", ") }, h("span.icon", { "aria-hidden": "true" }, "⚠"), ` ${stale.length} STALE`) : null,
    unused.length ? h("span.badge.flag.f-unused", { title: unused.join(", ") }, h("span.icon", { "aria-hidden": "true" }, "⚠"), ` ${unused.length} unused`) : null);
}

function statusBadge(v, active) {
  if (v.version === active) return h("span.badge.vstatus.v-active", h("span.icon", { "aria-hidden": "true" }, "●"), " active (served)");
  const label = { ready: "ready", failed: "failed", building: "building", inactive: "inactive" }[v.status] || v.status;
  return h(`span.badge.vstatus.v-${v.status}`, h("span.icon", { "aria-hidden": "true" }, v.status === "failed" ? "✗" : "○"), ` ${label}`);
}

async function loadIndexes() {
  try {
    indexes = await get("/admin/indexes");
  } catch (err) {
    fill("indexes", h("p.error-text", { role: "alert" }, `The index versions could not be loaded: ${err.message}`));
    return;
  }
  const active = indexes.active_version;
  const versions = [...indexes.versions].reverse();
  fill("indexes", h("div.table-wrap", h("table.data.index-table",
    h("thead", h("tr", ["Version", "Status", "Guideline", "Built", "Recommendations", "Chunks", "Criteria", "Actions"].map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", versions.map((v) => {
      const chunks = Object.values(v.chunk_counts || {}).reduce((a, b) => a + b, 0);
      const canActivate = v.version !== active && v.status !== "failed" && v.status !== "building";
      return h("tr.index-row", { dataset: { version: v.version, status: v.status, active: String(v.version === active) } },
        h("th", { scope: "row" }, v.version, v.description ? h("small.desc", ` ${v.description}`) : null),
        h("td", statusBadge(v, active)),
        h("td", `${v.guideline.code || "NG12"}, updated ${v.guideline.last_updated || "?"}`),
        h("td", formatDate(v.created_at)),
        h("td", String(v.recommendation_count)),
        h("td", { title: Object.entries(v.chunk_counts || {}).map(([k, n]) => `${k}: ${n}`).join(", ") }, String(chunks)),
        h("td", criteriaFlag(v)),
        h("td", h("div.actions",
          canActivate ? h("button.small.activate-btn", { type: "button", on: { click: () => activate(v) } }, `Activate ${v.version}…`) : null,
          v.version !== active && active ? h("button.secondary.small", { type: "button", on: { click: () => { setDiff(active, v.version); diff(); } } }, `Diff vs ${active}`) : null,
          h("button.secondary.small", { type: "button", on: { click: () => { $("#chunk-version").value = v.version; chunkOffset = 0; loadChunks(); $("#chunks-title").scrollIntoView(); } } }, "Chunks"))));
    })))));
  const options = (sel, pick) => {
    const select = $(sel);
    const keep = select.value;
    select.replaceChildren(...versions.map((v) => h("option", { value: v.version }, `${v.version}${v.version === active ? " (active)" : ""}`)));
    select.value = versions.some((v) => v.version === keep) ? keep : pick;
  };
  const newest = versions[0] ? versions[0].version : "";
  options("#diff-a", active);
  options("#diff-b", newest);
  options("#chunk-version", active);
  $("#rollback-btn").disabled = indexes.versions.length < 2;
}

function setDiff(a, b) { $("#diff-a").value = a; $("#diff-b").value = b; }

async function activate(v) {
  const stale = v.stale_criteria || [];
  const ok = await confirmAction(`Activate ${v.version}?`,
    h("p", `Every assessment and answer will be drawn from ${v.version} (${v.description || v.guideline.last_updated}) instead of ${indexes.active_version}.`),
    stale.length ? h("p.alert.alert-warning", `⚠ ${stale.length} criteria are STALE in this version and will not be evaluated: ${stale.join(", ")}`) : h("p", "✓ No STALE criteria."),
    h("p", "You can roll back afterwards."));
  if (!ok) return;
  await indexAction(() => post(`/admin/indexes/${encodeURIComponent(v.version)}/activate`), `${v.version} is now active.`);
}

async function rollback() {
  const ok = await confirmAction("Roll back?",
    h("p", `Serve the previously active version instead of ${indexes.active_version}. Answers change immediately.`));
  if (!ok) return;
  await indexAction(() => post("/admin/indexes/rollback"), "Rolled back.");
}

async function indexAction(run, done) {
  $("#index-error").textContent = "";
  try {
    const out = await run();
    $("#index-msg").textContent = `${done} Active version: ${out.version}.`;
    announce(`${done}`);
  } catch (err) {
    $("#index-error").textContent = err.summary || err.message;
  }
  await loadIndexes();
}

/* ---------- diff ---------- */

let lastDiff = null;
const STATUS = {
  added: ["+", "added"], removed: ["−", "removed"], text_changed: ["≠", "text changed"],
  page_moved: ["↕", "page moved"], unchanged: ["=", "unchanged"],
};

async function diff() {
  const a = $("#diff-a").value;
  const b = $("#diff-b").value;
  if (!a || !b) return;
  fill("diff-out", h("p.loading", `Comparing ${a} with ${b}…`));
  try {
    lastDiff = await get(`/admin/indexes/${encodeURIComponent(a)}/diff/${encodeURIComponent(b)}`);
    renderDiff(lastDiff);
  } catch (err) {
    fill("diff-out", h("p.alert.alert-error", { role: "alert" }, err.message));
  }
}

function sideText(rec, side) {
  if (rec.word_diff && rec.word_diff.length && rec.status === "text_changed") {
    return rec.word_diff.filter((p) => p.op === "equal" || p.op === (side === "a" ? "delete" : "insert")).map((p) =>
      p.op === "equal" ? document.createTextNode(p.text)
        : p.op === "delete" ? h("del", { title: "removed" }, h("span.sr-only", "[removed: "), p.text, h("span.sr-only", "]"))
          : h("ins", { title: "added" }, h("span.sr-only", "[added: "), p.text, h("span.sr-only", "]")));
  }
  const text = side === "a" ? rec.text_a : rec.text_b;
  return text ? [text] : [h("em.hint", side === "a" ? "(not in A)" : "(not in B)")];
}

function renderDiff(d) {
  const s = d.summary;
  const changedOnly = $("#diff-changed").checked;
  const recs = d.recommendations.filter((r) => !changedOnly || r.status !== "unchanged");
  const stale = d.stale_criteria_b || [];
  fill("diff-out",
    h("ul.chips.diff-summary", Object.entries(STATUS).map(([k, [icon, label]]) =>
      h(`li.chip.d-${k}`, h("span.icon", { "aria-hidden": "true" }, icon), ` ${label}: `, h("strong", String(s[k] ?? 0))))),
    stale.length ? h("div.alert.alert-warning.stale", { role: "alert" }, h("strong", `⚠ ${stale.length} criteria STALE in ${d.b}: `), stale.join(", "),
      ". Their recommendations' text changed; they will not be evaluated until re-curated.")
      : h("p.ok-text", `✓ No criteria STALE in ${d.b}.`),
    recs.length ? h("div.table-wrap", h("table.data.diff-table",
      h("caption", `${recs.length} recommendation${recs.length === 1 ? "" : "s"}${changedOnly ? " changed" : ""}: ${d.a} (A) beside ${d.b} (B)`),
      h("thead", h("tr", h("th", { scope: "col" }, "Recommendation"), h("th", { scope: "col" }, `A: ${d.a}`), h("th", { scope: "col" }, `B: ${d.b}`))),
      h("tbody", recs.map((r) => {
        const [icon, label] = STATUS[r.status] || ["•", r.status];
        return h(`tr.d-${r.status}`, { dataset: { rec: r.id, status: r.status } },
          h("th", { scope: "row" }, r.id, h("br"), h(`span.badge.d-${r.status}`, h("span.icon", { "aria-hidden": "true" }, icon), ` ${label}`)),
          h("td.side", r.page_a ? h("span.page-ref", `p.${r.page_a} `) : null, sideText(r, "a")),
          h("td.side", r.page_b ? h("span.page-ref", `p.${r.page_b} `) : null, sideText(r, "b")));
      })))) : h("p", `No changes: all ${s.unchanged} recommendations are identical in wording and page.`));
}

/* ---------- chunk browser ---------- */

async function loadChunks() {
  const version = $("#chunk-version").value || indexes.active_version;
  if (!version) return;
  const params = new URLSearchParams({ offset: chunkOffset, limit: CHUNK_PAGE });
  for (const [key, id] of [["doc_type", "chunk-type"], ["section", "chunk-section"], ["q", "chunk-q"]]) {
    const value = $(`#${id}`).value.trim();
    if (value) params.set(key, value);
  }
  let data;
  try {
    data = await get(`/admin/indexes/${encodeURIComponent(version)}/chunks?${params}`);
  } catch (err) {
    fill("chunks", h("p.error-text", { role: "alert" }, `Chunks unavailable: ${err.message}`));
    return;
  }
  const typeSelect = $("#chunk-type");
  const keep = typeSelect.value;
  typeSelect.replaceChildren(h("option", { value: "" }, "All types"),
    ...Object.entries(data.counts_by_type || {}).map(([t, n]) => h("option", { value: t }, `${t} (${n})`)));
  typeSelect.value = keep;
  fill("chunk-counts", h("span.hint", `${version}: `), Object.entries(data.counts_by_type || {}).map(([t, n]) => h("span.chip", `${t}: ${n}`)));
  const end = Math.min(data.total, chunkOffset + data.items.length);
  fill("chunks",
    h("p.hint", { "aria-live": "polite" }, data.total ? `${chunkOffset + 1}–${end} of ${data.total} chunks` : "No chunk matches."),
    h("ul.chunk-list", data.items.map((c) => h("li.chunk-item", { dataset: { chunk: c.chunk_id } },
      h("button.chunk-open", { type: "button", on: { click: () => openChunk(version, c.chunk_id) } },
        h("span.chunk-meta", h("code", c.chunk_id), ` · ${c.doc_type} · section ${c.section || "—"} · p.${c.page}`,
          c.recommendation_id ? ` · ${c.recommendation_id}` : ""),
        h("span.chunk-excerpt", c.excerpt))))),
    h("div.row",
      h("button.secondary.small", { type: "button", disabled: chunkOffset === 0, on: { click: () => { chunkOffset = Math.max(0, chunkOffset - CHUNK_PAGE); loadChunks(); } } }, "‹ Previous"),
      h("button.secondary.small", { type: "button", disabled: end >= data.total, on: { click: () => { chunkOffset += CHUNK_PAGE; loadChunks(); } } }, "Next ›")));
}

async function openChunk(version, chunkId) {
  fill("chunk-detail", h("p.loading", "Loading…"));
  try {
    const c = await get(`/admin/indexes/${encodeURIComponent(version)}/chunks/${encodeURIComponent(chunkId)}`);
    fill("chunk-detail", h("div.chunk-card",
      h("h3", h("code", c.chunk_id)),
      h("pre.chunk-text", c.text),
      h("h4", "Metadata"),
      h("dl.facts", Object.entries(c.metadata || {}).map(([k, v]) => [h("dt", k), h("dd", typeof v === "object" ? JSON.stringify(v) : String(v))])),
      h("h4", "Resolves to"),
      c.recommendation ? h("div", h("p", h("strong", `NG12 ${c.recommendation.id}`), ` · page ${c.recommendation.page} `,
        h("a", { href: `#guideline/${c.recommendation.id}` }, "open in the viewer")), h("blockquote.verbatim", c.recommendation.text))
        : h("p.hint", "No numbered recommendation (guideline text).")));
  } catch (err) {
    fill("chunk-detail", h("p.error-text", { role: "alert" }, err.message));
  }
}
