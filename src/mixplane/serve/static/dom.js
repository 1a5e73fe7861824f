// Small DOM helpers. Every value from the API reaches the page as text nodes or attributes,
// never as HTML, so property values and document texts cannot inject markup.

const SVG_NS = "http://www.w3.org/2000/svg";

function build(element, attrs, children) {
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") {
      element.addEventListener(key.slice(2), value);
    } else {
      element.setAttribute(key, value === true ? "" : String(value));
    }
  }
  append(element, children);
  return element;
}

function append(element, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** An HTML element: h("td", {class: "num"}, "1,234"). */
export function h(tag, attrs = {}, ...children) {
  return build(document.createElement(tag), attrs, children);
}

/** An SVG element, same calling convention as h(). */
export function s(tag, attrs = {}, ...children) {
  return build(document.createElementNS(SVG_NS, tag), attrs, children);
}

/**
 * A table. columns: [{label, num}] (num: right-aligned); rows: [{attrs, cells}], where a cell
 * is a value or {value, class, title}. Wrapped so wide tables scroll instead of overflowing.
 */
export function table({ id, columns, rows, footer, className }) {
  const cell = (tag, spec, column) => {
    const plain = spec === null || typeof spec !== "object" || spec instanceof Node;
    const value = plain ? spec : spec.value;
    const classes = [column.num ? "num" : "", plain ? "" : spec.class || ""].filter(Boolean);
    return h(tag, { class: classes.join(" ") || null, title: plain ? null : spec.title }, value);
  };
  const head = h("tr", {}, columns.map((c) => h("th", { class: c.num ? "num" : null }, c.label)));
  const body = rows.map((row) =>
    h("tr", row.attrs || {}, row.cells.map((spec, i) => cell("td", spec, columns[i]))),
  );
  const foot = footer
    ? h("tfoot", {}, h("tr", {}, footer.map((spec, i) => cell("td", spec, columns[i]))))
    : null;
  return h(
    "div",
    { class: "table-wrap" },
    h("table", { id, class: className }, h("thead", {}, head), h("tbody", {}, body), foot),
  );
}

/** Show `message` in an error box (hidden when message is empty). */
export function showError(box, message) {
  box.textContent = message || "";
  box.hidden = !message;
}

/** A dashed "nothing here yet" box. */
export function empty(...children) {
  return h("div", { class: "empty" }, ...children);
}

/** The "Loading…" line shown while a request runs. */
export function loading() {
  return h("p", { class: "hint" }, "Loading…");
}

/** A labelled figure of a stats row; `id` (optional) names its value. */
export function stat(label, value, id) {
  return h("div", { class: "stat" },
    h("span", { class: "label" }, label), h("span", { class: "value", id }, value));
}

/** Mark `row` as the selected row of its table. */
export function selectRow(row) {
  for (const other of row.parentElement.querySelectorAll("tr.selected")) {
    other.classList.remove("selected");
  }
  row.classList.add("selected");
}

/** Replace an element's children; null, false and undefined children are skipped. */
export function fill(element, ...children) {
  element.replaceChildren();
  append(element, children);
  return element;
}

/** Save `blob` as a file named `name` (a download the browser asks about or keeps). */
export function download(name, blob) {
  const url = URL.createObjectURL(blob);
  const link = h("a", { href: url, download: name, hidden: true });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

/** Export buttons: "CSV" and "JSON", calling `save("csv" | "json")`. */
export function exportButtons(label, save) {
  return h("span", { class: "exports", role: "group", "aria-label": label },
    h("span", { class: "hint" }, "Export"),
    ["csv", "json"].map((format) =>
      h("button", {
        type: "button",
        class: "secondary",
        "data-export": format,
        onclick: () => save(format),
      }, format.toUpperCase())));
}
