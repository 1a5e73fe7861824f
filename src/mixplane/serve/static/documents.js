// Document viewer: one document's properties, full text (an image-text document's image
// and caption, an audio-text document's clip and transcript) and its way back to the raw
// file.

import { api } from "./api.js";
import { clipFacts, clips } from "./audio.js";
import { fill, h, loading, showError } from "./dom.js";
import { fmtInt, fmtTime, fmtValue } from "./format.js";
import { thumbnails } from "./images.js";

const PREVIEW = 512; // pixels: the largest preview the service makes

/** A step of the document's way back: kind, folder, time, and the part that kept it. */
function stepItem(step, origin) {
  const hash = step.config_hash ? String(step.config_hash).slice(0, 24) : null;
  return h("li", { class: "step", "data-kind": step.kind },
    h("span", { class: "kind" }, step.kind || "step"), " · ",
    h("span", { class: "mono" }, step.folder), " · ", fmtTime(step.created_at),
    h("div", { class: "extra" },
      [step.tool_version ? `mixplane ${step.tool_version}` : null, hash ? `config ${hash}` : null]
        .filter(Boolean).join(" · ")),
    origin
      ? h("div", { class: "extra" }, "kept in ", h("span", { class: "mono" }, origin.part))
      : null);
}

/** The byte range of a raw input: start..end, an open end meaning "to the end of the file". */
function byteRange(input) {
  if (typeof input.start !== "number") return "the whole file";
  return input.end === null || input.end === undefined
    ? `bytes ${fmtInt(input.start)} to the end of the file`
    : `bytes ${fmtInt(input.start)}–${fmtInt(input.end)}`;
}

/** The last entry: the raw file (and byte range) the nearest processing task read. */
function rawItem(origin) {
  const input = origin && origin.input;
  if (!input) {
    return h("li", { class: "raw", "data-kind": "raw" },
      h("span", { class: "kind" }, "raw input"), " · ",
      h("span", { class: "hint" }, "not recorded"));
  }
  const rest = Object.entries(input).filter(([key]) => !["url", "start", "end"].includes(key));
  return h("li", { class: "raw", "data-kind": "raw" },
    h("span", { class: "kind" }, "raw input"), " · ",
    h("span", { class: "mono", id: "document-raw-file" }, input.url || "?"), " · ",
    h("span", { id: "document-byte-range" }, byteRange(input)),
    rest.length
      ? h("div", { class: "extra" },
        rest.map(([key, value]) => `${key}: ${fmtValue(value)}`).join(" · "))
      : null);
}

export function createDocumentViewer(dialog) {
  const title = dialog.querySelector("#document-title");
  const content = dialog.querySelector('[data-role="content"]');
  const error = dialog.querySelector('[data-role="error"]');
  const images = thumbnails();
  const players = clips();
  let request = 0;

  dialog.querySelector('[data-role="close"]').addEventListener("click", () => dialog.close());
  // A closed dialog stays in the page: its clip would play on.
  dialog.addEventListener("close", () => {
    for (const audio of content.querySelectorAll("audio")) audio.pause();
  });
  // A click on the backdrop (outside the dialog's box) closes it too.
  dialog.addEventListener("click", (event) => {
    if (event.target === dialog) dialog.close();
  });

  function render(doc) {
    const properties = Object.entries(doc.properties || {});
    const steps = doc.lineage || [];
    const origins = doc.origin || [];
    const byFolder = new Map(origins.map((origin) => [origin.folder, origin]));
    images.clear();
    players.clear();
    fill(content,
      doc.thumbnail
        ? h("figure", { class: "preview", id: "document-image" },
          images.image(doc.thumbnail, PREVIEW, doc.text || "the document's image"))
        : null,
      doc.audio
        ? h("figure", { class: "preview", id: "document-audio" },
          players.player(doc.audio, doc.text || "the document's clip",
            doc.properties.audio_bytes),
          h("div", { class: "clip-facts" }, clipFacts(doc.properties)))
        : null,
      h("h3", {}, doc.thumbnail ? "Caption" : doc.audio ? "Transcript" : "Text"),
      h("pre", { class: "text", id: "document-text" }, doc.text ?? ""),
      doc.truncated
        ? h("p", { class: "hint" }, `Text cut at ${fmtInt(doc.text.length)} characters.`)
        : null,
      h("h3", {}, "Lineage"),
      steps.length
        ? h("ol", { class: "lineage", id: "document-lineage" },
          steps.map((step) => stepItem(step, byFolder.get(step.folder))),
          rawItem(origins[origins.length - 1]))
        : h("p", { class: "hint" }, "No lineage recorded for this document."),
      h("h3", {}, `Properties (${fmtInt(properties.length)})`),
      h("div", { class: "table-wrap" },
        h("table", { class: "props", id: "document-properties" },
          h("tbody", {}, properties.map(([key, value]) =>
            h("tr", { "data-property": key }, h("td", { class: "mono" }, key),
              h("td", {}, fmtValue(value))))))),
    );
  }

  async function open(dataset, shard, index) {
    const mine = ++request;
    title.textContent = `${dataset} · ${shard}#${index}`;
    showError(error, "");
    fill(content, loading());
    if (!dialog.open) dialog.showModal();
    try {
      const path = ["documents", dataset, shard, String(index)].map(encodeURIComponent).join("/");
      const doc = await api(path);
      if (mine === request) render(doc);
    } catch (failure) {
      if (mine !== request) return;
      fill(content);
      showError(error, failure.message);
    }
  }

  function close() {
    if (dialog.open) dialog.close();
  }

  return { open, close };
}
