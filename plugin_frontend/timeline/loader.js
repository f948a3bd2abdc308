// Fetch scheduling of the timeline: which window and lanes to ask for, and when.
// Discrete actions (keys, buttons, box zoom) fetch at once; continuous ones (wheel, drag,
// scrolling the lanes) coalesce for a frame. Only the newest answer is drawn: each fetch
// aborts the one before it (AbortController) and an answer that is not the newest any
// more (sequence number) is dropped. The bandwidth strip follows once the view settles:
// it is asked for BW_DELAY_MS after a paint with fresh data, and a new zoom or pan in the
// meantime postpones it, so back-to-back zoom steps do not queue a bandwidth query on the
// server ahead of the next timeline query.

import { Latest } from "../lib/latest.js";

export const COALESCE_MS = 16;
export const BW_DELAY_MS = 150;

export class Loader {
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
