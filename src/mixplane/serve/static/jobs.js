// Jobs view (live): the training jobs that push metrics, and for one of them throughput
// (tokens and sequences per second), time waiting for data and mixture weights, over step or
// over time, for a chosen time range. While the view is shown it polls every second and
// fetches only the samples it has not seen (`since`). The job, axis and range are kept in the
// address (#jobs?job=NAME&x=time&range=3600).

import { api } from "./api.js";
import { color, lineChart, widthOf } from "./charts.js";
import { empty, fill, h, s, showError, stat, table } from "./dom.js";
import { fmtBytes, fmtFixed, fmtInt, fmtNum, fmtTime } from "./format.js";
import { paramsOf } from "./state.js";

const PERIOD_MS = 1000;
const KEPT = 10_000; // samples kept (and drawn) per job, as many as the service keeps
const AXES = ["step", "time"];

/**
 * The samples of the last `seconds` before the latest one (all of them for "all"). The
 * latest sample's time is "now": the service stamps the times, whatever this browser's clock.
 */
export function inRange(samples, seconds) {
  if (seconds === "all" || !samples.length) return samples;
  const until = samples[samples.length - 1].time;
  return samples.filter((sample) => sample.time >= until - Number(seconds));
}

/** A sample's time as a number, to find the job that reported last. */
function when(sample) {
  const time = sample && sample.time;
  if (typeof time === "number") return time;
  const parsed = Date.parse(time);
  return Number.isNaN(parsed) ? -Infinity : parsed / 1000;
}

export function jobsView(section, context) {
  const list = section.querySelector('[data-role="list"]');
  const error = section.querySelector('[data-role="error"]');
  const detail = section.querySelector('[data-role="detail"]');
  const title = section.querySelector('[data-role="job-title"]');
  const latest = section.querySelector('[data-role="latest"]');
  const range = section.querySelector("#jobs-range");
  const throughputBox = section.querySelector("#throughput-container");
  const waitBox = section.querySelector("#wait-container");
  const weightsBox = section.querySelector("#weights-container");
  const legendBox = section.querySelector("#weights-legend");
  const rows = new Map(); // job -> its <tr>, updated in place so clicks are never lost
  let timer = null;
  let busy = false;
  let selected = null;
  let pinned = false; // the user picked a job: stop following the most recent one
  let samples = [];
  let seen = 0; // samples received for the selected job (`since`), dropped ones included
  let generation = 0; // bumped when the selection changes; stale answers are dropped

  async function tick() {
    if (busy) return;
    busy = true;
    try {
      const jobs = await api("jobs");
      showError(error, "");
      renderList(jobs);
      const current = jobs.find((job) => job.job === selected);
      if (selected !== null && !current) {
        forget(); // gone from the service (restarted, or pushed out by newer jobs)
      } else if (current && current.samples < seen) {
        restart(); // the service started over (restarted) with this job's name
      }
      if (!pinned && jobs.length) {
        const recent = jobs.reduce((a, b) => (when(b.last) >= when(a.last) ? b : a));
        if (recent.job !== selected) choose(recent.job, false);
      }
      if (selected) await poll();
    } catch (failure) {
      showError(error, failure.message);
    } finally {
      busy = false;
    }
  }

  function renderList(jobs) {
    if (!jobs.length) {
      rows.clear();
      fill(list,
        empty("No training job has reported yet. A job shows up here as soon as it pushes a "
          + "sample to ", h("code", {}, "POST /api/jobs/{job}/metrics"), "."),
      );
      detail.hidden = true;
      return;
    }
    let body = list.querySelector("#jobs-table tbody");
    if (!body) {
      fill(list,
        table({
          id: "jobs-table",
          columns: [
            { label: "Job" }, { label: "Samples", num: true }, { label: "Last step", num: true },
            { label: "Sequences/s", num: true }, { label: "Wait (s)", num: true },
            { label: "Last report" },
          ],
          rows: [],
        }),
      );
      body = list.querySelector("#jobs-table tbody");
    }
    for (const job of jobs) {
      const last = job.last || {};
      const cells = [
        job.job, fmtInt(job.samples), fmtInt(last.step), fmtNum(last.sequences_per_second, 1),
        fmtNum(last.wait_seconds, 3), fmtTime(last.time),
      ];
      let row = rows.get(job.job);
      if (!row) {
        const onclick = () => choose(job.job, true);
        row = h("tr", { class: "clickable", "data-job": job.job, onclick },
          cells.map((_, i) => h("td", { class: i === 0 ? "mono" : i < 5 ? "num" : null })));
        rows.set(job.job, row);
      }
      cells.forEach((text, i) => {
        if (row.children[i].textContent !== text) row.children[i].textContent = text;
      });
      row.classList.toggle("selected", job.job === selected);
    }
    // Rows follow the service's order (most recent first); jobs it no longer has go.
    const names = new Set(jobs.map((job) => job.job));
    for (const [name, row] of rows) {
      if (!names.has(name)) {
        row.remove();
        rows.delete(name);
      }
    }
    jobs.forEach((job, i) => {
      const row = rows.get(job.job);
      if (body.children[i] !== row) body.insertBefore(row, body.children[i] || null);
    });
  }

  function restart() {
    samples = [];
    seen = 0;
    generation += 1;
  }

  function forget() {
    selected = null;
    pinned = false;
    restart();
    detail.hidden = true;
  }

  function choose(job, byUser) {
    if (byUser) pinned = true;
    if (job === selected) return;
    selected = job;
    restart();
    for (const [name, row] of rows) row.classList.toggle("selected", name === job);
    title.textContent = `Job ${job}`;
    detail.hidden = false;
    if (byUser) context.changed();
    draw();
    if (byUser) tick();
  }

  function axis() {
    return section.querySelector('input[name="jobs-axis"]:checked').value;
  }

  async function poll() {
    const mine = generation;
    const job = selected;
    const data = await api(`jobs/${encodeURIComponent(job)}/metrics`, { since: seen });
    if (mine !== generation) return;
    const fresh = data.samples || [];
    if (fresh.length) {
      seen += fresh.length;
      samples = samples.concat(fresh);
      if (samples.length > KEPT) samples = samples.slice(samples.length - KEPT);
      draw();
    }
  }

  function draw() {
    const last = samples[samples.length - 1] || {};
    const cache = last.cache || {};
    fill(latest,
      stat("Step", fmtInt(last.step)),
      stat("Tokens/s", fmtInt(last.tokens_per_second)),
      stat("Sequences/s", fmtNum(last.sequences_per_second, 1)),
      stat("Wait (s)", fmtNum(last.wait_seconds, 3)),
      ...(last.cache
        ? [stat("Cache hits", fmtInt(cache.hits)), stat("Downloads", fmtInt(cache.downloads)),
          stat("Downloaded", fmtBytes(cache.bytes))]
        : []),
    );

    const shown = inRange(samples, range.value);
    const byTime = axis() === "time";
    // A step lower than the one before is a restart (from a checkpoint): a new line, over
    // time as over steps.
    const restarts = new Set(shown.filter((sample, i) => i && sample.step < shown[i - 1].step));
    const xOf = (sample) => (byTime ? sample.time : sample.step);
    const axisLabel = byTime ? "time (service clock)" : "step";
    const point = (sample, y) => [xOf(sample), y, restarts.has(sample)];
    const points = (key) => shown
      .filter((sample) => typeof sample[key] === "number")
      .map((sample) => point(sample, sample[key]));
    const common = { xLabel: axisLabel, xTime: byTime };
    fill(throughputBox,
      lineChart({
        ...common,
        id: "throughput-chart",
        series: [
          { name: "tokens/s", points: points("tokens_per_second"), color: color(0) },
          { name: "sequences/s", points: points("sequences_per_second"), color: color(1),
            axis: "right" },
        ],
        yLabel: "tokens per second",
        y2Label: "sequences per second",
        legend: true,
        width: widthOf(throughputBox, 640),
        attrs: { "data-points": points("tokens_per_second").length, "data-x": axis() },
      }),
    );
    fill(waitBox,
      lineChart({
        ...common,
        id: "wait-chart",
        series: [{ name: "wait (s)", points: points("wait_seconds"), color: color(3) }],
        yLabel: "seconds waiting for data",
        width: widthOf(waitBox, 640),
      }),
    );

    // Components in the order they first appear; a line per component.
    const weighted = shown.filter((sample) => sample.weights instanceof Object);
    const components = [];
    for (const sample of weighted) {
      for (const name of Object.keys(sample.weights)) {
        if (!components.includes(name)) components.push(name);
      }
    }
    const series = components.map((name, i) => ({
      name,
      color: color(i),
      points: weighted
        .filter((sample) => typeof sample.weights[name] === "number")
        .map((sample) => point(sample, sample.weights[name])),
    }));
    const lastWeighted = weighted[weighted.length - 1];
    fill(weightsBox,
      lineChart({
        ...common,
        id: "weights-chart",
        series,
        yLabel: "weight",
        width: widthOf(weightsBox, 640),
        attrs: {
          "data-points": weighted.length,
          "data-last-step": lastWeighted ? lastWeighted.step : "",
          "data-x": axis(),
        },
      }),
    );
    fill(legendBox,
      ...series.map((line) => {
        const latestWeight = line.points.length ? line.points[line.points.length - 1][1] : null;
        return h("span", { class: "legend-item", "data-component": line.name },
          // An SVG swatch: the page's content policy forbids inline style attributes.
          s("svg", { class: "swatch", viewBox: "0 0 10 10", "aria-hidden": "true" },
            s("rect", { width: 10, height: 10, rx: 2, fill: line.color })),
          h("span", { class: "name mono" }, line.name),
          h("span", { class: "weight" }, fmtFixed(latestWeight, 3)));
      }),
    );
  }

  function redraw() {
    context.changed();
    draw();
  }
  range.addEventListener("change", redraw);
  for (const radio of section.querySelectorAll('input[name="jobs-axis"]')) {
    radio.addEventListener("change", redraw);
  }

  return {
    show(params) {
      if (params) {
        const x = AXES.includes(params.get("x")) ? params.get("x") : "step";
        section.querySelector(`input[name="jobs-axis"][value="${x}"]`).checked = true;
        const wanted = params.get("range") || "all";
        range.value = [...range.options].some((o) => o.value === wanted) ? wanted : "all";
        const job = params.get("job");
        if (job) choose(job, true);
        else if (selected) draw();
      }
      if (!timer) {
        tick();
        timer = setInterval(tick, PERIOD_MS);
      }
    },
    hide() {
      clearInterval(timer);
      timer = null;
    },
    params: () => paramsOf({
      job: pinned ? selected : null,
      x: axis() === "step" ? null : axis(),
      range: range.value === "all" ? null : range.value,
    }),
  };
}
