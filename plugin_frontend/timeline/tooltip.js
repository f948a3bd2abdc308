// The hover tooltip: what an item is (pure text lines) and the floating box showing them.

import { el, clear } from "../lib/dom.js";
import { fmtBytes, fmtInt, fmtNs } from "../lib/format.js";

/** The tooltip's lines for item i of a decoded /timeline answer (title first, lane last). */
export function itemLines(data, i) {
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
  } else if (lane.group === "object") {
    lines.push(`${fmtBytes(it.bytes[i])} ${it.count[i] > 1 ? "in all" : "moved"}`);
    if (it.err[i] > 0) lines.push(`HTTP ${it.err[i]}`);
    else if (it.err[i] < 0) lines.push("no answer");
  }
  lines.push(lane.name);
  return lines;
}

export class Tooltip {
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
