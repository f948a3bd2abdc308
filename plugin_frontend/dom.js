// DOM helpers. Text from captures (file paths, op names, thread names) is only ever put
// into the page through textContent / attribute values, never innerHTML.

/** el("div", {class: "x", onclick: fn, dataset: {k: v}}, child, "text", ...) */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") node.className = v;
    else if (k === "dataset") Object.assign(node.dataset, v);
    else if (k === "style" && typeof v === "object") Object.assign(node.style, v);
    else if (k.startsWith("on") && typeof v === "function") node.addEventListener(k.slice(2), v);
    else if (k === "text") node.textContent = String(v);
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  append(node, children);
  return node;
}

export function append(node, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    node.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

export function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
  return node;
}

const UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];

export function fmtBytes(n) {
  if (n === null || n === undefined || Number.isNaN(n)) return "–";
  let v = Math.abs(n);
  let u = 0;
  while (v >= 1024 && u < UNITS.length - 1) { v /= 1024; u++; }
  const s = u === 0 ? String(Math.round(v)) : v.toFixed(v < 10 ? 2 : v < 100 ? 1 : 0);
  return (n < 0 ? "-" : "") + s + " " + UNITS[u];
}

export function fmtRate(bps) {
  if (bps === null || bps === undefined || Number.isNaN(bps)) return "–";
  return fmtBytes(bps) + "/s";
}

/** Nanoseconds, human readable (ns, µs, ms, s). */
export function fmtNs(ns) {
  if (ns === null || ns === undefined || Number.isNaN(ns)) return "–";
  const a = Math.abs(ns);
  if (a < 1e3) return `${Math.round(ns)} ns`;
  if (a < 1e6) return `${(ns / 1e3).toFixed(a < 1e4 ? 2 : 1)} µs`;
  if (a < 1e9) return `${(ns / 1e6).toFixed(a < 1e7 ? 2 : 1)} ms`;
  return `${(ns / 1e9).toFixed(3)} s`;
}

/** Seconds (Darshan float timers) as a duration. */
export function fmtSeconds(s) {
  if (s === null || s === undefined || Number.isNaN(s)) return "–";
  return fmtNs(s * 1e9);
}

export function fmtInt(n) {
  if (n === null || n === undefined || Number.isNaN(n)) return "–";
  return Math.round(n).toLocaleString("en-US");
}

/** Stable color from a string (HSL), for op names. */
export function hashColor(s, sat = 55, light = 62) {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) { h ^= s.charCodeAt(i); h = Math.imul(h, 16777619); }
  return `hsl(${(h >>> 0) % 360}, ${sat}%, ${light}%)`;
}
