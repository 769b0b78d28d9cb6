// Chat tab: the signed-in user's sessions, conversation bubbles, and each answer with its grounding
// badge, citation cards (opening the viewer), the query strategy and the clinical summary read.
// After a reload the session (sessionStorage) and its history come back from the API.
import { get, post, del } from "./api.js";
import { $, h, fill, formatDate, viewerLink } from "./dom.js";
import { groundingBadge, STRATEGIES } from "./vocab.js";
import { noteGuideline } from "./about.js";

const SESSION_KEY = "ng12-session";
let sessionId = sessionStorage.getItem(SESSION_KEY);
let sessions = [];
let busy = false;
// A new conversation being made: a question asked meanwhile waits for it, so the new conversation
// never empties the history after the question's answer is shown (nor takes the question's turn).
let creating = null;

export function init() {
  $("#chat-form").addEventListener("submit", (e) => { e.preventDefault(); ask(); });
  $("#message").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); ask(); }
  });
  $("#new-session").addEventListener("click", async () => {
    if (busy || creating) return;
    creating = (async () => { await newSession(); renderTurns([]); })();
    try { await creating; await loadSessions(); $("#message").focus(); }
    catch (err) { $("#chat-error").textContent = err.message; }
    finally { creating = null; }
  });
}

export async function show() {
  await loadSessions();
  await loadHistory();
}

async function newSession() {
  const made = await post("/chat/sessions");
  setSession(made.session_id);
}

function setSession(id) {
  sessionId = id;
  if (id) sessionStorage.setItem(SESSION_KEY, id); else sessionStorage.removeItem(SESSION_KEY);
  $("#session-label").textContent = id ? `Conversation ${id.slice(0, 8)}` : "";
  $("#session-label").dataset.session = id || "";
  markCurrent();
}

async function loadSessions() {
  try {
    sessions = (await get("/chat/sessions")).sessions;
  } catch (err) { $("#chat-error").textContent = err.message; return; }
  const list = $("#session-list");
  fill(list, sessions.length ? sessions.map((s) => h("li.session-item", { dataset: { session: s.session_id } },
    h("button.session-open", { type: "button", on: { click: () => openSession(s.session_id) } },
      h("span.session-name", `Conversation ${s.session_id.slice(0, 8)}`), h("span.session-date", formatDate(s.created_at))),
    h("button.session-delete.secondary.small", {
      type: "button", "aria-label": `Delete conversation ${s.session_id.slice(0, 8)}`,
      on: { click: () => deleteSession(s.session_id) },
    }, "✕"))) : h("li.hint", "No conversations yet."));
  markCurrent();
}

function markCurrent() {
  for (const item of document.querySelectorAll(".session-item")) {
    const current = item.dataset.session === sessionId;
    item.classList.toggle("current", current);
    const btn = item.querySelector(".session-open");
    if (current) btn.setAttribute("aria-current", "true"); else btn.removeAttribute("aria-current");
  }
}

async function openSession(id) {
  setSession(id);
  await loadHistory();
}

async function deleteSession(id) {
  try { await del(`/chat/${id}`); } catch (err) { /* already gone */ }
  if (id === sessionId) { setSession(null); renderTurns([]); }
  await loadSessions();
}

async function loadHistory() {
  $("#chat-error").textContent = "";
  try {
    if (!sessionId && sessions.length) setSession(sessions[0].session_id);
    if (!sessionId) { renderTurns([]); return; }  // a session is made on the first question
    setSession(sessionId);
    const asked = sessionId;
    const history = await get(`/chat/${asked}/history`);
    if (asked === sessionId) renderTurns(history.turns);  // not if another session was opened meanwhile
  } catch (err) {
    if (err.status === 404) { setSession(null); renderTurns([]); return; }
    $("#chat-error").textContent = err.message;
  }
}

function renderTurns(turns) {
  const history = $("#history");
  if (!turns.length) {
    fill(history, h("p.empty-state.chat-empty", "Ask a question about NG12: referral criteria, symptoms, ages, tests. Answers quote the guideline and cite recommendation and page."));
    return;
  }
  fill(history, turns.map((t) => t.role === "user" ? userBubble(t.content, t.at) : answerBubble(t, t)));
}

function userBubble(text, at) {
  return h("div.turn.turn-user", h("div.bubble", h("span.sr-only", "You: "), h("p", text)),
    at ? h("time.when", { datetime: at }, formatDate(at)) : null);
}

/** Answer text: paragraphs; "> " lines as the guideline's quoted words. */
function answerText(text) {
  const box = h("div.answer-text");
  let quote = null;
  for (const line of String(text).split("\n")) {
    if (line.startsWith(">")) {
      if (!quote) { quote = h("blockquote.quote"); box.append(quote); }
      quote.append(h("p", line.replace(/^>\s?/, "")));
    } else if (line.trim() === "") {
      quote = null;
    } else if (quote && /^\s*-\s/.test(line)) {
      quote.append(h("p.bullet", line.trim()));
    } else {
      quote = null;
      box.append(h("p", line));
    }
  }
  return box;
}

function citationCards(citations) {
  if (!citations || !citations.length) return null;
  return h("div.citations", h("h4", `Citations (${citations.length})`),
    h("ul.cite-cards", citations.map((c) => h("li.cite-card", { dataset: { recommendationId: c.recommendation_id || "" } },
      h("p.cite-head", h("strong", c.recommendation_id ? `NG12 ${c.recommendation_id}` : "NG12 text"),
        c.section ? ` · section ${c.section}` : "", ` · page ${c.page}`),
      h("blockquote.cite-excerpt", c.excerpt),
      c.recommendation_id ? viewerLink(c.recommendation_id, c.page, `Open ${c.recommendation_id} in the viewer`) : null))));
}

function answerBubble(t, extra) {
  const g = t.grounding;
  const bubble = h(`div.bubble.g-${g || "unknown"}`,
    h("div.answer-meta", h("span.sr-only", "NG12 Assessor: "), g ? groundingBadge(g) : null),
    answerText(t.content),
    citationCards(t.citations));
  if (extra) {
    const meta = [];
    if (extra.query && extra.query.strategy) {
      meta.push(h("p.strategy", h("strong", "Search: "), STRATEGIES[extra.query.strategy] || extra.query.strategy,
        extra.query.text && extra.query.strategy !== "direct" ? h("span", ` (“${extra.query.text}”)`) : null));
    }
    const cs = extra.clinical_summary;
    if (cs && Object.keys(cs).length) {
      const chips = [];
      if (cs.age !== undefined) chips.push(`age ${cs.age}`);
      if (cs.sex) chips.push(cs.sex);
      for (const s of cs.symptoms || []) chips.push(s);
      if (cs.duration_days !== undefined) chips.push(`${cs.duration_days} days`);
      for (const s of cs.cancer_sites || []) chips.push(`${s} cancer`);
      meta.push(h("div.clinical-summary", h("strong", "Read from your question: "),
        h("ul.chips", chips.map((c) => h("li.chip", c)))));
    }
    if (meta.length) bubble.append(h("div.answer-extra", meta));
  }
  return h("div.turn.turn-assistant", bubble, t.at ? h("time.when", { datetime: t.at }, formatDate(t.at)) : null);
}

async function ask() {
  if (!$("#message").value.trim() || busy) return;
  busy = true;
  if (creating) { try { await creating; } catch { /* the error is shown by the new-conversation button */ } }
  const message = $("#message").value.trim();
  if (!message) { busy = false; return; }
  $("#ask-btn").disabled = true;
  $("#chat-error").textContent = "";
  $("#chat-busy").textContent = "Searching NG12…";
  const history = $("#history");
  if (history.querySelector(".chat-empty")) history.replaceChildren();
  const pending = userBubble(message, new Date().toISOString());
  history.append(pending);
  try {
    if (!sessionId) { await newSession(); }
    const reply = await post("/chat", { session_id: sessionId, message });
    $("#message").value = "";
    history.append(answerBubble({ content: reply.answer, citations: reply.citations, grounding: reply.grounding, at: new Date().toISOString() }, reply));
    noteGuideline(reply.guideline);
    pending.scrollIntoView({ block: "start" });
    if (!sessions.some((s) => s.session_id === sessionId)) loadSessions();
  } catch (err) {
    pending.remove();
    $("#chat-error").textContent = err.summary || err.message;
  } finally {
    busy = false;
    $("#ask-btn").disabled = false;
    $("#chat-busy").textContent = "";
  }
}
