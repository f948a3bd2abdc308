// Object-request lanes on the timeline: their group's place (after the file accesses), the
// tooltip of a request (its name, duration, bytes, a failed answer), its colour.
import { test } from "node:test";
import assert from "node:assert/strict";
import { buildTracks, decodeTimeline } from "../../plugin_frontend/timeline/tracks.js";
import { itemLines } from "../../plugin_frontend/timeline/tooltip.js";
import { itemColor } from "../../plugin_frontend/timeline/view.js";
import { COLORS } from "../../plugin_frontend/lib/colors.js";

const lanes = [
  { key: "h0", group: "host", name: "python3", rows: 1 },
  { key: "obj.p1.t7", group: "object", name: "loader (tid 7)", rows: 2 },
  { key: "io0", group: "io", name: "reader", rows: 1 },
];

test("object lanes come right after the file accesses, under their own header", () => {
  const l = buildTracks(lanes);
  assert.deepEqual(l.tracks.map((t) => t.kind === "header" ? `#${t.group}` : t.lane.key),
                   ["#io", "io0", "#object", "obj.p1.t7", "#host", "h0"]);
  assert.equal(l.tracks[2].title, "Object requests");
  assert.equal(l.laneTrack.get(1).rows, 2);
});

test("a request's tooltip: its object, duration, bytes; a failed one its status", () => {
  const data = decodeTimeline({
    start: 0, end: 1e7, width: 100, q: 1000,
    lanes,
    names: ["GET s3://objs/shards/s000.bin"], files: [],
    segments: { lane: [1], row: [0], length: [3], first: [0] },
    items: { start: [1000, 1000, 2000], dur: [500, 500, 500], name: [0, 0, 0], count: [1, 1, 3],
             bytes: [16384, 0, 49152], file: [-1, -1, -1], err: [0, 503, 0] },
  });
  assert.deepEqual(itemLines(data, 0), ["GET s3://objs/shards/s000.bin", "500.0 µs at 1.00 ms", "16.0 KiB moved",
                                        "loader (tid 7)"]);
  assert.deepEqual(itemLines(data, 1).slice(2), ["0 B moved", "HTTP 503", "loader (tid 7)"]);
  assert.deepEqual(itemLines(data, 2).slice(0, 2), ["3 events (merged; click to zoom in)", "first: GET s3://objs/shards/s000.bin"]);
  assert.equal(itemLines(data, 2)[3], "48.0 KiB in all");
  assert.equal(itemColor(data, 1, lanes[1]), COLORS.error);
  assert.notEqual(itemColor(data, 0, lanes[1]), COLORS.error);
});
