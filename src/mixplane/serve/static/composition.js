// Composition view: documents and tokens per value of one column (numbers in buckets, on a
// linear or log scale) over a chosen subset of the datasets, as bars and a table, exported as
// CSV or JSON. Every choice is kept in the address (#composition?datasets=...&by=...).

import { api, apiBlob } from "./api.js";
import { barChart, widthOf } from "./charts.js";
import { download, empty, exportButtons, fill, h, showError, table } from "./dom.js";
import { fmtInt, fmtShare } from "./format.js";
import { listParam, paramsOf } from "./state.js";

const NUMERIC = /^(U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?|FLOAT|DOUBLE|REAL|DECIMAL.*|NUMERIC.*)$/i;
const MEASURES = ["tokens", "documents"];
const ALL = "*"; // in the address: no dataset ticked, so all of them (no dataset is named so)

/** Lists, structs and columns without any value cannot be grouped by. */
function groupable(type) {
  return !/\[|STRUCT|MAP|UNION|^null/i.test(type);
}

export function compositionView(section, context) {
  const form = section.querySelector("#composition-form");
  const picker = section.querySelector("#composition-datasets");
  const bySelect = section.querySelector("#composition-by");
  const numericOnly = section.querySelectorAll('[data-role="numeric"]');
  const bins = section.querySelector("#composition-bins");
  const scale = section.querySelector("#composition-scale");
  const where = section.querySelector("#composition-where");
  const button = section.querySelector("#composition-run");
  const error = section.querySelector("#composition-error");
  const result = section.querySelector('[data-role="result"]');
  const summary = section.querySelector('[data-role="summary"]');
  const exportsBox = section.querySelector('[data-role="exports"]');
  const chart = section.querySelector("#composition-chart");
  const tableBox = section.querySelector('[data-role="table"]');
  let datasets = [];
  let ready = null; // the dataset list's request, once asked
  let answer = null;
  let asked = null; // the parameters of the answer shown
  let request = 0; // only the latest request's answer is drawn

  function ticked() {
    return [...picker.querySelectorAll("input:checked")].map((input) => input.value);
  }

  function columns() {
    const refs = ticked();
    const chosen = refs.length ? datasets.filter((d) => refs.includes(d.dataset)) : datasets;
    const merged = {};
    for (const dataset of chosen) {
      for (const [name, type] of Object.entries(dataset.columns || {})) {
        if (!(name in merged)) merged[name] = type;
      }
    }
    return Object.entries(merged).filter(([, type]) => groupable(type));
  }

  function fillColumns(wanted) {
    const usable = columns();
    fill(bySelect,
      ...usable.map(([name, type]) => h("option", { value: name, "data-type": type }, name)),
    );
    const names = usable.map(([name]) => name);
    const firstText = usable.find(([, type]) => /^VARCHAR$/i.test(type));
    bySelect.value = names.includes(wanted)
      ? wanted
      : names.includes("source") ? "source" : firstText ? firstText[0] : names[0] || "";
    updateNumeric();
  }

  function isNumeric() {
    const option = bySelect.selectedOptions[0];
    return Boolean(option && NUMERIC.test(option.dataset.type));
  }

  function updateNumeric() {
    for (const label of numericOnly) label.hidden = !isNumeric();
  }

  async function load() {
    try {
      datasets = await context.datasets();
    } catch (failure) {
      ready = null;
      showError(error, failure.message);
      return false;
    }
    picker.append(
      ...datasets.map((dataset) =>
        h("label", {},
          h("input", { type: "checkbox", name: "composition-dataset", value: dataset.dataset,
            onchange: () => {
              fillColumns(bySelect.value);
              run();
            } }),
          h("span", { class: "mono" }, dataset.dataset)),
      ),
    );
    return true;
  }

  /** Set the form from the address's parameters (defaults for those it lacks). */
  function apply(params) {
    const refs = params.has("datasets")
      ? listParam(params, "datasets")
      : datasets.slice(0, 1).map((dataset) => dataset.dataset);
    for (const input of picker.querySelectorAll("input")) input.checked = refs.includes(input.value);
    fillColumns(params.get("by"));
    bins.value = params.get("bins") || bins.defaultValue;
    scale.value = params.get("scale") === "log" ? "log" : "linear";
    where.value = params.get("where") || "";
    const measure = MEASURES.includes(params.get("measure")) ? params.get("measure") : "tokens";
    section.querySelector(`input[name="composition-measure"][value="${measure}"]`).checked = true;
  }

  function measure() {
    return section.querySelector('input[name="composition-measure"]:checked').value;
  }

  async function run() {
    if (!bySelect.value) return;
    const mine = ++request;
    const numeric = isNumeric();
    const params = {
      by: bySelect.value,
      where: where.value.trim(),
      datasets: ticked(),
      bins: numeric ? bins.value : null,
      scale: numeric && scale.value === "log" ? "log" : null,
    };
    button.disabled = true;
    showError(error, "");
    try {
      const data = await api("composition", params);
      if (mine !== request) return;
      answer = data;
      asked = params;
      context.changed();
      render();
    } catch (failure) {
      if (mine !== request) return;
      result.hidden = true;
      showError(error, failure.message);
    } finally {
      if (mine === request) button.disabled = false;
    }
  }

  async function save(format) {
    try {
      const blob = format === "csv"
        ? await apiBlob("composition", { ...asked, format: "csv" })
        : new Blob([JSON.stringify(answer, null, 2)], { type: "application/json" });
      download(`composition-${asked.by}.${format}`, blob);
    } catch (failure) {
      showError(error, `Export: ${failure.message}`);
    }
  }

  function render() {
    const groups = answer.groups || [];
    const totalTokens = answer.tokens ?? groups.reduce((sum, g) => sum + g.tokens, 0);
    const totalDocuments = answer.documents ?? groups.reduce((sum, g) => sum + g.documents, 0);
    const key = measure();
    result.hidden = false;
    const over = asked.datasets.length ? asked.datasets.join(", ") : "all datasets";
    summary.textContent =
      `${fmtInt(totalDocuments)} documents, ${fmtInt(totalTokens)} tokens ` +
      `in ${fmtInt(groups.length)} groups by ${answer.by}` +
      (asked.scale === "log" ? " (log scale)" : "") +
      (answer.where && answer.where !== "TRUE" ? ` where ${answer.where}` : "") +
      ` · ${over}`;
    fill(exportsBox, groups.length ? exportButtons("Export this composition", save) : null);
    if (!groups.length) {
      fill(chart, empty("No document matches."));
      fill(tableBox);
      return;
    }
    fill(chart,
      barChart({
        id: "composition-bars",
        rows: groups.map((group) => ({
          label: String(group.value),
          value: group[key],
          tooltip:
            `${group.value}: ${fmtInt(group.documents)} documents, ` +
            `${fmtInt(group.tokens)} tokens`,
        })),
        format: (value) => `${fmtInt(value)} ${key === "tokens" ? "tokens" : "documents"}`,
        width: widthOf(chart),
      }),
    );
    fill(tableBox,
      table({
        id: "composition-table",
        columns: [
          { label: answer.by }, { label: "Documents", num: true }, { label: "Tokens", num: true },
          { label: "Share of tokens", num: true },
        ],
        rows: groups.map((group) => ({
          attrs: { "data-value": String(group.value) },
          cells: [
            { value: String(group.value), class: "value mono" },
            { value: fmtInt(group.documents), class: "documents" },
            { value: fmtInt(group.tokens), class: "tokens" },
            { value: fmtShare(totalTokens ? group.tokens / totalTokens : 0), class: "share" },
          ],
        })),
        footer: [
          "Total", fmtInt(totalDocuments), fmtInt(totalTokens), fmtShare(totalTokens ? 1 : 0),
        ],
      }),
    );
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    run();
  });
  bySelect.addEventListener("change", () => {
    updateNumeric();
    run();
  });
  scale.addEventListener("change", run);
  for (const radio of section.querySelectorAll('input[name="composition-measure"]')) {
    radio.addEventListener("change", () => {
      context.changed();
      if (answer) render();
    });
  }

  return {
    async show(params) {
      if (!ready) ready = load();
      if (!(await ready)) return;
      if (!datasets.length) {
        result.hidden = false;
        fill(chart, empty("No dataset is registered in this catalog yet."));
        return;
      }
      if (params || !asked) {
        apply(params || new URLSearchParams());
        run();
      }
    },
    hide() {},
    params: () => asked
      ? paramsOf({
        ...asked,
        datasets: asked.datasets.length ? asked.datasets : ALL,
        measure: measure() === "tokens" ? null : measure(),
      })
      : new URLSearchParams(),
  };
}
