// timeline/coords.js: time <-> x, zoom, pan, clamping, ticks.
import { test } from "node:test";
import assert from "node:assert/strict";
import { MIN_SPAN_NS, TimeScale } from "../../plugin_frontend/timeline/coords.js";

test("x and t are inverse linear maps", () => {
  const s = new TimeScale(1000, 3000, 200);
  assert.equal(s.span, 2000);
  assert.equal(s.nsPerPx, 10);
  assert.equal(s.x(2000), 100);
  assert.equal(s.t(50), 1500);
  for (const x of [0, 13.5, 200]) assert.equal(s.x(s.t(x)), x);
});

test("zoom keeps the time under the cursor; pan moves by pixels", () => {
  const s = new TimeScale(1000, 3000, 200);
  const z = s.zoom(0.5, 50);
  assert.equal(z.t(50), s.t(50));
  assert.equal(z.span, 1000);
  const p = s.pan(20);
  assert.deepEqual([p.t0, p.t1, p.width], [1200, 3200, 200]);
  assert.equal(s.zoom(1e-9).span, MIN_SPAN_NS);
});

test("the window is kept on the data", () => {
  const bounds = [0, 1000];
  // zooming out past the data shows the data with a 10% margin
  const out = new TimeScale(0, 1000, 100).zoom(100, 50, bounds);
  assert.deepEqual([out.t0, out.t1], [-100, 1100]);
  // panning far right stops with 10% of the window still on the data
  const far = new TimeScale(0, 100, 100).pan(1e6, bounds);
  assert.equal(far.span, 100);
  assert.ok(far.t0 <= 1000 - 10 && far.t1 > 1000, `${far.t0}..${far.t1}`);
  const left = new TimeScale(0, 100, 100).pan(-1e6, bounds);
  assert.ok(left.t1 >= 10 && left.t0 < 0, `${left.t0}..${left.t1}`);
});

test("ticks fall on a 1-2-5 grid about the target spacing apart", () => {
  const s = new TimeScale(0, 1e9, 1000);  // 1 ms per px
  const ticks = s.ticks(110);
  const step = ticks[1].t - ticks[0].t;
  assert.equal(step, 2e8);  // 110 ms raw -> 200 ms
  assert.equal(ticks[0].t, 0);
  assert.equal(ticks[0].label, "0 ms");
  assert.equal(ticks[3].label, "600 ms");
  assert.equal(ticks.at(-1).t, 1e9);
  for (const tk of ticks) assert.equal(tk.x, s.x(tk.t));
  assert.ok(new TimeScale(0, 1e12, 10).ticks(1).length <= 200);
});
