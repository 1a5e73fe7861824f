// Composition view: documents and tokens per value of one column, as bars and a table.

import { api } from "./api.js";
import { barChart, widthOf } from "./charts.js";
import { empty, fill, h, showError, table } from "./dom.js";
import { fmtInt, fmtShare } from "./format.js";

const NUMERIC = /^(U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?|FLOAT|DOUBLE|REAL|DECIMAL.*|NUMERIC.*)$/i;
const ALL = ""; // the dataset selector's value for "all datasets"

/** Lists, structs and columns without any value cannot be grouped by. */
function groupable(type) {
  return !/\[|STRUCT|MAP|UNION|^null/i.test(type);
}

export function compositionView(section, context) {
  const form = section.querySelector("#composition-form");
  const datasetSelect = section.querySelector("#composition-dataset");
  const bySelect = section.querySelector("#composition-by");
  const binsLabel = section.querySelector('[data-role="bins"]');
  const bins = section.querySelector("#composition-bins");
  const where = section.querySelector("#composition-where");
  const button = section.querySelector("#composition-run");
  const error = section.querySelector("#composition-error");
  const result = section.querySelector('[data-role="result"]');
  const summary = section.querySelector('[data-role="summary"]');
  const chart = section.querySelector("#composition-chart");
  const tableBox = section.querySelector('[data-role="table"]');
  let datasets = [];
  let answer = null;
  let started = false;
  let request = 0; // only the latest request's answer is drawn

  function columns() {
    const chosen = datasetSelect.value === ALL
      ? datasets
      : datasets.filter((dataset) => dataset.dataset === datasetSelect.value);
    const merged = {};
    for (const dataset of chosen) {
      for (const [name, type] of Object.entries(dataset.columns || {})) {
        if (!(name in merged)) merged[name] = type;
      }
    }
    return Object.entries(merged).filter(([, type]) => groupable(type));
  }

  function fillColumns() {
    const previous = bySelect.value;
    const usable = columns();
    fill(bySelect,
      ...usable.map(([name, type]) => h("option", { value: name, "data-type": type }, name)),
    );
    const names = usable.map(([name]) => name);
    const firstText = usable.find(([, type]) => /^VARCHAR$/i.test(type));
    bySelect.value = names.includes(previous)
      ? previous
      : names.includes("source") ? "source" : firstText ? firstText[0] : names[0] || "";
    updateBins();
  }

  function isNumeric() {
    const option = bySelect.selectedOptions[0];
    return Boolean(option && NUMERIC.test(option.dataset.type));
  }

  function updateBins() {
    binsLabel.hidden = !isNumeric();
  }

  async function start() {
    started = true;
    try {
      datasets = await context.datasets();
    } catch (failure) {
      started = false;
      showError(error, failure.message);
      return;
    }
    if (!datasets.length) {
      result.hidden = false;
      fill(chart, empty("No dataset is registered in this catalog yet."));
      return;
    }
    fill(datasetSelect,
      ...datasets.map((dataset) => h("option", { value: dataset.dataset }, dataset.dataset)),
      datasets.length > 1 ? h("option", { value: ALL }, "all datasets") : null,
    );
    datasetSelect.value = datasets[0].dataset;
    fillColumns();
    run();
  }

  async function run() {
    if (!bySelect.value) return;
    const mine = ++request;
    const params = {
      by: bySelect.value,
      where: where.value.trim(),
      datasets: datasetSelect.value === ALL ? [] : [datasetSelect.value],
      bins: isNumeric() ? bins.value : null,
    };
    button.disabled = true;
    showError(error, "");
    try {
      const data = await api("composition", params);
      if (mine !== request) return;
      answer = data;
      render();
    } catch (failure) {
      if (mine !== request) return;
      result.hidden = true;
      showError(error, failure.message);
    } finally {
      if (mine === request) button.disabled = false;
    }
  }

  function measure() {
    return section.querySelector('input[name="composition-measure"]:checked').value;
  }

  function render() {
    const groups = answer.groups || [];
    const totalTokens = answer.tokens ?? groups.reduce((sum, g) => sum + g.tokens, 0);
    const totalDocuments = answer.documents ?? groups.reduce((sum, g) => sum + g.documents, 0);
    const key = measure();
    result.hidden = false;
    summary.textContent =
      `${fmtInt(totalDocuments)} documents, ${fmtInt(totalTokens)} tokens ` +
      `in ${fmtInt(groups.length)} groups by ${answer.by}` +
      (answer.where && answer.where !== "TRUE" ? ` where ${answer.where}` : "");
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
  datasetSelect.addEventListener("change", () => {
    fillColumns();
    run();
  });
  bySelect.addEventListener("change", () => {
    updateBins();
    run();
  });
  for (const radio of section.querySelectorAll('input[name="composition-measure"]')) {
    radio.addEventListener("change", () => answer && render());
  }

  return {
    show() {
      if (!started) start();
    },
    hide() {},
  };
}
