// NG12 Assessor web app: signs in, then calls the gateway's /api/v1 with the bearer token.
"use strict";
const API = "/api/v1";
const $ = (id) => document.getElementById(id);

let token = sessionStorage.getItem("ng12-token");

function showSignIn(message) {
  token = null;
  sessionStorage.removeItem("ng12-token");
  $("app").hidden = true;
  $("whoami").hidden = true;
  $("signin").hidden = false;
  $("signin-error").textContent = message || "";
}

async function call(method, path, body) {
  const opts = { method, headers: { "Accept": "application/json" } };
  if (token) opts.headers["Authorization"] = `Bearer ${token}`;
  if (body !== undefined) { opts.headers["Content-Type"] = "application/json"; opts.body = JSON.stringify(body); }
  const resp = await fetch(API + path, opts);
  if (resp.status === 204) return null;
  const data = await resp.json().catch(() => ({}));
  if (resp.status === 401) {
    showSignIn("Your sign-in has expired; sign in again.");
  }
  if (!resp.ok) {
    const err = (data && data.error) || {};
    throw new Error(`${resp.status} ${err.code || ""}: ${err.message || resp.statusText}`);
  }
  return data;
}

function el(tag, text, cls) {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  if (cls) node.className = cls;
  return node;
}

function citationNodes(citations) {
  return (citations || []).map((c) => {
    const rec = c.recommendation_id ? `, rec ${c.recommendation_id}` : "";
    return el("div", `[NG12 p.${c.page}${rec}] ${c.excerpt}`, "cite");
  });
}

function showAssessment(data) {
  const out = $("assess-out");
  out.hidden = false; out.replaceChildren();
  const a = data.assessment;
  out.append(el("div", `Top action: ${a.top_action} (engine: ${a.engine})`, "top-action"));
  if (!a.complete) {  // never hidden: unread findings were not checked against NG12
    const warn = el("div", `INCOMPLETE - not understood, not checked against NG12: ${a.unrecognised.join("; ")}`, "error incomplete");
    warn.setAttribute("role", "alert");
    out.append(warn);
  }
  out.append(el("div", a.recommended_action));
  for (const r of a.needs_review) out.append(el("div", `Review: ${r.detail}`, "needs-review"));
  for (const t of a.test_interpretations || []) out.append(el("div", `Test ${t.key}: ${t.rule}`, "test-read"));
  for (const m of a.matched_recommendations) {
    const rec = el("div", "", "matched");
    rec.dataset.recommendationId = m.recommendation_id;
    rec.append(el("strong", `NG12 ${m.recommendation_id} (p.${m.page}) ${m.action}`));
    rec.append(el("div", `"${m.text}"`, "cite"));
    rec.append(el("small", `met by: ${m.criteria_met.join("; ")}`));
    out.append(rec);
  }
  for (const n of a.near_misses) out.append(el("div", `Near miss ${n.recommendation_id}: missing ${n.missing.join("; ")}`, "near-miss"));
  for (const s of a.safety_netting) out.append(el("div", `Safety netting: ${s}`, "cite"));
  if (a.reasoning) out.append(el("div", a.reasoning));
  out.append(el("div", `Guideline: ${data.guideline.title} (last updated ${data.guideline.last_updated}, index ${data.guideline.index_version})`));
  out.append(el("h3", "Citations"));
  out.append(...citationNodes(data.citations));
}

function showError(target, err) {
  target.hidden = false;
  target.replaceChildren(el("div", String(err.message || err), "error"));
}

async function loadPatients() {
  try {
    const patients = await call("GET", "/patients");
    $("patient").replaceChildren(...patients.map((p) => {
      const opt = el("option", `${p.patient_id}: ${p.name}, ${p.age} ${p.gender}, ${p.symptoms.join(", ")}`);
      opt.value = p.patient_id;
      return opt;
    }));
  } catch (err) { showError($("assess-out"), err); }
}

$("assess-known").addEventListener("click", async () => {
  try { showAssessment(await call("POST", `/assess/${encodeURIComponent($("patient").value)}`)); }
  catch (err) { showError($("assess-out"), err); }
});

$("assess-record").addEventListener("click", async () => {
  const record = {
    age: Number($("age").value), gender: $("gender").value, smoking_history: $("smoking").value,
    symptoms: $("symptoms").value.split(",").map((s) => s.trim()).filter(Boolean),
    symptom_duration_days: $("duration").value === "" ? null : Number($("duration").value),
  };
  try { showAssessment(await call("POST", "/assess", record)); }
  catch (err) { showError($("assess-out"), err); }
});

let sessionId = sessionStorage.getItem("ng12-session");

async function newSession() {  // ids are made by the server and belong to the signed-in user
  const made = await call("POST", "/chat/sessions");
  setSession(made.session_id);
}

function setSession(id) {
  sessionId = id;
  sessionStorage.setItem("ng12-session", id);
  $("session-label").textContent = `session ${id}`;
}

function renderTurns(turns) {
  $("history").replaceChildren(...turns.flatMap((t) => [
    el("div", `${t.role === "user" ? "You" : "NG12"}: ${t.content}`, t.role === "user" ? "turn-user out" : "out"),
  ]));
}

async function loadHistory() {
  try {
    if (!sessionId) await newSession();
    renderTurns((await call("GET", `/chat/${sessionId}/history`)).turns);
  } catch (err) {
    if (String(err.message).startsWith("404")) { await newSession(); renderTurns([]); return; }
    showError($("history"), err);
  }
}

$("chat-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const message = $("message").value.trim();
  if (!message) return;
  try {
    if (!sessionId) await newSession();
    await call("POST", "/chat", { session_id: sessionId, message });
    $("message").value = "";
    await loadHistory();
  } catch (err) { showError($("history"), err); }
});

$("new-session").addEventListener("click", async () => {
  try { await call("DELETE", `/chat/${sessionId}`); } catch (err) { /* the old session may already be gone */ }
  try { await newSession(); renderTurns([]); } catch (err) { showError($("history"), err); }
});

async function start() {
  try {
    const me = await call("GET", "/auth/me");
    $("whoami-name").textContent = `${me.subject.replace(/^[a-z_]+:/, "")} (${me.roles.join(", ")})`;
  } catch (err) { return; }  // showSignIn was called on 401
  $("signin").hidden = true;
  $("whoami").hidden = false;
  $("app").hidden = false;
  if (sessionId) $("session-label").textContent = `session ${sessionId}`;
  loadPatients();
  loadHistory();
}

$("signin-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = new URLSearchParams({ username: $("username").value, password: $("password").value });
  const resp = await fetch(API + "/auth/token", { method: "POST", body: form });
  const data = await resp.json().catch(() => ({}));
  if (!resp.ok) { $("signin-error").textContent = (data.error && data.error.message) || resp.statusText; return; }
  token = data.access_token;
  sessionStorage.setItem("ng12-token", token);
  $("password").value = "";
  start();
});

$("signout").addEventListener("click", () => {
  sessionStorage.removeItem("ng12-session");
  sessionId = null;
  showSignIn("Signed out.");
});

if (token) start(); else showSignIn("");
