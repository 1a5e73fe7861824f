// The API client: every request goes to /api/... on the page's own origin and carries the
// service token when one is known.

import { paramsOf, parseFragment, writeFragment } from "./state.js";

const TOKEN_KEY = "mixplane.token";
let unauthorizedHandler = () => {};

/** An answer with an error status; `detail` is the service's message. */
export class ApiError extends Error {
  constructor(status, detail) {
    super(detail);
    this.status = status;
    this.detail = detail;
  }
}

/**
 * Take the token from the URL fragment (#token=...) on first load, keep it in the tab's
 * session storage and drop it from the visible URL (and so from history and screenshots).
 * Returns whether the fragment held a token.
 */
export function initToken() {
  const { view, params } = parseFragment(location.hash);
  const given = params.get("token");
  if (!given) return false;
  sessionStorage.setItem(TOKEN_KEY, given);
  params.delete("token");
  writeFragment(view, params);
  return true;
}

export function hasToken() {
  return Boolean(sessionStorage.getItem(TOKEN_KEY));
}

/** The token this tab holds (null: none). */
export function token() {
  return sessionStorage.getItem(TOKEN_KEY);
}

/** Called with the ApiError of every 401 answer. */
export function onUnauthorized(handler) {
  unauthorizedHandler = handler;
}

/** "count", {where: "...", datasets: ["a@1"]} -> "/api/count?where=...&datasets=a%401"; a path
 *  the API itself named ("/api/thumbnails/...") is taken as it is. */
export function apiUrl(path, params = {}) {
  const text = paramsOf(params).toString();
  const base = path.startsWith("/api/") ? path : `/api/${path.replace(/^\/+/, "")}`;
  return `${base}${text ? `?${text}` : ""}`;
}

/** The answer to a request with the token; rejects with ApiError (the service's message). */
async function request(path, params, init = {}) {
  const headers = new Headers(init.headers || {});
  const held = token();
  if (held) headers.set("Authorization", `Bearer ${held}`);
  let response;
  try {
    response = await fetch(apiUrl(path, params), { ...init, headers });
  } catch (error) {
    throw new ApiError(0, `The service did not answer (${error.message}). Is it still running?`);
  }
  if (!response.ok) {
    const body = await response.text();
    let data = null;
    try {
      data = body ? JSON.parse(body) : null;
    } catch {
      data = null;
    }
    const error = new ApiError(response.status, describeError(response, data, body));
    if (response.status === 401) unauthorizedHandler(error);
    throw error;
  }
  return response;
}

/** GET (or `init.method`) an API path; resolves to the parsed JSON, rejects with ApiError. */
export async function api(path, params = {}, init = {}) {
  const body = await (await request(path, params, init)).text();
  return body ? JSON.parse(body) : null;
}

/** GET an API path (or a path the API named, "/api/..."); resolves to the answer's bytes. */
export async function apiBlob(path, params = {}) {
  return (await request(path, params)).blob();
}

function describeError(response, data, body) {
  const detail = data && data.detail;
  if (typeof detail === "string") return detail;
  // Validation errors come as a list of {loc, msg}.
  if (Array.isArray(detail)) {
    return detail
      .map((item) => [item.loc && item.loc.join("."), item.msg].filter(Boolean).join(": "))
      .join("\n");
  }
  if (detail) return JSON.stringify(detail);
  return `${response.status} ${response.statusText}${body ? `: ${body.slice(0, 300)}` : ""}`;
}
