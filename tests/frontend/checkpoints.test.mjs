// The pure parts of timeline/ckptlane.js (the checkpoint lane) and views/checkpoints.js (the
// per-save tables).
import { test } from "node:test";
import assert from "node:assert/strict";
import { laneHeight, laneRows, lateSpans, phaseSpans, rowLabel, ROW_H, LANE_PAD } from "../../plugin_frontend/timeline/ckptlane.js";
import { saveRows } from "../../plugin_frontend/views/checkpoints.js";

const phases = [
  { host: "vm.9", rank: 1, kind: "save", start: 100, end: 700, blocking_ns: 600, background_ns: 0 },
  { host: "vm.8", rank: 0, kind: "save", start: 100, end: 160, blocking_ns: 60, background_ns: 0 },
  { host: "vm.8", rank: 0, kind: "load", start: 10, end: 40, blocking_ns: 30, background_ns: 0 },
  { host: "w", rank: null, kind: "save", start: 1000, end: 1400, blocking_ns: 50, background_ns: 350 },
];
const save = { start: 100, end: 700, straggler: "vm.9", lag_ns: 540, ranks: [
  { host: "vm.8", rank: 0, start: 100, finish: 160, bytes: 8 << 20, bandwidth_mib_s: 300.4, fs_type: "ext4", mount_point: "/" },
  { host: "vm.9", rank: 1, start: 100, finish: 700, bytes: 8 << 20, bandwidth_mib_s: 14.2, fs_type: "ext4", mount_point: "/" },
] };

test("one lane row per host, ranks first in rank order, hosts without a rank last", () => {
  const rows = laneRows(phases);
  assert.deepEqual(rows.map((r) => [r.host, r.phases.length]), [["vm.8", 2], ["vm.9", 1], ["w", 1]]);
  assert.deepEqual(rows.map(rowLabel), ["rank 0", "rank 1", "w"]);
  assert.equal(laneHeight(rows), 3 * ROW_H + 2 * LANE_PAD);
  assert.equal(laneHeight(laneRows([])), 0);      // no checkpoints: no lane
});

test("a phase paints its blocked part, then its background part", () => {
  assert.deepEqual(phaseSpans(phases[3]), { blocked: [1000, 1050], rest: [1050, 1400] });
  assert.deepEqual(phaseSpans(phases[0]), { blocked: [100, 700], rest: [700, 700] });
  assert.deepEqual(phaseSpans({ start: 5, end: 9, blocking_ns: 100 }), { blocked: [5, 9], rest: [9, 9] });
});

test("the straggler's late part: after the others finished", () => {
  assert.deepEqual([...lateSpans([save]).entries()], [["vm.9", [[160, 700]]]]);
  assert.equal(lateSpans([{ ...save, straggler: null }]).size, 0);
});

test("a save's table: times from its start, the last and the straggler marked", () => {
  const rows = saveRows(save);
  assert.deepEqual(rows.map((r) => [r.rank, r.start, r.finish, r.last, r.straggler]),
    [["0", 0, 60, false, false], ["1", 0, 600, true, true]]);
  assert.equal(rows[1].fs, "/ (ext4)");
  assert.equal(saveRows({ ...save, ranks: [{ ...save.ranks[0], rank: null }] })[0].rank, "–");
});
