// "Whole run": the time series a whole-run record keeps of its process's life (at most
// 256 bins, whatever the trace kept), one strip per process: read bandwidth up, write
// down. A column is the max of the bins it covers; a click zooms the timeline there.

import { el, clear } from "../lib/dom.js";
import { fmtBytes, fmtInt, fmtNs, fmtRateShort } from "../lib/format.js";

/** Squeeze a series into at most `maxCols` columns: per column its time range (view clock
 * ns), the max read/write rate of its bins, and its calls. Pure. */
export function seriesColumns(s, maxCols = 256) {
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
export function seriesPeak(list) {
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

export function renderRunSeries(root, list, onRange) {
  clear(root);
  if (!list || !list.length) return;
  const peak = seriesPeak(list);
  root.appendChild(el("div", { class: "chart-note", text:
    `The whole life of each process, kept in fixed memory whatever the trace kept (read ↑, write ↓; `
    + `peak ${fmtRateShort(peak)}). Click a column to show that stretch in the timeline.` }));
  list.forEach((s) => root.appendChild(strip(s, peak, onRange)));
}
