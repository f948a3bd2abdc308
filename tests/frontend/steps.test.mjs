// The steps table's columns (views/charts.js): object columns only where /steps has them.
import { test } from "node:test";
import assert from "node:assert/strict";
import { hasObjectSteps, stepCells, stepHeads } from "../../plugin_frontend/views/charts.js";

const step = { name: "3", start: 0, end: 10e6, bytes_read: 8192, bytes_written: 0, calls: 1, io_time_ns: 1e6,
               input_wait_pct: 40 };

test("steps without object requests keep their columns", () => {
  const s = { has_steps: true, steps: [step] };
  assert.equal(hasObjectSteps(s), false);
  assert.equal(stepHeads(s).includes("Object bytes"), false);
  assert.equal(stepCells(step, true, false).length, 7);
});

test("steps with object requests get their count and bytes", () => {
  const st = { ...step, object_requests: 4, object_bytes: 65536 };
  const s = { has_steps: true, steps: [st] };
  assert.equal(hasObjectSteps(s), true);
  const heads = stepHeads(s);
  const cells = stepCells(st, true, true);
  assert.equal(cells[heads.indexOf("Object requests")], "4");
  assert.equal(cells[heads.indexOf("Object bytes")], "64.0 KiB");
  assert.equal(cells[0], "step 3");
});
