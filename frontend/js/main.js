// NG12 Assessor web app: sign-in, the tabs (an ARIA tablist driven by the URL hash), and the panels.
import { get, hasToken, setExpiredHandler, signIn, signOut } from "./api.js";
import { $, $$ } from "./dom.js";
import * as assess from "./assess.js";
import * as chat from "./chat.js";
import * as viewer from "./viewer.js";
import * as admin from "./admin.js";
import * as about from "./about.js";

const PANELS = { assess, chat, guideline: viewer, admin, about };
const started = new Set();
let me = null;

function showSignIn(message) {
  me = null;
  $("#app").hidden = true;
  $("#whoami").hidden = true;
  $("#signin").hidden = false;
  $("#signin-error").textContent = message || "";
  $("#username").focus();
}

function tabs() { return $$("#tablist [role=tab]").filter((t) => !t.hidden); }

/** "#guideline/1.1.1" -> ["guideline", "1.1.1"] */
function parseHash() {
  const [name, ...rest] = decodeURIComponent(location.hash.replace(/^#/, "")).split("/");
  return [PANELS[name] ? name : "assess", rest.join("/")];
}

function activate(name, arg, focusTab = false) {
  if (name === "admin" && !(me && me.roles.includes("admin"))) name = "assess";
  for (const tab of $$("#tablist [role=tab]")) {
    const selected = tab.dataset.tab === name;
    tab.setAttribute("aria-selected", String(selected));
    tab.tabIndex = selected ? 0 : -1;
    if (selected && focusTab) tab.focus();
  }
  for (const panel of $$("[role=tabpanel]")) panel.hidden = panel.id !== `panel-${name}`;
  const module = PANELS[name];
  if (!started.has(name)) { started.add(name); module.init({ me }); }
  if (module.show) module.show(arg);
}

export function go(name, arg) {
  const hash = arg ? `#${name}/${encodeURIComponent(arg)}` : `#${name}`;
  if (location.hash === hash) activate(name, arg);
  else location.hash = hash;
}
window.addEventListener("ng12:go", (e) => go(e.detail.tab, e.detail.arg));

function initTabs() {
  const list = $("#tablist");
  list.addEventListener("click", (e) => {
    const tab = e.target.closest("[role=tab]");
    if (tab) go(tab.dataset.tab);
  });
  list.addEventListener("keydown", (e) => {  // roving focus; arrows move AND select (automatic activation)
    const all = tabs();
    const i = all.indexOf(document.activeElement);
    if (i < 0) return;
    const next = { ArrowRight: i + 1, ArrowLeft: i - 1, Home: 0, End: all.length - 1 }[e.key];
    if (next === undefined) return;
    e.preventDefault();
    const tab = all[(next + all.length) % all.length];
    tab.focus();
    go(tab.dataset.tab);
  });
  window.addEventListener("hashchange", () => {
    if (!me) return;
    const [name, arg] = parseHash();
    activate(name, arg);
  });
}

async function start() {
  try {
    me = await get("/auth/me");
  } catch (err) {
    showSignIn(err.status === 401 ? "" : err.message);
    return;
  }
  $("#whoami-name").textContent = `${me.subject.replace(/^[a-z_]+:/, "")} (${me.roles.join(", ")})`;
  $("#tab-admin").hidden = !me.roles.includes("admin");
  $("#signin").hidden = true;
  $("#whoami").hidden = false;
  $("#app").hidden = false;
  const [name, arg] = parseHash();
  activate(name, arg);
  about.init({ me });
  about.loadServedVersion();
}

$("#signin-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  $("#signin-error").textContent = "";
  try {
    await signIn($("#username").value, $("#password").value);
  } catch (err) {
    $("#signin-error").textContent = err.message;
    return;
  }
  $("#password").value = "";
  start();
});

$("#signout").addEventListener("click", () => {
  signOut();
  sessionStorage.removeItem("ng12-session");
  showSignIn("Signed out.");
});

setExpiredHandler(showSignIn);
initTabs();
if (hasToken()) start(); else showSignIn("");
