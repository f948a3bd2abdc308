// lib/packed.js (the /timeline?enc=bin answer), decoding it into the timeline's items, and
// the findings poll of views/findings.js.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { nest, unpack } from "../../plugin_frontend/lib/packed.js";
import { decodeTimeline } from "../../plugin_frontend/timeline/tracks.js";
import { findingsProgress, pollFindings } from "../../plugin_frontend/views/findings.js";

const FIXTURE = new URL("../data/packed_answer.bin", import.meta.url);

function buffer(bytes) {
  return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
}

test("the encoder's fixture (tests/unit/test_plugin_lanes.py) decodes to its values and types", () => {
  const { fields, columns } = unpack(buffer(readFileSync(FIXTURE)));
  assert.deepEqual(fields, { title: "fixture", q: 0.125 });
  const got = Object.fromEntries(Object.entries(columns).map(([k, v]) => [k, [v.constructor.name, [...v]]]));
  assert.deepEqual(got, {
    "items.small": ["Int8Array", [1, -2, 3]],
    "items.mid": ["Int16Array", [300, -300]],
    "items.wide": ["Int32Array", [70000, -1]],
    "items.huge": ["Float64Array", [2 ** 40]],
    "items.float": ["Float64Array", [1.5]],
    empty: ["Int8Array", []],
  });
  const nested = nest({ fields, columns });
  assert.deepEqual([...nested.items.mid], [300, -300]);
  assert.equal(nested.title, "fixture");
  assert.equal(nested.empty.length, 0);
});

test("a buffer that is not a packed answer, or is cut short, is an error", () => {
  const bytes = readFileSync(FIXTURE);
  const bad = Uint8Array.from(bytes);
  bad[0] = 0x7b;  // "{": a JSON answer
  assert.throws(() => unpack(buffer(bad)), /not a packed answer/);
  assert.throws(() => unpack(buffer(bytes.subarray(0, bytes.length - 8))), /truncated/);
  assert.throws(() => unpack(buffer(bytes.subarray(0, 20))), /truncated/);
});

test("decodeTimeline: a packed answer's segments.start begins each segment", () => {
  const data = decodeTimeline({
    start: 1000, q: 2, lanes: [{ key: "a" }, { key: "b" }],
    segments: { lane: Int16Array.from([0, 1]), row: Int8Array.from([0, 1]), length: Int8Array.from([2, 1]),
                first: Int8Array.from([10, 0]), start: Int16Array.from([-300, 50]) },
    items: { start: Int8Array.from([0, 7, 0]), dur: Int8Array.from([1, 2, 3]), count: Int8Array.from([3, 1, 1]) },
  });
  const it = data.items;
  assert.deepEqual([...it.start], [1000 - 600, 1000 - 600 + 14, 1100]);
  assert.deepEqual([...it.dur], [2, 4, 6]);
  assert.deepEqual([...it.index], [10, 13, 0]);
  assert.deepEqual([...it.lane], [0, 0, 1]);
  assert.deepEqual([...it.row], [0, 0, 1]);
});

test("findings are asked for again, with growing delays, until none is pending", async () => {
  const answers = [{ pending: 50, hosts: 64 }, { pending: 20, hosts: 64 }, { pending: 3, hosts: 64 }, { pending: 0, hosts: 64 }];
  const shown = [];
  const slept = [];
  let asked = 0;
  const last = await pollFindings(async () => answers[asked++], (f) => shown.push(f.pending), () => true,
    { first: answers[asked++], delays: [5, 10, 20], sleep: async (ms) => { slept.push(ms); } });
  assert.equal(last.pending, 0);
  assert.equal(asked, 4);
  assert.deepEqual(shown, [20, 3, 0]);  // the first answer was shown by the caller
  assert.deepEqual(slept, [5, 10, 20]);
});

test("the findings poll stops when another capture is picked, on an error, and after maxPolls", async () => {
  let current = true;
  let asked = 0;
  const stopped = await pollFindings(async () => { asked++; current = false; return { pending: 5 }; }, () => {},
    () => current, { sleep: async () => {} });
  assert.equal(stopped, null);
  assert.equal(asked, 1);
  const err = await pollFindings(async () => ({ error: "boom" }), () => {}, () => true, { sleep: async () => {} });
  assert.equal(err.error, "boom");
  asked = 0;
  const capped = await pollFindings(async () => { asked++; return { pending: 1 }; }, () => {}, () => true,
    { maxPolls: 4, sleep: async () => {} });
  assert.equal(capped.pending, 1);
  assert.equal(asked, 5);
});

test("findings progress: hosts done of the total while some are pending", () => {
  assert.deepEqual(findingsProgress({ pending: 14, hosts: 64 }), { done: 50, total: 64, text: "Analysing hosts: 50 of 64 done…" });
  assert.equal(findingsProgress({ pending: 0, hosts: 64 }), null);
  assert.equal(findingsProgress({ findings: [] }), null);
  assert.equal(findingsProgress({ pending: 2 }).text, "Analysing 2 more hosts…");
});
