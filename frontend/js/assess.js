// Assess tab: the record form (every field POST /assess takes), stored patients to start from,
// and the result: top action with NG12's timeframe, completeness, matches verbatim, near misses,
// safety netting, assumptions, review items, tests used and not used; copy summary and print.
import { get, post } from "./api.js";
import { $, $$, h, fill, verbatim, viewerLink, announce } from "./dom.js";
import { actionBadge, actionInfo } from "./vocab.js";
import { attach as attachSuggest } from "./suggest.js";
import { noteGuideline } from "./about.js";

let patients = [];
let baseline = null;  // {id, name, json}: the stored patient loaded into the form, as loaded
let last = null;      // the last assessment response shown

const lines = (id) => $(`#${id}`).value.split("\n").map((s) => s.trim()).filter(Boolean);

export function init() {
  for (const field of $$("#record-form textarea[data-suggest]")) attachSuggest(field);
  $("#patient").addEventListener("change", () => loadPatient($("#patient").value));
  $("#add-test").addEventListener("click", () => { const row = addTestRow(); row.querySelector("input").focus(); });
  $("#clear-btn").addEventListener("click", () => { $("#patient").value = ""; clearForm(); setBaseline(null); $("#age").focus(); });
  $("#record-form").addEventListener("input", updateStatus);
  $("#record-form").addEventListener("change", updateStatus);
  $("#record-form").addEventListener("submit", (e) => { e.preventDefault(); assess(); });
  clearForm();
  loadPatients();
}

async function loadPatients() {
  try {
    patients = await get("/patients");
  } catch (err) {
    $("#form-error").textContent = `The stored patients could not be loaded: ${err.message}`;
    return;
  }
  const select = $("#patient");
  select.replaceChildren(h("option", { value: "" }, "(a new record)"), ...patients.map((p) =>
    h("option", { value: p.patient_id }, `${p.patient_id}: ${p.name}, ${p.age} ${p.gender.toLowerCase()}, ${p.symptoms.join(", ")}`)));
}

function clearForm() {
  for (const id of ["age", "duration", "symptoms", "exam", "past-history"]) $(`#${id}`).value = "";
  $("#gender").value = "";
  $("#smoking").value = "";
  $("#tests-body").replaceChildren();
  for (const el of $$("#record-form [aria-invalid]")) el.removeAttribute("aria-invalid");
  $("#form-error").textContent = "";
}

function addTestRow(name = "", value = "", unit = "") {
  const body = $("#tests-body");
  const n = body.children.length + 1;
  const remove = h("button.secondary.small.remove-test", { type: "button", "aria-label": `Remove test result ${n}` }, "✕");
  const row = h("tr",
    h("td", h("input.test-name", { type: "text", "aria-label": `Test ${n} name`, placeholder: "e.g. haemoglobin", value: name })),
    h("td", h("input.test-value", { type: "text", "aria-label": `Test ${n} value`, placeholder: "e.g. 110", value: String(value) })),
    h("td", h("input.test-unit", { type: "text", "aria-label": `Test ${n} unit`, placeholder: "e.g. g/L", value: unit })),
    h("td", remove));
  remove.addEventListener("click", () => { row.remove(); updateStatus(); $("#add-test").focus(); });
  body.append(row);
  return row;
}

function loadPatient(id) {
  clearForm();
  const p = patients.find((x) => x.patient_id === id);
  if (!p) { setBaseline(null); return; }
  $("#age").value = p.age;
  $("#gender").value = ["Female", "Male"].includes(p.gender) ? p.gender : "Other";
  $("#smoking").value = ["Never Smoked", "Ex-Smoker", "Current Smoker"].includes(p.smoking_history) ? p.smoking_history : "";
  $("#duration").value = p.symptom_duration_days ?? "";
  $("#symptoms").value = p.symptoms.join("\n");
  $("#exam").value = (p.exam_findings || []).join("\n");
  $("#past-history").value = (p.history || []).join("\n");
  for (const [k, v] of Object.entries(p.test_results || {})) addTestRow(k, v, "");
  setBaseline(p);
}

function setBaseline(p) {
  baseline = p ? { id: p.patient_id, name: p.name, json: JSON.stringify(readRecord()) } : null;
  updateStatus();
}

function edited() { return !baseline || JSON.stringify(readRecord()) !== baseline.json; }

function updateStatus() {
  const status = $("#record-status");
  if (!baseline) status.textContent = "A new record.";
  else if (edited()) status.textContent = `${baseline.id} ${baseline.name}: edited (the edited record is assessed; the stored one is unchanged).`;
  else status.textContent = `${baseline.id} ${baseline.name}: the stored record.`;
  status.classList.toggle("edited", Boolean(baseline && edited()));
}

function testValue(value, unit) {
  const v = value.trim();
  if (unit.trim()) return `${v} ${unit.trim()}`;
  return /^-?\d+(\.\d+)?$/.test(v) ? Number(v) : v;
}

function readRecord() {
  const tests = {};
  for (const row of $$("#tests-body tr")) {
    const name = row.querySelector(".test-name").value.trim();
    const value = row.querySelector(".test-value").value;
    if (name && value.trim()) tests[name] = testValue(value, row.querySelector(".test-unit").value);
  }
  const age = $("#age").value.trim();
  const duration = $("#duration").value.trim();
  return {
    age: age === "" ? null : Number(age),
    gender: $("#gender").value,
    smoking_history: $("#smoking").value,
    symptoms: lines("symptoms"),
    exam_findings: lines("exam"),
    history: lines("past-history"),
    symptom_duration_days: duration === "" ? null : Number(duration),
    test_results: tests,
  };
}

function validate(record) {
  const problems = [];
  const bad = (id, message) => { $(`#${id}`).setAttribute("aria-invalid", "true"); problems.push([id, message]); };
  for (const el of $$("#record-form [aria-invalid]")) el.removeAttribute("aria-invalid");
  if (record.age === null || !Number.isInteger(record.age) || record.age < 0 || record.age > 120) bad("age", "Age: a whole number of years from 0 to 120.");
  if (!record.gender) bad("gender", "Sex: choose one (the recommendations for women or men depend on it).");
  if (record.symptom_duration_days !== null && (!Number.isInteger(record.symptom_duration_days) || record.symptom_duration_days < 0)) bad("duration", "Symptom duration: a whole number of days, or leave it empty.");
  if (!record.symptoms.length && !record.exam_findings.length && !Object.keys(record.test_results).length) bad("symptoms", "Give at least one symptom, examination finding or test result.");
  return problems;
}

async function assess() {
  const record = readRecord();
  const problems = validate(record);
  if (problems.length) {
    $("#form-error").textContent = problems.map((p) => p[1]).join(" ");
    $(`#${problems[0][0]}`).focus();
    return;
  }
  $("#form-error").textContent = "";
  const out = $("#assess-out");
  out.setAttribute("aria-busy", "true");
  $("#assess-btn").disabled = true;
  fill(out, h("p.loading", "Assessing against NG12…"));
  try {
    const stored = baseline && !edited();
    const data = stored ? await post(`/assess/${encodeURIComponent(baseline.id)}`) : await post("/assess", record);
    last = { data, source: stored ? `${baseline.id} (stored record)` : baseline ? `${baseline.id}, edited` : "typed record" };
    render(last);
    noteGuideline(data.guideline);
  } catch (err) {
    fill(out, h("div.alert.alert-error", { role: "alert" }, h("strong", "The assessment failed. "), err.summary || err.message));
  } finally {
    out.setAttribute("aria-busy", "false");
    $("#assess-btn").disabled = false;
  }
}

function section(title, cls, ...children) {
  return h(`section.block.${cls}`, h("h3", title), ...children);
}

function patientLine(p) {
  const parts = [`${p.age}-year-old ${String(p.gender || "").toLowerCase()}`];
  if (p.smoking_history) parts.push(p.smoking_history.toLowerCase());
  if (p.symptom_duration_days !== null && p.symptom_duration_days !== undefined) parts.push(`symptoms for ${p.symptom_duration_days} days`);
  return parts.join(", ");
}

function render({ data, source }) {
  const a = data.assessment;
  const info = actionInfo(a.top_action);
  const out = $("#assess-out");
  const head = h("header.result-head",
    h("div.headline", actionBadge(a.top_action, "big"),
      h("span.badge.risk", { dataset: { risk: a.risk_level } }, "Risk level: ", a.risk_level.replace(/_/g, " "))),
    h("p.timeframe", h("strong", "NG12 timeframe: "), info.timeframe || "—"),
    h("p.subject", `Assessed: ${source}. ${patientLine(data.patient)}.`),
    h("div.row.result-actions",
      h("button.secondary.small#copy-summary", { type: "button", on: { click: copySummary } }, "Copy summary"),
      h("button.secondary.small#print-result", { type: "button", on: { click: () => window.print() } }, "Print")),
    h("p.copy-status.hint#copy-status", { "aria-live": "polite" }));

  const blocks = [head];
  if (!a.complete) {
    blocks.push(h("div.alert.alert-warning.incomplete", { role: "alert" },
      h("strong", "⚠ Incomplete: not everything in the record was understood. "),
      "These entries were NOT checked against NG12; reword them or check them yourself:",
      h("ul", a.unrecognised.map((u) => h("li", `“${u}”`)))));
  }
  const review = a.needs_review.filter((r) => r.kind !== "unread_finding" || a.complete);
  if (review.length) {
    blocks.push(h("div.alert.alert-review.needs-review", { role: "note", "aria-label": "Needs your review" },
      h("strong", "⚑ Needs your review"),
      h("ul", review.map((r) => h("li", r.recommendation_id ? `${r.recommendation_id}: ${r.detail}` : r.detail)))));
  }
  if (a.recommended_action) blocks.push(h("p.recommended", h("strong", "Recommended action: "), a.recommended_action.split("\n")[0].replace(/ NG12 \d.*$/, "")));

  blocks.push(section(`Recommendations met (${a.matched_recommendations.length})`, "matches",
    a.matched_recommendations.length ? a.matched_recommendations.map((m) =>
      h("article.matched", { dataset: { recommendationId: m.recommendation_id } },
        h("header.rec-head", h("strong.rec-id", `NG12 ${m.recommendation_id}`), " ", actionBadge(m.action),
          h("span.page", ` page ${m.page}`), m.cancer_site ? h("span.site", ` · ${m.cancer_site}`) : null),
        verbatim(m.text, "verbatim cite"),
        h("p.met-by", h("strong", "Met by: "), m.criteria_met.join("; ")),
        m.provisional.length ? h("p.provisional", h("strong", "⚑ Judgement call: "), m.provisional.join("; ")) : null,
        viewerLink(m.recommendation_id, m.page, `Open ${m.recommendation_id} on page ${m.page}, highlighted`)))
      : h("p", "None.")));

  if (a.safety_netting.length) {
    blocks.push(section("Safety netting", "safety", a.safety_netting.map((s) => verbatim(s, "verbatim cite"))));
  }
  blocks.push(section(`Near misses (${a.near_misses.length})`, "near-misses",
    a.near_misses.length ? h("ul.near-list", a.near_misses.map((n) => h("li.near-miss", { dataset: { recommendationId: n.recommendation_id } },
      h("a", { href: `#guideline/${n.recommendation_id}` }, `NG12 ${n.recommendation_id}`), ": missing ", n.missing.join("; "))))
      : h("p", "None: no unmet recommendation shares a finding with this record.")));

  const tests = a.test_interpretations || [];
  const unused = a.unused_test_results || [];
  if (tests.length || unused.length) {
    blocks.push(section("Test results", "tests",
      tests.length ? h("table.data",
        h("caption", "Read and used"),
        h("thead", h("tr", ["Test", "Value used", "Rule", "Establishes", "Decides"].map((t) => h("th", { scope: "col" }, t)))),
        h("tbody", tests.map((t) => h("tr",
          h("td", t.key), h("td", t.value_used !== null && t.value_used !== undefined ? `${t.value_used} ${t.unit}` : String(t.value)),
          h("td", t.rule, t.source ? h("small.source", ` Source: ${t.source}`) : null),
          h("td", t.finding || "—"), h("td", t.decides.length ? t.decides.join(", ") : "—"))))) : null,
      unused.length ? h("div.unused", h("h4", "Not used"), h("ul", unused.map((u) => h("li", h("strong", `${u.key} (${u.value}): `), u.reason)))) : null));
  }

  blocks.push(section("Assumptions applied", "assumptions", h("ul", a.assumptions.map((s) => h("li", s)))));

  if (a.findings.length) {
    blocks.push(section("How the record was read", "findings", h("table.data",
      h("thead", h("tr", ["Entry", "Read as", "How", "Status"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", a.findings.map((f) => h(`tr.status-${f.status}`,
        h("td", f.clause), h("td", f.label || "—"),
        h("td", f.tier ? `${f.tier}${f.evidence ? ` (“${f.evidence}”)` : ""}` : "—"),
        h("td", f.status === "unread" ? "⚠ not understood" : f.status.replace(/_/g, " "))))))));
  }
  if (a.reasoning) blocks.push(section("Reasoning", "reasoning", h("p.reasoning-text", a.reasoning)));
  blocks.push(h("p.guideline-ref.hint", `${data.guideline.title || "NG12"} (NICE ${data.guideline.code}), last updated ${data.guideline.last_updated}; index ${data.guideline.index_version}; engine: ${a.engine}. Decision support: the referral decision is yours.`));
  fill(out, ...blocks);
  out.querySelector(".result-head").scrollIntoView({ block: "nearest" });
}

export function summaryText({ data, source }) {
  const a = data.assessment;
  const p = data.patient;
  const g = data.guideline;
  const info = actionInfo(a.top_action);
  const out = [];
  out.push(`NG12 assessment (NICE NG12 "${g.title}", last updated ${g.last_updated}; index ${g.index_version})`);
  out.push(`Patient: ${patientLine(p)} (${source}).`);
  const findings = [...(p.symptoms || []), ...(p.exam_findings || [])];
  if (findings.length) out.push(`Findings: ${findings.join("; ")}.`);
  if ((p.history || []).length) out.push(`History: ${p.history.join("; ")}.`);
  const tests = Object.entries(p.test_results || {});
  if (tests.length) out.push(`Tests: ${tests.map(([k, v]) => `${k} ${v}`).join("; ")}.`);
  out.push("");
  out.push(`Top action: ${info.label} (${info.timeframe}). Risk level: ${a.risk_level.replace(/_/g, " ")}.`);
  if (!a.complete) out.push(`INCOMPLETE - not understood and NOT checked against NG12: ${a.unrecognised.join("; ")}.`);
  out.push("");
  if (a.matched_recommendations.length) {
    out.push("NG12 recommendations met:");
    for (const m of a.matched_recommendations) {
      out.push(`- NG12 ${m.recommendation_id} (page ${m.page}), ${actionInfo(m.action).label.toLowerCase()}:`);
      out.push(`  "${m.text.replace(/\n/g, " ")}"`);
      out.push(`  Met by: ${m.criteria_met.join("; ")}${m.provisional.length ? `. Judgement call: ${m.provisional.join("; ")}` : ""}.`);
    }
  } else {
    out.push("No NG12 recommendation met.");
  }
  if (a.needs_review.length) {
    out.push("", "Needs review:");
    for (const r of a.needs_review) out.push(`- ${r.recommendation_id ? r.recommendation_id + ": " : ""}${r.detail}`);
  }
  if (a.near_misses.length) {
    out.push("", "Near misses:");
    for (const n of a.near_misses) out.push(`- NG12 ${n.recommendation_id}: missing ${n.missing.join("; ")}`);
  }
  if (a.safety_netting.length) {
    out.push("", "Safety netting (NG12):");
    for (const s of a.safety_netting) out.push(`- "${s.replace(/\n/g, " ")}"`);
  }
  out.push("", "Decision support from NICE NG12; the clinical decision is the clinician's.");
  return out.join("\n");
}

async function copySummary() {
  if (!last) return;
  const text = summaryText(last);
  const status = $("#copy-status");
  try {
    await navigator.clipboard.writeText(text);
    status.textContent = "Summary copied: paste it into the patient's record.";
    announce("Summary copied to the clipboard.");
  } catch (err) {
    // no clipboard permission: show the text, selected, to copy by hand
    const area = h("textarea.summary-fallback", { rows: 10, readonly: true, "aria-label": "Referral summary" });
    area.value = text;
    status.replaceChildren("The clipboard is not available here; copy the summary below (it is selected).", area);
    area.focus();
    area.select();
  }
}

export function show() {}
