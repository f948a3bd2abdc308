// Coordinate spaces of the timeline (the server's tb_iotrace/plugin/level_of_detail.py uses the same):
//
//   time  ns on the view's clock: ns since the capture's profile start (all lanes share it).
//   x     CSS pixels from the left edge of the plot area (the canvas right of the labels).
//         x = (t - t0) / nsPerPx, nsPerPx = (t1 - t0) / width.
//   y     CSS pixels from the top of the track area (content coordinates, before scrolling).
//   device pixels = CSS pixels * devicePixelRatio (only the canvas backing store uses them).
//
// TimeScale is immutable: zoom/pan return new scales, so a drawn frame and the request
// that fetched its data always agree on the window.

import { fmtTick } from "../lib/format.js";

export const MIN_SPAN_NS = 100; // never zoom in below 100 ns across the plot

export class TimeScale {
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
