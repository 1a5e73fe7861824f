// Datasets view: the latest version of every dataset; one selected shows columns and versions.

import { api } from "./api.js";
import { empty, fill, h, loading, selectRow, showError, table } from "./dom.js";
import { fmtInt, fmtTime, fmtTokenizer } from "./format.js";

export function datasetsView(section, context) {
  const list = section.querySelector('[data-role="list"]');
  const detail = section.querySelector('[data-role="detail"]');
  const error = section.querySelector('[data-role="error"]');
  let loaded = false;

  async function load() {
    showError(error, "");
    fill(list, loading());
    try {
      render(await context.datasets(true));
      loaded = true;
    } catch (failure) {
      fill(list);
      showError(error, failure.message);
    }
  }

  function render(datasets) {
    if (!datasets.length) {
      fill(list,
        empty("No dataset is registered in this catalog yet: ",
          h("code", {}, "mixplane catalog register FOLDER --name NAME"), "."),
      );
      return;
    }
    fill(list,
      table({
        id: "datasets-table",
        columns: [
          { label: "Dataset" }, { label: "Documents", num: true }, { label: "Tokens", num: true },
          { label: "Shards", num: true }, { label: "Tokenizer" }, { label: "Registered" },
        ],
        rows: datasets.map((dataset) => ({
          attrs: {
            class: "clickable",
            "data-dataset": dataset.dataset,
            "data-name": dataset.name,
            onclick: (event) => select(dataset, event.currentTarget),
          },
          cells: [
            { value: dataset.dataset, class: "mono" },
            { value: fmtInt(dataset.documents), class: "documents" },
            { value: fmtInt(dataset.tokens), class: "tokens" },
            { value: fmtInt(dataset.shards), class: "shards" },
            { value: fmtTokenizer(dataset.tokenizer), title: JSON.stringify(dataset.tokenizer) },
            fmtTime(dataset.registered_at),
          ],
        })),
      }),
    );
  }

  async function select(dataset, row) {
    selectRow(row);
    fill(detail, loading());
    try {
      renderDetail(await api(`datasets/${encodeURIComponent(dataset.name)}`));
    } catch (failure) {
      fill(detail, h("div", { class: "error" }, failure.message));
    }
  }

  function renderDetail(info) {
    const versions = info.versions || [];
    const latest = versions[versions.length - 1] || {};
    const columns = Object.entries(latest.columns || {});
    fill(detail,
      h("h2", { id: "dataset-title" }, info.name),
      h("p", { class: "hint mono" }, latest.uri || ""),
      h("h3", {}, `Columns of ${latest.dataset || info.name} (${fmtInt(columns.length)})`),
      h("ul", { class: "columns", id: "dataset-columns" },
        columns.map(([name, type]) =>
          h("li", { "data-column": name },
            h("span", { class: "mono" }, name), ": ", h("span", { class: "type mono" }, type)),
        ),
      ),
      h("h3", {}, `Versions (${fmtInt(versions.length)})`),
      table({
        id: "versions-table",
        columns: [
          { label: "Version" }, { label: "Documents", num: true }, { label: "Tokens", num: true },
          { label: "Shards", num: true }, { label: "Fingerprint" }, { label: "Registered" },
        ],
        // Newest first reads better; the API lists them oldest first.
        rows: [...versions].reverse().map((version) => ({
          attrs: { "data-dataset": version.dataset },
          cells: [
            { value: version.dataset, class: "mono" },
            fmtInt(version.documents),
            fmtInt(version.tokens),
            fmtInt(version.shards),
            { value: String(version.fingerprint || "").slice(0, 24), class: "mono",
              title: version.fingerprint },
            fmtTime(version.registered_at),
          ],
        })),
      }),
    );
  }

  return {
    show() {
      if (!loaded) load();
    },
    hide() {},
  };
}
