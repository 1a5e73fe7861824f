// Search view: count the documents and tokens a predicate selects, and show a few samples.

import { api } from "./api.js";
import { fill, h, showError, table } from "./dom.js";
import { fmtInt, fmtShare } from "./format.js";

const SAMPLES = 5;

/** The first few lines of a text, for a sample's excerpt. */
function excerpt(text, lines = 3, chars = 360) {
  const head = String(text || "")
    .split("\n")
    .filter((line) => line.trim())
    .slice(0, lines)
    .join("\n");
  return head.length > chars ? `${head.slice(0, chars - 1)}…` : head;
}

export function searchView(section, context) {
  const form = section.querySelector("#search-form");
  const where = section.querySelector("#search-where");
  const button = section.querySelector("#search-count");
  const picker = section.querySelector("#search-datasets");
  const error = section.querySelector("#search-error");
  const result = section.querySelector("#search-result");
  const documents = section.querySelector("#search-documents");
  const tokens = section.querySelector("#search-tokens");
  const perDataset = section.querySelector('[data-role="per-dataset"]');
  const samplesTitle = section.querySelector('[data-role="samples-title"]');
  const samples = section.querySelector("#search-samples");
  let pickerFilled = false;

  async function fillPicker() {
    pickerFilled = true; // set before awaiting so a second show() does not fill it twice
    try {
      const datasets = await context.datasets();
      picker.append(
        ...datasets.map((dataset) =>
          h("label", {},
            h("input", { type: "checkbox", name: "dataset", value: dataset.dataset }),
            h("span", { class: "mono" }, dataset.dataset)),
        ),
      );
    } catch (failure) {
      pickerFilled = false;
      showError(error, failure.message);
    }
  }

  function chosen() {
    return [...picker.querySelectorAll("input:checked")].map((input) => input.value);
  }

  function clear() {
    result.hidden = true;
    fill(perDataset);
    samplesTitle.hidden = true;
    fill(samples);
  }

  async function run() {
    const params = { where: where.value.trim(), datasets: chosen() };
    button.disabled = true;
    showError(error, "");
    // Both requests start together; the counts show as soon as they come.
    const sampleRequest = api("samples", { ...params, k: SAMPLES });
    sampleRequest.catch(() => {});
    try {
      renderCount(await api("count", params));
    } catch (failure) {
      clear();
      showError(error, failure.message);
      button.disabled = false;
      return;
    }
    try {
      renderSamples((await sampleRequest).samples || []);
    } catch (failure) {
      fill(samples);
      showError(error, `Samples: ${failure.message}`);
    } finally {
      button.disabled = false;
    }
  }

  function renderCount(count) {
    documents.textContent = fmtInt(count.documents);
    tokens.textContent = fmtInt(count.tokens);
    result.hidden = false;
    const parts = count.datasets || [];
    if (parts.length <= 1) {
      const part = parts[0];
      fill(perDataset,
        part
          ? h("p", { class: "hint" },
            `${fmtShare(part.documents / (part.total_documents || 1))} of ${part.dataset}'s ` +
            `documents, ${fmtShare(part.tokens / (part.total_tokens || 1))} of its tokens; ` +
            `${fmtInt(part.shards_touched)} shards touched.`)
          : "",
      );
      return;
    }
    fill(perDataset,
      table({
        id: "search-per-dataset",
        columns: [
          { label: "Dataset" }, { label: "Documents", num: true }, { label: "Tokens", num: true },
          { label: "Share of documents", num: true }, { label: "Shards touched", num: true },
        ],
        rows: parts.map((part) => ({
          attrs: { "data-dataset": part.dataset },
          cells: [
            { value: part.dataset, class: "mono" },
            { value: fmtInt(part.documents), class: "documents" },
            { value: fmtInt(part.tokens), class: "tokens" },
            fmtShare(part.documents / (part.total_documents || 1)),
            fmtInt(part.shards_touched),
          ],
        })),
      }),
    );
  }

  function renderSamples(list) {
    samplesTitle.hidden = false;
    samplesTitle.textContent = list.length ? `Samples (${list.length})` : "Samples";
    if (!list.length) {
      fill(samples, h("li", { class: "empty" }, "No document matches."));
      return;
    }
    fill(samples,
      ...list.map((sample) =>
        h("li", {
          class: "sample",
          tabindex: 0,
          "data-dataset": sample.dataset,
          "data-shard": sample.shard,
          "data-index": sample.index,
          title: "Open this document",
          onclick: () => context.openDocument(sample.dataset, sample.shard, sample.index),
          onkeydown: (event) => {
            if (event.key === "Enter") event.currentTarget.click();
          },
        },
        h("div", { class: "where mono" }, `${sample.dataset} · ${sample.shard}#${sample.index}`),
        h("pre", { class: "excerpt" }, excerpt(sample.text))),
      ),
    );
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    run();
  });

  return {
    show() {
      if (!pickerFilled) fillPicker();
      where.focus();
    },
    hide() {},
  };
}
