// Pure track building: lanes from /capture (or /timeline) -> vertical layout. No DOM, no
// canvas: testable on its own. y values are CSS px from the top of the track area.

export const ROW_H = 16;
export const LANE_PAD = 3;
export const HEADER_H = 22;

// Draw order of the lane groups: file accesses and object-storage requests first (this is
// the I/O tab), then the host threads they run on, then the devices.
export const GROUPS = [
  { id: "io", title: "File accesses" },
  { id: "object", title: "Object requests" },
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
export function buildTracks(lanes, collapsed = new Set()) {
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
export function trackAt(layout, y) {
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
export function itemsByLane(items) {
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
export function itemAt(data, byLane, layout, scale, x, y, slop = 2) {
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
export function decodeTimeline(data) {
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
export function tracksIn(layout, top, bottom) {
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
export function lanesToRequest(layout, top, bottom, margin, laneCount) {
  const keys = tracksIn(layout, top - margin, bottom + margin)
    .filter((t) => t.kind === "lane").map((t) => t.lane.key);
  return keys.length === laneCount ? null : keys;
}

/** Are all lane tracks in content rows [top, bottom) among `have` (a Set of keys; null = all)? */
export function lanesCovered(layout, top, bottom, have) {
  if (have === null) return true;
  return tracksIn(layout, top, bottom).every((t) => t.kind !== "lane" || have.has(t.lane.key));
}
