// Jobs view (live): the training jobs that push metrics, and for one of them throughput and
// mixture weights over step. While the view is shown it polls every second and fetches only
// the samples it has not seen (`since`).

import { api } from "./api.js";
import { color, lineChart, widthOf } from "./charts.js";
import { empty, fill, h, s, showError, stat, table } from "./dom.js";
import { fmtBytes, fmtFixed, fmtInt, fmtNum, fmtTime } from "./format.js";

const PERIOD_MS = 1000;
const KEPT = 10_000; // samples kept (and drawn) per job, as many as the service keeps

/** A sample's time as a number, to find the job that reported last. */
function when(sample) {
  const time = sample && sample.time;
  if (typeof time === "number") return time;
  const parsed = Date.parse(time);
  return Number.isNaN(parsed) ? -Infinity : parsed / 1000;
}

export function jobsView(section) {
  const list = section.querySelector('[data-role="list"]');
  const error = section.querySelector('[data-role="error"]');
  const detail = section.querySelector('[data-role="detail"]');
  const title = section.querySelector('[data-role="job-title"]');
  const latest = section.querySelector('[data-role="latest"]');
  const throughputBox = section.querySelector("#throughput-container");
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
    draw();
    if (byUser) tick();
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
      stat("Sequences/s", fmtNum(last.sequences_per_second, 1)),
      stat("Tokens/s", fmtInt(last.tokens_per_second)),
      stat("Wait (s)", fmtNum(last.wait_seconds, 3)),
      ...(last.cache
        ? [stat("Cache hits", fmtInt(cache.hits)), stat("Downloads", fmtInt(cache.downloads)),
          stat("Downloaded", fmtBytes(cache.bytes))]
        : []),
    );

    const points = (key) => samples
      .filter((sample) => typeof sample[key] === "number")
      .map((sample) => [sample.step, sample[key]]);
    fill(throughputBox,
      lineChart({
        id: "throughput-chart",
        series: [
          { name: "sequences/s", points: points("sequences_per_second"), color: color(0) },
          { name: "wait (s)", points: points("wait_seconds"), color: color(1), axis: "right" },
        ],
        xLabel: "step",
        yLabel: "sequences per second",
        y2Label: "wait seconds",
        legend: true,
        width: widthOf(throughputBox, 640),
      }),
    );

    // Components in the order they first appear; a line per component.
    const weighted = samples.filter((sample) => sample.weights instanceof Object);
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
        .map((sample) => [sample.step, sample.weights[name]]),
    }));
    const lastWeighted = weighted[weighted.length - 1];
    fill(weightsBox,
      lineChart({
        id: "weights-chart",
        series,
        xLabel: "step",
        yLabel: "weight",
        width: widthOf(weightsBox, 640),
        attrs: {
          "data-points": weighted.length,
          "data-last-step": lastWeighted ? lastWeighted.step : "",
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

  return {
    show() {
      tick();
      timer = setInterval(tick, PERIOD_MS);
    },
    hide() {
      clearInterval(timer);
      timer = null;
    },
  };
}
