// The details panel of one clicked event (the /event answer) and the process notes of
// whole-run records. Everything is rendered as text.

import { el, clear } from "../lib/dom.js";
import { fmtBytes, fmtInt, fmtNs } from "../lib/format.js";

export function renderDetailsMessage(root, text, cls = "muted") {
  clear(root);
  root.appendChild(el("div", { class: cls, text }));
}

/**
 * @param ev the /event answer
 * @param opts {showHostOp: bool (a profile, not a whole-run record), onHighlight(path)}
 */
export function renderEvent(root, ev, { showHostOp = true, onHighlight } = {}) {
  clear(root);
  const rows = [];
  const add = (k, v, cls) => rows.push(el("dt", { text: k }), el("dd", { class: cls || "", text: v }));
  root.appendChild(el("h3", { class: "ev-name", text: ev.name || "(unnamed)" }));
  add("Lane", ev.lane_name);
  add("Start", fmtNs(ev.start));
  add("Duration", fmtNs(ev.dur));
  if (ev.group === "io") {
    add("Call", ev.call);
    add("File", ev.file || "(none)", "path ev-file");
    if (ev.offset >= 0) add("Offset", fmtInt(ev.offset));
    add("Bytes", ev.bytes >= 0 ? `${fmtInt(ev.bytes)} (${fmtBytes(ev.bytes)})` : `${ev.bytes} (failed)`, "ev-bytes");
    if (ev.bytes_requested) add("Requested", fmtInt(ev.bytes_requested));
    add("errno", ev.errno ? String(ev.errno) : "0 (success)");
    if (ev.fd >= 0) add("fd", String(ev.fd));
    add("Thread", `${ev.host_thread || ev.thread || "?"} (tid ${ev.tid})`);
    if (showHostOp) {
      add("TF op", ev.host_op ? `${ev.host_op.name} (${fmtNs(ev.host_op.dur)})` : "none found on this thread");
    }
  } else if (ev.group === "object") {
    add("Request", ev.call);
    add("Object", ev.object, "path ev-object");
    if (ev.range) add("Range", ev.range);
    add("Bytes", `${fmtInt(ev.bytes)} (${fmtBytes(ev.bytes)})`, "ev-bytes");
    add("Status", ev.error ? `${ev.status} (${ev.error})` : String(ev.status));
    if (ev.first_byte_ns !== null && ev.first_byte_ns !== undefined) add("First byte", fmtNs(ev.first_byte_ns));
    add("Client", ev.client);
    add("Thread", `${ev.host_thread || "?"} (pid ${ev.pid}, tid ${ev.tid})`);
    if (showHostOp) add("Host op", ev.host_op ? `${ev.host_op.name} (${fmtNs(ev.host_op.dur)})` : "none found on this thread");
  } else {
    for (const [k, v] of Object.entries(ev.stats || {})) add(k, String(v));
  }
  add("Step", ev.step ? `step ${ev.step.name}` : "–");
  root.appendChild(el("dl", { class: "ev-fields" }, rows));
  if (ev.group === "io" && ev.file && onHighlight) {
    root.appendChild(el("button", { class: "tl-btn", onclick: () => onHighlight(ev.file) }, "Highlight this file"));
  }
  root.dataset.lane = ev.lane;
  root.dataset.index = String(ev.index);
}

/** Whole-run records: which process each host is and how it ended. */
export function renderProcesses(root, procs) {
  clear(root);
  root.hidden = !procs.length;
  for (const p of procs) {
    const ex = p.exit || {};
    const how = ex.how === "flush" ? "did not finish (last periodic flush)"
      : ex.signal ? `ended by signal ${ex.signal}`
      : ex.exception ? `ended by ${ex.exception}`
      : ex.how ? `exited${ex.code !== null && ex.code !== undefined ? ` with code ${ex.code}` : ""}` : "";
    const dur = p.end_ns && p.start_ns ? ` · ${fmtNs(p.end_ns - p.start_ns)} recorded` : "";
    const argv = Array.isArray(p.argv) ? p.argv.map(String).join(" ") : String(p.argv ?? "");
    root.appendChild(el("div", { class: "proc" },
      el("b", { text: `${p.host}: ` }), el("span", { text: `process ${p.pid} (parent ${p.ppid}) ` }),
      el("code", { class: "argv", text: argv || "?" }), el("span", { text: ` · ${how}${dur}` })));
  }
}
