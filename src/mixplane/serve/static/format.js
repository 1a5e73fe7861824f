// Number and date formatting: integers always with thousands separators ("1,234").

const integer = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });

/** 1234567 -> "1,234,567"; anything that is not a number -> "–". */
export function fmtInt(value) {
  return typeof value === "number" && Number.isFinite(value) ? integer.format(value) : "–";
}

/** A number with at most `digits` decimals, grouped: 12345.678 -> "12,345.68". */
export function fmtNum(value, digits = 2) {
  if (typeof value !== "number" || !Number.isFinite(value)) return "–";
  return value.toLocaleString("en-US", { maximumFractionDigits: digits });
}

/** A number with exactly `digits` decimals (weights: 0.4 -> "0.400"). */
export function fmtFixed(value, digits) {
  if (typeof value !== "number" || !Number.isFinite(value)) return "–";
  return value.toLocaleString("en-US", {
    minimumFractionDigits: digits,
    maximumFractionDigits: digits,
  });
}

/** A share 0..1 as a percentage: 0.1234 -> "12.3%". */
export function fmtShare(value) {
  if (typeof value !== "number" || !Number.isFinite(value)) return "–";
  return `${fmtFixed(value * 100, 1)}%`;
}

/** Bytes in binary units: 1536 -> "1.5 KiB". */
export function fmtBytes(value) {
  if (typeof value !== "number" || !Number.isFinite(value)) return "–";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let size = value;
  let unit = 0;
  while (size >= 1024 && unit < units.length - 1) {
    size /= 1024;
    unit += 1;
  }
  return `${fmtNum(size, unit ? 1 : 0)} ${units[unit]}`;
}

/** A property value for a table: integers grouped, floats shortened, objects as JSON. */
export function fmtValue(value) {
  if (value === null || value === undefined) return "null";
  if (typeof value === "number") return Number.isInteger(value) ? fmtInt(value) : fmtNum(value, 4);
  if (typeof value === "object") return JSON.stringify(value);
  return String(value);
}

/** An ISO timestamp (or epoch seconds) as "YYYY-MM-DD HH:MM:SS" in local time. */
export function fmtTime(value) {
  if (value === null || value === undefined || value === "") return "–";
  const date = typeof value === "number" ? new Date(value * 1000) : new Date(value);
  if (Number.isNaN(date.getTime())) return String(value);
  const pad = (n) => String(n).padStart(2, "0");
  return (
    `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ` +
    `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`
  );
}

/** Epoch seconds as a local clock time: "14:05" (or "14:05:09" with seconds). */
export function fmtClock(value, seconds = true) {
  const date = new Date(value * 1000);
  const pad = (n) => String(n).padStart(2, "0");
  const clock = `${pad(date.getHours())}:${pad(date.getMinutes())}`;
  return seconds ? `${clock}:${pad(date.getSeconds())}` : clock;
}

/** A tokenizer description (an object in the catalog) in a few words. */
export function fmtTokenizer(tokenizer) {
  if (!tokenizer) return "–";
  if (typeof tokenizer !== "object") return String(tokenizer);
  const parts = [tokenizer.kind || tokenizer.name || "tokenizer"];
  if (typeof tokenizer.vocab_size === "number") parts.push(`vocab ${fmtInt(tokenizer.vocab_size)}`);
  return parts.join(", ");
}
