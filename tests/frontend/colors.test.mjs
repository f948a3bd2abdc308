// lib/colors.js
import { test } from "node:test";
import assert from "node:assert/strict";
import { COLORS, hashColor, ioColor } from "../../plugin_frontend/lib/colors.js";

test("I/O calls are coloured by kind, errors first", () => {
  assert.equal(ioColor("pread64", 0), COLORS.read);
  assert.equal(ioColor("fread", 0), COLORS.read);
  assert.equal(ioColor("pwrite", 0), COLORS.write);
  assert.equal(ioColor("fsync", 0), COLORS.write);
  assert.equal(ioColor("openat", 0), COLORS.meta);
  assert.equal(ioColor("read", 5), COLORS.error);
});

test("name colours are stable HSL values", () => {
  const a = hashColor("Conv2D");
  assert.equal(a, hashColor("Conv2D"));
  assert.notEqual(a, hashColor("MatMul"));
  const m = /^hsl\((\d+), 55%, 62%\)$/.exec(a);
  assert.ok(m && Number(m[1]) < 360, a);
  assert.equal(hashColor("", 10, 20), `hsl(${2166136261 % 360}, 10%, 20%)`);
});
