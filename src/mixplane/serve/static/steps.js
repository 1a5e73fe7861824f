// Steps view: what a training step held on a rank, down to each document (POST
// /api/mixtures/trace). The mixture is pasted as JSON; the step and the layout are kept in
// the address (#steps?step=120&rank=3&world_size=8&batch_size=8&properties=language).

import { api } from "./api.js";
import { fill, h, showError, table } from "./dom.js";
import { fmtInt } from "./format.js";

const FIELDS = ["step", "rank", "world_size", "batch_size"];

export function stepsView(section, context) {
  const form = section.querySelector("#steps-form");
  const mixture = section.querySelector("#steps-mixture");
  const properties = section.querySelector("#steps-properties");
  const error = section.querySelector('[data-role="error"]');
  const summary = section.querySelector("#steps-summary");
  const result = section.querySelector("#steps-result");
  const inputs = Object.fromEntries(
    FIELDS.map((name) => [name, section.querySelector(`#steps-${name}`)]),
  );
  let request = 0;

  function body() {
    let parsed;
    try {
      parsed = JSON.parse(mixture.value);
    } catch (failure) {
      throw new Error(`The mixture is not JSON: ${failure.message}`);
    }
    const names = properties.value.split(",").map((name) => name.trim()).filter(Boolean);
    const asked = { mixture: parsed, properties: names };
    for (const name of FIELDS) {
      const value = inputs[name].value.trim();
      if (value !== "") asked[name] = Number(value);
    }
    return asked;
  }

  async function run() {
    const mine = ++request;
    showError(error, "");
    let asked;
    try {
      asked = body();
    } catch (failure) {
      showError(error, failure.message);
      return;
    }
    context.changed();
    fill(summary, "Tracing…");
    let answer;
    try {
      answer = await api("mixtures/trace", {}, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(asked),
      });
    } catch (failure) {
      if (mine !== request) return;
      fill(summary);
      fill(result);
      showError(error, failure.message);
      return;
    }
    if (mine !== request) return;
    show(answer);
  }

  function show(answer) {
    const documents = answer.sequences.reduce((n, s) => n + s.documents.length, 0);
    const count = fmtInt(answer.sequences.length);
    fill(summary,
      `Step ${fmtInt(answer.step)}, rank ${answer.rank} of ${answer.world_size}: `
        + (answer.packing === "none"  // each row one document, padded
          ? `a padded batch of ${count} documents, each cut to ${fmtInt(answer.seq_len)} tokens`
          : `${count} sequences of ${fmtInt(answer.seq_len)} tokens, `
            + `${fmtInt(documents)} document pieces`));
    const names = answer.properties;
    const rows = [];
    for (const sequence of answer.sequences) {
      sequence.documents.forEach((piece, n) => {
        const [begin, end] = piece.tokens;
        rows.push({
          attrs: { "data-index": sequence.index, "data-id": piece.id },
          cells: [
            n === 0 ? fmtInt(sequence.index) : "",
            n === 0 ? String(sequence.micro_batch) : "",
            n === 0 ? sequence.component : "",
            { value: piece.dataset, class: "mono" },
            { value: piece.id, class: "mono", title: `${piece.shard} #${piece.document}` },
            `${begin}–${end}${piece.eos ? " +eos" : ""}`,
            piece.url ? h("a", { href: piece.url, rel: "noreferrer", target: "_blank" }, piece.url)
              : (piece.source ?? ""),
            ...names.map((name) => String(piece.properties[name] ?? "")),
          ],
        });
      });
    }
    fill(result, table({
      id: "steps-table",
      columns: [
        { label: "Sequence", num: true }, { label: "Micro-batch", num: true },
        { label: "Component" }, { label: "Dataset" }, { label: "Document" },
        { label: "Tokens" }, { label: "Source" }, ...names.map((name) => ({ label: name })),
      ],
      rows,
    }));
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    run();
  });

  return {
    show(params) {
      if (params === null) return;
      for (const name of FIELDS) {
        if (params.has(name)) inputs[name].value = params.get(name);
      }
      if (params.has("properties")) properties.value = params.get("properties");
    },
    hide() {},
    params() {
      const params = new URLSearchParams();
      for (const name of FIELDS) params.set(name, inputs[name].value.trim());
      params.set("properties", properties.value.trim());
      return params;
    },
  };
}
