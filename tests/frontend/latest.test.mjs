// lib/latest.js and timeline/loader.js: only the newest answer is used (D12 and the timeline).
import { test } from "node:test";
import assert from "node:assert/strict";
import { Latest } from "../../plugin_frontend/lib/latest.js";
import { BW_DELAY_MS, Loader } from "../../plugin_frontend/timeline/loader.js";

test("begin() aborts the request before and makes it stale", () => {
  const l = new Latest();
  const a = l.begin();
  assert.ok(a.current() && !a.signal.aborted);
  const b = l.begin();
  assert.ok(a.signal.aborted && !a.current());
  assert.ok(b.current() && !b.signal.aborted);
  l.cancel();
  assert.ok(b.signal.aborted && !b.current());
});

/** A promise and its resolve/reject, to answer requests in any order. */
function deferred() {
  let resolve;
  let reject;
  const promise = new Promise((ok, bad) => { resolve = ok; reject = bad; });
  return { promise, resolve, reject };
}

function loaderWith(overrides = {}) {
  const calls = [];
  const painted = [];
  const errors = [];
  let view = 0;
  let wants = 0;
  const loader = new Loader({
    want: () => { wants++; return { scale: { width: 300, view }, lanes: ["a"], started: 0 }; },
    scale: () => ({ width: 300, view }),
    load: (scale, lanes, signal) => {
      const d = deferred();
      calls.push({ scale, lanes, signal, ...d });
      signal.addEventListener("abort", () => d.reject(Object.assign(new Error("aborted"), { name: "AbortError" })));
      return d.promise;
    },
    onStart: () => {},
    onData: (data) => painted.push(data),
    onError: (e) => errors.push(e),
    onBandwidth: () => {},
    ...overrides,
  });
  return { loader, calls, painted, errors, setView: (v) => { view = v; }, wants: () => wants };
}

test("a slow older timeline answer is never painted over a newer one", async () => {
  const { loader, calls, painted, errors, setView } = loaderWith();
  const first = loader.fetchNow();
  setView(1);
  const second = loader.fetchNow();
  assert.equal(calls.length, 2);
  assert.ok(calls[0].signal.aborted, "the older request is aborted");
  calls[1].resolve("new");
  calls[0].resolve("old");  // too late: already rejected by the abort
  await Promise.all([first, second]);
  assert.deepEqual(painted, ["new"]);
  assert.deepEqual(errors, []);
  assert.equal(calls[1].scale.view, 1);
  loader.stop();
});

test("an answer that is not the newest is dropped even when the request ignores its signal", async () => {
  const pending = [];
  const { loader, painted } = loaderWith({ load: () => { const d = deferred(); pending.push(d); return d.promise; } });
  const a = loader.fetchNow();
  const b = loader.fetchNow();
  pending[1].resolve("newer");
  await b;
  pending[0].resolve("older");
  await a;
  assert.deepEqual(painted, ["newer"]);
  loader.stop();
});

test("errors of the newest request are reported, of stale ones not", async () => {
  const pending = [];
  const { loader, errors } = loaderWith({ load: () => { const d = deferred(); pending.push(d); return d.promise; } });
  const a = loader.fetchNow();
  const b = loader.fetchNow();
  pending[0].reject(new Error("old failure"));
  pending[1].reject(new Error("new failure"));
  await Promise.all([a, b]);
  assert.deepEqual(errors.map((e) => e.message), ["new failure"]);
  loader.stop();
});

test("continuous input is coalesced into one request", async () => {
  const { loader, calls } = loaderWith();
  for (let k = 0; k < 5; k++) loader.request(false);
  assert.equal(calls.length, 0);
  await new Promise((ok) => setTimeout(ok, 60));
  assert.equal(calls.length, 1);
  loader.request(true);
  assert.equal(calls.length, 2);
  loader.stop();
});

test("the bandwidth strip is asked for once the view settles", async () => {
  const asked = [];
  const { loader, calls, wants } = loaderWith({ loadBandwidth: (scale, bins) => { asked.push(bins); return Promise.resolve({}); } });
  const f = loader.fetchNow();
  calls[0].resolve("data");
  await f;
  loader.viewChanged();  // a zoom right after the paint postpones it
  await new Promise((ok) => setTimeout(ok, BW_DELAY_MS + 50));
  assert.deepEqual(asked, []);
  loader.bandwidthSoon();
  await new Promise((ok) => setTimeout(ok, BW_DELAY_MS + 50));
  assert.deepEqual(asked, [100]);  // width / 3
  // it reads the window only: want() (which records the lanes of a timeline request) is not called
  assert.equal(wants(), 1);
  loader.stop();
});
