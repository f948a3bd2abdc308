// The pure parts of views/windows.js: a job's profile windows as table cells, and the input
// wait's trend over them.
import { test } from "node:test";
import assert from "node:assert/strict";
import { fmtStart, takenBy, waitTrend, windowRows, WINDOW_COLUMNS } from "../../plugin_frontend/views/windows.js";

const windows = [
  { n: 1, run: "job/a", start_ns: 1795704837764876388, duration_ns: 500e6, steps: 20, input_wait_share: 0.05,
    bytes_read: 2048, io_calls: 12, read_time_s: 0.002 },
  { n: 2, run: "job/b", start_ns: 1795708437764876388, duration_ns: 510e6, steps: 19, input_wait_share: 0.4,
    bytes_read: 1048576, io_calls: 300, read_time_s: 0.25 },
  { n: 3, run: "job/c", start_ns: null, duration_ns: null, steps: 0, input_wait_share: null,
    bytes_read: 0, io_calls: 0, read_time_s: 0 },
];

test("start times are UTC to the second; unknown is a dash", () => {
  assert.equal(fmtStart(1795704837764876388), "2026-11-26 14:53:57");
  assert.equal(fmtStart(null), "–");
});

test("one row per window in the answer's order, one cell per column", () => {
  const rows = windowRows(windows);
  assert.deepEqual(rows.map((r) => r.run), ["job/a", "job/b", "job/c"]);
  assert.ok(rows.every((r) => r.cells.length === WINDOW_COLUMNS.length));
  assert.deepEqual(rows[0].cells.slice(0, 5), ["1", "2026-11-26 14:53:57", "500.0 ms", "20", "5.0 %"]);
  assert.equal(rows[1].cells[4], "40.0 %");
  assert.deepEqual(rows.map((r) => r.cells[r.cells.length - 1]), ["job/a", "job/b", "job/c"]);
  // who took each window: tb-iotrace run or attach (its row says so), else the job itself
  const taken = windowRows([{ ...windows[0], taken_by: "tb-iotrace attach at 2026-11-28 04:28:14 (pid 7)" }, windows[1]]);
  assert.deepEqual(taken.map((r) => r.cells[r.cells.length - 2]),
                   ["tb-iotrace attach at 2026-11-28 04:28:14 (pid 7)", "the job"]);
  assert.deepEqual(rows[2].cells.slice(1, 5), ["–", "–", "0", "–"]);
});

test("PyTorch traces are windows too: their kind, and who took them (run, attach or the job's torch.profiler)", () => {
  const torch = [
    { n: 1, run: "pytorch/2026_11_28_04_00_00_7_1", kind: "kineto", start_ns: 1795704837764876388, duration_ns: 2e9,
      steps: 30, input_wait_share: 0.6, bytes_read: 4096, io_calls: 64, read_time_s: 0.01,
      taken_by: "tb-iotrace run --profile-every at 2026-11-26 14:53:57 (pid 7)" },
    { n: 2, run: "pytorch/2026_11_28_04_10_00_7_1", kind: "kineto", start_ns: 1795705437764876388, duration_ns: 2e9,
      steps: 31, input_wait_share: 0.1, bytes_read: 4096, io_calls: 64, read_time_s: 0.01,
      taken_by: "tb-iotrace attach at 2026-11-26 15:03:57 (pid 7)" },
    { n: 3, run: "traces", kind: "kineto", start_ns: 1795706037764876388, duration_ns: 1e9, steps: 5,
      input_wait_share: null, bytes_read: 0, io_calls: 0, read_time_s: 0 },
    { ...windows[0], n: 4, kind: "profile" },
  ];
  const col = (name) => WINDOW_COLUMNS.indexOf(name);
  const rows = windowRows(torch);
  assert.deepEqual(rows.map((r) => r.cells[col("Profile")]), ["PyTorch", "PyTorch", "PyTorch", "TF/JAX"]);
  assert.deepEqual(rows.map((r) => r.cells[col("Taken by")]),
                   ["tb-iotrace run --profile-every at 2026-11-26 14:53:57 (pid 7)",
                    "tb-iotrace attach at 2026-11-26 15:03:57 (pid 7)", "the job (its torch.profiler)", "the job"]);
  assert.deepEqual(rows.map((r) => r.cells[col("Input wait")]), ["60.0 %", "10.0 %", "–", "5.0 %"]);
  assert.deepEqual(rows.map((r) => r.cells[col("Start (UTC)")]).slice(0, 2), ["2026-11-26 14:53:57", "2026-11-26 15:03:57"]);
  assert.equal(takenBy({ kind: "kineto" }), "the job (its torch.profiler)");
  assert.equal(takenBy({}), "the job");
  assert.equal(waitTrend(torch), "Input wait share 60.0 % in window 1, 5.0 % in window 4; most in window 1 (60.0 %).");
});

test("the trend names the first and last windows with a share, and the worst", () => {
  assert.equal(waitTrend(windows), "Input wait share 5.0 % in window 1, 40.0 % in window 2; most in window 2 (40.0 %).");
  assert.equal(waitTrend(windows.slice(0, 1)), "");
  assert.equal(waitTrend([]), "");
});
