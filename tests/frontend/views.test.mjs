// The pure parts of views/hosts.js and timeline/tooltip.js.
import { test } from "node:test";
import assert from "node:assert/strict";
import { slowestHost, sortHosts } from "../../plugin_frontend/views/hosts.js";
import { itemLines } from "../../plugin_frontend/timeline/tooltip.js";
import { decodeTimeline } from "../../plugin_frontend/timeline/tracks.js";

const hosts = [
  { host: "w0", input_wait_ns: 5, read_time_s: 1.0, bytes_read: 10 },
  { host: "w1", input_wait_ns: 90, read_time_s: 0.5, bytes_read: 30 },
  { host: "w2", input_wait_ns: 5, read_time_s: 2.0, bytes_read: null },
];

test("hosts sort by any column, missing values last, ties in host order", () => {
  assert.deepEqual(sortHosts(hosts, "input_wait_ns", -1).map((h) => h.host), ["w1", "w0", "w2"]);
  assert.deepEqual(sortHosts(hosts, "input_wait_ns", 1).map((h) => h.host), ["w0", "w2", "w1"]);
  assert.deepEqual(sortHosts(hosts, "bytes_read", -1).map((h) => h.host), ["w1", "w0", "w2"]);
  assert.deepEqual(sortHosts(hosts, "host", -1).map((h) => h.host), ["w2", "w1", "w0"]);
});

test("the host that stands out: most input wait, else longest read time, else none", () => {
  assert.equal(slowestHost(hosts), "w1");
  const noWait = hosts.map((h) => ({ ...h, input_wait_ns: 0 }));
  assert.equal(slowestHost(noWait), "w2");
  const same = hosts.map((h) => ({ ...h, input_wait_ns: 0, read_time_s: 1 }));
  assert.equal(slowestHost(same), null);
  assert.equal(slowestHost([]), null);
});

test("tooltip lines: name, time, bytes, file, errno, lane", () => {
  const data = decodeTimeline({
    start: 0, end: 1e6, width: 100, q: 1000,
    lanes: [{ key: "a", group: "io", name: "[w0] reader" }],
    names: ["pread64"], files: ["/data/x"],
    segments: { lane: [0], row: [0], length: [2], first: [0] },
    items: { start: [10, 10], dur: [2, 3], name: [0, 0], count: [1, 7], bytes: [4096, 0], file: [0, -1], err: [0, 5] },
  });
  assert.deepEqual(itemLines(data, 0), ["pread64", "2.00 µs at 10.0 µs", "4.00 KiB moved", "/data/x", "[w0] reader"]);
  assert.deepEqual(itemLines(data, 1), ["7 events (merged; click to zoom in)", "first: pread64", "3.00 µs at 20.0 µs",
                                        "errno 5", "[w0] reader"]);
});

test("whole-run series: columns are the max rate of their bins, calls summed, on the view clock", async () => {
  const { seriesColumns, seriesPeak } = await import("../../plugin_frontend/views/runseries.js");
  const s = { host: "h.1", start: 1000, bin_ns: 10, read_bps: [1, 5, 0, 2, 7], write_bps: [0, 0, 3, 0, 1],
              calls: [1, 2, 3, 4, 5] };
  assert.deepEqual(seriesColumns(s, 10).map((c) => c.read), [1, 5, 0, 2, 7]);
  const cols = seriesColumns(s, 2);
  assert.deepEqual(cols.map((c) => [c.start, c.end, c.read, c.write, c.calls]),
                   [[1000, 1030, 5, 3, 6], [1030, 1050, 7, 1, 9]]);
  assert.equal(seriesPeak([s, { ...s, read_bps: [9], write_bps: [0] }]), 9);
  assert.deepEqual(seriesColumns({ ...s, read_bps: [], write_bps: [], calls: [] }), []);
});
