// The API client: every request goes to /api/... on the page's own origin and carries the
// service token when one is known.

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
  const fragment = new URLSearchParams(location.hash.replace(/^#/, ""));
  const token = fragment.get("token");
  if (!token) return false;
  sessionStorage.setItem(TOKEN_KEY, token);
  fragment.delete("token");
  const rest = fragment.toString();
  history.replaceState(null, "", location.pathname + location.search + (rest ? `#${rest}` : ""));
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

/** "/api/count", {where: "...", datasets: ["a@1"]} -> "/api/count?where=...&datasets=a%401". */
export function apiUrl(path, params = {}) {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value === null || value === undefined || value === "") continue;
    if (Array.isArray(value)) {
      if (value.length) query.set(key, value.join(","));
    } else {
      query.set(key, String(value));
    }
  }
  const text = query.toString();
  return `/api/${path.replace(/^\/+/, "")}${text ? `?${text}` : ""}`;
}

/** GET (or `init.method`) an API path; resolves to the parsed JSON, rejects with ApiError. */
export async function api(path, params = {}, init = {}) {
  const headers = new Headers(init.headers || {});
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) headers.set("Authorization", `Bearer ${token}`);
  let response;
  try {
    response = await fetch(apiUrl(path, params), { ...init, headers });
  } catch (error) {
    throw new ApiError(0, `The service did not answer (${error.message}). Is it still running?`);
  }
  const body = await response.text();
  let data = null;
  try {
    data = body ? JSON.parse(body) : null;
  } catch {
    data = null;
  }
  if (!response.ok) {
    const error = new ApiError(response.status, describeError(response, data, body));
    if (response.status === 401) unauthorizedHandler(error);
    throw error;
  }
  return data;
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
