// Search view: count the documents and tokens a predicate selects, and page through them
// (text excerpts, thumbnails of images, players of audio clips), a page exported as CSV or JSON. The predicate, the
// datasets and the page are kept in the address (#search?where=...&datasets=...&page=2).

import { api, apiBlob } from "./api.js";
import { clipFacts, clips } from "./audio.js";
import { download, exportButtons, fill, h, showError, table } from "./dom.js";
import { fmtInt, fmtShare } from "./format.js";
import { thumbnails } from "./images.js";
import { listParam, paramsOf } from "./state.js";

const PAGE = 10; // documents per page
const THUMBNAIL = 96; // pixels

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
  const samplesHead = section.querySelector('[data-role="samples-head"]');
  const samples = section.querySelector("#search-samples");
  const images = thumbnails();
  const players = clips();
  let pickerReady = null; // the picker's request, once asked
  let asked = null; // the search shown: {where, datasets}
  let page = 1;
  let answer = null; // the page shown
  let request = 0;

  async function fillPicker() {
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
      pickerReady = null;
      showError(error, failure.message);
    }
  }

  function ticked() {
    return [...picker.querySelectorAll("input:checked")].map((input) => input.value);
  }

  function tick(refs) {
    for (const input of picker.querySelectorAll("input")) input.checked = refs.includes(input.value);
  }

  function clear() {
    result.hidden = true;
    fill(perDataset);
    samplesHead.hidden = true;
    images.clear();
    players.clear();
    fill(samples);
  }

  /** Count the form's search and show its first page. */
  function submit() {
    asked = { where: where.value.trim(), datasets: ticked() };
    page = 1;
    context.changed();
    run(true);
  }

  async function run(count) {
    const mine = ++request;
    const params = { where: asked.where, datasets: asked.datasets };
    button.disabled = true;
    showError(error, "");
    // Both requests start together; the counts show as soon as they come.
    const pageRequest = api("samples", { ...params, k: PAGE, offset: (page - 1) * PAGE });
    pageRequest.catch(() => {});
    try {
      if (count) {
        const counted = await api("count", params);
        if (mine !== request) return;
        renderCount(counted);
      }
      const found = await pageRequest;
      if (mine !== request) return;
      renderPage(found);
    } catch (failure) {
      if (mine !== request) return;
      clear();
      showError(error, failure.message);
    } finally {
      if (mine === request) button.disabled = false;
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

  function go(to) {
    page = to;
    context.changed();
    run(false);
  }

  async function save(format) {
    const params = { where: asked.where, datasets: asked.datasets, k: PAGE, offset: answer.offset };
    const name = `samples-${answer.offset + 1}-${answer.offset + answer.samples.length}`;
    try {
      const blob = format === "csv"
        ? await apiBlob("samples", { ...params, format: "csv" })
        : new Blob([JSON.stringify(answer, null, 2)], { type: "application/json" });
      download(`${name}.${format}`, blob);
    } catch (failure) {
      showError(error, `Export: ${failure.message}`);
    }
  }

  function renderPage(found) {
    answer = found;
    const list = found.samples || [];
    const pages = Math.max(1, Math.ceil(found.total / PAGE));
    const first = found.offset + 1;
    samplesHead.hidden = false;
    fill(samplesHead,
      h("h2", { id: "samples-title" }, "Samples"),
      h("nav", { class: "pager", "aria-label": "Pages of samples" },
        h("button", { type: "button", class: "secondary", id: "samples-previous",
          disabled: page <= 1, onclick: () => go(page - 1) }, "← Previous"),
        h("span", { id: "samples-range", "aria-live": "polite" },
          list.length
            ? `${fmtInt(first)}–${fmtInt(found.offset + list.length)} of ${fmtInt(found.total)}`
            : `none of ${fmtInt(found.total)}`,
          ` · page ${fmtInt(page)} of ${fmtInt(pages)}`),
        h("button", { type: "button", class: "secondary", id: "samples-next",
          disabled: page >= pages, onclick: () => go(page + 1) }, "Next →")),
      list.length ? exportButtons("Export this page", save) : null,
    );
    images.clear();
    players.clear();
    if (!list.length) {
      fill(samples, h("li", { class: "empty" }, "No document matches."));
      return;
    }
    fill(samples,
      ...list.map((sample) =>
        h("li", {
          class: sample.thumbnail ? "sample with-image" : "sample",
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
        sample.thumbnail ? images.image(sample.thumbnail, THUMBNAIL, sample.text || "") : null,
        h("div", { class: "sample-body" },
          h("div", { class: "where mono" }, `${sample.dataset} · ${sample.shard}#${sample.index}`),
          sample.audio
            ? h("div", { class: "clip-row" },
              players.player(sample.audio, sample.text || "", sample.properties.audio_bytes),
              h("span", { class: "clip-facts" }, clipFacts(sample.properties)))
            : null,
          h("pre", { class: "excerpt" }, excerpt(sample.text)))),
      ),
    );
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    submit();
  });

  return {
    async show(params) {
      if (!pickerReady) pickerReady = fillPicker();
      if (params && (params.has("where") || params.has("datasets"))) {
        asked = { where: params.get("where") || "", datasets: listParam(params, "datasets") };
        page = Math.max(1, Number.parseInt(params.get("page"), 10) || 1);
        where.value = asked.where;
        await pickerReady;
        tick(asked.datasets);
        run(true);
      } else if (params) {
        where.focus();
      }
    },
    hide() {},
    params: () => asked
      ? paramsOf({ where: asked.where || "TRUE", datasets: asked.datasets, page: page > 1 ? page : null })
      : new URLSearchParams(),
  };
}
