// Number formatting for people: bytes, rates, durations, counts. Pure (no DOM).

const UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];

function missing(n) {
  return n === null || n === undefined || Number.isNaN(n);
}

/** Bytes with a binary unit: 3 significant digits from KiB up ("1.50 KiB", "512 B"). */
export function fmtBytes(n) {
  if (missing(n)) return "–";
  let v = Math.abs(n);
  let u = 0;
  while (v >= 1024 && u < UNITS.length - 1) { v /= 1024; u++; }
  const s = u === 0 ? String(Math.round(v)) : v.toFixed(v < 10 ? 2 : v < 100 ? 1 : 0);
  return (n < 0 ? "-" : "") + s + " " + UNITS[u];
}

export function fmtRate(bps) {
  if (missing(bps)) return "–";
  return fmtBytes(bps) + "/s";
}

/** A rate with one decimal in every unit (the bandwidth strip's peak label). */
export function fmtRateShort(v) {
  if (missing(v)) return "–";
  const u = ["B/s", "KiB/s", "MiB/s", "GiB/s", "TiB/s"];
  let k = 0;
  while (v >= 1024 && k < u.length - 1) { v /= 1024; k++; }
  return `${v.toFixed(1)} ${u[k]}`;
}

/** Nanoseconds, human readable (ns, µs, ms, s). */
export function fmtNs(ns) {
  if (missing(ns)) return "–";
  const a = Math.abs(ns);
  if (a < 1e3) return `${Math.round(ns)} ns`;
  if (a < 1e6) return `${(ns / 1e3).toFixed(a < 1e4 ? 2 : 1)} µs`;
  if (a < 1e9) return `${(ns / 1e6).toFixed(a < 1e7 ? 2 : 1)} ms`;
  return `${(ns / 1e9).toFixed(3)} s`;
}

/** Seconds (Darshan float timers) as a duration. */
export function fmtSeconds(s) {
  if (missing(s)) return "–";
  return fmtNs(s * 1e9);
}

export function fmtInt(n) {
  if (missing(n)) return "–";
  return Math.round(n).toLocaleString("en-US");
}

export function fmtPct(p) {
  if (missing(p)) return "–";
  return `${p.toFixed(1)} %`;
}

/** A finding's evidence value as text: a fraction to four significant digits (the backend's float
 * sums carry noise such as 0.000021850000000000003), integers and strings as they are, other
 * objects as JSON. */
export function fmtValue(v) {
  if (typeof v === "number") return Number.isInteger(v) || !Number.isFinite(v) ? String(v) : String(Number(v.toPrecision(4)));
  if (v !== null && typeof v === "object") return JSON.stringify(v);
  return String(v);
}

/** An axis tick label for time t (ns) on a grid of `step` ns: as few decimals as the step needs. */
export function fmtTick(t, step) {
  if (step >= 1e9) return `${(t / 1e9).toFixed(Math.max(0, -Math.floor(Math.log10(step / 1e9))))} s`;
  if (step >= 1e6) return `${(t / 1e6).toFixed(Math.max(0, -Math.floor(Math.log10(step / 1e6))))} ms`;
  if (step >= 1e3) return `${(t / 1e3).toFixed(Math.max(0, -Math.floor(Math.log10(step / 1e3))))} µs`;
  return `${Math.round(t)} ns`;
}
