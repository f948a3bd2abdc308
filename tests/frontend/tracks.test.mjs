// timeline/tracks.js: layout, visible lanes, hit testing, decoding /timeline answers.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  buildTracks, decodeTimeline, HEADER_H, itemAt, itemsByLane, LANE_PAD, lanesCovered, lanesToRequest, ROW_H,
  trackAt, tracksIn,
} from "../../plugin_frontend/timeline/tracks.js";
import { TimeScale } from "../../plugin_frontend/timeline/coords.js";

const LANE = (rows) => rows * ROW_H + 2 * LANE_PAD;
const lanes = [
  { key: "h0", group: "host", name: "python3", rows: 2 },
  { key: "d0", group: "device", name: "Stream #1", rows: 1 },
  { key: "io0", group: "io", name: "reader", rows: 1 },
  { key: "io1", group: "io", name: "writer" },
];

test("groups are laid out io, host, device, each under a header", () => {
  const l = buildTracks(lanes);
  assert.deepEqual(l.tracks.map((t) => t.kind === "header" ? `#${t.group}` : t.lane.key),
                   ["#io", "io0", "io1", "#host", "h0", "#device", "d0"]);
  assert.equal(l.tracks[1].y, HEADER_H);
  assert.equal(l.tracks[3].y, HEADER_H + 2 * LANE(1));
  assert.equal(l.laneTrack.get(0).h, LANE(2));
  assert.equal(l.height, 3 * HEADER_H + 3 * LANE(1) + LANE(2));
  for (let k = 1; k < l.tracks.length; k++) assert.equal(l.tracks[k].y, l.tracks[k - 1].y + l.tracks[k - 1].h);
});

test("a collapsed group keeps its header only", () => {
  const l = buildTracks(lanes, new Set(["io"]));
  assert.deepEqual(l.tracks.map((t) => t.kind === "header" ? `#${t.group}` : t.lane.key), ["#io", "#host", "h0", "#device", "d0"]);
  assert.equal(l.tracks[0].collapsed, true);
  assert.equal(l.tracks[0].count, 2);
  assert.ok(!l.laneTrack.has(2));
  assert.equal(buildTracks([]).height, 1);
});

test("trackAt and tracksIn find tracks by content y", () => {
  const l = buildTracks(lanes);
  assert.equal(trackAt(l, 0).kind, "header");
  assert.equal(trackAt(l, HEADER_H).lane.key, "io0");
  assert.equal(trackAt(l, HEADER_H + LANE(1) - 1).lane.key, "io0");
  assert.equal(trackAt(l, HEADER_H + LANE(1)).lane.key, "io1");
  assert.equal(trackAt(l, l.height + 5), null);
  assert.deepEqual(tracksIn(l, HEADER_H + 1, HEADER_H + LANE(1) + 1).map((t) => t.lane.key), ["io0", "io1"]);
  assert.deepEqual(tracksIn(l, l.height, l.height + 100), []);
  assert.equal(tracksIn(l, -50, 1e9).length, l.tracks.length);
});

function manyLanes(n) {
  return Array.from({ length: n }, (_, i) => ({ key: `h${i}/io`, group: "io", name: `io ${i}`, rows: 1 }));
}

test("only the lanes on screen, and a margin, are asked for", () => {
  const l = buildTracks(manyLanes(1000));  // 1000 lanes of 22 px: 22,022 px
  const h = LANE(1);
  const keys = lanesToRequest(l, 0, 10 * h, 0, 1000);
  // under the header, lanes 0..8 reach into [0, 220); lane 9 starts at 22 + 9 * 22 = 220
  assert.deepEqual(keys, Array.from({ length: 9 }, (_, i) => `h${i}/io`));
  const mid = lanesToRequest(l, HEADER_H + 500 * h, HEADER_H + 510 * h, 5 * h, 1000);
  assert.deepEqual(mid, Array.from({ length: 20 }, (_, i) => `h${495 + i}/io`));
  assert.equal(lanesToRequest(l, 0, l.height, 0, 1000), null);  // all of them: no filter
  assert.deepEqual(lanesToRequest(buildTracks(manyLanes(3), new Set(["io"])), 0, 100, 0, 3), []);
});

test("lanesCovered says whether a scroll needs a fetch", () => {
  const l = buildTracks(manyLanes(100));
  const have = new Set(lanesToRequest(l, 0, 220, 0, 100));
  assert.ok(lanesCovered(l, 0, 220, have));
  assert.ok(!lanesCovered(l, 2000, 2220, have));
  assert.ok(lanesCovered(l, 2000, 2220, null));
});

// A /timeline answer as the server sends it (tb_iotrace/plugin/queries.py timeline_impl).
function answer() {
  return {
    start: 1000, end: 2000, width: 100, q: 2,
    lanes: [{ key: "a", group: "io", name: "a" }, { key: "b", group: "host", name: "b" }],
    names: ["pread64", "op"], files: ["/d/x"],
    segments: { lane: [0, 1], row: [0, 1], length: [2, 1], first: [10, 0] },
    items: { start: [5, 20, 100], dur: [3, 10, 50], name: [0, 0, 1], count: [1, 4, 1],
             bytes: [8, 32, 0], file: [0, -1, -1], err: [0, 0, 0] },
  };
}

test("decodeTimeline expands segments and delta-coded starts", () => {
  const d = decodeTimeline(answer());
  const it = d.items;
  assert.deepEqual([...it.lane], [0, 0, 1]);
  assert.deepEqual([...it.row], [0, 0, 1]);
  assert.deepEqual([...it.index], [10, 11, 0]);  // first + counts
  assert.deepEqual([...it.start], [1010, 1050, 1200]);  // start + q * (5, 5 + 20, 100)
  assert.deepEqual([...it.dur], [6, 20, 100]);
  const by = itemsByLane(it);
  assert.deepEqual([...by.entries()], [[0, [0, 1]], [1, [2]]]);
});

test("itemAt hits the narrowest item on the row under the point", () => {
  const data = decodeTimeline(answer());
  const layout = buildTracks(data.lanes.map((l, i) => ({ ...l, rows: i === 1 ? 2 : 1 })));
  const scale = new TimeScale(1000, 2000, 100);  // 10 ns per px
  const by = itemsByLane(data.items);
  const ioY = layout.laneTrack.get(0).y + LANE_PAD + ROW_H / 2;
  assert.equal(itemAt(data, by, layout, scale, 1.2, ioY), 0);   // 1010..1016 -> x 1..1.6
  assert.equal(itemAt(data, by, layout, scale, 6, ioY), 1);     // 1050..1070 -> x 5..7
  assert.equal(itemAt(data, by, layout, scale, 40, ioY), -1);
  const hostRow1 = layout.laneTrack.get(1).y + LANE_PAD + ROW_H + 2;
  assert.equal(itemAt(data, by, layout, scale, 25, hostRow1), 2);
  assert.equal(itemAt(data, by, layout, scale, 25, hostRow1 - ROW_H), -1);  // row 0 is empty
  assert.equal(itemAt(null, by, layout, scale, 25, hostRow1), -1);
});
