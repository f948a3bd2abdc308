// "Checkpoints": every save and load of the view's hosts, and, for a save made by several
// ranks (hosts) at once, a table with every rank's bytes, bandwidth, start and finish (from
// the save's start), the straggler marked (/checkpoints; docs/checkpoints.md).

import { el, clear } from "../lib/dom.js";
import { fmtBytes, fmtInt, fmtNs } from "../lib/format.js";

/** The rows of one save's table, ranks in order: times from the save's start, the last to
 * finish and the straggler flagged. Pure. */
export function saveRows(save) {
  const last = Math.max(...save.ranks.map((r) => r.finish));
  return save.ranks.map((r) => ({
    rank: r.rank === null || r.rank === undefined ? "–" : String(r.rank),
    host: r.host,
    bytes: r.bytes,
    mibs: r.bandwidth_mib_s,
    start: r.start - save.start,
    finish: r.finish - save.start,
    last: r.finish === last,
    straggler: save.straggler === r.host,
    fs: r.mount_point ? `${r.mount_point} (${r.fs_type})` : "",
  }));
}

function phaseTable(phases, onRange) {
  const head = el("tr", {}, ["host", "kind", "start", "duration", "files", "bytes", "blocked", "background", "path"]
    .map((h) => el("th", { text: h })));
  const body = phases.map((p) => el("tr", { class: "ck-row", onclick: onRange ? () => onRange(p.start, p.end) : undefined,
                                            title: `${p.source}: click to show it in the timeline` },
    el("td", { text: p.rank !== null && p.rank !== undefined ? `${p.host} (rank ${p.rank})` : p.host }),
    el("td", { text: p.kind }), el("td", { text: fmtNs(p.start) }), el("td", { text: fmtNs(p.end - p.start) }),
    el("td", { class: "num", text: fmtInt(p.files) }), el("td", { class: "num", text: fmtBytes(p.bytes) }),
    el("td", { class: "num", text: fmtNs(p.blocking_ns) }), el("td", { class: "num", text: fmtNs(p.background_ns) }),
    el("td", { class: "path", text: p.path })));
  return el("table", { class: "ck-table" }, el("thead", {}, head), el("tbody", {}, body));
}

function saveTable(save, n, onRange) {
  const rows = saveRows(save);
  const title = `Save ${n + 1} at ${fmtNs(save.start)}: ${rows.length} ranks, ${fmtNs(save.end - save.start)}`
    + (save.straggler ? ` · straggler ${save.straggler}, ${fmtNs(save.lag_ns)} after the others` : "");
  const head = el("tr", {}, ["rank", "host", "bytes", "MiB/s", "start", "finish", "file system"].map((h) => el("th", { text: h })));
  const body = rows.map((r) => el("tr", { class: r.straggler ? "ck-straggler" : "" },
    el("td", { text: r.rank }), el("td", { text: r.host }), el("td", { class: "num", text: fmtBytes(r.bytes) }),
    el("td", { class: "num", text: r.mibs.toFixed(0) }), el("td", { class: "num", text: fmtNs(r.start) }),
    el("td", { class: "num", text: fmtNs(r.finish) + (r.last ? " (last)" : "") }), el("td", { text: r.fs })));
  return el("div", { class: "ck-save" },
    el("div", { class: "ck-title", text: title, onclick: onRange ? () => onRange(save.start, save.end) : undefined }),
    el("table", { class: "ck-table" }, el("thead", {}, head), el("tbody", {}, body)));
}

/** Fill `root` with the checkpoints answer; `onRange(a, b)` zooms the timeline. */
export function renderCheckpoints(root, answer, onRange) {
  clear(root);
  if (!answer || answer.error) {
    root.appendChild(el("div", { class: "empty-state", text: answer ? answer.error : "" }));
    return;
  }
  if (!answer.phases.length) {
    root.appendChild(el("div", { class: "empty-state", text: answer.message }));
    return;
  }
  if (answer.straggler) root.appendChild(el("div", { class: "notice ck-finding", text: answer.straggler.statement }));
  answer.saves.filter((s) => s.ranks.length > 1).forEach((s, n) => root.appendChild(saveTable(s, n, onRange)));
  root.appendChild(phaseTable(answer.phases, onRange));
}
