// "Object storage": per host, the S3/GCS/HTTP requests and the objects with most bytes, their
// requests, GETs, ranged GETs, bytes, bytes fetched again, first-byte time and most in flight
// at once (/objects; docs/objects.md).

import { el, clear } from "../lib/dom.js";
import { fmtBytes, fmtInt } from "../lib/format.js";

/** One host's totals as a line. Pure. */
export function objectsLine(h) {
  const ops = Object.entries(h.ops || {}).map(([k, v]) => `${k} ${v}`).join(", ");
  let line = `${h.host}: ${fmtInt(h.requests)} requests (${ops}), ${fmtBytes(h.bytes_read)} read, `
    + `${fmtInt(h.ranged_gets)} ranged GETs, at most ${h.max_concurrency} in flight`;
  if (h.first_byte_ms_mean !== null && h.first_byte_ms_mean !== undefined) {
    line += `, first byte ${h.first_byte_ms_mean.toFixed(1)} ms on average`;
  }
  if (h.errors) line += `, ${h.errors} errors (${h.throttled} throttled)`;
  return line;
}

/** The rows of one host's objects table. Pure. */
export function objectRows(h) {
  return (h.objects || []).map((o) => ({
    object: o.object,
    requests: o.counters.OBJ_REQUESTS,
    gets: o.counters.OBJ_GETS,
    ranged: o.counters.OBJ_RANGED_GETS,
    bytes: o.counters.OBJ_BYTES_READ,
    again: o.counters.OBJ_REFETCHED_BYTES,
    firstMs: 1e3 * o.fcounters.OBJ_F_FIRST_BYTE_MEAN,
    atOnce: o.counters.OBJ_MAX_CONCURRENCY,
  }));
}

/** Fill `root` with the /objects answer; returns whether there was anything to show. */
export function renderObjects(root, answer) {
  clear(root);
  if (!answer || answer.error) {
    root.appendChild(el("div", { class: "empty-state", text: answer ? answer.error : "" }));
    return Boolean(answer && answer.error);
  }
  for (const h of answer.hosts) {
    root.appendChild(el("div", { class: "obj-line", text: objectsLine(h) }));
    const head = el("tr", {}, ["object", "requests", "GETs", "ranged", "bytes read", "fetched again", "1st byte",
      "max at once"].map((t) => el("th", { text: t })));
    const body = objectRows(h).map((r) => el("tr", {},
      el("td", { class: "path", text: r.object }), el("td", { class: "num", text: fmtInt(r.requests) }),
      el("td", { class: "num", text: fmtInt(r.gets) }), el("td", { class: "num", text: fmtInt(r.ranged) }),
      el("td", { class: "num", text: fmtBytes(r.bytes) }), el("td", { class: "num", text: fmtBytes(r.again) }),
      el("td", { class: "num", text: `${r.firstMs.toFixed(1)} ms` }), el("td", { class: "num", text: String(r.atOnce) })));
    root.appendChild(el("table", { class: "ck-table obj-table" }, el("thead", {}, head), el("tbody", {}, body)));
    if (h.objects_left_out) root.appendChild(el("div", { class: "notice", text: `${h.objects_left_out} more objects (tb-iotrace report --json has them all)` }));
  }
  for (const e of answer.errors || []) root.appendChild(el("div", { class: "notice", text: e }));
  return answer.hosts.length > 0 || (answer.errors || []).length > 0;
}
