// Datasets view: the latest version of every dataset; one selected shows columns and versions.
// The selected dataset is kept in the address (#datasets?dataset=NAME@N).

import { api } from "./api.js";
import { empty, fill, h, loading, selectRow, showError, table } from "./dom.js";
import { fmtInt, fmtTime, fmtTokenizer } from "./format.js";

// Kinds of media-text data, as the table names them and what their documents hold: no
// tokens, and so no tokenizer.
const MEDIA = {
  image_text: { kind: "image-text", media: "images" },
  audio_text: { kind: "audio-text", media: "audio" },
};

/** The kind of data a dataset holds, as the table says it. */
function kindOf(dataset) {
  return MEDIA[dataset.kind] ? MEDIA[dataset.kind].kind : "tokens";
}

/** A tokenizer cell: media-text data has none (its documents hold no tokens). */
function tokenizerOf(dataset) {
  const media = MEDIA[dataset.kind];
  return media ? `none (${media.media})` : fmtTokenizer(dataset.tokenizer);
}

export function datasetsView(section, context) {
  const list = section.querySelector('[data-role="list"]');
  const detail = section.querySelector('[data-role="detail"]');
  const error = section.querySelector('[data-role="error"]');
  let loaded = null; // the list's request, once asked
  let chosen = ""; // the selected dataset's reference
  let request = 0;

  async function load() {
    showError(error, "");
    fill(list, loading());
    try {
      render(await context.datasets(true));
    } catch (failure) {
      loaded = null;
      fill(list);
      showError(error, failure.message);
      return;
    }
    selectChosen();
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
          { label: "Dataset" }, { label: "Kind" }, { label: "Documents", num: true },
          { label: "Tokens", num: true }, { label: "Shards", num: true }, { label: "Tokenizer" },
          { label: "Registered" },
        ],
        rows: datasets.map((dataset) => ({
          attrs: {
            class: "clickable",
            tabindex: 0,
            "data-dataset": dataset.dataset,
            "data-name": dataset.name,
            onclick: () => choose(dataset.dataset),
            onkeydown: (event) => {
              if (event.key === "Enter") choose(dataset.dataset);
            },
          },
          cells: [
            { value: dataset.dataset, class: "mono" },
            { value: kindOf(dataset), class: "kind" },
            { value: fmtInt(dataset.documents), class: "documents" },
            MEDIA[dataset.kind]
              ? { value: "–", class: "tokens",
                title: `${kindOf(dataset)} documents hold no tokens` }
              : { value: fmtInt(dataset.tokens), class: "tokens" },
            { value: fmtInt(dataset.shards), class: "shards" },
            { value: tokenizerOf(dataset), class: "tokenizer",
              title: MEDIA[dataset.kind] ? null : JSON.stringify(dataset.tokenizer) },
            fmtTime(dataset.registered_at),
          ],
        })),
      }),
    );
  }

  function choose(ref) {
    chosen = ref;
    context.changed();
    selectChosen();
  }

  /** Show the chosen dataset's detail (when the list holds it). */
  async function selectChosen() {
    const row = [...list.querySelectorAll("#datasets-table tbody tr")]
      .find((tr) => tr.dataset.dataset === chosen);
    if (!row) {
      fill(detail);
      return;
    }
    selectRow(row);
    const mine = ++request;
    fill(detail, loading());
    try {
      const info = await api(`datasets/${encodeURIComponent(row.dataset.name)}`);
      if (mine === request) renderDetail(info);
    } catch (failure) {
      if (mine === request) fill(detail, h("div", { class: "error" }, failure.message));
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
            MEDIA[version.kind] ? "–" : fmtInt(version.tokens),
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
    show(params) {
      if (params) {
        chosen = params.get("dataset") || "";
        if (loaded) selectChosen();
      }
      if (!loaded) loaded = load();
    },
    hide() {},
    params: () => new URLSearchParams(chosen ? { dataset: chosen } : {}),
  };
}
