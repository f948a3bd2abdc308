// views/codefiles.js: the files table and top files keep data files unless asked for all.
import { test } from "node:test";
import assert from "node:assert/strict";
import { codeLine, dataFiles } from "../../plugin_frontend/views/codefiles.js";

const files = {
  rows: 3, path: ["/env/site-packages/a.pyc", "/data/x.bin", "/env/lib/b.so"], module: ["POSIX", "POSIX", "POSIX"],
  host: ["h", "h", "h"], code: [true, false, true], values: [[1], [2], [3]], counters: ["N"], message: "",
  columns: { bytes_read: [100, 5, 7], read_time: [0.5, 0.25, 0.125] },
  code_loading: { files: 2, bytes_read: 107, bytes_written: 0, time_s: 0.625 },
};

test("data files only, every column and row array cut alike", () => {
  const d = dataFiles(files);
  assert.equal(d.rows, 1);
  assert.deepEqual(d.path, ["/data/x.bin"]);
  assert.deepEqual(d.values, [[2]]);
  assert.deepEqual(d.columns, { bytes_read: [5], read_time: [0.25] });
  assert.deepEqual(d.code, [false]);
  assert.equal(dataFiles(files, true), files);                       // the toggle: everything
  const older = { ...files, code: undefined };                         // an answer without the marks
  assert.equal(dataFiles(older), older);
});

test("only code: an empty table that says why; the one line sums the code rows", () => {
  const only = dataFiles({ ...files, code: [true, true, true] });
  assert.equal(only.rows, 0);
  assert.match(only.message, /Only code loading/);
  assert.equal(codeLine(files), "Code loading (Python imports, shared libraries, interpreter, framework config): " +
                                "2 files, 107 B read, 0.625 s in calls");
  assert.equal(codeLine({ ...files, code_loading: { files: 0 } }), "");
});
