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

import { el, clear } from "../lib/dom.js";
import { fmtInt, fmtNs } from "../lib/format.js";
import { TimeScale } from "./coords.js";
import { buildTracks, decodeTimeline, itemAt, itemsByLane, lanesCovered, lanesToRequest, LANE_PAD, ROW_H, tracksIn } from "./tracks.js";
import { drawAxis, drawBandwidth, drawTimeline } from "./view.js";
import { Loader } from "./loader.js";
import { wireInput } from "./input.js";
import { itemLines, Tooltip } from "./tooltip.js";
import { drawCheckpointLane, laneHeight, laneRows, rowLabel, ROW_H as CK_ROW_H } from "./ckptlane.js";

export const LABEL_W = 250;
export const LABELS_ALL_PX = 8000;  // lanes up to this tall: every label in the DOM (see _renderLabels)
const AXIS_H = 34;
const BW_H = 70;

export class Timeline {
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
    // the checkpoint lane under the steps (ckptlane.js): hidden while there is none
    this.ckCanvas = el("canvas", { class: "tl-ckpt", "aria-label": "checkpoint saves and loads" });
    this.ckLabels = el("div", { class: "tl-corner tl-ckpt-labels" });
    this.ckRow = el("div", { class: "tl-ckpt-row", hidden: true }, this.ckLabels, this.ckCanvas);
    this.ckRows = [];
    this.ckSaves = [];
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
      this.ckRow,
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
    this.ckRows = [];       // the new view's come with its /checkpoints answer
    this.ckSaves = [];
    this.ckRow.hidden = true;
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
    for (const [c, ch] of [[this.canvas, this.viewHeight], [this.axisCanvas, AXIS_H], [this.bwCanvas, BW_H],
                           [this.ckCanvas, Math.max(1, laneHeight(this.ckRows))]]) {
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
    this._drawCheckpoints();
    this._drawBandwidth();
    this.root.dataset.items = String(drawn);
    this.root.dataset.start = String(this.scale.t0);
    this.root.dataset.end = String(this.scale.t1);
    this.root.dataset.viewTop = String(top);
    this.rangeText.textContent = `${fmtNs(this.scale.t0)} – ${fmtNs(this.scale.t1)} (${fmtNs(this.scale.span)})`;
  }

  /** The checkpoint lane's data: a /checkpoints answer (phases on this view's clock, saves
   * across ranks), or null to hide it. */
  setCheckpoints(answer) {
    this.ckRows = laneRows(answer && !answer.error ? answer.phases : []);
    this.ckSaves = answer && !answer.error ? answer.saves : [];
    this.ckRow.hidden = !this.ckRows.length;
    clear(this.ckLabels);
    this.ckLabels.appendChild(el("div", { class: "tl-ckpt-title", text: "Checkpoints" }));
    for (const row of this.ckRows) {
      this.ckLabels.appendChild(el("div", { class: "tl-ckpt-label", style: { height: `${CK_ROW_H}px` }, text: rowLabel(row) }));
    }
    this.root.dataset.checkpoints = String(this.ckRows.reduce((n, r) => n + r.phases.length, 0));
    this._sizeCanvas();
    this.draw();
  }

  _drawCheckpoints() {
    if (!this.ckRows.length) return;
    const dpr = window.devicePixelRatio || 1;
    const ctx = this.ckCanvas.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    drawCheckpointLane(ctx, this.scale, this.ckRows, this.ckSaves, laneHeight(this.ckRows));
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
