// The timeline component: lane labels (DOM), a time axis, one canvas for all tracks, a
// bandwidth strip aligned under it. Interaction: wheel zoom at the cursor (shift+wheel or
// horizontal wheel pans), drag to pan, shift+drag (or the box-zoom button) to zoom to a box,
// W/S zoom in/out, A/D pan, R or 0 reset; hover shows a tooltip, click selects (merged
// items zoom in instead).
//
// State exposed on the root element for tests and benchmarks:
//   data-start / data-end    the visible window (ns)
//   data-state               "empty" | "loading" | "ready" | "error"
//   data-items               items drawn in the last frame
//   data-paint-seq           increments at each paint with fresh server data
//   data-last-latency-ms     action (zoom/pan/reset/first load) -> painted with fresh data

import { el, clear, fmtBytes, fmtNs, fmtInt } from "../dom.js";
import { TimeScale } from "./coords.js";
import { buildTracks, decodeTimeline, itemAt, itemsByLane, LANE_PAD, ROW_H } from "./tracks.js";
import { drawAxis, drawBandwidth, drawTimeline } from "./draw.js";

export const LABEL_W = 250;
const AXIS_H = 34;
const BW_H = 70;
const BW_DELAY_MS = 150;

export class Timeline {
  constructor({ load, loadBandwidth, onSelect, onRange }) {
    this.load = load;
    this.loadBandwidth = loadBandwidth;
    this.onSelect = onSelect || (() => {});
    this.onRange = onRange || (() => {});
    this.collapsed = new Set();
    this.capture = null;
    this.data = null;
    this.bw = null;
    this.byLane = new Map();
    this.layout = buildTracks([]);
    this.scale = new TimeScale(0, 1, 800);
    this.selected = null;
    this.selectedFile = null;
    this.seq = 0;
    this.bwSeq = 0;
    this.paintSeq = 0;
    this.actionAt = performance.now();
    this.boxMode = false;
    this._build();
  }

  _build() {
    this.axisCanvas = el("canvas", { class: "tl-axis", "aria-label": "time axis" });
    this.canvas = el("canvas", { class: "tl-canvas", "aria-label": "timeline" });
    this.bwCanvas = el("canvas", { class: "tl-bw", "aria-label": "bandwidth over time" });
    this.labels = el("div", { class: "tl-labels", role: "list", "aria-label": "lanes" });
    this.tooltip = el("div", { class: "tl-tooltip", hidden: true });
    this.boxEl = el("div", { class: "tl-box", hidden: true });
    this.rangeText = el("span", { class: "tl-range" });
    this.boxBtn = el("button", { class: "tl-btn", title: "Box zoom (or shift+drag)", onclick: () => this.toggleBox() }, "Box zoom");
    this.resetBtn = el("button", { class: "tl-btn", title: "Reset zoom (R)", onclick: () => this.reset() }, "Reset");
    this.zoomIn = el("button", { class: "tl-btn", title: "Zoom in (W)", onclick: () => this.zoomBy(0.5) }, "+");
    this.zoomOut = el("button", { class: "tl-btn", title: "Zoom out (S)", onclick: () => this.zoomBy(2) }, "−");
    this.body = el("div", { class: "tl-body" }, this.labels,
      el("div", { class: "tl-plot" }, this.canvas, this.boxEl));
    this.scroll = el("div", { class: "tl-scroll" }, this.body);
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
      this.tooltip);
    this._wire();
    this._resizeObs = new ResizeObserver(() => this._resize());
    this._resizeObs.observe(this.root);
  }

  // ---------------------------------------------------------------- capture / state
  /**
   * Show a capture; `keepView` keeps the visible window (same capture, other lanes).
   * `first`: a /timeline answer for the home window fetched alongside /capture (saves a
   * round trip on the first paint); used when it was made for the current plot width.
   */
  setCapture(cap, keepView = false, first = null) {
    const keep = keepView && this.capture && this.capture.extent[0] === cap.extent[0]
      && this.capture.extent[1] === cap.extent[1];
    this.capture = cap;
    this.data = null;
    this.bw = null;
    this.selected = null;
    this._relayout();
    if (!keep && first && first.width === this._plotWidth()) {
      this._sizeCanvas();
      this.seq++;
      this.scale = new TimeScale(first.start, first.end, first.width);
      this.onRange(this.scale);
      this._paintData(first, this.actionAt);
      this._fetchBandwidth();
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
  }

  _relayout() {
    const lanes = this.capture ? this.capture.lanes : [];
    this.layout = buildTracks(lanes, this.collapsed);
    this.noLanes.hidden = !this.capture || lanes.length > 0;
    this.noLanes.textContent = this._noLanesText || "No lanes to draw in this capture.";
    clear(this.labels);
    for (const t of this.layout.tracks) {
      if (t.kind === "header") {
        const arrow = t.collapsed ? "▸" : "▾";
        this.labels.appendChild(el("div", {
          class: "tl-header", role: "button", tabindex: "0",
          dataset: { group: t.group, y: t.y, h: t.h },
          style: { top: `${t.y}px`, height: `${t.h}px` },
          onclick: () => this.toggleGroup(t.group),
        }, `${arrow} ${t.title} (${t.count})`));
      } else {
        const lane = t.lane;
        const title = [lane.name, lane.plane, lane.events !== undefined ? `${fmtInt(lane.events)} events` : ""].filter(Boolean).join("\n");
        this.labels.appendChild(el("div", {
          class: `tl-label tl-${t.group}`, role: "listitem", title,
          dataset: { key: lane.key, group: t.group, y: t.y, h: t.h, rows: t.rows },
          style: { top: `${t.y}px`, height: `${t.h}px` },
        }, lane.tf_data ? el("span", { class: "badge", text: "tf.data", title: "tf.data thread" }) : null,
           el("span", { class: "tl-label-text", text: lane.name })));
      }
    }
    this.labels.style.height = `${this.layout.height}px`;
    this._sizeCanvas();
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
    if (!force && w === this.scale.width) return;
    this.scale = this.scale.withWidth(w);
    this._sizeCanvas();
    this.draw();
    if (this.capture) this._request(false);
  }

  _sizeCanvas() {
    const dpr = window.devicePixelRatio || 1;
    const w = this._plotWidth();
    const h = this.layout.height;
    for (const [c, ch] of [[this.canvas, h], [this.axisCanvas, AXIS_H], [this.bwCanvas, BW_H]]) {
      c.style.width = `${w}px`;
      c.style.height = `${ch}px`;
      c.width = Math.round(w * dpr);
      c.height = Math.round(ch * dpr);
    }
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
    clearTimeout(this._bwTimer);
    this.scale = scale;
    this.actionAt = performance.now();
    this.draw();
    this.onRange(scale);
    this._request(immediate);
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

  // ---------------------------------------------------------------- data
  _request(immediate) {
    clearTimeout(this._timer);
    const go = () => this._fetch();
    if (immediate) go(); else this._timer = setTimeout(go, 16);
  }

  async _fetch() {
    if (!this.capture) return;
    const seq = ++this.seq;
    if (this._abort) this._abort.abort();
    const ctl = new AbortController();
    this._abort = ctl;
    const scale = this.scale;
    const started = this.actionAt;
    this.root.dataset.state = this.data ? "ready" : "loading";
    this.root.classList.add("busy");
    try {
      const t0 = performance.now();
      const data = await this.load(scale, [...this.collapsed], ctl.signal);
      if (seq !== this.seq) return;
      this.root.dataset.lastFetchMs = (performance.now() - t0).toFixed(1);
      this._paintData(data, started);
    } catch (e) {
      if (e.name === "AbortError") return;
      if (seq !== this.seq) return;
      this.root.classList.remove("busy");
      this.root.dataset.state = "error";
      this.root.dataset.error = e.message;
      return;
    }
    this._fetchBandwidth();
  }

  /** Adopt a /timeline answer, draw it, and record the latency since `started`. */
  _paintData(data, started) {
    const t1 = performance.now();
    this.data = decodeTimeline(data);
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
  }

  // The bandwidth strip follows the view once it settles: it is asked for BW_DELAY_MS
  // after a paint with fresh data, and a new zoom or pan in the meantime postpones it, so
  // back-to-back zoom steps do not queue a bandwidth query on the server ahead of the
  // next timeline query.
  _fetchBandwidth() {
    clearTimeout(this._bwTimer);
    this._bwTimer = setTimeout(() => this._fetchBandwidthNow(), BW_DELAY_MS);
  }

  async _fetchBandwidthNow() {
    if (!this.loadBandwidth) return;
    const seq = ++this.bwSeq;
    const scale = this.scale;
    try {
      const bw = await this.loadBandwidth(scale, Math.max(10, Math.floor(scale.width / 3)));
      if (seq !== this.bwSeq) return;
      this.bw = bw;
      this._drawBandwidth();
    } catch (_) { /* the strip stays as it was */ }
  }

  // ---------------------------------------------------------------- drawing
  draw() {
    const dpr = window.devicePixelRatio || 1;
    const ctx = this.canvas.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    const steps = this.capture ? this.capture.steps : [];
    const drawn = drawTimeline(ctx, this.layout, this.data, this.scale, steps, {
      selectedFile: this.selectedFile, selected: this.selected,
    });
    const actx = this.axisCanvas.getContext("2d");
    actx.setTransform(dpr, 0, 0, dpr, 0, 0);
    drawAxis(actx, this.scale, steps, AXIS_H);
    this._drawBandwidth();
    this.root.dataset.items = String(drawn);
    this.root.dataset.start = String(this.scale.t0);
    this.root.dataset.end = String(this.scale.t1);
    this.rangeText.textContent = `${fmtNs(this.scale.t0)} – ${fmtNs(this.scale.t1)} (${fmtNs(this.scale.span)})`;
  }

  _drawBandwidth() {
    const dpr = window.devicePixelRatio || 1;
    const ctx = this.bwCanvas.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    drawBandwidth(ctx, this.scale, this.bw, BW_H);
  }

  // ---------------------------------------------------------------- interaction
  _local(ev) {
    const r = this.canvas.getBoundingClientRect();
    return { x: ev.clientX - r.left, y: ev.clientY - r.top };
  }

  _wire() {
    const c = this.canvas;
    c.addEventListener("wheel", (ev) => {
      ev.preventDefault();
      const { x } = this._local(ev);
      if (ev.shiftKey || Math.abs(ev.deltaX) > Math.abs(ev.deltaY)) {
        this.panBy((ev.deltaX || ev.deltaY) * 1.0, false);
      } else {
        this.zoomBy(Math.exp(ev.deltaY * 0.0025), x, false);
      }
    }, { passive: false });
    c.addEventListener("mousedown", (ev) => {
      if (ev.button !== 0) return;
      ev.preventDefault();
      this.root.focus({ preventScroll: true });
      const p = this._local(ev);
      this._drag = { x0: p.x, y0: p.y, last: p.x, box: ev.shiftKey || this.boxMode, moved: false };
    });
    window.addEventListener("mousemove", (ev) => {
      const d = this._drag;
      if (!d) { this._hover(ev); return; }
      const p = this._local(ev);
      if (Math.abs(p.x - d.x0) > 3 || Math.abs(p.y - d.y0) > 3) d.moved = true;
      if (d.box) {
        const a = Math.min(d.x0, p.x);
        const b = Math.max(d.x0, p.x);
        Object.assign(this.boxEl.style, { left: `${a}px`, width: `${b - a}px`, top: "0px", height: `${this.layout.height}px` });
        this.boxEl.hidden = !d.moved;
      } else if (d.moved) {
        this.panBy(d.last - p.x, false);
        d.last = p.x;
      }
    });
    window.addEventListener("mouseup", (ev) => {
      const d = this._drag;
      if (!d) return;
      this._drag = null;
      this.boxEl.hidden = true;
      const p = this._local(ev);
      if (d.box && d.moved) {
        const a = Math.min(d.x0, p.x);
        const b = Math.max(d.x0, p.x);
        if (b - a >= 3) this.zoomTo(this.scale.t(a), this.scale.t(b));
        if (this.boxMode) this.toggleBox();
      } else if (!d.moved) {
        this._click(p.x, p.y);
      }
    });
    c.addEventListener("mouseleave", () => { this.tooltip.hidden = true; });
    window.addEventListener("keydown", (ev) => {
      const tag = (ev.target && ev.target.tagName) || "";
      if (/INPUT|SELECT|TEXTAREA/.test(tag) || ev.ctrlKey || ev.metaKey || ev.altKey) return;
      if (!this.capture || !this.root.isConnected) return;
      const k = ev.key.toLowerCase();
      const step = this.scale.width * 0.15;
      if (k === "w") this.zoomBy(0.7);
      else if (k === "s") this.zoomBy(1 / 0.7);
      else if (k === "a") this.panBy(-step);
      else if (k === "d") this.panBy(step);
      else if (k === "r" || k === "0") this.reset();
      else return;
      ev.preventDefault();
    });
  }

  _hit(x, y) {
    return itemAt(this.data, this.byLane, this.layout, this.scale, x, y);
  }

  _hover(ev) {
    if (!this.data) return;
    const r = this.canvas.getBoundingClientRect();
    const x = ev.clientX - r.left;
    const y = ev.clientY - r.top;
    if (x < 0 || y < 0 || x > r.width || y > r.height) { this.tooltip.hidden = true; return; }
    const i = this._hit(x, y);
    if (i < 0) { this.tooltip.hidden = true; this.canvas.style.cursor = "default"; return; }
    this.canvas.style.cursor = "pointer";
    const it = this.data.items;
    const lane = this.data.lanes[it.lane[i]];
    const lines = [];
    const name = this.data.names[it.name[i]] || "";
    if (it.count[i] > 1) lines.push(`${fmtInt(it.count[i])} events (merged; click to zoom in)`, `first: ${name}`);
    else lines.push(name);
    lines.push(`${fmtNs(it.dur[i])} at ${fmtNs(it.start[i])}`);
    if (lane.group === "io") {
      if (it.bytes[i]) lines.push(`${fmtBytes(it.bytes[i])} moved`);
      if (it.file[i] >= 0) lines.push(this.data.files[it.file[i]]);
      if (it.err[i]) lines.push(`errno ${it.err[i]}`);
    }
    lines.push(lane.name);
    clear(this.tooltip);
    lines.forEach((l, k) => this.tooltip.appendChild(el("div", { class: k === 0 ? "tt-title" : "" , text: l })));
    const rr = this.root.getBoundingClientRect();
    this.tooltip.style.left = `${Math.min(ev.clientX - rr.left + 14, rr.width - 320)}px`;
    this.tooltip.style.top = `${ev.clientY - rr.top + 14}px`;
    this.tooltip.hidden = false;
  }

  _click(x, y) {
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

  /** Canvas coordinates (CSS px, relative to the canvas) of the middle of item i. */
  itemCenter(i) {
    const it = this.data.items;
    const t = this.layout.laneTrack.get(it.lane[i]);
    if (!t) return null;
    const x0 = Math.max(0, this.scale.x(it.start[i]));
    const x1 = Math.min(this.scale.width, this.scale.x(it.start[i] + it.dur[i]));
    return { x: (x0 + Math.max(x0 + 1, x1)) / 2, y: t.y + LANE_PAD + it.row[i] * ROW_H + ROW_H / 2 };
  }
}
