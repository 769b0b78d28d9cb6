// The gateway's /api/v1 with the signed-in user's bearer token (kept for this tab in sessionStorage).
export const API = "/api/v1";
const TOKEN_KEY = "ng12-token";
let token = sessionStorage.getItem(TOKEN_KEY);
let onExpired = () => {};

export class ApiError extends Error {
  constructor(status, code, message, extra) {
    super(message);
    this.status = status;
    this.code = code || "";
    this.extra = extra || {};
  }
  /** "422 invalid_request: age: must be at most 120" */
  get summary() { return `${this.status}${this.code ? " " + this.code : ""}: ${this.message}`; }
}

export const hasToken = () => Boolean(token);
export function setExpiredHandler(fn) { onExpired = fn; }
export function signOut() { token = null; sessionStorage.removeItem(TOKEN_KEY); }

export async function signIn(username, password) {
  const resp = await fetch(`${API}/auth/token`, {
    method: "POST", body: new URLSearchParams({ username, password }),
  });
  const data = await resp.json().catch(() => ({}));
  if (!resp.ok) throw toError(resp, data);
  token = data.access_token;
  sessionStorage.setItem(TOKEN_KEY, token);
}

function toError(resp, data) {
  // {"error": {code, message, fields?}} (the gateway) or {"detail": {code, message}} / {"detail": "..."}
  const err = (data && (data.error || data.detail)) || {};
  if (typeof err === "string") return new ApiError(resp.status, "", err);
  let message = err.message || resp.statusText || "The request failed.";
  if (Array.isArray(err.fields) && err.fields.length && !err.fields.every((f) => message.includes(f.field))) {
    message += " (" + err.fields.map((f) => `${f.field}: ${f.problem}`).join("; ") + ")";
  }
  return new ApiError(resp.status, err.code, message, err);
}

async function send(method, path, body, accept) {
  const opts = { method, headers: { Accept: accept } };
  if (token) opts.headers.Authorization = `Bearer ${token}`;
  if (body instanceof FormData) opts.body = body;
  else if (body !== undefined) { opts.headers["Content-Type"] = "application/json"; opts.body = JSON.stringify(body); }
  let resp;
  try {
    resp = await fetch(API + path, opts);
  } catch (exc) {
    throw new ApiError(0, "network", "The server could not be reached; check your connection and try again.");
  }
  if (resp.status === 401 && token) { signOut(); onExpired("Your sign-in has expired; sign in again."); }
  return resp;
}

/** JSON call; throws ApiError with the server's message on any non-2xx. */
export async function call(method, path, body) {
  const resp = await send(method, path, body, "application/json");
  if (resp.status === 204) return null;
  const data = await resp.json().catch(() => ({}));
  if (!resp.ok) throw toError(resp, data);
  return data;
}

/** A binary resource (page images) as a data: URL (the CSP allows img-src 'self' data:). */
export async function fetchImage(path) {
  const resp = await send("GET", path, undefined, "image/png");
  if (!resp.ok) throw toError(resp, await resp.json().catch(() => ({})));
  const blob = await resp.blob();
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(reader.result);
    reader.onerror = () => reject(new ApiError(0, "read", "The page image could not be read."));
    reader.readAsDataURL(blob);
  });
}

export const get = (path) => call("GET", path);
export const post = (path, body) => call("POST", path, body);
export const del = (path) => call("DELETE", path);
