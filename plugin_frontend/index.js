// GENERATED from plugin_frontend/main.js, the modules it imports and style.css by
// tools/bundle_frontend.mjs: do not edit; change the sources and run
// `node tools/bundle_frontend.mjs` (tests/frontend/bundle.test.mjs checks it is fresh).
// Modules, in evaluation order: lib/packed.js, api.js, lib/dom.js, lib/format.js, lib/latest.js, timeline/coords.js, timeline/tracks.js, lib/colors.js, timeline/view.js, timeline/loader.js, timeline/input.js, timeline/tooltip.js, timeline/timeline.js, views/table.js, views/charts.js, views/codefiles.js, views/runseries.js, views/findings.js, views/details.js, views/hosts.js, app.js, main.js

// ---- lib/packed.js
const __m_lib_packed_js = (() => {
// Decoder of the server's packed answers (tb_iotrace/plugin/packed.py): "TBIO", a uint32
// header length, a JSON header, then columns of little-endian numbers at 8-byte aligned
// offsets. Each column becomes a typed-array view on the received buffer (no copy).

const MAGIC = [0x54, 0x42, 0x49, 0x4f]; // "TBIO"
const TYPES = { i8: Int8Array, i16: Int16Array, i32: Int32Array, f64: Float64Array };
const LITTLE = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** {fields, columns: {name: TypedArray}} of a packed answer (an ArrayBuffer). */
function unpack(buffer) {
  const bytes = new Uint8Array(buffer);
  if (bytes.length < 8 || MAGIC.some((b, i) => bytes[i] !== b)) throw new Error("not a packed answer");
  const n = new DataView(buffer).getUint32(4, true);
  if (8 + n > bytes.length) throw new Error("packed answer truncated");
  const fields = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + n)));
  const base = Math.ceil((8 + n) / 8) * 8;
  const columns = {};
  for (const [name, dtype, length, offset] of fields.columns) {
    const T = TYPES[dtype];
    if (!T) throw new Error(`packed answer: unknown column type ${dtype}`);
    const at = base + offset;
    if (at + length * T.BYTES_PER_ELEMENT > buffer.byteLength) throw new Error("packed answer truncated");
    columns[name] = LITTLE || T.BYTES_PER_ELEMENT === 1 ? new T(buffer, at, length) : swapped(buffer, at, length, dtype);
  }
  delete fields.columns;
  return { fields, columns };
}

/** A column read value by value (a big-endian machine). */
function swapped(buffer, at, length, dtype) {
  const dv = new DataView(buffer, at);
  const T = TYPES[dtype];
  const out = new T(length);
  const get = { i16: (i) => dv.getInt16(2 * i, true), i32: (i) => dv.getInt32(4 * i, true), f64: (i) => dv.getFloat64(8 * i, true) }[dtype];
  for (let i = 0; i < length; i++) out[i] = get(i);
  return out;
}

/**
 * Columns named "<group>.<key>" gathered into objects: {segments: {lane, ...}, items: {...}}
 * merged into the fields (the shape of the JSON answer).
 */
function nest({ fields, columns }) {
  const out = { ...fields };
  for (const [name, col] of Object.entries(columns)) {
    const dot = name.indexOf(".");
    if (dot < 0) { out[name] = col; continue; }
    const g = name.slice(0, dot);
    (out[g] || (out[g] = {}))[name.slice(dot + 1)] = col;
  }
  return out;
}
return { unpack, nest };
})();

// ---- api.js
const __m_api_js = (() => {
// Fetches the plugin's routes (relative URLs: the page's <base> is plugin/iotrace/).

const { nest, unpack } = __m_lib_packed_js;

class ApiError extends Error {
  constructor(status, message, body) {
    super(message);
    this.status = status;
    this.body = body || {};
  }
}

function fetchRoute(route, params, signal, accept) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== "") q.set(k, String(v));
  }
  const url = `./${route}${q.toString() ? "?" + q.toString() : ""}`;
  return fetch(url, { signal, headers: { Accept: accept } }).catch((e) => {
    if (e.name === "AbortError") throw e;
    throw new ApiError(0, `cannot reach TensorBoard (${e.message})`);
  });
}

/** A packed answer (lib/packed.js), nested into the JSON answer's shape; errors come as JSON. */
async function getPacked(route, params = {}, signal = undefined) {
  const resp = await fetchRoute(route, params, signal, "application/octet-stream, application/json");
  if (!resp.ok) {
    let body = null;
    try { body = await resp.json(); } catch (_) { body = null; }
    throw new ApiError(resp.status, (body && body.error) || `${resp.status} ${resp.statusText}`, body);
  }
  return nest(unpack(await resp.arrayBuffer()));
}

async function getJson(route, params = {}, signal = undefined) {
  const resp = await fetchRoute(route, params, signal, "application/json");
  let body = null;
  try { body = await resp.json(); } catch (_) { body = null; }
  if (!resp.ok) {
    const msg = (body && body.error) || `${resp.status} ${resp.statusText}`;
    throw new ApiError(resp.status, msg, body);
  }
  return body;
}
return { ApiError, getPacked, getJson };
})();

// ---- lib/dom.js
const __m_lib_dom_js = (() => {
// DOM helpers. Text from captures (file paths, op names, thread names) is only ever put
// into the page through textContent / attribute values, never innerHTML.

/** el("div", {class: "x", onclick: fn, dataset: {k: v}}, child, "text", ...) */
function el(tag, attrs = {}, ...children) {
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

function append(node, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    node.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
  return node;
}

/** A titled panel section. */
function section(title, body, cls) {
  return el("section", { class: `panel ${cls}` }, el("h2", { text: title }), body);
}
return { el, append, clear, section };
})();

// ---- lib/format.js
const __m_lib_format_js = (() => {
// Number formatting for people: bytes, rates, durations, counts. Pure (no DOM).

const UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];

function missing(n) {
  return n === null || n === undefined || Number.isNaN(n);
}

/** Bytes with a binary unit: 3 significant digits from KiB up ("1.50 KiB", "512 B"). */
function fmtBytes(n) {
  if (missing(n)) return "–";
  let v = Math.abs(n);
  let u = 0;
  while (v >= 1024 && u < UNITS.length - 1) { v /= 1024; u++; }
  const s = u === 0 ? String(Math.round(v)) : v.toFixed(v < 10 ? 2 : v < 100 ? 1 : 0);
  return (n < 0 ? "-" : "") + s + " " + UNITS[u];
}

function fmtRate(bps) {
  if (missing(bps)) return "–";
  return fmtBytes(bps) + "/s";
}

/** A rate with one decimal in every unit (the bandwidth strip's peak label). */
function fmtRateShort(v) {
  if (missing(v)) return "–";
  const u = ["B/s", "KiB/s", "MiB/s", "GiB/s", "TiB/s"];
  let k = 0;
  while (v >= 1024 && k < u.length - 1) { v /= 1024; k++; }
  return `${v.toFixed(1)} ${u[k]}`;
}

/** Nanoseconds, human readable (ns, µs, ms, s). */
function fmtNs(ns) {
  if (missing(ns)) return "–";
  const a = Math.abs(ns);
  if (a < 1e3) return `${Math.round(ns)} ns`;
  if (a < 1e6) return `${(ns / 1e3).toFixed(a < 1e4 ? 2 : 1)} µs`;
  if (a < 1e9) return `${(ns / 1e6).toFixed(a < 1e7 ? 2 : 1)} ms`;
  return `${(ns / 1e9).toFixed(3)} s`;
}

/** Seconds (Darshan float timers) as a duration. */
function fmtSeconds(s) {
  if (missing(s)) return "–";
  return fmtNs(s * 1e9);
}

function fmtInt(n) {
  if (missing(n)) return "–";
  return Math.round(n).toLocaleString("en-US");
}

function fmtPct(p) {
  if (missing(p)) return "–";
  return `${p.toFixed(1)} %`;
}

/** An axis tick label for time t (ns) on a grid of `step` ns: as few decimals as the step needs. */
function fmtTick(t, step) {
  if (step >= 1e9) return `${(t / 1e9).toFixed(Math.max(0, -Math.floor(Math.log10(step / 1e9))))} s`;
  if (step >= 1e6) return `${(t / 1e6).toFixed(Math.max(0, -Math.floor(Math.log10(step / 1e6))))} ms`;
  if (step >= 1e3) return `${(t / 1e3).toFixed(Math.max(0, -Math.floor(Math.log10(step / 1e3))))} µs`;
  return `${Math.round(t)} ns`;
}
return { fmtBytes, fmtRate, fmtRateShort, fmtNs, fmtSeconds, fmtInt, fmtPct, fmtTick };
})();

// ---- lib/latest.js
const __m_lib_latest_js = (() => {
// "Only the newest answer counts" for requests that a later pick supersedes (the details
// of a clicked event, a file's access sizes, the timeline's window): begin() aborts the
// request before it and hands out a ticket that knows whether it is still the newest.

class Latest {
  constructor() {
    this.seq = 0;
    this.ctl = null;
  }

  /** Start a request: aborts the previous one; returns {seq, signal, current()}. */
  begin() {
    if (this.ctl) this.ctl.abort();
    const ctl = new AbortController();
    this.ctl = ctl;
    const seq = ++this.seq;
    return { seq, signal: ctl.signal, current: () => seq === this.seq };
  }

  /** Supersede whatever is in flight without starting anything. */
  cancel() {
    if (this.ctl) this.ctl.abort();
    this.ctl = null;
    this.seq++;
  }
}
return { Latest };
})();

// ---- timeline/coords.js
const __m_timeline_coords_js = (() => {
// Coordinate spaces of the timeline (the server's tb_iotrace/plugin/lod.py uses the same):
//
//   time  ns on the view's clock: ns since the capture's profile start (all lanes share it).
//   x     CSS pixels from the left edge of the plot area (the canvas right of the labels).
//         x = (t - t0) / nsPerPx, nsPerPx = (t1 - t0) / width.
//   y     CSS pixels from the top of the track area (content coordinates, before scrolling).
//   device pixels = CSS pixels * devicePixelRatio (only the canvas backing store uses them).
//
// TimeScale is immutable: zoom/pan return new scales, so a drawn frame and the request
// that fetched its data always agree on the window.

const { fmtTick } = __m_lib_format_js;

const MIN_SPAN_NS = 100; // never zoom in below 100 ns across the plot

class TimeScale {
  constructor(t0, t1, width) {
    this.t0 = t0;
    this.t1 = Math.max(t1, t0 + 1e-6);
    this.width = Math.max(1, width);
  }
  get span() { return this.t1 - this.t0; }
  get nsPerPx() { return this.span / this.width; }
  /** time (ns) -> x (CSS px) */
  x(t) { return (t - this.t0) / this.nsPerPx; }
  /** x (CSS px) -> time (ns) */
  t(x) { return this.t0 + x * this.nsPerPx; }
  withWidth(width) { return new TimeScale(this.t0, this.t1, width); }
  /** Zoom by `factor` (<1 zooms in) keeping the time under x fixed. */
  zoom(factor, x = this.width / 2, bounds = null) {
    const anchor = this.t(x);
    let span = Math.max(MIN_SPAN_NS, this.span * factor);
    if (bounds) span = Math.min(span, (bounds[1] - bounds[0]) * 1.2 || span);
    const frac = x / this.width;
    return this.clamp(new TimeScale(anchor - frac * span, anchor - frac * span + span, this.width), bounds);
  }
  /** Pan by dx CSS pixels (positive moves the view to later times). */
  pan(dx, bounds = null) {
    const dt = dx * this.nsPerPx;
    return this.clamp(new TimeScale(this.t0 + dt, this.t1 + dt, this.width), bounds);
  }
  /** Keep the window overlapping the data extent [lo, hi] (with a 10% margin). */
  clamp(s, bounds) {
    if (!bounds) return s;
    const [lo, hi] = bounds;
    const margin = (hi - lo) * 0.1;
    let { t0, t1 } = s;
    const span = t1 - t0;
    if (t1 < lo + Math.min(span, hi - lo) * 0.1) { t0 = lo - span * 0.9; t1 = t0 + span; }
    if (t0 > hi - Math.min(span, hi - lo) * 0.1) { t1 = hi + span * 0.9; t0 = t1 - span; }
    if (span > (hi - lo) + 2 * margin) { t0 = lo - margin; t1 = hi + margin; }
    return new TimeScale(t0, t1, s.width);
  }
  /** Tick marks: [{t, x, label}] with a "nice" step for about `target` pixels apart. */
  ticks(target = 110) {
    const raw = this.nsPerPx * target;
    const p = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 5, 10].map((m) => m * p).find((s) => s >= raw) || 10 * p;
    const out = [];
    const first = Math.ceil(this.t0 / step) * step;
    for (let t = first; t <= this.t1 && out.length < 200; t += step) {
      out.push({ t, x: this.x(t), label: fmtTick(t, step) });
    }
    return out;
  }
}
return { MIN_SPAN_NS, TimeScale };
})();

// ---- timeline/tracks.js
const __m_timeline_tracks_js = (() => {
// Pure track building: lanes from /capture (or /timeline) -> vertical layout. No DOM, no
// canvas: testable on its own. y values are CSS px from the top of the track area.

const ROW_H = 16;
const LANE_PAD = 3;
const HEADER_H = 22;

// Draw order of the lane groups: file accesses first (this is the I/O tab), then the host
// threads they run on, then the devices.
const GROUPS = [
  { id: "io", title: "File accesses" },
  { id: "host", title: "Host threads" },
  { id: "device", title: "Devices" },
];

/**
 * @param lanes [{key, group, name, rows, ...}] in server order
 * @param collapsed Set of group ids whose lanes are hidden
 * @returns {tracks, height, laneTrack: Map(laneIndex -> track)}
 *   tracks: [{kind: "header", group, title, count, y, h}
 *            | {kind: "lane", lane, laneIndex, group, y, h, rows}]
 */
function buildTracks(lanes, collapsed = new Set()) {
  const tracks = [];
  const laneTrack = new Map();
  let y = 0;
  for (const g of GROUPS) {
    const members = [];
    lanes.forEach((lane, i) => { if (lane.group === g.id) members.push([lane, i]); });
    if (!members.length) continue;
    tracks.push({ kind: "header", group: g.id, title: g.title, count: members.length, y, h: HEADER_H,
                  collapsed: collapsed.has(g.id) });
    y += HEADER_H;
    if (collapsed.has(g.id)) continue;
    for (const [lane, i] of members) {
      const rows = Math.max(1, lane.rows || 1);
      const h = rows * ROW_H + 2 * LANE_PAD;
      const t = { kind: "lane", lane, laneIndex: i, group: g.id, y, h, rows };
      tracks.push(t);
      laneTrack.set(i, t);
      y += h;
    }
  }
  return { tracks, height: Math.max(y, 1), laneTrack };
}

/** The track at content y (binary search), or null. */
function trackAt(layout, y) {
  const ts = layout.tracks;
  let lo = 0;
  let hi = ts.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const t = ts[mid];
    if (y < t.y) hi = mid - 1;
    else if (y >= t.y + t.h) lo = mid + 1;
    else return t;
  }
  return null;
}

/** Group the timeline items by lane: Map(laneIndex -> [item indices]). */
function itemsByLane(items) {
  const m = new Map();
  const lane = items.lane;
  for (let i = 0; i < lane.length; i++) {
    let a = m.get(lane[i]);
    if (!a) { a = []; m.set(lane[i], a); }
    a.push(i);
  }
  return m;
}

/** The item under (x, y) for a given scale, or -1. Prefers the narrowest hit. */
function itemAt(data, byLane, layout, scale, x, y, slop = 2) {
  const t = trackAt(layout, y);
  if (!t || t.kind !== "lane" || !data) return -1;
  const row = Math.floor((y - t.y - LANE_PAD) / ROW_H);
  const idx = byLane.get(t.laneIndex);
  if (!idx) return -1;
  const it = data.items;
  let best = -1;
  let bestW = Infinity;
  for (const i of idx) {
    if (it.row[i] !== row) continue;
    const x0 = scale.x(it.start[i]);
    const x1 = Math.max(x0 + 1, scale.x(it.start[i] + it.dur[i]));
    if (x >= x0 - slop && x <= x1 + slop && x1 - x0 < bestW) { best = i; bestW = x1 - x0; }
  }
  return best;
}

/**
 * Expand a /timeline response in place into per-item typed arrays: items.lane/row/index
 * (from the segments and counts) and items.start/dur in ns (start deltas in units of q;
 * a segment's first item counts from segments.start when the answer has it, the packed
 * answer, else from the window's start).
 */
function decodeTimeline(data) {
  const it = data.items;
  const n = it.start.length;
  const lane = new Int32Array(n);
  const row = new Int32Array(n);
  const index = new Float64Array(n);
  const start = new Float64Array(n);
  const dur = new Float64Array(n);
  const seg = data.segments;
  const q = data.q;
  const t0 = data.start;
  let i = 0;
  for (let s = 0; s < seg.length.length; s++) {
    const end = i + seg.length[s];
    let sq = seg.start ? seg.start[s] : 0;
    let ev = seg.first[s];
    for (let k = i; k < end; k++) {
      sq += it.start[k];
      lane[k] = seg.lane[s];
      row[k] = seg.row[s];
      index[k] = ev;
      ev += it.count[k];
      start[k] = t0 + sq * q;
      dur[k] = it.dur[k] * q;
    }
    i = end;
  }
  it.lane = lane;
  it.row = row;
  it.index = index;
  it.start = start;
  it.dur = dur;
  return data;
}

/** The tracks that overlap content rows [top, bottom) (binary search; in layout order). */
function tracksIn(layout, top, bottom) {
  const ts = layout.tracks;
  let lo = 0;
  let hi = ts.length;
  while (lo < hi) {  // first track ending below top
    const mid = (lo + hi) >> 1;
    if (ts[mid].y + ts[mid].h <= top) lo = mid + 1; else hi = mid;
  }
  const out = [];
  for (let i = lo; i < ts.length && ts[i].y < bottom; i++) out.push(ts[i]);
  return out;
}

/**
 * The lanes to ask the server for when content rows [top, bottom) are on screen: the lane
 * tracks there and `margin` px above and below (so a short scroll finds them drawn).
 * Returns null when that is every lane of `laneCount` (no `lanes=` filter needed), else
 * the lane keys in layout order.
 */
function lanesToRequest(layout, top, bottom, margin, laneCount) {
  const keys = tracksIn(layout, top - margin, bottom + margin)
    .filter((t) => t.kind === "lane").map((t) => t.lane.key);
  return keys.length === laneCount ? null : keys;
}

/** Are all lane tracks in content rows [top, bottom) among `have` (a Set of keys; null = all)? */
function lanesCovered(layout, top, bottom, have) {
  if (have === null) return true;
  return tracksIn(layout, top, bottom).every((t) => t.kind !== "lane" || have.has(t.lane.key));
}
return { ROW_H, LANE_PAD, HEADER_H, GROUPS, buildTracks, trackAt, itemsByLane, itemAt, decodeTimeline, tracksIn, lanesToRequest, lanesCovered };
})();

// ---- lib/colors.js
const __m_lib_colors_js = (() => {
// Colours of the tab: the timeline palette, I/O calls by kind, and stable colours for names.
// Pure (no DOM).

const COLORS = {
  bg: "#ffffff",
  header: "#eef1f5",
  headerText: "#3c4650",
  laneAlt: "#f8f9fb",
  stepA: "rgba(255, 193, 7, 0.10)",
  stepB: "rgba(255, 193, 7, 0.04)",
  stepLine: "rgba(200, 140, 0, 0.55)",
  read: "#2b7bb9",
  write: "#e8853a",
  meta: "#8d99a6",
  error: "#d62728",
  select: "#111111",
  highlight: "#c2185b",
};

/** Colour of an I/O call by its function name: errors red, writes orange, reads blue, the rest grey. */
function ioColor(op, err) {
  if (err) return COLORS.error;
  if (/write|fsync|sync/.test(op)) return COLORS.write;
  if (/read/.test(op)) return COLORS.read;
  return COLORS.meta;
}

/** Stable colour from a string (FNV-1a hash -> HSL hue), for op names. */
function hashColor(s, sat = 55, light = 62) {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) { h ^= s.charCodeAt(i); h = Math.imul(h, 16777619); }
  return `hsl(${(h >>> 0) % 360}, ${sat}%, ${light}%)`;
}
return { COLORS, ioColor, hashColor };
})();

// ---- timeline/view.js
const __m_timeline_view_js = (() => {
// The timeline's drawing calls: functions of (canvas context, layout, data, scale, style
// state) that paint; no fetching, no input handling. The track canvas covers only the
// visible part of the lanes (the caller translates the context by the scroll offset and
// passes the visible content range as opts.top/bottom).

const { COLORS, hashColor, ioColor } = __m_lib_colors_js;
const { fmtRateShort } = __m_lib_format_js;
const { LANE_PAD, ROW_H } = __m_timeline_tracks_js;

/** Color of item i (colors cached per name and group on the response). */
function itemColor(data, i, lane) {
  const io = lane.group === "io";
  if (io && data.items.err[i]) return COLORS.error;
  const cache = data._colors || (data._colors = new Map());
  const key = (io ? 1 : 0) + 2 * data.items.name[i];
  let c = cache.get(key);
  if (c === undefined) {
    const name = data.names[data.items.name[i]] || "";
    c = io ? ioColor(name, 0) : hashColor(name);
    cache.set(key, c);
  }
  return c;
}

/**
 * Draw tracks, step bands and items into ctx (already scaled to CSS px).
 * opts: {selectedFile, selected: {lane, index}|null, top, bottom} (visible content y range)
 * Returns the number of items drawn.
 */
function drawTimeline(ctx, layout, data, scale, steps, opts = {}) {
  const W = scale.width;
  const top = opts.top ?? 0;
  const bottom = opts.bottom ?? layout.height;
  ctx.fillStyle = COLORS.bg;
  ctx.fillRect(0, top, W, bottom - top);
  // Lane backgrounds and group headers.
  let alt = false;
  for (const t of layout.tracks) {
    if (t.y + t.h < top || t.y > bottom) { if (t.kind === "lane") alt = !alt; continue; }
    if (t.kind === "header") {
      ctx.fillStyle = COLORS.header;
      ctx.fillRect(0, t.y, W, t.h);
      alt = false;
    } else {
      if (alt) { ctx.fillStyle = COLORS.laneAlt; ctx.fillRect(0, t.y, W, t.h); }
      alt = !alt;
    }
  }
  // Step bands behind the events.
  (steps || []).forEach((s, k) => {
    const x0 = scale.x(s.start);
    const x1 = scale.x(s.end);
    if (x1 < 0 || x0 > W) return;
    ctx.fillStyle = k % 2 ? COLORS.stepB : COLORS.stepA;
    ctx.fillRect(Math.max(0, x0), top, Math.min(W, x1) - Math.max(0, x0), bottom - top);
    ctx.fillStyle = COLORS.stepLine;
    if (x0 >= 0 && x0 <= W) ctx.fillRect(Math.round(x0), top, 1, bottom - top);
  });
  if (!data) return 0;
  const it = data.items;
  const n = it.start.length;
  const sel = opts.selectedFile ?? null;
  const selFile = sel === null ? -2 : data.files.indexOf(sel);
  let drawn = 0;
  ctx.font = "11px system-ui, sans-serif";
  ctx.textBaseline = "middle";
  const labels = [];
  let lastColor = null;
  let lastAlpha = 1;
  ctx.globalAlpha = 1;
  for (let i = 0; i < n; i++) {
    const t = layout.laneTrack.get(it.lane[i]);
    if (!t) continue;
    const y = t.y + LANE_PAD + it.row[i] * ROW_H;
    if (y + ROW_H < top || y > bottom) continue;
    let x0 = scale.x(it.start[i]);
    let x1 = scale.x(it.start[i] + it.dur[i]);
    if (x1 < 0 || x0 > W) continue;
    x0 = Math.max(x0, -1);
    x1 = Math.min(x1, W + 1);
    const w = Math.max(1, x1 - x0);
    let color = itemColor(data, i, t.lane);
    let alpha = it.count[i] > 1 ? 0.8 : 1;
    if (sel !== null && t.group === "io") {
      if (it.file[i] === selFile && selFile >= 0) color = COLORS.highlight;
      else alpha = 0.18;
    }
    if (alpha !== lastAlpha) { ctx.globalAlpha = alpha; lastAlpha = alpha; }
    if (color !== lastColor) { ctx.fillStyle = color; lastColor = color; }
    ctx.fillRect(x0, y + 1, w, ROW_H - 2);
    drawn++;
    if (w > 48 && it.count[i] === 1) labels.push([i, x0, y, w]);
  }
  ctx.globalAlpha = 1;
  ctx.fillStyle = "#10161c";
  for (const [i, x0, y, w] of labels) {
    const name = data.names[it.name[i]] || "";
    const vis0 = Math.max(x0, 0);
    const vis1 = Math.min(x0 + w, W);
    if (vis1 - vis0 < 40) continue;
    ctx.save();
    ctx.beginPath();
    ctx.rect(vis0 + 2, y, vis1 - vis0 - 4, ROW_H);
    ctx.clip();
    ctx.fillText(name, vis0 + 3, y + ROW_H / 2);
    ctx.restore();
  }
  // Selection outline.
  const s = opts.selected;
  if (s) {
    for (let i = 0; i < n; i++) {
      if (it.lane[i] !== s.laneIndex || it.index[i] !== s.index) continue;
      const t = layout.laneTrack.get(it.lane[i]);
      if (!t) break;
      const y = t.y + LANE_PAD + it.row[i] * ROW_H;
      const x0 = scale.x(it.start[i]);
      const w = Math.max(3, scale.x(it.start[i] + it.dur[i]) - x0);
      ctx.strokeStyle = COLORS.select;
      ctx.lineWidth = 2;
      ctx.strokeRect(x0 - 1, y, w + 2, ROW_H);
      break;
    }
  }
  return drawn;
}

/** The time axis with tick labels and step names. */
function drawAxis(ctx, scale, steps, height) {
  const W = scale.width;
  ctx.fillStyle = "#fafbfc";
  ctx.fillRect(0, 0, W, height);
  ctx.fillStyle = "#c8ced6";
  ctx.fillRect(0, height - 1, W, 1);
  ctx.font = "11px system-ui, sans-serif";
  ctx.textBaseline = "top";
  (steps || []).forEach((s) => {
    const x0 = scale.x(s.start);
    const x1 = scale.x(s.end);
    if (x1 < 0 || x0 > W || x1 - x0 < 30) return;
    ctx.fillStyle = "rgba(200, 140, 0, 0.9)";
    const label = `step ${s.name}`;
    ctx.fillText(label, Math.max(2, x0 + 3), 2);
  });
  ctx.fillStyle = "#56606b";
  for (const tk of scale.ticks()) {
    ctx.fillRect(Math.round(tk.x), height - 7, 1, 6);
    ctx.fillText(tk.label, tk.x + 3, height - 15);
  }
}

/** Bandwidth area chart (read up, write down) aligned with the timeline's scale. */
function drawBandwidth(ctx, scale, bw, height) {
  const W = scale.width;
  ctx.fillStyle = "#ffffff";
  ctx.fillRect(0, 0, W, height);
  const mid = Math.round(height * 0.62);
  ctx.fillStyle = "#e3e7ec";
  ctx.fillRect(0, mid, W, 1);
  if (!bw || !bw.read_bps.length) return;
  const n = bw.bins;
  const peak = Math.max(0, ...bw.read_bps, ...bw.write_bps);
  const max = Math.max(1, peak);
  const x0 = scale.x(bw.start);
  const x1 = scale.x(bw.end);
  const bwPx = (x1 - x0) / n;
  for (let k = 0; k < n; k++) {
    const x = x0 + k * bwPx;
    const r = bw.read_bps[k] / max;
    const w = bw.write_bps[k] / max;
    if (r > 0) { ctx.fillStyle = COLORS.read; const h = Math.max(1, r * (mid - 12)); ctx.fillRect(x, mid - h, Math.max(1, bwPx), h); }
    if (w > 0) { ctx.fillStyle = COLORS.write; const h = Math.max(1, w * (height - mid - 4)); ctx.fillRect(x, mid + 1, Math.max(1, bwPx), h); }
  }
  ctx.fillStyle = "#56606b";
  ctx.font = "11px system-ui, sans-serif";
  ctx.textBaseline = "top";
  ctx.fillText(peak > 0 ? `peak ${fmtRateShort(peak)}  (read ↑, write ↓)` : "no reads or writes in view", 4, 2);
}
return { itemColor, drawTimeline, drawAxis, drawBandwidth };
})();

// ---- timeline/loader.js
const __m_timeline_loader_js = (() => {
// Fetch scheduling of the timeline: which window and lanes to ask for, and when.
// Discrete actions (keys, buttons, box zoom) fetch at once; continuous ones (wheel, drag,
// scrolling the lanes) coalesce for a frame. Only the newest answer is drawn: each fetch
// aborts the one before it (AbortController) and an answer that is not the newest any
// more (sequence number) is dropped. The bandwidth strip follows once the view settles:
// it is asked for BW_DELAY_MS after a paint with fresh data, and a new zoom or pan in the
// meantime postpones it, so back-to-back zoom steps do not queue a bandwidth query on the
// server ahead of the next timeline query.

const { Latest } = __m_lib_latest_js;

const COALESCE_MS = 16;
const BW_DELAY_MS = 150;

class Loader {
  /**
   * hooks: {
   *   want() -> {scale, lanes, started} | null   what the view needs now (called once per timeline request)
   *   scale() -> TimeScale | null                 the view's window now (for the bandwidth strip)
   *   load(scale, lanes, signal) -> Promise(/timeline answer)
   *   loadBandwidth(scale, bins, signal) -> Promise(/bandwidth answer)   (optional)
   *   onStart(), onData(data, want, fetchMs), onError(error), onBandwidth(bw, scale)
   * }
   */
  constructor(hooks) {
    this.hooks = hooks;
    this.timeline = new Latest();
    this.bandwidth = new Latest();
    this._timer = null;
    this._bwTimer = null;
  }

  /** Ask for the view's data, now or within a frame (coalescing continuous input). */
  request(immediate) {
    clearTimeout(this._timer);
    if (immediate) this.fetchNow(); else this._timer = setTimeout(() => this.fetchNow(), COALESCE_MS);
  }

  async fetchNow() {
    clearTimeout(this._timer);
    const h = this.hooks;
    const want = h.want();
    if (!want) return;
    const ticket = this.timeline.begin();
    h.onStart();
    const t0 = performance.now();
    let data;
    try {
      data = await h.load(want.scale, want.lanes, ticket.signal);
    } catch (e) {
      if (e.name === "AbortError" || !ticket.current()) return;
      h.onError(e);
      return;
    }
    if (!ticket.current()) return;
    h.onData(data, want, performance.now() - t0);
    this.bandwidthSoon();
  }

  /** The view changed: a pending bandwidth query waits for it to settle. */
  viewChanged() {
    clearTimeout(this._bwTimer);
  }

  bandwidthSoon() {
    clearTimeout(this._bwTimer);
    this._bwTimer = setTimeout(() => this.bandwidthNow(), BW_DELAY_MS);
  }

  async bandwidthNow() {
    const h = this.hooks;
    if (!h.loadBandwidth) return;
    const scale = h.scale();
    if (!scale) return;
    const ticket = this.bandwidth.begin();
    try {
      const bw = await h.loadBandwidth(scale, Math.max(10, Math.floor(scale.width / 3)), ticket.signal);
      if (ticket.current()) h.onBandwidth(bw, scale);
    } catch (_) { /* the strip stays as it was */ }
  }

  /** Drop everything in flight or scheduled (a new capture). */
  stop() {
    clearTimeout(this._timer);
    clearTimeout(this._bwTimer);
    this.timeline.cancel();
    this.bandwidth.cancel();
  }
}
return { COALESCE_MS, BW_DELAY_MS, Loader };
})();

// ---- timeline/input.js
const __m_timeline_input_js = (() => {
// Mouse and keyboard input of the timeline: wheel zoom at the cursor (shift+wheel or a
// horizontal wheel pans), drag to pan, shift+drag (or the box-zoom button) to zoom to a
// box, W/S zoom in/out, A/D pan, R or 0 reset; hover shows the tooltip, click selects.
// Positions are content coordinates of the track area (coords.js: x from the plot's left
// edge, y from the top of all lanes, whatever is scrolled).

/**
 * tl: the Timeline (canvas, root, boxEl, scale, layout, capture, boxMode and its actions:
 * zoomBy, panBy, zoomTo, reset, toggleBox, contentPoint(ev), hover(ev), unhover(), click(x, y)).
 */
function wireInput(tl) {
  const c = tl.canvas;
  c.addEventListener("wheel", (ev) => {
    ev.preventDefault();
    const { x } = tl.contentPoint(ev);
    if (ev.shiftKey || Math.abs(ev.deltaX) > Math.abs(ev.deltaY)) {
      tl.panBy((ev.deltaX || ev.deltaY) * 1.0, false);
    } else {
      tl.zoomBy(Math.exp(ev.deltaY * 0.0025), x, false);
    }
  }, { passive: false });
  let drag = null;
  c.addEventListener("mousedown", (ev) => {
    if (ev.button !== 0) return;
    ev.preventDefault();
    tl.root.focus({ preventScroll: true });
    const p = tl.contentPoint(ev);
    drag = { x0: p.x, y0: p.y, last: p.x, box: ev.shiftKey || tl.boxMode, moved: false };
  });
  window.addEventListener("mousemove", (ev) => {
    if (!drag) { tl.hover(ev); return; }
    const p = tl.contentPoint(ev);
    if (Math.abs(p.x - drag.x0) > 3 || Math.abs(p.y - drag.y0) > 3) drag.moved = true;
    if (drag.box) {
      const a = Math.min(drag.x0, p.x);
      const b = Math.max(drag.x0, p.x);
      Object.assign(tl.boxEl.style, { left: `${a}px`, width: `${b - a}px`, top: "0px", height: `${tl.layout.height}px` });
      tl.boxEl.hidden = !drag.moved;
    } else if (drag.moved) {
      tl.panBy(drag.last - p.x, false);
      drag.last = p.x;
    }
  });
  window.addEventListener("mouseup", (ev) => {
    const d = drag;
    if (!d) return;
    drag = null;
    tl.boxEl.hidden = true;
    const p = tl.contentPoint(ev);
    if (d.box && d.moved) {
      const a = Math.min(d.x0, p.x);
      const b = Math.max(d.x0, p.x);
      if (b - a >= 3) tl.zoomTo(tl.scale.t(a), tl.scale.t(b));
      if (tl.boxMode) tl.toggleBox();
    } else if (!d.moved) {
      tl.click(p.x, p.y);
    }
  });
  c.addEventListener("mouseleave", () => tl.unhover());
  window.addEventListener("keydown", (ev) => {
    const tag = (ev.target && ev.target.tagName) || "";
    if (/INPUT|SELECT|TEXTAREA/.test(tag) || ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (!tl.capture || !tl.root.isConnected) return;
    const k = ev.key.toLowerCase();
    const step = tl.scale.width * 0.15;
    if (k === "w") tl.zoomBy(0.7);
    else if (k === "s") tl.zoomBy(1 / 0.7);
    else if (k === "a") tl.panBy(-step);
    else if (k === "d") tl.panBy(step);
    else if (k === "r" || k === "0") tl.reset();
    else return;
    ev.preventDefault();
  });
}
return { wireInput };
})();

// ---- timeline/tooltip.js
const __m_timeline_tooltip_js = (() => {
// The hover tooltip: what an item is (pure text lines) and the floating box showing them.

const { el, clear } = __m_lib_dom_js;
const { fmtBytes, fmtInt, fmtNs } = __m_lib_format_js;

/** The tooltip's lines for item i of a decoded /timeline answer (title first, lane last). */
function itemLines(data, i) {
  const it = data.items;
  const lane = data.lanes[it.lane[i]];
  const lines = [];
  const name = data.names[it.name[i]] || "";
  if (it.count[i] > 1) lines.push(`${fmtInt(it.count[i])} events (merged; click to zoom in)`, `first: ${name}`);
  else lines.push(name);
  lines.push(`${fmtNs(it.dur[i])} at ${fmtNs(it.start[i])}`);
  if (lane.group === "io") {
    if (it.bytes[i]) lines.push(`${fmtBytes(it.bytes[i])} moved`);
    if (it.file[i] >= 0) lines.push(data.files[it.file[i]]);
    if (it.err[i]) lines.push(`errno ${it.err[i]}`);
  }
  lines.push(lane.name);
  return lines;
}

class Tooltip {
  constructor() {
    this.el = el("div", { class: "tl-tooltip", hidden: true });
  }

  /** Show `lines` near (x, y), in px relative to the positioned box of `width` px that holds it. */
  show(lines, x, y, width) {
    clear(this.el);
    lines.forEach((l, k) => this.el.appendChild(el("div", { class: k === 0 ? "tt-title" : "", text: l })));
    this.el.style.left = `${Math.min(x + 14, width - 320)}px`;
    this.el.style.top = `${y + 14}px`;
    this.el.hidden = false;
  }

  hide() { this.el.hidden = true; }
}
return { itemLines, Tooltip };
})();

// ---- timeline/timeline.js
const __m_timeline_timeline_js = (() => {
// The timeline component: lane labels (DOM), a time axis, one canvas for the tracks, a
// bandwidth strip aligned under it. It holds the view's state and joins the parts:
// tracks.js (layout), view.js (drawing), loader.js (fetching), input.js (mouse and keys),
// tooltip.js. The track canvas is as tall as the scroll viewport, not as all lanes (a
// canvas taller than ~32k px paints blank): it stays in view (position: sticky) while the
// lanes scroll under it, only the visible lanes are drawn, and only they (and a margin of
// one viewport above and below) are asked of the server.
//
// State exposed on the root element for tests and benchmarks:
//   data-start / data-end    the visible window (ns)
//   data-state               "empty" | "loading" | "ready" | "error"
//   data-items               items drawn in the last frame
//   data-paint-seq           increments at each paint with fresh server data
//   data-last-latency-ms     action (zoom/pan/reset/first load) -> painted with fresh data

const { el, clear } = __m_lib_dom_js;
const { fmtInt, fmtNs } = __m_lib_format_js;
const { TimeScale } = __m_timeline_coords_js;
const { buildTracks, decodeTimeline, itemAt, itemsByLane, lanesCovered, lanesToRequest, LANE_PAD, ROW_H, tracksIn } = __m_timeline_tracks_js;
const { drawAxis, drawBandwidth, drawTimeline } = __m_timeline_view_js;
const { Loader } = __m_timeline_loader_js;
const { wireInput } = __m_timeline_input_js;
const { itemLines, Tooltip } = __m_timeline_tooltip_js;

const LABEL_W = 250;
const LABELS_ALL_PX = 8000;  // lanes up to this tall: every label in the DOM (see _renderLabels)
const AXIS_H = 34;
const BW_H = 70;

class Timeline {
  /**
   * load(scale, lanes, signal): a /timeline answer for the window of `scale` and the lane
   * keys `lanes` (null: every lane); loadBandwidth(scale, bins, signal); onSelect(sel);
   * onRange(scale).
   */
  constructor({ load, loadBandwidth, onSelect, onRange }) {
    this.onSelect = onSelect || (() => {});
    this.onRange = onRange || (() => {});
    this.collapsed = new Set();
    this.capture = null;
    this.data = null;
    this.dataLanes = null;  // lane keys the current data was asked for (null: all)
    this.askedLanes = null; // lane keys of the newest request (null: all)
    this.bw = null;
    this.byLane = new Map();
    this.layout = buildTracks([]);
    this.scale = new TimeScale(0, 1, 800);
    this.selected = null;
    this.selectedFile = null;
    this.paintSeq = 0;
    this.actionAt = performance.now();
    this.boxMode = false;
    this._painted = false;    // has the current capture been painted with data (or failed)?
    this._paintWaiters = [];  // painted() promises waiting for that
    this.viewTop = 0;     // content y at the canvas's top edge
    this.viewHeight = 1;  // CSS px of the track canvas
    this.loader = new Loader({
      want: () => (this.capture ? { scale: this.scale, lanes: this._lanesWanted(), started: this.actionAt } : null),
      scale: () => (this.capture ? this.scale : null),
      load: (scale, lanes, signal) => load(scale, lanes, signal),
      loadBandwidth,
      onStart: () => {
        this.root.dataset.state = this.data ? "ready" : "loading";
        this.root.classList.add("busy");
      },
      onData: (data, want, fetchMs) => {
        this.root.dataset.lastFetchMs = fetchMs.toFixed(1);
        this._paintData(data, want.started, want.lanes);
      },
      onError: (e) => {
        this.askedLanes = this.dataLanes;  // what failed is not on its way: a scroll asks again
        this.root.classList.remove("busy");
        this.root.dataset.state = "error";
        this.root.dataset.error = e.message;
        this._paintDone();
      },
      onBandwidth: (bw) => {
        this.bw = bw;
        this._drawBandwidth();
      },
    });
    this._build();
  }

  _build() {
    this.axisCanvas = el("canvas", { class: "tl-axis", "aria-label": "time axis" });
    this.canvas = el("canvas", { class: "tl-canvas", "aria-label": "timeline" });
    this.bwCanvas = el("canvas", { class: "tl-bw", "aria-label": "bandwidth over time" });
    this.labels = el("div", { class: "tl-labels", role: "list", "aria-label": "lanes" });
    this.tooltip = new Tooltip();
    this.boxEl = el("div", { class: "tl-box", hidden: true });
    this.rangeText = el("span", { class: "tl-range" });
    this.boxBtn = el("button", { class: "tl-btn", title: "Box zoom (or shift+drag)", onclick: () => this.toggleBox() }, "Box zoom");
    this.resetBtn = el("button", { class: "tl-btn", title: "Reset zoom (R)", onclick: () => this.reset() }, "Reset");
    this.zoomIn = el("button", { class: "tl-btn", title: "Zoom in (W)", onclick: () => this.zoomBy(0.5) }, "+");
    this.zoomOut = el("button", { class: "tl-btn", title: "Zoom out (S)", onclick: () => this.zoomBy(2) }, "−");
    this.plot = el("div", { class: "tl-plot" }, this.canvas, this.boxEl);
    this.body = el("div", { class: "tl-body" }, this.labels, this.plot);
    this.scroll = el("div", { class: "tl-scroll", onscroll: () => this._scrolled() }, this.body);
    this.clockLabel = el("div", { class: "tl-corner", text: "time since profile start" });
    this.noLanes = el("div", { class: "empty-state tl-nolanes", hidden: true });
    this.root = el("section", { class: "timeline", tabindex: "0", "data-state": "empty",
                                "aria-label": "combined timeline" },
      el("div", { class: "tl-toolbar" }, this.zoomIn, this.zoomOut, this.boxBtn, this.resetBtn,
        el("span", { class: "tl-help", text: "wheel: zoom · drag: pan · shift+drag: box zoom · W/A/S/D · R: reset" }),
        this.rangeText),
      el("div", { class: "tl-axis-row" }, this.clockLabel, this.axisCanvas),
      this.noLanes,
      this.scroll,
      el("div", { class: "tl-bw-row" }, el("div", { class: "tl-corner", text: "I/O bandwidth" }), this.bwCanvas),
      this.tooltip.el);
    wireInput(this);
    this._resizeObs = new ResizeObserver(() => this._resize());
    this._resizeObs.observe(this.root);
  }

  // ---------------------------------------------------------------- capture / state
  /**
   * Show a capture; `keepView` keeps the visible window (same capture, other lanes).
   * `first`: a /timeline answer for the home window and every lane, fetched alongside
   * /capture (saves a round trip on the first paint); used when it was made for the
   * current plot width.
   */
  setCapture(cap, keepView = false, first = null) {
    const keep = keepView && this.capture && this.capture.extent[0] === cap.extent[0]
      && this.capture.extent[1] === cap.extent[1];
    this.loader.stop();
    this._paintDone();  // whoever waited for the previous capture's paint stops waiting
    this._painted = false;
    this.capture = cap;
    this.data = null;
    this.dataLanes = null;
    this.askedLanes = null;
    this.bw = null;
    this.selected = null;
    if (!keep) this.scroll.scrollTop = 0;
    this._relayout();
    if (!keep && first && first.width === this._plotWidth()) {
      this._sizeCanvas();
      this.scale = new TimeScale(first.start, first.end, first.width);
      this.onRange(this.scale);
      this._paintData(first, this.actionAt, null);
      this.loader.bandwidthSoon();
      return;
    }
    if (keep) {
      this.scale = this.scale.withWidth(this._plotWidth());
      this._sizeCanvas();
      this.setScale(this.scale, true);
    } else {
      this._resize(true);
      this.reset();
    }
  }

  /** What the time axis counts from, and the text shown when there is no lane to draw. */
  setClock(label, noLanesText = "") {
    this.clockLabel.textContent = label;
    this._noLanesText = noLanesText;
  }

  setSelectedFile(path) {
    this.selectedFile = path;
    this.draw();
  }

  toggleGroup(id) {
    if (this.collapsed.has(id)) this.collapsed.delete(id); else this.collapsed.add(id);
    this._relayout();
    this.draw();
    this._scrolled();
  }

  _relayout() {
    const lanes = this.capture ? this.capture.lanes : [];
    this.layout = buildTracks(lanes, this.collapsed);
    this.noLanes.hidden = !this.capture || lanes.length > 0;
    this.noLanes.textContent = this._noLanesText || "No lanes to draw in this capture.";
    this._labelRange = null;
    this.labels.style.height = `${this.layout.height}px`;
    this.plot.style.height = `${this.layout.height}px`;
    this._sizeCanvas();
  }

  /**
   * The lane labels in the DOM: every one while all lanes are at most LABELS_ALL_PX tall,
   * else those on screen and a viewport above and below (an "All hosts" view of 64 hosts
   * has ~2,600 lanes: building all their labels took ~150 ms of each switch). Called again
   * on scroll; rebuilds only when the visible lanes leave the range built.
   */
  _renderLabels() {
    const all = this.layout.height <= LABELS_ALL_PX;
    const top = this.viewTop;
    const bottom = top + this.viewHeight;
    const r = this._labelRange;
    if (r && (all || (top >= r[0] && bottom <= r[1]))) return;
    const range = all ? [-Infinity, Infinity] : [top - this.viewHeight, bottom + this.viewHeight];
    this._labelRange = range;
    clear(this.labels);
    const tracks = all ? this.layout.tracks : tracksIn(this.layout, range[0], range[1]);
    for (const t of tracks) this.labels.appendChild(this._label(t));
  }

  _label(t) {
    if (t.kind === "header") {
      const arrow = t.collapsed ? "▸" : "▾";
      return el("div", {
        class: "tl-header", role: "button", tabindex: "0",
        dataset: { group: t.group, y: t.y, h: t.h },
        style: { top: `${t.y}px`, height: `${t.h}px` },
        onclick: () => this.toggleGroup(t.group),
      }, `${arrow} ${t.title} (${t.count})`);
    }
    const lane = t.lane;
    const title = [lane.name, lane.plane, lane.events !== undefined ? `${fmtInt(lane.events)} events` : ""].filter(Boolean).join("\n");
    return el("div", {
      class: `tl-label tl-${t.group}`, role: "listitem", title,
      dataset: { key: lane.key, group: t.group, y: t.y, h: t.h, rows: t.rows },
      style: { top: `${t.y}px`, height: `${t.h}px` },
    }, lane.tf_data ? el("span", { class: "badge", text: "tf.data", title: "tf.data thread" }) : null,
       el("span", { class: "tl-label-text", text: lane.name }));
  }

  // ---------------------------------------------------------------- sizing
  /** The plot width (CSS px) the next /timeline request will use. */
  plotWidth() { return this._plotWidth(); }

  _plotWidth() {
    const w = this.scroll.clientWidth - LABEL_W;
    return Math.max(200, Math.floor(w || 800));
  }

  _resize(force = false) {
    const w = this._plotWidth();
    const h = this._viewportHeight();
    if (!force && w === this.scale.width && h === this.viewHeight) return;
    this.scale = this.scale.withWidth(w);
    this._sizeCanvas();
    this.draw();
    if (this.capture) this.loader.request(false);
  }

  /** The track canvas's height: the scroll viewport's, at most all lanes' (the window's while
   * the tab is not laid out: never as tall as all lanes of a big view). */
  _viewportHeight() {
    const h = this.scroll.clientHeight || window.innerHeight || 800;
    return Math.max(1, Math.min(this.layout.height, h));
  }

  _sizeCanvas() {
    const dpr = window.devicePixelRatio || 1;
    const w = this._plotWidth();
    this.viewHeight = this._viewportHeight();
    this._clampViewTop();
    for (const [c, ch] of [[this.canvas, this.viewHeight], [this.axisCanvas, AXIS_H], [this.bwCanvas, BW_H]]) {
      c.style.width = `${w}px`;
      c.style.height = `${ch}px`;
      c.width = Math.round(w * dpr);
      c.height = Math.round(ch * dpr);
    }
  }

  _clampViewTop() {
    this.viewTop = Math.max(0, Math.min(this.scroll.scrollTop, this.layout.height - this.viewHeight));
  }

  // ---------------------------------------------------------------- scrolling the lanes
  _scrolled() {
    if (this._scrollFrame) return;
    this._scrollFrame = requestAnimationFrame(() => {
      this._scrollFrame = null;
      this.draw();
      this._askIfUncovered(false);
    });
  }

  /** Fetch when a visible lane is in neither the data nor the request in flight. */
  _askIfUncovered(immediate) {
    if (this.capture && !lanesCovered(this.layout, this.viewTop, this.viewTop + this.viewHeight, this.askedLanes)) {
      this.loader.request(immediate);
    }
  }

  /** Lane keys to ask for now (null: all lanes, no filter); remembered as the newest request's. */
  _lanesWanted() {
    const all = this.capture ? this.capture.lanes.length : 0;
    const keys = lanesToRequest(this.layout, this.viewTop, this.viewTop + this.viewHeight, this.viewHeight, all);
    this.askedLanes = keys === null ? null : new Set(keys);
    return keys;
  }

  // ---------------------------------------------------------------- view changes
  get bounds() { return this.capture ? this.capture.extent : null; }

  reset() {
    if (!this.capture) return;
    const [lo, hi] = this.capture.extent;
    const pad = (hi - lo) * 0.01;
    this.setScale(new TimeScale(lo - pad, hi + pad, this._plotWidth()), true);
  }

  setScale(scale, immediate = false) {
    this.loader.viewChanged();
    this.scale = scale;
    this.actionAt = performance.now();
    this.draw();
    this.onRange(scale);
    this.loader.request(immediate);
  }

  // `immediate`: discrete actions (keys, buttons, box zoom) fetch at once; continuous
  // ones (wheel, drag) coalesce for a frame.
  zoomBy(factor, x = null, immediate = true) {
    this.setScale(this.scale.zoom(factor, x ?? this.scale.width / 2, this.bounds), immediate);
  }

  panBy(dx, immediate = true) { this.setScale(this.scale.pan(dx, this.bounds), immediate); }

  zoomTo(t0, t1) {
    if (!(t1 > t0)) return;
    this.setScale(this.scale.clamp(new TimeScale(t0, t1, this.scale.width), this.bounds), true);
  }

  toggleBox() {
    this.boxMode = !this.boxMode;
    this.boxBtn.classList.toggle("active", this.boxMode);
  }

  /** Has the current data the items of this lane (was it asked for)? */
  hasLane(key) {
    return this.data !== null && (this.dataLanes === null || this.dataLanes.has(key));
  }

  // ---------------------------------------------------------------- data
  /** Adopt a /timeline answer asked for `lanes` (null: all), draw it, and record the latency since `started`. */
  _paintData(data, started, lanes) {
    const t1 = performance.now();
    if (!data.lanes) data.lanes = this.capture.lanes;  // a packed answer indexes /capture's lanes
    this.data = decodeTimeline(data);
    this.dataLanes = lanes === null ? null : new Set(lanes);
    this.byLane = itemsByLane(data.items);
    this.root.classList.remove("busy");
    this.draw();
    this.paintSeq++;
    const t2 = performance.now();
    this.root.dataset.lastDrawMs = (t2 - t1).toFixed(1);
    this.root.dataset.lastLatencyMs = (t2 - started).toFixed(1);
    this.root.dataset.paintSeq = String(this.paintSeq);
    this.root.dataset.state = "ready";
    if (this.paintSeq === 1) performance.mark("iotrace-first-paint");
    this._paintDone();
  }

  /**
   * Resolves once the current capture has been painted with data (at once if it has), or
   * its request failed, or `ms` passed: the app asks for the panels' data after that, so
   * their answers do not compete with the timeline's on the server.
   */
  painted(ms) {
    if (this._painted) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this._paintWaiters.push(() => { clearTimeout(timer); resolve(); });
    });
  }

  _paintDone() {
    this._painted = true;
    const waiters = this._paintWaiters;
    this._paintWaiters = [];
    waiters.forEach((f) => f());
  }

  // ---------------------------------------------------------------- drawing
  draw() {
    const dpr = window.devicePixelRatio || 1;
    this._clampViewTop();
    this._renderLabels();
    const top = this.viewTop;
    const ctx = this.canvas.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, -top * dpr);
    const steps = this.capture ? this.capture.steps : [];
    const drawn = drawTimeline(ctx, this.layout, this.data, this.scale, steps, {
      selectedFile: this.selectedFile, selected: this.selected, top, bottom: top + this.viewHeight,
    });
    const actx = this.axisCanvas.getContext("2d");
    actx.setTransform(dpr, 0, 0, dpr, 0, 0);
    drawAxis(actx, this.scale, steps, AXIS_H);
    this._drawBandwidth();
    this.root.dataset.items = String(drawn);
    this.root.dataset.start = String(this.scale.t0);
    this.root.dataset.end = String(this.scale.t1);
    this.root.dataset.viewTop = String(top);
    this.rangeText.textContent = `${fmtNs(this.scale.t0)} – ${fmtNs(this.scale.t1)} (${fmtNs(this.scale.span)})`;
  }

  _drawBandwidth() {
    const dpr = window.devicePixelRatio || 1;
    const ctx = this.bwCanvas.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    drawBandwidth(ctx, this.scale, this.bw, BW_H);
  }

  // ---------------------------------------------------------------- pointing (input.js)
  /** Content coordinates (coords.js: x from the plot's left, y from the top of all lanes) of a mouse event. */
  contentPoint(ev) {
    const r = this.plot.getBoundingClientRect();
    return { x: ev.clientX - r.left, y: ev.clientY - r.top };
  }

  _hit(x, y) {
    return itemAt(this.data, this.byLane, this.layout, this.scale, x, y);
  }

  hover(ev) {
    if (!this.data) return;
    const r = this.canvas.getBoundingClientRect();
    if (ev.clientX < r.left || ev.clientY < r.top || ev.clientX > r.right || ev.clientY > r.bottom) {
      this.tooltip.hide();
      return;
    }
    const { x, y } = this.contentPoint(ev);
    const i = this._hit(x, y);
    if (i < 0) { this.tooltip.hide(); this.canvas.style.cursor = "default"; return; }
    this.canvas.style.cursor = "pointer";
    const rr = this.root.getBoundingClientRect();
    this.tooltip.show(itemLines(this.data, i), ev.clientX - rr.left, ev.clientY - rr.top, rr.width);
  }

  unhover() { this.tooltip.hide(); }

  click(x, y) {
    const i = this._hit(x, y);
    if (i < 0) return;
    const it = this.data.items;
    if (it.count[i] > 1) {
      const pad = it.dur[i] * 0.1 + this.scale.nsPerPx * 2;
      this.zoomTo(it.start[i] - pad, it.start[i] + it.dur[i] + pad);
      return;
    }
    this.selectItem(i);
  }

  /** Select item i of the current data (also used by tests through the DOM). */
  selectItem(i) {
    const it = this.data.items;
    const lane = this.data.lanes[it.lane[i]];
    this.selected = { laneIndex: it.lane[i], index: it.index[i], key: lane.key };
    this.draw();
    this.onSelect({ lane, index: it.index[i], item: i });
  }

  /** Content coordinates (CSS px) of the middle of item i. */
  itemCenter(i) {
    const it = this.data.items;
    const t = this.layout.laneTrack.get(it.lane[i]);
    if (!t) return null;
    const x0 = Math.max(0, this.scale.x(it.start[i]));
    const x1 = Math.min(this.scale.width, this.scale.x(it.start[i] + it.dur[i]));
    return { x: (x0 + Math.max(x0 + 1, x1)) / 2, y: t.y + LANE_PAD + it.row[i] * ROW_H + ROW_H / 2 };
  }

  /** Scroll the lanes so content rows [y0, y1) are in view, and ask for their lanes if missing. */
  scrollIntoView(y0, y1 = y0 + 1) {
    if (y0 >= this.viewTop && y1 <= this.viewTop + this.viewHeight) return;
    this.scroll.scrollTop = Math.max(0, y0 - 20);
    this.draw();
    this._askIfUncovered(true);
  }

  /** Show lane `key` (scrolled into view); its track, or null when it is not laid out. */
  showLane(key) {
    const t = this.layout.tracks.find((x) => x.kind === "lane" && x.lane.key === key);
    if (t) this.scrollIntoView(t.y, t.y + t.h);
    return t || null;
  }
}
return { LABEL_W, LABELS_ALL_PX, Timeline };
})();

// ---- views/table.js
const __m_views_table_js = (() => {
// The per-file table: Darshan counters per (module, file), sortable (click a header),
// filterable by module, searchable by path. Clicking a row selects the file (highlighted
// in the timeline) and shows every raw counter of that record.

const { el, clear } = __m_lib_dom_js;
const { fmtBytes, fmtInt, fmtRate, fmtSeconds } = __m_lib_format_js;

const COLUMNS = [
  { key: "path", label: "File", kind: "text" },
  { key: "module", label: "Module", kind: "text" },
  { key: "bytes_read", label: "Read", kind: "bytes" },
  { key: "bytes_written", label: "Written", kind: "bytes" },
  { key: "reads", label: "Reads", kind: "int" },
  { key: "writes", label: "Writes", kind: "int" },
  { key: "opens", label: "Opens", kind: "int" },
  { key: "seq_pct", label: "Seq. reads", kind: "pct" },
  { key: "read_time", label: "Read time", kind: "sec" },
  { key: "write_time", label: "Write time", kind: "sec" },
  { key: "meta_time", label: "Meta time", kind: "sec" },
  { key: "bandwidth", label: "Bandwidth", kind: "rate" },
  { key: "traced_calls", label: "Traced calls", kind: "int" },
];
const MAX_ROWS = 500;

function fmt(kind, v) {
  if (v === null || v === undefined) return "–";
  switch (kind) {
    case "bytes": return fmtBytes(v);
    case "int": return fmtInt(v);
    case "pct": return `${v.toFixed(1)} %`;
    case "sec": return fmtSeconds(v);
    case "rate": return fmtRate(v);
    default: return String(v);
  }
}

class FilesTable {
  constructor({ onSelectFile }) {
    this.onSelectFile = onSelectFile || (() => {});
    this.files = null;
    this.sort = { key: "bytes_read", dir: -1 };
    this.query = "";
    this.module = "";
    this.selected = null;
    this.search = el("input", { type: "search", class: "files-search", placeholder: "Search paths…",
                                "aria-label": "search files", oninput: () => { this.query = this.search.value; this.render(); } });
    this.moduleSel = el("select", { class: "files-module", "aria-label": "module filter",
                                    onchange: () => { this.module = this.moduleSel.value; this.render(); } },
      el("option", { value: "", text: "POSIX + STDIO" }), el("option", { value: "POSIX", text: "POSIX" }),
      el("option", { value: "STDIO", text: "STDIO" }));
    this.count = el("span", { class: "files-count" });
    this.table = el("table", { class: "files-table" });
    this.empty = el("div", { class: "empty-state", hidden: true });
    this.root = el("div", { class: "files" },
      el("div", { class: "files-controls" }, this.search, this.moduleSel, this.count), this.empty,
      el("div", { class: "files-scroll" }, this.table));
  }

  setData(files) {
    this.files = files;
    this.render();
  }

  setSelected(path) {
    this.selected = path;
    this.render();
  }

  rows() {
    const f = this.files;
    if (!f) return [];
    const q = this.query.trim().toLowerCase();
    const out = [];
    for (let i = 0; i < f.rows; i++) {
      if (this.module && f.module[i] !== this.module) continue;
      if (q && !f.path[i].toLowerCase().includes(q)) continue;
      out.push(i);
    }
    const { key, dir } = this.sort;
    const get = (i) => (key === "path" ? f.path[i] : key === "module" ? f.module[i] : f.columns[key][i]);
    out.sort((a, b) => {
      const va = get(a);
      const vb = get(b);
      if (va === vb) return a - b;
      if (va === null || va === undefined) return 1;
      if (vb === null || vb === undefined) return -1;
      return (va < vb ? -1 : 1) * dir;
    });
    return out;
  }

  render() {
    const f = this.files;
    clear(this.table);
    if (!f || !f.rows) {
      this.empty.hidden = false;
      this.empty.textContent = (f && f.message) || "No file records.";
      this.count.textContent = "";
      return;
    }
    this.empty.hidden = true;
    const head = el("tr");
    for (const c of COLUMNS) {
      const active = this.sort.key === c.key;
      head.appendChild(el("th", {
        dataset: { key: c.key }, class: `${c.kind}${active ? " sorted" : ""}`, role: "columnheader",
        "aria-sort": active ? (this.sort.dir > 0 ? "ascending" : "descending") : "none",
        title: "Click to sort",
        onclick: () => {
          this.sort = { key: c.key, dir: active ? -this.sort.dir : (c.kind === "text" ? 1 : -1) };
          this.render();
        },
      }, c.label, active ? (this.sort.dir > 0 ? " ▲" : " ▼") : ""));
    }
    const thead = el("thead", {}, head);
    const tbody = el("tbody");
    const rows = this.rows();
    for (const i of rows.slice(0, MAX_ROWS)) {
      const path = f.path[i];
      const sel = path === this.selected;
      const tr = el("tr", { class: sel ? "selected" : "", dataset: { path, module: f.module[i] },
                            onclick: () => this.onSelectFile(sel ? null : path) });
      for (const c of COLUMNS) {
        const v = c.key === "path" ? path : c.key === "module" ? f.module[i] : f.columns[c.key][i];
        tr.appendChild(el("td", { class: c.kind, title: c.key === "path" ? path : null, text: fmt(c.kind, v) }));
      }
      tbody.appendChild(tr);
      if (sel) tbody.appendChild(this._detailRow(i));
    }
    this.table.appendChild(thead);
    this.table.appendChild(tbody);
    this.count.textContent = rows.length > MAX_ROWS
      ? `showing ${MAX_ROWS} of ${fmtInt(rows.length)} records (${fmtInt(f.rows)} in total)`
      : `${fmtInt(rows.length)} of ${fmtInt(f.rows)} records`;
  }

  _detailRow(i) {
    const f = this.files;
    const grid = el("div", { class: "counter-grid" });
    f.counters.forEach((name, k) => {
      const v = f.values[i][k];
      if (v === null || v === undefined) return;
      grid.appendChild(el("div", { class: "counter" }, el("span", { class: "cname", text: name }),
        el("span", { class: "cval", text: /^.*_F_/.test(name) ? String(v) : fmtInt(v) })));
    });
    return el("tr", { class: "detail" }, el("td", { colspan: String(COLUMNS.length) }, grid));
  }
}
return { COLUMNS, FilesTable };
})();

// ---- views/charts.js
const __m_views_charts_js = (() => {
// Charts built from DOM elements (bars are divs, labels are textContent).

const { el, clear } = __m_lib_dom_js;
const { fmtBytes, fmtInt, fmtNs } = __m_lib_format_js;

const BIN_LABELS = {
  "0_100": "0–100 B", "100_1K": "100 B–1 KiB", "1K_10K": "1–10 KiB", "10K_100K": "10–100 KiB",
  "100K_1M": "100 KiB–1 MiB", "1M_4M": "1–4 MiB", "4M_10M": "4–10 MiB", "10M_100M": "10–100 MiB",
  "100M_1G": "100 MiB–1 GiB", "1G_PLUS": "≥ 1 GiB",
};

function bars(title, labels, values, cls, fmt = fmtInt) {
  const max = Math.max(1, ...values);
  return el("div", { class: `bars ${cls}` }, el("h4", { text: title }),
    labels.map((l, k) => el("div", { class: "bar-row" },
      el("span", { class: "bar-label", text: l }),
      el("span", { class: "bar-track" }, el("span", { class: "bar", style: { width: `${(100 * values[k]) / max}%` } })),
      el("span", { class: "bar-value", text: fmt(values[k]) }))));
}

function renderHistograms(root, h) {
  clear(root);
  if (!h || h.source === "none") {
    root.appendChild(el("div", { class: "empty-state", text: "No access sizes: no I/O data in this capture." }));
    return;
  }
  const labels = h.bins.map((b) => BIN_LABELS[b] || b);
  root.appendChild(el("div", { class: "chart-note", text: h.source === "counters"
    ? `From Darshan POSIX_SIZE_* counters${h.path ? " of the selected file" : " (all files)"}.`
    : "No counter records: sizes binned from the traced calls." }));
  root.appendChild(el("div", { class: "hist-pair" },
    bars("Read sizes", labels, h.read, "read"), bars("Write sizes", labels, h.write, "write")));
  const p = h.pattern;
  const pat = [
    ["sequential reads", p.seq_reads, p.reads], ["consecutive reads", p.consec_reads, p.reads],
    ["sequential writes", p.seq_writes, p.writes], ["consecutive writes", p.consec_writes, p.writes],
  ];
  root.appendChild(el("div", { class: "bars pattern" }, el("h4", { text: "Access pattern" }),
    pat.map(([l, v, tot]) => el("div", { class: "bar-row" }, el("span", { class: "bar-label", text: l }),
      el("span", { class: "bar-track" }, el("span", { class: "bar", style: { width: `${tot ? (100 * v) / tot : 0}%` } })),
      el("span", { class: "bar-value", text: tot ? `${fmtInt(v)} / ${fmtInt(tot)}` : "–" })))));
  const ops = Object.entries(h.ops || {});
  if (ops.length) root.appendChild(bars("Traced calls per function", ops.map((o) => o[0]), ops.map((o) => o[1]), "ops"));
}

function renderSteps(root, s, onPick) {
  clear(root);
  if (!s) return;
  if (!s.has_steps) root.appendChild(el("div", { class: "notice", text: s.message }));
  else root.appendChild(el("div", { class: "chart-note", text: `Steps from ${s.source}.` }));
  const maxB = Math.max(1, ...s.steps.map((x) => x.bytes_read + x.bytes_written));
  const table = el("table", { class: "steps-table" },
    el("thead", {}, el("tr", {}, ["", "Duration", "Bytes read", "Bytes written", "Calls", "I/O time", "Waiting on input", ""]
      .map((h) => el("th", { text: h })))));
  const tb = el("tbody");
  for (const st of s.steps) {
    const b = st.bytes_read + st.bytes_written;
    tb.appendChild(el("tr", { onclick: () => onPick && onPick(st), title: "Click to show this step in the timeline" },
      el("td", { text: s.has_steps ? `step ${st.name}` : st.name }),
      el("td", { text: fmtNs(st.end - st.start) }),
      el("td", { text: fmtBytes(st.bytes_read) }),
      el("td", { text: fmtBytes(st.bytes_written) }),
      el("td", { text: fmtInt(st.calls) }),
      el("td", { text: fmtNs(st.io_time_ns) }),
      el("td", { text: `${st.input_wait_pct.toFixed(1)} %` }),
      el("td", { class: "bar-cell" }, el("span", { class: "bar-track" },
        el("span", { class: "bar", style: { width: `${(100 * b) / maxB}%` } })))));
  }
  table.appendChild(tb);
  root.appendChild(table);
}

function renderTopFiles(root, files, onSelect, selected) {
  clear(root);
  if (!files || !files.rows) {
    root.appendChild(el("div", { class: "empty-state", text: "No files." }));
    return;
  }
  const tot = [];
  for (let i = 0; i < files.rows; i++) {
    tot.push([(files.columns.bytes_read[i] || 0) + (files.columns.bytes_written[i] || 0), i]);
  }
  tot.sort((a, b) => b[0] - a[0]);
  const top = tot.slice(0, 10);
  const max = Math.max(1, ...top.map((t) => t[0]));
  root.appendChild(el("div", { class: "bars top-files" }, top.map(([v, i]) =>
    el("div", { class: `bar-row clickable${files.path[i] === selected ? " selected" : ""}`, title: files.path[i],
                onclick: () => onSelect(files.path[i] === selected ? null : files.path[i]) },
      el("span", { class: "bar-label path", text: `${files.path[i]} (${files.module[i]})` }),
      el("span", { class: "bar-track" }, el("span", { class: "bar", style: { width: `${(100 * v) / max}%` } })),
      el("span", { class: "bar-value", text: fmtBytes(v) })))));
}
return { renderHistograms, renderSteps, renderTopFiles };
})();

// ---- views/codefiles.js
const __m_views_codefiles_js = (() => {
// Code loading apart from data files in the /files answer (the rule is the backend's,
// tb_iotrace/codepaths.py: `files.code[i]`): pure, so node tests it.
const { fmtBytes } = __m_lib_format_js;

/** The /files answer with only the rows of data files (or all rows when `showAll`). */
function dataFiles(files, showAll = false) {
  if (!files || !files.rows || showAll || !files.code) return files;
  const keep = [];
  for (let i = 0; i < files.rows; i++) if (!files.code[i]) keep.push(i);
  const pick = (a) => keep.map((i) => a[i]);
  const columns = {};
  for (const [k, v] of Object.entries(files.columns)) columns[k] = pick(v);
  return { ...files, rows: keep.length, path: pick(files.path), module: pick(files.module), host: pick(files.host),
           code: pick(files.code), values: pick(files.values), columns,
           message: keep.length ? files.message : "Only code loading in this capture: no data file was read or written." };
}

/** One line on the code loading the tables leave out ("" when there is none). */
function codeLine(files) {
  const c = files && files.code_loading;
  if (!c || !c.files) return "";
  return `Code loading (Python imports, shared libraries, interpreter, framework config): ${c.files} files, ` +
         `${fmtBytes(c.bytes_read)} read, ${c.time_s.toFixed(3)} s in calls`;
}
return { dataFiles, codeLine };
})();

// ---- views/runseries.js
const __m_views_runseries_js = (() => {
// "Whole run": the time series a whole-run record keeps of its process's life (at most
// 256 bins, whatever the trace kept), one strip per process: read bandwidth up, write
// down. A column is the max of the bins it covers; a click zooms the timeline there.

const { el, clear } = __m_lib_dom_js;
const { fmtBytes, fmtInt, fmtNs, fmtRateShort } = __m_lib_format_js;

/** Squeeze a series into at most `maxCols` columns: per column its time range (view clock
 * ns), the max read/write rate of its bins, and its calls. Pure. */
function seriesColumns(s, maxCols = 256) {
  const n = s.read_bps.length;
  const per = Math.max(1, Math.ceil(n / Math.max(1, maxCols)));
  const cols = [];
  for (let i = 0; i < n; i += per) {
    const j = Math.min(n, i + per);
    let r = 0, w = 0, c = 0;
    for (let k = i; k < j; k++) {
      r = Math.max(r, s.read_bps[k]);
      w = Math.max(w, s.write_bps[k]);
      c += s.calls[k];
    }
    cols.push({ start: s.start + i * s.bin_ns, end: s.start + j * s.bin_ns, read: r, write: w, calls: c });
  }
  return cols;
}

/** Peak rate over every series (one scale for all strips, so processes compare). */
function seriesPeak(list) {
  let p = 0;
  for (const s of list) for (const v of [...s.read_bps, ...s.write_bps]) p = Math.max(p, v);
  return p;
}

function strip(s, peak, onRange) {
  const cols = seriesColumns(s);
  const max = Math.max(1, peak);
  const bars = el("div", { class: "rs-bars" }, cols.map((c) => el("span", {
    class: "rs-col",
    title: `${fmtNs(c.start)} – ${fmtNs(c.end)}: read ${fmtRateShort(c.read)}, write ${fmtRateShort(c.write)}, ${fmtInt(c.calls)} calls`,
    onclick: onRange ? () => onRange(c.start, c.end) : undefined,
  }, el("span", { class: "rs-up" }, el("span", { class: "rs-read", style: { height: `${(100 * c.read) / max}%` } })),
     el("span", { class: "rs-down" }, el("span", { class: "rs-write", style: { height: `${(100 * c.write) / max}%` } })))));
  const n = s.read_bps.length;
  return el("div", { class: "rs-row" },
    el("div", { class: "rs-label" }, el("span", { class: "rs-host", text: s.host }),
      el("span", { class: "rs-meta", text: `${fmtNs(n * s.bin_ns)} · ${n} bins of ${fmtNs(s.bin_ns)} · `
        + `read ${fmtBytes(s.bytes_read)}, written ${fmtBytes(s.bytes_written)}` })),
    bars);
}

function renderRunSeries(root, list, onRange) {
  clear(root);
  if (!list || !list.length) return;
  const peak = seriesPeak(list);
  root.appendChild(el("div", { class: "chart-note", text:
    `The whole life of each process, kept in fixed memory whatever the trace kept (read ↑, write ↓; `
    + `peak ${fmtRateShort(peak)}). Click a column to show that stretch in the timeline.` }));
  list.forEach((s) => root.appendChild(strip(s, peak, onRange)));
}
return { seriesColumns, seriesPeak, renderRunSeries };
})();

// ---- views/findings.js
const __m_views_findings_js = (() => {
// The findings panel: each host's verdict on top, then what the backend's analysis reports,
// ordered by impact, with its evidence. Accepts the shape of tb_iotrace.analysis findings
// ({id, severity, title, statement, suggestion, impact: {step_share, ms_per_step},
// evidence: {name: value}, files: [path], ops}) and a list-of-evidence variant
// ({detail, evidence: [{kind: "file"|"range"|"event", path?, start?, end?, label}]}).
// Everything is rendered as text.

const { el, clear } = __m_lib_dom_js;
const { fmtNs } = __m_lib_format_js;

function evidenceItems(item, onFile, onRange) {
  const out = [];
  const ev = item.evidence;
  if (Array.isArray(ev)) {
    for (const e of ev) {
      const label = e.label || e.path || (e.start !== undefined ? `${fmtNs(e.start)}–${fmtNs(e.end)}` : e.kind);
      const act = e.kind === "file" && onFile ? () => onFile(e.path)
        : (e.kind === "range" || e.kind === "event") && onRange && e.start !== undefined
          ? () => onRange(e.start, e.end ?? e.start + 1) : null;
      out.push(act ? el("button", { class: "link", onclick: act, text: label }) : el("span", { text: label }));
    }
  } else if (ev && typeof ev === "object") {
    for (const [k, v] of Object.entries(ev)) {
      out.push(el("span", { text: `${k}: ${typeof v === "object" ? JSON.stringify(v) : v}` }));
    }
  }
  for (const f of item.files || []) {
    out.push(onFile ? el("button", { class: "link path", onclick: () => onFile(f), text: f }) : el("span", { class: "path", text: f }));
  }
  return out;
}

// "All hosts" findings come in as a background child analyses the hosts: while an answer
// says some are `pending`, the tab asks again after these delays (the last one repeated; the
// server itself holds each request up to a few seconds for news).
const FINDINGS_POLL_MS = [500, 1000, 2000, 4000];
const FINDINGS_MAX_POLLS = 150;

/**
 * Ask for the findings until none is pending. `load()` -> a /findings answer (or {error});
 * `show(answer)` after each one; `current()` false stops it (another capture was picked);
 * `first`: an answer already shown (the next ask waits the first delay). Returns the last
 * answer, or null when stopped.
 */
async function pollFindings(load, show, current, {
  first = null, delays = FINDINGS_POLL_MS, maxPolls = FINDINGS_MAX_POLLS,
  sleep = (ms) => new Promise((r) => setTimeout(r, ms)),
} = {}) {
  let f = first;
  for (let k = 0; ; k++) {
    if (f === null) {
      f = await load();
      if (!current()) return null;
      show(f);
    }
    if (!f || f.error || !(f.pending > 0) || k >= maxPolls) return f;
    await sleep(delays[Math.min(k, delays.length - 1)]);
    if (!current()) return null;
    f = null;
  }
}

/** The progress line of an answer with hosts still being analysed: {done, total, text} or null. */
function findingsProgress(f) {
  const pending = (f && f.pending) || 0;
  if (!(pending > 0)) return null;
  const total = f.hosts > 0 ? f.hosts : null;
  const done = total === null ? null : total - pending;
  return { done, total, text: total === null ? `Analysing ${pending} more hosts…` : `Analysing hosts: ${done} of ${total} done…` };
}

const BOUND_WORDS = { "input": "Input-bound", "partly input": "Partly input-bound", "not input": "Not input-bound",
  "unknown": "No verdict" };
const WAIT_PARTS = [["file_io", "file I/O"], ["decode", "decode"], ["starved", "starved"], ["copy", "copy"],
  ["other", "other"]];
const pct = (x) => `${(100 * x).toFixed(x < 0.1 ? 1 : 0)}%`;

/**
 * The text of a host's verdict (tb_iotrace.analysis.verdict): {head, wait, unmeasured, advice}
 * (wait/unmeasured "" when there is nothing to say); `host`: name the host (several verdicts).
 * Pure, for the box and the tests.
 */
function verdictLines(v, { host = true } = {}) {
  const share = v.input_wait_share;
  let head = `${BOUND_WORDS[v.bound] || v.bound}${host && v.host ? ` (${v.host})` : ""}`;
  if (share !== null && share !== undefined) head += `: the step waits for input ${pct(share)} of its time`;
  const b = v.wait_breakdown || {};
  const parts = WAIT_PARTS.filter(([k]) => b[k] !== null && b[k] !== undefined && b[k] > 0)
    .map(([k, name]) => `${name} ${pct(b[k])}`);
  if ((v.unmeasured || []).length && v.unmeasured_share > 0) {
    parts.push(`${v.unmeasured.join(" or ")} (not measured) ${pct(v.unmeasured_share)}`);
  }
  return { head, wait: share ? `The wait: ${parts.join(", ")}` : "", unmeasured: share ? v.reason || "" : "",
    advice: v.advice || "" };
}

function renderVerdict(v, host) {
  const t = verdictLines(v, { host });
  return el("div", { class: `verdict ${String(v.bound || "unknown").replace(/ /g, "-")}`, role: "status" },
    el("div", { class: "verdict-head", text: t.head }),
    t.wait ? el("div", { text: t.wait }) : null,
    t.unmeasured ? el("div", { class: "verdict-note", text: `Not measured: ${t.unmeasured}` }) : null,
    t.advice ? el("div", { class: "verdict-advice", text: t.advice }) : null);
}

function renderFindings(root, f, { onFile, onRange } = {}) {
  clear(root);
  const progress = findingsProgress(f);
  if (progress) {
    root.appendChild(el("div", { class: "findings-progress", role: "status" },
      progress.total === null ? null : el("progress", { max: String(progress.total), value: String(progress.done) }),
      el("span", { text: ` ${progress.text}` })));
  }
  const list = (f && f.findings) || [];
  // the verdict of each host first: is the step waiting for input, on what, what to change
  const verdicts = (f && f.verdicts) || [];
  for (const v of verdicts) root.appendChild(renderVerdict(v, verdicts.length > 1));
  // the analysis's notes (what it could not see: no step markers, a partial record...)
  for (const note of (f && f.notes) || []) {
    root.appendChild(el("div", { class: "finding-note", text: String(note) }));
  }
  if (!list.length) {
    root.appendChild(el("div", { class: "empty-state", text: (f && f.message) || "No findings." }));
    return;
  }
  for (const item of list) {
    const ev = evidenceItems(item, onFile, onRange);
    root.appendChild(el("div", { class: `finding ${item.severity || "info"}`, dataset: { id: item.id || "" } },
      el("div", { class: "finding-head" }, el("span", { class: "sev", text: item.severity || "info" }),
        el("span", { class: "finding-title", text: item.title || item.id || "" })),
      item.statement || item.detail ? el("p", { text: item.statement || item.detail }) : null,
      item.impact && item.impact.step_share !== null && item.impact.step_share !== undefined
        ? el("p", { class: "impact", text: `Impact: ${pct(item.impact.step_share)} of step time`
          + (item.impact.ms_per_step !== null && item.impact.ms_per_step !== undefined
            ? `, ${item.impact.ms_per_step.toFixed(3)} ms per step` : "") }) : null,
      item.suggestion ? el("p", { class: "suggestion", text: item.suggestion }) : null,
      ev.length ? el("ul", { class: "evidence" }, ev.map((x) => el("li", {}, x))) : null));
  }
}
return { FINDINGS_POLL_MS, FINDINGS_MAX_POLLS, pollFindings, findingsProgress, verdictLines, renderFindings };
})();

// ---- views/details.js
const __m_views_details_js = (() => {
// The details panel of one clicked event (the /event answer) and the process notes of
// whole-run records. Everything is rendered as text.

const { el, clear } = __m_lib_dom_js;
const { fmtBytes, fmtInt, fmtNs } = __m_lib_format_js;

function renderDetailsMessage(root, text, cls = "muted") {
  clear(root);
  root.appendChild(el("div", { class: cls, text }));
}

/**
 * @param ev the /event answer
 * @param opts {showHostOp: bool (a profile, not a whole-run record), onHighlight(path)}
 */
function renderEvent(root, ev, { showHostOp = true, onHighlight } = {}) {
  clear(root);
  const rows = [];
  const add = (k, v, cls) => rows.push(el("dt", { text: k }), el("dd", { class: cls || "", text: v }));
  root.appendChild(el("h3", { class: "ev-name", text: ev.name || "(unnamed)" }));
  add("Lane", ev.lane_name);
  add("Start", fmtNs(ev.start));
  add("Duration", fmtNs(ev.dur));
  if (ev.group === "io") {
    add("Call", ev.call);
    add("File", ev.file || "(none)", "path ev-file");
    if (ev.offset >= 0) add("Offset", fmtInt(ev.offset));
    add("Bytes", ev.bytes >= 0 ? `${fmtInt(ev.bytes)} (${fmtBytes(ev.bytes)})` : `${ev.bytes} (failed)`, "ev-bytes");
    if (ev.bytes_requested) add("Requested", fmtInt(ev.bytes_requested));
    add("errno", ev.errno ? String(ev.errno) : "0 (success)");
    if (ev.fd >= 0) add("fd", String(ev.fd));
    add("Thread", `${ev.host_thread || ev.thread || "?"} (tid ${ev.tid})`);
    if (showHostOp) {
      add("TF op", ev.host_op ? `${ev.host_op.name} (${fmtNs(ev.host_op.dur)})` : "none found on this thread");
    }
  } else {
    for (const [k, v] of Object.entries(ev.stats || {})) add(k, String(v));
  }
  add("Step", ev.step ? `step ${ev.step.name}` : "–");
  root.appendChild(el("dl", { class: "ev-fields" }, rows));
  if (ev.group === "io" && ev.file && onHighlight) {
    root.appendChild(el("button", { class: "tl-btn", onclick: () => onHighlight(ev.file) }, "Highlight this file"));
  }
  root.dataset.lane = ev.lane;
  root.dataset.index = String(ev.index);
}

/** Whole-run records: which process each host is and how it ended. */
function renderProcesses(root, procs) {
  clear(root);
  root.hidden = !procs.length;
  for (const p of procs) {
    const ex = p.exit || {};
    const how = ex.how === "flush" ? "did not finish (last periodic flush)"
      : ex.signal ? `ended by signal ${ex.signal}`
      : ex.exception ? `ended by ${ex.exception}`
      : ex.how ? `exited${ex.code !== null && ex.code !== undefined ? ` with code ${ex.code}` : ""}` : "";
    const dur = p.end_ns && p.start_ns ? ` · ${fmtNs(p.end_ns - p.start_ns)} recorded` : "";
    const argv = Array.isArray(p.argv) ? p.argv.map(String).join(" ") : String(p.argv ?? "");
    root.appendChild(el("div", { class: "proc" },
      el("b", { text: `${p.host}: ` }), el("span", { text: `process ${p.pid} (parent ${p.ppid}) ` }),
      el("code", { class: "argv", text: argv || "?" }), el("span", { text: ` · ${how}${dur}` })));
  }
}
return { renderDetailsMessage, renderEvent, renderProcesses };
})();

// ---- views/hosts.js
const __m_views_hosts_js = (() => {
// The per-host table of an "All hosts" view (the /hosts answer): bytes, read time and
// input wait per host, sortable, with the slowest worker marked, so it stands out.

const { el, clear } = __m_lib_dom_js;
const { fmtBytes, fmtInt, fmtNs, fmtPct, fmtSeconds } = __m_lib_format_js;

const HOST_COLUMNS = [
  { key: "host", label: "Host", kind: "text" },
  { key: "bytes_read", label: "Read", kind: "bytes" },
  { key: "bytes_written", label: "Written", kind: "bytes" },
  { key: "read_time_s", label: "Read time", kind: "sec" },
  { key: "io_calls", label: "I/O calls", kind: "int" },
  { key: "input_wait_ns", label: "Waiting on input", kind: "ns" },
  { key: "input_wait_pct", label: "Input wait share", kind: "pct" },
  { key: "files", label: "Files", kind: "int" },
];

function fmt(kind, v) {
  switch (kind) {
    case "bytes": return fmtBytes(v);
    case "sec": return fmtSeconds(v);
    case "int": return fmtInt(v);
    case "ns": return fmtNs(v);
    case "pct": return fmtPct(v);
    default: return v === null || v === undefined ? "–" : String(v);
  }
}

/** Row order for a sort key and direction (1 ascending, -1 descending); ties keep host order. Pure. */
function sortHosts(hosts, key, dir) {
  return hosts.map((h, i) => [h, i]).sort((a, b) => {
    const va = a[0][key];
    const vb = b[0][key];
    if (va === vb) return a[1] - b[1];
    if (va === null || va === undefined) return 1;
    if (vb === null || vb === undefined) return -1;
    return (va < vb ? -1 : 1) * dir;
  }).map((x) => x[0]);
}

/** The host that stands out: the most input wait, else the longest read time; null when all are equal. Pure. */
function slowestHost(hosts) {
  for (const key of ["input_wait_ns", "read_time_s"]) {
    const vals = hosts.map((h) => h[key] || 0);
    const max = Math.max(0, ...vals);
    if (max > 0 && vals.some((v) => v < max)) return hosts[vals.indexOf(max)].host;
  }
  return null;
}

class HostsTable {
  constructor({ onPickHost } = {}) {
    this.onPickHost = onPickHost || (() => {});
    this.data = null;
    this.sort = { key: "input_wait_ns", dir: -1 };
    this.note = el("div", { class: "chart-note" });
    this.table = el("table", { class: "hosts-table" });
    this.root = el("div", { class: "hosts" }, this.note, el("div", { class: "hosts-scroll" }, this.table));
  }

  setData(data) {
    this.data = data;
    this.render();
  }

  render() {
    clear(this.table);
    const d = this.data;
    if (!d || d.error) {
      this.note.textContent = (d && d.error) || "";
      return;
    }
    const slow = slowestHost(d.hosts);
    this.note.textContent = slow
      ? `${slow} waits on input the longest (${d.hosts.length} hosts; click a host to show it alone).`
      : `${d.hosts.length} hosts; click a host to show it alone.`;
    const head = el("tr");
    for (const c of HOST_COLUMNS) {
      const active = this.sort.key === c.key;
      head.appendChild(el("th", {
        dataset: { key: c.key }, class: `${c.kind}${active ? " sorted" : ""}`,
        "aria-sort": active ? (this.sort.dir > 0 ? "ascending" : "descending") : "none",
        onclick: () => {
          this.sort = { key: c.key, dir: active ? -this.sort.dir : (c.kind === "text" ? 1 : -1) };
          this.render();
        },
      }, c.label, active ? (this.sort.dir > 0 ? " ▲" : " ▼") : ""));
    }
    const body = el("tbody");
    for (const h of sortHosts(d.hosts, this.sort.key, this.sort.dir)) {
      const tr = el("tr", { class: h.host === slow ? "slowest" : "", dataset: { host: h.host },
                            title: `Show ${h.host} alone`, onclick: () => this.onPickHost(h.host) });
      for (const c of HOST_COLUMNS) tr.appendChild(el("td", { class: c.kind, text: fmt(c.kind, h[c.key]) }));
      body.appendChild(tr);
    }
    this.table.appendChild(el("thead", {}, head));
    this.table.appendChild(body);
  }
}
return { HOST_COLUMNS, sortHosts, slowestHost, HostsTable };
})();

// ---- app.js
const __m_app_js = (() => {
// The "I/O" tab: run/host pickers, the combined timeline with its details panel, the
// files table, charts and findings. Data flow: /runs -> /capture (lanes, extent, steps)
// -> /timeline per view change (level of detail, packed: lib/packed.js), /bandwidth aligned under it, and
// /files, /histograms, /steps, /findings (and /hosts for "All hosts") once per capture;
// /event on click. A pick that supersedes an earlier one (an event, a file) drops the
// earlier answer, whichever comes first (lib/latest.js).

const { getJson, getPacked } = __m_api_js;
const { el, clear, section } = __m_lib_dom_js;
const { fmtInt } = __m_lib_format_js;
const { Latest } = __m_lib_latest_js;
const { Timeline } = __m_timeline_timeline_js;
const { FilesTable } = __m_views_table_js;
const { renderHistograms, renderSteps, renderTopFiles } = __m_views_charts_js;
const { codeLine, dataFiles } = __m_views_codefiles_js;
const { renderRunSeries } = __m_views_runseries_js;
const { pollFindings, renderFindings } = __m_views_findings_js;
const { renderDetailsMessage, renderEvent, renderProcesses } = __m_views_details_js;
const { HostsTable } = __m_views_hosts_js;

const ALL_HOSTS = "__all__";
const PANELS_WAIT_MS = 3000;  // the panels wait at most this long for the timeline's first paint

class App {
  constructor(root) {
    this.root = root;
    this.runs = [];
    this.run = null;
    this.host = null;
    this.ioBy = "thread";
    this.capture = null;
    this.files = null;       // what the tables show: data files, or all with the toggle
    this.allFiles = null;    // the /files answer
    this.selectedFile = null;
    this.eventReq = new Latest();
    this.histReq = new Latest();
    this._build();
  }

  _build() {
    this.runSel = el("select", { class: "run-select", "aria-label": "run", onchange: () => this.pickRun(this.runSel.value) });
    this.hostSel = el("select", { class: "host-select", "aria-label": "host", onchange: () => this.pickHost(this.hostSel.value) });
    this.ioBySel = el("select", { class: "ioby-select", "aria-label": "I/O lanes", onchange: () => { this.ioBy = this.ioBySel.value; this.loadCapture(true); } },
      el("option", { value: "thread", text: "I/O lanes per thread" }), el("option", { value: "file", text: "I/O lanes per file" }));
    this.refreshBtn = el("button", { class: "tl-btn", title: "Look for new runs", onclick: () => this.start(true) }, "Refresh");
    this.status = el("span", { class: "status", role: "status" });
    this.banner = el("div", { class: "banner", hidden: true, role: "note" });
    this.procInfo = el("div", { class: "notice proc-info", hidden: true });
    this.empty = el("div", { class: "empty-state big", hidden: true });
    this.timeline = new Timeline({
      load: (scale, lanes, signal) => this._loadTimeline(scale, lanes, signal),
      loadBandwidth: (scale, bins, signal) => getJson("bandwidth", { ...this._params(), start: scale.t0, end: scale.t1, bins }, signal),
      onSelect: (sel) => this.showEvent(sel),
    });
    this.details = el("aside", { class: "details", "aria-label": "event details" },
      el("div", { class: "empty-state", text: "Click an event in the timeline to see its details." }));
    this.filesTable = new FilesTable({ onSelectFile: (p) => this.selectFile(p) });
    this.histRoot = el("div", { class: "histograms" });
    this.stepsRoot = el("div", { class: "steps" });
    this.topRoot = el("div", { class: "topfiles" });
    this.codeToggle = el("input", { type: "checkbox", class: "code-toggle", onchange: () => this._showFiles() });
    this.codeNote = el("div", { class: "notice code-loading", hidden: true },
      el("span", { class: "code-line" }), " ",
      el("label", { title: "List the files of code loading with the data files" }, this.codeToggle, " show them"));
    this.findingsRoot = el("div", { class: "findings" });
    this.hostsTable = new HostsTable({ onPickHost: (h) => this.pickHost(h) });
    this.runSeriesRoot = el("div", { class: "runseries" });
    this.runSeriesSection = section("Whole run: bandwidth over the process's life", this.runSeriesRoot, "runseries-section");
    this.runSeriesSection.hidden = true;
    this.hostsSection = section("Hosts", this.hostsTable.root, "hosts-section");
    this.hostsSection.hidden = true;
    this.fileChip = el("div", { class: "file-chip", hidden: true });
    this.content = el("div", { class: "content" },
      el("div", { class: "main-row" }, this.timeline.root, this.details),
      this.fileChip,
      this.runSeriesSection,
      this.hostsSection,
      el("div", { class: "grid2" },
        section("Findings", this.findingsRoot, "findings-section"),
        section("Top files (bytes moved)", this.topRoot, "top-section")),
      this.codeNote,
      section("Files (Darshan counters)", this.filesTable.root, "files-section"),
      el("div", { class: "grid2" },
        section("Access sizes", this.histRoot, "hist-section"),
        section("Per-step I/O", this.stepsRoot, "steps-section")));
    this.root.appendChild(el("div", { class: "iotrace" },
      el("header", { class: "topbar" }, el("h1", { text: "I/O" }),
        el("label", {}, "Run ", this.runSel), el("label", {}, "Host ", this.hostSel), this.ioBySel,
        this.refreshBtn, this.status),
      this.procInfo, this.banner, this.empty, this.content));
    this.content.hidden = true;
  }

  _params() { return { run: this.run, host: this.host }; }

  setStatus(text) { this.status.textContent = text || ""; }

  showEmpty(text) {
    this.empty.textContent = text;
    this.empty.hidden = false;
    this.content.hidden = true;
    this.root.dataset.state = "empty";
  }

  async start(refresh = false) {
    this.setStatus("Looking for profiles…");
    let r;
    try {
      r = await getJson("runs", refresh ? { refresh: 1 } : {});
    } catch (e) {
      this.setStatus("");
      this.showEmpty(`Cannot list runs: ${e.message}`);
      return;
    }
    this.runs = r.runs;
    this.setStatus("");
    clear(this.runSel);
    if (!this.runs.length) {
      this.showEmpty(r.message || "No profile runs found.");
      return;
    }
    for (const x of this.runs) {
      // whole-run records of `tb-iotrace run` (one host per process) and folders of PyTorch
      // traces (one host per trace file) next to profile runs
      const n = x.hosts.length;
      const text = x.kind === "record" ? `${x.run} (whole run, ${n} process${n === 1 ? "" : "es"})`
        : x.kind === "kineto" ? `${x.run} (PyTorch, ${n} trace${n === 1 ? "" : "s"})` : x.run;
      this.runSel.appendChild(el("option", { value: x.run, text }));
    }
    const keep = this.runs.find((x) => x.run === this.run);
    this.pickRun(keep ? keep.run : this.runs[this.runs.length - 1].run);
  }

  pickRun(run) {
    this.run = run;
    this.runSel.value = run;
    const info = this.runs.find((x) => x.run === run);
    clear(this.hostSel);
    for (const h of info.hosts) this.hostSel.appendChild(el("option", { value: h, text: h }));
    if (info.hosts.length > 1) this.hostSel.appendChild(el("option", { value: ALL_HOSTS, text: "All hosts (one clock)" }));
    this.pickHost(info.hosts.includes(this.host) ? this.host : info.hosts[0]);
  }

  pickHost(host) {
    this.host = host;
    this.hostSel.value = host;
    this.selectedFile = null;
    this.loadCapture();
  }

  async loadCapture(keepView = false) {
    const token = (this._token = {});
    this.eventReq.cancel();  // details of the previous capture's event are not wanted any more
    this.setStatus("Loading capture…");
    this.empty.hidden = true;
    this.banner.hidden = true;
    this.procInfo.hidden = true;
    this.content.hidden = false;  // laid out now, so the plot width below is the real one
    let cap;
    let first = null;
    try {
      // The home window's timeline is fetched alongside the capture summary (the server
      // picks the window when start/end are left out). Not for "All hosts": that asks for
      // every lane, and the view asks for the visible ones once it knows them.
      const firstReq = keepView || this.host === ALL_HOSTS ? null : getPacked("timeline", { ...this._params(), io_by: this.ioBy,
                                                                  width: this.timeline.plotWidth(), enc: "bin" }).catch(() => null);
      cap = await getJson("capture", { ...this._params(), io_by: this.ioBy });
      first = firstReq ? await firstReq : null;
    } catch (e) {
      if (token !== this._token) return;
      this.setStatus("");
      const file = e.body && e.body.file ? ` (${e.body.file})` : "";
      this.showEmpty(e.status === 422
        ? `This run's capture cannot be read${file}: ${e.message}. Other runs are still available in the Run menu.`
        : `Cannot load this run: ${e.message}`);
      this.root.dataset.state = "error";
      return;
    }
    if (token !== this._token) return;
    this.capture = cap;
    this.content.hidden = false;
    this.root.dataset.state = "ready";
    const record = cap.source === "record";
    const msgs = [...cap.messages, ...cap.warnings.map((w) => (record ? w : `Capture warning: ${w}`))];
    renderProcesses(this.procInfo, cap.processes || []);
    this.banner.hidden = !msgs.length;
    clear(this.banner);
    msgs.forEach((m) => this.banner.appendChild(el("div", { text: m })));
    this.setStatus(`${fmtInt(cap.lanes.length)} lanes · ${fmtInt(cap.io.events)} I/O calls · ${fmtInt(cap.io.files)} file records`);
    this.timeline.setClock(record ? "time since process start" : "time since profile start",
      record && !cap.lanes.length ? "No per-call trace in this record: its per-file counters are in the files table below." : "");
    this.timeline.setCapture(cap, keepView, first);
    const series = cap.run_series || [];
    this.runSeriesSection.hidden = !series.length;
    renderRunSeries(this.runSeriesRoot, series, cap.lanes.length ? (a, b) => this.timeline.zoomTo(a, b) : null);
    this._renderFileChip();
    if (!keepView) this._loadPanels(token);
  }

  /** `lanes`: the lane keys to draw (null: all of them). The packed answer carries no lane
   * descriptions: its segments index the lanes of /capture. */
  async _loadTimeline(scale, lanes, signal) {
    return getPacked("timeline", { ...this._params(), start: scale.t0, end: scale.t1, width: Math.round(scale.width),
                                   io_by: this.ioBy, lanes: lanes === null ? undefined : lanes.join(",") || "none",
                                   enc: "bin" }, signal);
  }

  // Each panel is drawn when its own answer comes (the findings of a big run can take
  // seconds longer than the rest); data-panels is "ready" once all have come. They are
  // asked for once the timeline has painted (at most PANELS_WAIT_MS later), so that the
  // server answers the timeline first. Findings still `pending` (hosts being analysed in
  // the background) are asked for again until complete (data-findings).
  async _loadPanels(token) {
    const p = this._params();
    const panels = (this._panels = {});  // see the findings poll below
    this.root.dataset.panels = "loading";
    this.root.dataset.findings = "loading";
    const multi = this.host === ALL_HOSTS;
    this.hostsSection.hidden = !multi;
    if (multi) this.hostsTable.setData(null);
    await this.timeline.painted(PANELS_WAIT_MS);
    if (token !== this._token) return;
    const drawFindings = (findings) => {
      if (findings.error) this.findingsRoot.textContent = findings.error;
      else renderFindings(this.findingsRoot, findings, { onFile: (f) => this.selectFile(f), onRange: (a, b) => this.timeline.zoomTo(a, b) });
      this.root.dataset.findings = findings.pending > 0 && !findings.error ? "pending" : "complete";
    };
    let firstFindings = null;
    const show = async (route, params, draw, signal = undefined) => {
      let r;
      try { r = await getJson(route, params, signal); } catch (e) { r = { error: e.message, aborted: e.name === "AbortError" }; }
      if (token === this._token && !r.aborted) draw(r);
    };
    const hist = this.histReq.begin();  // a file picked meanwhile wins (selectFile)
    await Promise.all([
      show("files", p, (files) => {
        this.allFiles = files.error ? null : files;
        this._showFiles(files.error);
      }),
      show("histograms", p, (h) => {
        if (!hist.current()) return;
        if (h.error) this.histRoot.textContent = h.error; else renderHistograms(this.histRoot, h);
      }, hist.signal),
      show("steps", p, (steps) => {
        if (steps.error) this.stepsRoot.textContent = steps.error;
        else renderSteps(this.stepsRoot, steps, (st) => this.timeline.zoomTo(st.start - (st.end - st.start) * 0.05, st.end + (st.end - st.start) * 0.05));
      }),
      show("findings", p, (findings) => {
        firstFindings = findings;
        drawFindings(findings);
      }),
      multi ? show("hosts", p, (hosts) => this.hostsTable.setData(hosts)) : null,
    ]);
    if (token !== this._token) return;
    this.root.dataset.panels = "ready";
    if (firstFindings && firstFindings.pending > 0 && !firstFindings.error) {
      // asked again while these panels stand: switching the I/O lanes (same run and host)
      // keeps them, picking another run or host replaces them
      const current = () => panels === this._panels;
      const load = () => getJson("findings", p).catch((e) => ({ error: e.message }));
      await pollFindings(load, drawFindings, current, { first: firstFindings });
    }
  }

  /** Files table and top files: data files only unless the code-loading toggle is on. */
  _showFiles(error = undefined) {
    this.files = dataFiles(this.allFiles, this.codeToggle.checked);
    const line = codeLine(this.allFiles);
    this.codeNote.hidden = !line;
    this.codeNote.querySelector(".code-line").textContent = line ? `${line}${this.codeToggle.checked ? "." : ": not listed below."}` : "";
    this.filesTable.setData(this.files || { rows: 0, message: error });
    renderTopFiles(this.topRoot, this.files, (path) => this.selectFile(path), this.selectedFile);
  }

  async selectFile(path) {
    this.selectedFile = path;
    this.timeline.setSelectedFile(path);
    this.filesTable.setSelected(path);
    renderTopFiles(this.topRoot, this.files, (p) => this.selectFile(p), path);
    this._renderFileChip();
    const req = this.histReq.begin();
    try {
      const hist = await getJson("histograms", { ...this._params(), path: path || undefined }, req.signal);
      if (req.current()) renderHistograms(this.histRoot, hist);
    } catch (_) { /* keep the previous chart */ }
  }

  _renderFileChip() {
    clear(this.fileChip);
    this.fileChip.hidden = !this.selectedFile;
    if (!this.selectedFile) return;
    this.fileChip.appendChild(el("span", { text: "Highlighting accesses to " }));
    this.fileChip.appendChild(el("code", { class: "path", text: this.selectedFile }));
    this.fileChip.appendChild(el("button", { class: "tl-btn", onclick: () => this.selectFile(null) }, "Clear"));
  }

  async showEvent(sel) {
    const req = this.eventReq.begin();
    renderDetailsMessage(this.details, "Loading…");
    let ev;
    try {
      ev = await getJson("event", { ...this._params(), lane: sel.lane.key, index: sel.index }, req.signal);
    } catch (e) {
      if (req.current() && e.name !== "AbortError") renderDetailsMessage(this.details, `Cannot load event: ${e.message}`, "error");
      return;
    }
    if (!req.current()) return;
    renderEvent(this.details, ev, {
      showHostOp: !!this.capture && this.capture.source !== "record",
      onHighlight: (f) => this.selectFile(f),
    });
  }
}
return { App };
})();

// ---- main.js
const __m_main_js = (() => {
// The tab's entry module. TensorBoard's plugin iframe (<base href="plugin/iotrace/">) runs
// `import("./index.js").then((m) => m.render())`; /index.js is this module bundled with
// everything it imports and style.css (tools/bundle_frontend.mjs), so the tab's code
// arrives in one request instead of a waterfall of module fetches. Run unbundled
// (./static/main.js), it links ./static/style.css instead.

const { App } = __m_app_js;

const INLINE_CSS = "/* The I/O tab. System fonts only (nothing fetched from outside). */\n[hidden] { display: none !important; }\n:root { --border: #d6dbe1; --muted: #66717d; --accent: #1a73e8; --read: #2b7bb9; --write: #e8853a; --hl: #c2185b; }\nhtml, body { margin: 0; padding: 0; }\nbody { font: 13px/1.4 system-ui, -apple-system, \"Segoe UI\", Roboto, sans-serif; color: #1f262d; background: #f4f6f8; }\n.iotrace { padding: 10px 14px 40px; }\n.topbar { display: flex; align-items: center; gap: 12px; flex-wrap: wrap; margin-bottom: 8px; }\n.topbar h1 { font-size: 18px; margin: 0 8px 0 0; }\n.topbar label { color: var(--muted); }\nselect, input[type=search] { font: inherit; padding: 3px 6px; border: 1px solid var(--border); border-radius: 4px; background: #fff; }\n.status { color: var(--muted); margin-left: auto; }\n.banner { background: #fff8e1; border: 1px solid #f0d58a; border-radius: 4px; padding: 6px 10px; margin-bottom: 8px; }\n.empty-state { color: var(--muted); padding: 16px; text-align: center; }\n.empty-state.big { font-size: 15px; padding: 60px 20px; background: #fff; border: 1px dashed var(--border); border-radius: 6px; white-space: pre-wrap; }\n.finding-note { color: var(--muted); font-size: 12px; padding: 4px 8px; border-left: 3px solid var(--border); margin: 4px 0; }\n.findings-progress { display: flex; align-items: center; gap: 6px; font-size: 12px; color: var(--muted); padding: 4px 8px; }\n.findings-progress progress { width: 120px; height: 10px; }\n.notice { background: #eef4fd; border: 1px solid #c9dcf7; border-radius: 4px; padding: 6px 10px; margin-bottom: 8px; }\n.muted { color: var(--muted); }\n.error { color: #b00020; }\n.main-row { display: grid; grid-template-columns: minmax(0, 1fr) 300px; gap: 10px; align-items: start; }\n.panel { background: #fff; border: 1px solid var(--border); border-radius: 6px; padding: 8px 12px; margin-top: 10px; min-width: 0; }\n.panel h2 { font-size: 14px; margin: 2px 0 8px; }\n.grid2 { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 10px; }\n.tl-btn { font: inherit; padding: 2px 9px; border: 1px solid var(--border); border-radius: 4px; background: #fff; cursor: pointer; }\n.tl-btn:hover { background: #f0f3f7; }\n.tl-btn.active { background: #dbe8fb; border-color: var(--accent); }\nbutton.link { background: none; border: none; color: var(--accent); cursor: pointer; padding: 0; font: inherit; text-decoration: underline; }\n\n/* timeline */\n.timeline { position: relative; background: #fff; border: 1px solid var(--border); border-radius: 6px; outline: none; min-width: 0; }\n.timeline:focus-visible { box-shadow: 0 0 0 2px #a8c7fa; }\n.timeline.busy .tl-range::after { content: \" · loading\"; color: var(--muted); }\n.tl-toolbar { display: flex; align-items: center; gap: 6px; padding: 6px 8px; border-bottom: 1px solid var(--border); flex-wrap: wrap; }\n.tl-help { color: var(--muted); font-size: 11px; }\n.tl-range { margin-left: auto; font-variant-numeric: tabular-nums; color: #37414b; }\n.tl-axis-row, .tl-bw-row { display: flex; border-bottom: 1px solid var(--border); }\n.tl-bw-row { border-bottom: none; border-top: 1px solid var(--border); }\n.tl-corner { width: 250px; flex: 0 0 250px; box-sizing: border-box; padding: 4px 8px; color: var(--muted); font-size: 11px; border-right: 1px solid var(--border); }\n.tl-scroll { max-height: 62vh; overflow-y: auto; overflow-x: hidden; }\n.tl-body { display: flex; position: relative; }\n.tl-labels { position: relative; width: 250px; flex: 0 0 250px; border-right: 1px solid var(--border); box-sizing: border-box; }\n.tl-label, .tl-header { position: absolute; left: 0; right: 0; box-sizing: border-box; padding: 0 8px; overflow: hidden; white-space: nowrap; text-overflow: ellipsis; font-size: 11.5px; display: flex; align-items: flex-start; gap: 4px; }\n.tl-label { padding-top: 3px; border-bottom: 1px solid #f0f2f5; }\n.tl-label-text { overflow: hidden; text-overflow: ellipsis; }\n.tl-header { background: #eef1f5; font-weight: 600; align-items: center; cursor: pointer; user-select: none; color: #3c4650; }\n.tl-label.tl-io { color: #1d5d8e; }\n.tl-label.tl-device { color: #4b3a8a; }\n.badge { font-size: 9.5px; background: #e6f4ea; color: #137333; border: 1px solid #b7e1c1; border-radius: 3px; padding: 0 3px; flex: 0 0 auto; }\n.tl-plot { position: relative; flex: 1 1 auto; }\n/* the track canvas is as tall as the viewport and stays in it while the lanes scroll */\n.tl-canvas { display: block; cursor: default; position: sticky; top: 0; }\n.tl-box { position: absolute; background: rgba(26, 115, 232, 0.12); border: 1px solid rgba(26, 115, 232, 0.8); pointer-events: none; }\n.tl-tooltip { position: absolute; z-index: 5; max-width: 320px; background: rgba(32, 38, 44, 0.94); color: #fff; border-radius: 4px; padding: 6px 8px; font-size: 11.5px; pointer-events: none; word-break: break-all; }\n.tl-tooltip .tt-title { font-weight: 600; }\n\n/* details */\n.details { background: #fff; border: 1px solid var(--border); border-radius: 6px; padding: 8px 12px; min-height: 120px; word-break: break-all; }\n.details h3 { font-size: 14px; margin: 2px 0 8px; }\n.ev-fields { display: grid; grid-template-columns: 80px minmax(0, 1fr); gap: 3px 8px; margin: 0 0 8px; }\n.ev-fields dt { color: var(--muted); }\n.ev-fields dd { margin: 0; }\n.path, code.path { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 11.5px; }\n.file-chip { margin-top: 8px; background: #fce4ec; border: 1px solid #f4b6c9; border-radius: 4px; padding: 4px 8px; display: flex; gap: 8px; align-items: center; }\n\n/* tables */\n.files-controls { display: flex; gap: 8px; align-items: center; margin-bottom: 6px; }\n.files-search { width: 280px; }\n.files-count { color: var(--muted); }\n.files-scroll { max-height: 420px; overflow: auto; }\ntable { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }\nth, td { padding: 3px 8px; border-bottom: 1px solid #edf0f3; text-align: right; white-space: nowrap; }\nth { position: sticky; top: 0; background: #f7f9fb; cursor: pointer; user-select: none; font-weight: 600; }\nth.sorted { color: var(--accent); }\nth.text, td.text { text-align: left; }\ntd.text { max-width: 520px; overflow: hidden; text-overflow: ellipsis; font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 11.5px; }\n.files-table tbody tr { cursor: pointer; }\n.files-table tbody tr:hover { background: #f5f8fc; }\n.files-table tbody tr.selected { background: #fce4ec; }\ntr.detail td { background: #fafbfc; white-space: normal; text-align: left; }\n.counter-grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(260px, 1fr)); gap: 2px 12px; font-size: 11px; }\n.counter { display: flex; justify-content: space-between; gap: 8px; border-bottom: 1px dotted #e4e8ec; }\n.cname { color: var(--muted); }\n.steps-table td:first-child, .steps-table th:first-child { text-align: left; }\n.steps-table tbody tr { cursor: pointer; }\n\n/* bars */\n.bars h4 { margin: 6px 0 4px; font-size: 12px; }\n.bar-row { display: grid; grid-template-columns: 130px minmax(0, 1fr) 110px; gap: 6px; align-items: center; font-size: 11.5px; padding: 1px 0; }\n.top-files .bar-row { grid-template-columns: minmax(0, 1.4fr) minmax(0, 1fr) 80px; }\n.bar-row.clickable { cursor: pointer; }\n.bar-row.selected .bar-label { color: var(--hl); font-weight: 600; }\n.bar-label { overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }\n.bar-value { text-align: right; color: #37414b; font-variant-numeric: tabular-nums; }\n.bar-track { display: block; background: #f1f3f6; height: 10px; border-radius: 2px; overflow: hidden; }\n.bar { display: block; height: 100%; background: #7aa7d6; }\n.bars.read .bar { background: var(--read); }\n.bars.write .bar { background: var(--write); }\n.bars.pattern .bar { background: #5aa469; }\n.bar-cell { width: 140px; }\n.hist-pair { display: grid; grid-template-columns: 1fr 1fr; gap: 12px; }\n.chart-note { color: var(--muted); font-size: 11.5px; margin-bottom: 4px; }\n\n/* findings */\n.verdict { border: 1px solid var(--border); border-left: 6px solid #1e8e3e; padding: 6px 10px; margin-bottom: 8px; font-size: 13px; }\n.verdict.input { border-left-color: #d93025; }\n.verdict.partly-input { border-left-color: #f9ab00; }\n.verdict.unknown { border-left-color: var(--border); }\n.verdict-head { font-weight: 600; }\n.verdict-note { color: var(--muted); font-size: 12px; }\n.verdict-advice { margin-top: 2px; }\n.finding .impact { color: var(--muted); font-size: 12px; margin: 2px 0; }\n.finding { border-left: 4px solid #8ab4f8; padding: 4px 8px; margin-bottom: 6px; background: #fafbfc; }\n.finding.warning { border-color: #f9ab00; }\n.finding.critical { border-color: #d93025; }\n.finding .sev { text-transform: uppercase; font-size: 10px; color: var(--muted); margin-right: 6px; }\n.finding-title { font-weight: 600; }\n.evidence { margin: 4px 0 0; padding-left: 18px; }\n.finding .suggestion { color: #37414b; font-style: italic; }\n.proc-info .proc { margin: 2px 0; }\n.proc-info .argv { word-break: break-all; }\n.tl-nolanes { padding: 12px; }\n\n/* per-host table (All hosts) */\n.hosts-scroll { max-height: 360px; overflow: auto; }\n.hosts-table tbody tr { cursor: pointer; }\n.hosts-table tbody tr:hover { background: #f5f8fc; }\n.hosts-table tbody tr.slowest { background: #fff3e0; font-weight: 600; }\n\n/* whole-run time series (views/runseries.js) */\n.rs-row { display: grid; grid-template-columns: 220px 1fr; gap: 8px; align-items: center; margin: 4px 0; }\n.rs-label { display: flex; flex-direction: column; font-size: 11px; min-width: 0; }\n.rs-host { font-weight: 600; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }\n.rs-meta { color: #56606b; }\n.rs-bars { display: flex; height: 48px; background: #f7f8fa; border-bottom: 1px solid #e3e7ec; }\n.rs-col { flex: 1 1 0; display: flex; flex-direction: column; min-width: 1px; cursor: pointer; }\n.rs-col:hover { background: #e8edf3; }\n.rs-up, .rs-down { flex: 1 1 0; display: flex; flex-direction: column; }\n.rs-up { justify-content: flex-end; border-bottom: 1px solid #e3e7ec; }\n.rs-read { display: block; background: var(--read); }\n.rs-write { display: block; background: var(--write); }\n"; // the bundle puts style.css here

async function render() {
  if (INLINE_CSS === null) {
    document.head.appendChild(Object.assign(document.createElement("link"), { rel: "stylesheet", href: "./static/style.css" }));
  } else {
    document.head.appendChild(Object.assign(document.createElement("style"), { textContent: INLINE_CSS }));
  }
  const root = document.createElement("div");
  root.id = "iotrace-root";
  document.body.appendChild(root);
  const app = new App(root);
  window.__iotrace = app; // for tests and benchmarks
  await app.start();
  return app;
}
return { render };
})();

export const { render } = __m_main_js;
