// lib/format.js: what people read in the tab.
import { test } from "node:test";
import assert from "node:assert/strict";
import { fmtBytes, fmtInt, fmtNs, fmtPct, fmtRate, fmtRateShort, fmtSeconds, fmtTick, fmtValue } from "../../plugin_frontend/lib/format.js";

test("bytes use binary units with three significant digits", () => {
  assert.equal(fmtBytes(0), "0 B");
  assert.equal(fmtBytes(1023), "1023 B");
  assert.equal(fmtBytes(1024), "1.00 KiB");
  assert.equal(fmtBytes(1536), "1.50 KiB");
  assert.equal(fmtBytes(50 * 1024), "50.0 KiB");
  assert.equal(fmtBytes(500 * 1024), "500 KiB");
  assert.equal(fmtBytes(3 * 2 ** 30), "3.00 GiB");
  assert.equal(fmtBytes(-2048), "-2.00 KiB");
  assert.equal(fmtBytes(2 ** 60), "1024 PiB");  // no unit past PiB
});

test("missing values show a dash, not NaN", () => {
  for (const f of [fmtBytes, fmtRate, fmtRateShort, fmtNs, fmtSeconds, fmtInt, fmtPct]) {
    assert.equal(f(null), "–");
    assert.equal(f(undefined), "–");
    assert.equal(f(NaN), "–");
  }
});

test("durations pick ns, µs, ms or s", () => {
  assert.equal(fmtNs(999), "999 ns");
  assert.equal(fmtNs(1500), "1.50 µs");
  assert.equal(fmtNs(25_000), "25.0 µs");
  assert.equal(fmtNs(2_500_000), "2.50 ms");
  assert.equal(fmtNs(1.5e9), "1.500 s");
  assert.equal(fmtSeconds(0.002), "2.00 ms");
});

test("rates, counts and shares", () => {
  assert.equal(fmtRate(2048), "2.00 KiB/s");
  assert.equal(fmtRateShort(3 * 1024 * 1024), "3.0 MiB/s");
  assert.equal(fmtRateShort(100), "100.0 B/s");
  assert.equal(fmtInt(1234567.4), "1,234,567");
  assert.equal(fmtPct(12.345), "12.3 %");
});

test("tick labels are whole numbers in the largest unit the tick step reaches", () => {
  assert.equal(fmtTick(2e9, 1e9), "2 s");
  assert.equal(fmtTick(1.5e9, 5e8), "1500 ms");
  assert.equal(fmtTick(3e6, 1e6), "3 ms");
  assert.equal(fmtTick(1.25e6, 5e4), "1250 µs");
  assert.equal(fmtTick(2000, 1000), "2 µs");
  assert.equal(fmtTick(40, 20), "40 ns");
});

test("evidence values: float noise cut to four significant digits, the rest as it is", () => {
  assert.equal(fmtValue(0.000021850000000000003), "0.00002185");
  assert.equal(fmtValue(0.1 + 0.2), "0.3");
  assert.equal(fmtValue(1234.5678), "1235");
  assert.equal(fmtValue(4096), "4096");
  assert.equal(fmtValue("a/b.txt"), "a/b.txt");
  assert.equal(fmtValue([1, 2]), "[1,2]");
  assert.equal(fmtValue(null), "null");
});
