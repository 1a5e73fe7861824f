// Runs view: the processing runs behind the registered datasets, and why documents were
// excluded or quarantined in one of them (kept in the address: #runs?run=ID).

import { api } from "./api.js";
import { barChart, color, widthOf } from "./charts.js";
import { empty, fill, h, loading, selectRow, showError, stat, table } from "./dom.js";
import { fmtInt, fmtNum, fmtShare, fmtTime } from "./format.js";

/** {stage: {reason: n}} (or {reason: n}) -> [{stage, reason, count}], stages in given order. */
function flatten(counts) {
  const rows = [];
  for (const [stage, value] of Object.entries(counts || {})) {
    if (typeof value === "number") {
      rows.push({ stage: "", reason: stage, count: value });
      continue;
    }
    const reasons = Object.entries(value || {}).sort((a, b) => b[1] - a[1]);
    for (const [reason, count] of reasons) rows.push({ stage, reason, count });
  }
  return rows;
}

export function runsView(section, context) {
  const list = section.querySelector('[data-role="list"]');
  const detail = section.querySelector('[data-role="detail"]');
  const error = section.querySelector('[data-role="error"]');
  let loaded = null; // the list's request, once asked
  let chosen = ""; // the run shown, from the address or a click
  let request = 0;

  async function load() {
    showError(error, "");
    fill(list, loading());
    let runs;
    try {
      runs = await api("runs");
    } catch (failure) {
      loaded = null;
      fill(list);
      showError(error, failure.message);
      return;
    }
    if (!runs.length) {
      fill(list,
        empty("No processing run was found behind the registered datasets (their folders carry "
          + "no manifests of earlier steps)."),
      );
      return;
    }
    fill(list,
      table({
        id: "runs-table",
        columns: [
          { label: "Run" }, { label: "Kind" }, { label: "Folder" }, { label: "Created" },
          { label: "In", num: true }, { label: "Kept", num: true },
          { label: "Excluded", num: true }, { label: "Quarantined", num: true },
        ],
        rows: runs.map((run) => ({
          attrs: {
            class: "clickable",
            tabindex: 0,
            "data-run": run.id,
            "data-kind": run.kind,
            onclick: () => choose(run.id),
            onkeydown: (event) => {
              if (event.key === "Enter") choose(run.id);
            },
          },
          cells: [
            { value: run.id, class: "mono" }, run.kind, { value: run.folder, class: "mono" },
            fmtTime(run.created_at), fmtInt(run.documents_in), fmtInt(run.kept),
            fmtInt(run.excluded), fmtInt(run.quarantined),
          ],
        })),
      }),
    );
    // Without a run in the address, the newest processing run: it excludes and quarantines.
    const first = runs.find((run) => run.kind === "process") || runs[0];
    select(runs.some((run) => run.id === chosen) ? chosen : first.id);
  }

  function choose(id) {
    chosen = id;
    context.changed();
    select(id);
  }

  async function select(id) {
    const row = [...list.querySelectorAll("#runs-table tbody tr")].find((tr) => tr.dataset.run === id);
    if (!row) return;
    selectRow(row);
    const mine = ++request;
    fill(detail, loading());
    try {
      const run = await api(`runs/${encodeURIComponent(id)}`);
      if (mine === request) renderDetail(run);
    } catch (failure) {
      if (mine === request) fill(detail, h("div", { class: "error" }, failure.message));
    }
  }

  /** A bar chart and a table of counts by stage and reason. */
  function reasons(id, counts, total, none) {
    const rows = flatten(counts);
    if (!rows.length) return [empty(none)];
    const stages = [...new Set(rows.map((row) => row.stage))];
    return [
      h("div", { class: "chart" },
        barChart({
          id: `${id}-bars`,
          rows: rows.map((row) => ({
            label: row.stage ? `${row.stage} / ${row.reason}` : row.reason,
            value: row.count,
            color: color(stages.indexOf(row.stage)),
          })),
          format: fmtInt,
          width: widthOf(detail),
        })),
      table({
        id: `${id}-table`,
        columns: [{ label: "Stage" }, { label: "Reason" }, { label: "Count", num: true },
          { label: "Share", num: true }],
        rows: rows.map((row) => ({
          attrs: { "data-stage": row.stage, "data-reason": row.reason },
          cells: [
            { value: row.stage, class: "stage mono" }, { value: row.reason, class: "reason mono" },
            { value: fmtInt(row.count), class: "count" },
            { value: fmtShare(total ? row.count / total : 0), class: "share" },
          ],
        })),
      }),
    ];
  }

  function renderDetail(run) {
    const seconds = Object.entries(run.seconds || {});
    const made = run.datasets || [];
    const quarantined = flatten(run.quarantined_by).length > 0;
    fill(detail,
      h("h2", {}, `${run.kind} run `, h("span", { class: "mono" }, run.id)),
      h("p", { class: "hint mono" }, run.folder, " · ", fmtTime(run.created_at)),
      h("div", { class: "stats" },
        stat("Documents in", fmtInt(run.documents_in), "run-documents-in"),
        stat("Kept", fmtInt(run.kept), "run-kept"),
        stat("Excluded", fmtInt(run.excluded), "run-excluded"),
        stat("Quarantined", fmtInt(run.quarantined), "run-quarantined")),
      h("h3", {}, "Excluded by stage and reason"),
      ...reasons("excluded", run.excluded_by, run.excluded, "Nothing was excluded in this run."),
      quarantined ? h("h3", {}, "Quarantined by reason") : null,
      ...(quarantined ? reasons("quarantined", run.quarantined_by, run.quarantined, "") : []),
      seconds.length ? h("h3", {}, "Time per stage") : null,
      seconds.length
        ? table({
          id: "seconds-table",
          columns: [{ label: "Stage" }, { label: "Seconds", num: true }],
          rows: seconds.map(([stage, value]) => ({
            attrs: { "data-stage": stage },
            cells: [{ value: stage, class: "mono" }, fmtNum(value, 3)],
          })),
        })
        : null,
      made.length ? h("h3", {}, "Datasets made from it") : null,
      made.length
        ? h("p", { class: "mono", id: "run-datasets" }, made.map(String).join(", "))
        : null,
    );
  }

  return {
    show(params) {
      if (params) {
        chosen = params.get("run") || "";
        if (loaded && chosen) select(chosen);
      }
      if (!loaded) loaded = load();
    },
    hide() {},
    params: () => new URLSearchParams(chosen ? { run: chosen } : {}),
  };
}
