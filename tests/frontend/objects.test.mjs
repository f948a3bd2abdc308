// The pure parts of views/objects.js (the "Object storage" section) and the verdict's object_io.
import { test } from "node:test";
import assert from "node:assert/strict";
import { objectRows, objectsLine } from "../../plugin_frontend/views/objects.js";
import { verdictLines } from "../../plugin_frontend/views/findings.js";

const host = {
  host: "w.1/pid201", requests: 20, bytes_read: 327680, ops: { GET: 20 }, ranged_gets: 20, errors: 0, throttled: 0,
  retries: 0, max_concurrency: 1, first_byte_ms_mean: 0.09, objects_left_out: 0,
  objects: [{ object: "s3://objs/shards/s000.bin", counters: { OBJ_REQUESTS: 4, OBJ_GETS: 4, OBJ_RANGED_GETS: 4,
    OBJ_BYTES_READ: 65536, OBJ_REFETCHED_BYTES: 0, OBJ_MAX_CONCURRENCY: 1 }, fcounters: { OBJ_F_FIRST_BYTE_MEAN: 9e-5 } }],
};

test("a host's totals in one line", () => {
  assert.equal(objectsLine(host), "w.1/pid201: 20 requests (GET 20), 320 KiB read, 20 ranged GETs, at most 1 in flight, "
    + "first byte 0.1 ms on average");
  assert.match(objectsLine({ ...host, errors: 3, throttled: 2 }), /, 3 errors \(2 throttled\)$/);
});

test("one row per object, first-byte time in ms", () => {
  const [r] = objectRows(host);
  assert.ok(Math.abs(r.firstMs - 0.09) < 1e-12);
  assert.deepEqual({ ...r, firstMs: 0 }, { object: "s3://objs/shards/s000.bin", requests: 4, gets: 4, ranged: 4,
    bytes: 65536, again: 0, firstMs: 0, atOnce: 1 });
});

test("the verdict names object I/O", () => {
  const v = { bound: "input", input_wait_share: 0.4, unmeasured: [], unmeasured_share: 0, advice: "",
    wait_breakdown: { file_io: 0.25, object_io: 0.5, decode: 0.25, starved: 0, copy: 0, other: 0 } };
  assert.match(verdictLines(v).wait, /object I\/O 50%/);
});
