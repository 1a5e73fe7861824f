// The page's state in the URL fragment, so a link opens the same view with the same choices:
// #VIEW?key=value&... (e.g. #composition?datasets=web%401&by=language). The fragment never
// reaches the server: predicates stay out of its logs.

/** "#search?where=x" -> {view: "search", params: URLSearchParams("where=x")}. A fragment of
 *  parameters only ("#token=..."), has no view. */
export function parseFragment(hash) {
  const text = hash.replace(/^#/, "");
  const mark = text.indexOf("?");
  if (mark >= 0) {
    return { view: text.slice(0, mark), params: new URLSearchParams(text.slice(mark + 1)) };
  }
  if (text.includes("=")) return { view: "", params: new URLSearchParams(text) };
  return { view: text, params: new URLSearchParams() };
}

/** The fragment of a view and its parameters (empty values left out). */
export function fragment(view, params) {
  const kept = new URLSearchParams();
  for (const [key, value] of params) if (value !== "") kept.append(key, value);
  const query = kept.toString();
  return view || query ? `#${view}${query ? `?${query}` : ""}` : "";
}

/** Replace the address's fragment (no new history entry, no hashchange). */
export function writeFragment(view, params) {
  history.replaceState(null, "", `${location.pathname}${location.search}${fragment(view, params)}`);
}

/** URLSearchParams from an object; arrays are joined with commas, null and "" left out. */
export function paramsOf(values) {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(values)) {
    if (value === null || value === undefined || value === "") continue;
    if (Array.isArray(value)) {
      if (value.length) params.set(key, value.join(","));
    } else {
      params.set(key, String(value));
    }
  }
  return params;
}

/** A comma-separated list parameter as an array ([] when absent). */
export function listParam(params, key) {
  return (params.get(key) || "").split(",").map((item) => item.trim()).filter(Boolean);
}
