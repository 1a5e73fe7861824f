// Hand-drawn SVG charts: a horizontal bar chart and a line chart with an optional second
// y axis and a number or clock-time x axis. Both draw into a fixed viewBox and scale to their
// container's width.

import { s } from "./dom.js";
import { fmtClock, fmtNum } from "./format.js";

const PALETTE = [
  "#2f62a8", "#d9822b", "#3d9970", "#c23b3b", "#8e6bbf",
  "#8c6d46", "#d46fa8", "#5f6b7a", "#b5a42b", "#2ba3b5",
];

/** The i-th series color (cycles after ten). */
export function color(i) {
  return PALETTE[i % PALETTE.length];
}

/** The width to draw a chart at: its container's, so text is not scaled up or down. */
export function widthOf(element, fallback = 760) {
  return Math.max(480, Math.round((element && element.clientWidth) || fallback));
}

/** Round `step` up to 1, 2 or 5 times a power of ten. */
function niceStep(raw) {
  if (!(raw > 0)) return 1;
  const power = 10 ** Math.floor(Math.log10(raw));
  const fraction = raw / power;
  return (fraction <= 1 ? 1 : fraction <= 2 ? 2 : fraction <= 5 ? 5 : 10) * power;
}

/** A domain [low, high] widened to round numbers, with its ticks. */
function niceScale(low, high, count = 5) {
  if (low === high) {
    // A flat series: give it room around its value (or [0, 1] around zero).
    const pad = low ? Math.abs(low) * 0.1 : 1;
    if (low) low -= pad;
    high += pad;
  }
  const step = niceStep((high - low) / count);
  const start = Math.floor(low / step) * step;
  const end = Math.ceil(high / step) * step;
  const ticks = [];
  // Build from integers to avoid accumulating floating point error (0.30000000000000004).
  for (let i = 0; start + i * step <= end + step * 1e-9; i += 1) ticks.push(start + i * step);
  const digits = Math.max(0, -Math.floor(Math.log10(step)));
  return { low: start, high: end, ticks, format: (v) => fmtNum(v, digits) };
}

const LABEL = 46; // characters of a bar's label before it is cut

/** Long category labels are cut; the full text stays in the bar's tooltip. */
function cut(text, max) {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/**
 * A horizontal bar chart. rows: [{label, value, tooltip}]; format: value -> text.
 * Returns an <svg> element.
 */
export function barChart({ rows, format, id, width = 760, rowHeight = 24 }) {
  const longest = Math.max(4, ...rows.map((row) => cut(String(row.label), LABEL).length));
  const labelWidth = Math.min(330, Math.max(72, 14 + longest * 6.8));
  const valueWidth = 96;
  const plotWidth = width - labelWidth - valueWidth;
  const height = rows.length * rowHeight + 8;
  const max = Math.max(0, ...rows.map((row) => row.value));
  const svg = s("svg", {
    id,
    viewBox: `0 0 ${width} ${height}`,
    role: "img",
    "aria-label": "bar chart",
    "data-bars": rows.length,
  });
  rows.forEach((row, i) => {
    const y = 4 + i * rowHeight;
    const barWidth = max > 0 ? Math.max(row.value > 0 ? 1 : 0, (row.value / max) * plotWidth) : 0;
    svg.append(
      s(
        "g",
        {},
        s("title", {}, row.tooltip || `${row.label}: ${format(row.value)}`),
        s("text", { x: labelWidth - 8, y: y + rowHeight / 2, "text-anchor": "end",
          "dominant-baseline": "middle" }, cut(String(row.label), LABEL)),
        s("rect", { x: labelWidth, y: y + 4, width: barWidth.toFixed(1), height: rowHeight - 8,
          rx: 2, fill: row.color || color(0) }),
        s("text", { class: "bar-label", x: labelWidth + barWidth + 6, y: y + rowHeight / 2,
          "dominant-baseline": "middle" }, format(row.value)),
      ),
    );
  });
  return svg;
}

/** [smallest, largest] of a (possibly long) list of numbers, without spreading it. */
function extent(values) {
  let low = Infinity;
  let high = -Infinity;
  for (const value of values) {
    if (value < low) low = value;
    if (value > high) high = value;
  }
  return [low, high];
}

// Steps between clock-time ticks, in seconds: 1 s to a day.
const TIME_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800,
  21600, 43200, 86400];

/** A time domain [low, high] (epoch seconds) with ticks on round clock times. */
function timeScale(low, high, count = 6) {
  // Under a minute of samples (a job that just started) is shown as the minute around
  // them: a span shorter than the finest step may hold no whole tick at all.
  if (high - low < 60) {
    const middle = (low + high) / 2;
    low = middle - 30;
    high = middle + 30;
  }
  const step = TIME_STEPS.find((candidate) => (high - low) / candidate <= count) || 86400;
  const ticks = [];
  for (let tick = Math.ceil(low / step) * step; tick <= high; tick += step) ticks.push(tick);
  return { low, high, ticks, format: (v) => fmtClock(v, step < 60) };
}

/**
 * A series cut where x goes back, or where a point says so ([x, y, true]): a job restarted
 * from a checkpoint reports steps it reported before, and a line back to them (or, over
 * time, across the restart) would show steps never taken.
 */
export function runsOf(points) {
  const runs = [];
  for (const point of points) {
    const run = runs[runs.length - 1];
    if (run && !point[2] && point[0] >= run[run.length - 1][0]) run.push(point);
    else runs.push([point]);
  }
  return runs;
}

/** Keep at most `limit` points (evenly spaced, always the last) so big series stay cheap. */
function thin(points, limit) {
  if (points.length <= limit) return points;
  const stride = Math.ceil(points.length / limit);
  const kept = points.filter((_, i) => i % stride === 0);
  if (kept[kept.length - 1] !== points[points.length - 1]) kept.push(points[points.length - 1]);
  return kept;
}

/**
 * A line chart. series: [{name, color, points: [[x, y], ...], axis: "left" | "right"}].
 * Where x goes back, or at a point [x, y, true], a series starts a new line (see runsOf).
 * Options: xLabel, yLabel, y2Label, yMin (left axis floor, default 0), xTime (x is epoch
 * seconds, ticked as clock times), legend (draw the series names on top), attrs (extra
 * attributes for the <svg>, e.g. data-points).
 */
export function lineChart({
  id, series, xLabel = "", yLabel = "", y2Label = "", yMin = 0, xTime = false, legend = false,
  attrs = {}, width = 640, height = 280,
}) {
  const hasRight = series.some((line) => line.axis === "right");
  const margin = { left: 62, right: hasRight ? 62 : 18, top: legend ? 30 : 12, bottom: 40 };
  const plotW = width - margin.left - margin.right;
  const plotH = height - margin.top - margin.bottom;
  const svg = s("svg", { id, viewBox: `0 0 ${width} ${height}`, role: "img", ...attrs });
  const all = series.flatMap((line) => line.points);
  if (!all.length) {
    svg.append(s("text", { class: "empty-chart", x: width / 2, y: height / 2,
      "text-anchor": "middle" }, "No samples yet"));
    return svg;
  }

  const xs = extent(all.map((p) => p[0]));
  const x = xTime ? timeScale(...xs) : niceScale(...xs, 6);
  const axisScale = (side) => {
    const ys = series
      .filter((line) => (line.axis || "left") === side)
      .flatMap((line) => line.points.map((p) => p[1]));
    if (!ys.length) return null;
    const [low, high] = extent(ys);
    return niceScale(yMin === null ? low : Math.min(yMin, low), high, 5);
  };
  const left = axisScale("left");
  const right = hasRight ? axisScale("right") : null;
  const px = (v) => margin.left + ((v - x.low) / (x.high - x.low || 1)) * plotW;
  const py = (scale, v) =>
    margin.top + plotH - ((v - scale.low) / (scale.high - scale.low || 1)) * plotH;
  const bottom = margin.top + plotH;

  // Grid and axes.
  const grid = s("g", { class: "grid" });
  const axes = s("g", { class: "axis" });
  if (left) {
    for (const tick of left.ticks) {
      const y = py(left, tick);
      grid.append(s("line", { x1: margin.left, x2: margin.left + plotW, y1: y, y2: y }));
      axes.append(s("text", { class: "tick-label", x: margin.left - 6, y, "text-anchor": "end",
        "dominant-baseline": "middle" }, left.format(tick)));
    }
  }
  if (right) {
    for (const tick of right.ticks) {
      axes.append(s("text", { class: "tick-label", x: margin.left + plotW + 6, y: py(right, tick),
        "dominant-baseline": "middle" }, right.format(tick)));
    }
  }
  for (const tick of x.ticks) {
    const xPos = px(tick);
    axes.append(s("line", { x1: xPos, x2: xPos, y1: bottom, y2: bottom + 4 }));
    axes.append(s("text", { class: "tick-label", x: xPos, y: bottom + 16,
      "text-anchor": "middle" }, x.format(tick)));
  }
  axes.append(s("line", { x1: margin.left, x2: margin.left + plotW, y1: bottom, y2: bottom }));
  axes.append(s("text", { class: "axis-label", x: margin.left + plotW / 2, y: height - 4,
    "text-anchor": "middle" }, xLabel));
  const side = (text, xPos, angle) =>
    s("text", { class: "axis-label", x: 0, y: 0, "text-anchor": "middle",
      transform: `translate(${xPos} ${margin.top + plotH / 2}) rotate(${angle})` }, text);
  if (yLabel) axes.append(side(yLabel, 12, -90));
  if (y2Label && right) axes.append(side(y2Label, width - 10, 90));
  svg.append(grid, axes);

  // One path per series, a line (M ... L ...) per run of increasing x.
  series.forEach((line, i) => {
    const scale = line.axis === "right" ? right : left;
    if (!line.points.length || !scale) return;
    const runs = runsOf(line.points);
    const share = Math.ceil((plotW * 2) / runs.length);
    const d = runs
      .map((run) => thin(run, share)
        .map((p, j) => `${j ? "L" : "M"}${px(p[0]).toFixed(1)},${py(scale, p[1]).toFixed(1)}`)
        .join(""))
      .join("");
    const stroke = line.color || color(i);
    svg.append(s("path", { d, fill: "none", stroke, "stroke-width": 1.8,
      "stroke-linejoin": "round", "data-series": line.name, "data-runs": runs.length }));
    for (const run of runs) {
      if (run.length === 1) {
        const [only] = run;
        svg.append(s("circle", { cx: px(only[0]), cy: py(scale, only[1]), r: 3, fill: stroke }));
      }
    }
  });

  if (legend) {
    let xPos = margin.left;
    series.forEach((line, i) => {
      const label = line.axis === "right" && hasRight ? `${line.name} (right axis)` : line.name;
      svg.append(
        s("rect", { x: xPos, y: 8, width: 12, height: 12, rx: 2, fill: line.color || color(i) }),
        s("text", { x: xPos + 17, y: 14, "dominant-baseline": "middle" }, label),
      );
      xPos += 30 + label.length * 6.6;
    });
  }
  return svg;
}
