// The timeline's drawing calls: functions of (canvas context, layout, data, scale, style
// state) that paint; no fetching, no input handling. The track canvas covers only the
// visible part of the lanes (the caller translates the context by the scroll offset and
// passes the visible content range as opts.top/bottom).

import { COLORS, hashColor, ioColor } from "../lib/colors.js";
import { fmtRateShort } from "../lib/format.js";
import { LANE_PAD, ROW_H } from "./tracks.js";

/** Color of item i (colors cached per name and group on the response). */
export function itemColor(data, i, lane) {
  const io = lane.group === "io";
  if ((io || lane.group === "object") && data.items.err[i]) return COLORS.error;
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
export function drawTimeline(ctx, layout, data, scale, steps, opts = {}) {
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
export function drawAxis(ctx, scale, steps, height) {
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
export function drawBandwidth(ctx, scale, bw, height) {
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
