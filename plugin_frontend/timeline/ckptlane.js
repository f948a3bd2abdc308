// The checkpoint lane under the steps: each save and load of each host (one row per host) on
// the timeline's clock, from /checkpoints. A save is blue, a load green; the part the
// training loop was blocked is solid, an async save's background part pale; a straggler's
// late part (after the other ranks finished) is outlined red.

export const ROW_H = 12;
export const LANE_PAD = 3;
const COLORS = { save: "#3b6fd1", load: "#2e9a5a", saveBg: "rgba(59, 111, 209, 0.28)", loadBg: "rgba(46, 154, 90, 0.28)",
                 late: "#d23c3c", text: "#56606b" };

/** Rows of the lane: one per host in the order hosts first appear (ranks first, by rank),
 * each `{host, rank, phases}`. Pure. */
export function laneRows(phases) {
  const rows = new Map();
  for (const p of phases || []) {
    if (!rows.has(p.host)) rows.set(p.host, { host: p.host, rank: p.rank ?? null, phases: [] });
    rows.get(p.host).phases.push(p);
  }
  return [...rows.values()].sort((a, b) => (a.rank === null) - (b.rank === null) || (a.rank ?? 0) - (b.rank ?? 0)
    || (a.host < b.host ? -1 : a.host > b.host ? 1 : 0));
}

/** The lane's height in CSS px for `rows` (0: no checkpoints, the lane is hidden). Pure. */
export function laneHeight(rows) {
  return rows.length ? rows.length * ROW_H + 2 * LANE_PAD : 0;
}

/** Per phase, the spans to paint in ns: `blocked` [start, start + blocking] (the loop waited),
 * `rest` the remainder up to its end (an async save's background). Pure. */
export function phaseSpans(p) {
  const blocked = Math.min(Math.max(0, p.blocking_ns || 0), Math.max(0, p.end - p.start));
  return { blocked: [p.start, p.start + blocked], rest: [p.start + blocked, p.end] };
}

/** Late parts per host: `host -> [[from, to]]`, the stretch after the other ranks' median
 * finish in each save where the host straggles. Pure. */
export function lateSpans(saves) {
  const out = new Map();
  for (const s of saves || []) {
    if (!s.straggler) continue;
    const me = s.ranks.find((r) => r.host === s.straggler);
    if (!me) continue;
    if (!out.has(me.host)) out.set(me.host, []);
    out.get(me.host).push([me.finish - s.lag_ns, me.finish]);
  }
  return out;
}

/** Draw the lane (ctx in CSS px); returns the number of phases drawn. */
export function drawCheckpointLane(ctx, scale, rows, saves, height) {
  const W = scale.width;
  ctx.fillStyle = "#ffffff";
  ctx.fillRect(0, 0, W, height);
  ctx.fillStyle = "#e3e7ec";
  ctx.fillRect(0, height - 1, W, 1);
  const late = lateSpans(saves);
  let drawn = 0;
  rows.forEach((row, k) => {
    const y = LANE_PAD + k * ROW_H + 1;
    const h = ROW_H - 2;
    for (const p of row.phases) {
      const x0 = scale.x(p.start);
      const x1 = scale.x(p.end);
      if (x1 < 0 || x0 > W) continue;
      const { blocked, rest } = phaseSpans(p);
      const save = p.kind !== "load";
      ctx.fillStyle = save ? COLORS.saveBg : COLORS.loadBg;
      const r0 = scale.x(rest[0]);
      ctx.fillRect(r0, y, Math.max(1, scale.x(rest[1]) - r0), h);
      ctx.fillStyle = save ? COLORS.save : COLORS.load;
      const b0 = scale.x(blocked[0]);
      if (blocked[1] > blocked[0]) ctx.fillRect(b0, y, Math.max(1, scale.x(blocked[1]) - b0), h);
      drawn++;
    }
    ctx.strokeStyle = COLORS.late;
    ctx.lineWidth = 1.5;
    for (const [a, b] of late.get(row.host) || []) {
      const xa = scale.x(a);
      ctx.strokeRect(xa, y - 0.5, Math.max(1, scale.x(b) - xa), h + 1);
    }
  });
  return drawn;
}

/** The row's label: "rank N" when known, else the host. Pure. */
export function rowLabel(row) {
  return row.rank !== null && row.rank !== undefined ? `rank ${row.rank}` : row.host;
}
