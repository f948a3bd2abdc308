// Charts built from DOM elements (bars are divs, labels are textContent).

import { el, clear } from "../lib/dom.js";
import { fmtBytes, fmtInt, fmtNs } from "../lib/format.js";

const BIN_LABELS = {
  "0_100": "0–100 B", "100_1K": "100 B–1 KiB", "1K_10K": "1–10 KiB", "10K_100K": "10–100 KiB",
  "100K_1M": "100 KiB–1 MiB", "1M_4M": "1–4 MiB", "4M_10M": "4–10 MiB", "10M_100M": "10–100 MiB",
  "100M_1G": "100 MiB–1 GiB", "1G_PLUS": "≥ 1 GiB",
};

function bars(title, labels, values, cls, fmt = fmtInt) {
  const max = Math.max(1, ...values);
  return el("div", { class: `bars ${cls}` }, el("h4", { text: title }),
    labels.map((l, k) => el("div", { class: "bar-row" },
      el("span", { class: "bar-label", text: l }),
      el("span", { class: "bar-track" }, el("span", { class: "bar", style: { width: `${(100 * values[k]) / max}%` } })),
      el("span", { class: "bar-value", text: fmt(values[k]) }))));
}

export function renderHistograms(root, h) {
  clear(root);
  if (!h || h.source === "none") {
    root.appendChild(el("div", { class: "empty-state", text: "No access sizes: no I/O data in this capture." }));
    return;
  }
  const labels = h.bins.map((b) => BIN_LABELS[b] || b);
  root.appendChild(el("div", { class: "chart-note", text: h.source === "counters"
    ? `From Darshan POSIX_SIZE_* counters${h.path ? " of the selected file" : " (all files)"}.`
    : "No counter records: sizes binned from the traced calls." }));
  root.appendChild(el("div", { class: "hist-pair" },
    bars("Read sizes", labels, h.read, "read"), bars("Write sizes", labels, h.write, "write")));
  const p = h.pattern;
  const pat = [
    ["sequential reads", p.seq_reads, p.reads], ["consecutive reads", p.consec_reads, p.reads],
    ["sequential writes", p.seq_writes, p.writes], ["consecutive writes", p.consec_writes, p.writes],
  ];
  root.appendChild(el("div", { class: "bars pattern" }, el("h4", { text: "Access pattern" }),
    pat.map(([l, v, tot]) => el("div", { class: "bar-row" }, el("span", { class: "bar-label", text: l }),
      el("span", { class: "bar-track" }, el("span", { class: "bar", style: { width: `${tot ? (100 * v) / tot : 0}%` } })),
      el("span", { class: "bar-value", text: tot ? `${fmtInt(v)} / ${fmtInt(tot)}` : "–" })))));
  const ops = Object.entries(h.ops || {});
  if (ops.length) root.appendChild(bars("Traced calls per function", ops.map((o) => o[0]), ops.map((o) => o[1]), "ops"));
}

const STEP_HEADS = ["", "Duration", "Bytes read", "Bytes written", "Calls", "I/O time", "Waiting on input"];
const OBJECT_HEADS = ["Object requests", "Object bytes"];

// The steps table's headings and one step's cells (text): the object columns only where the
// view has object requests (/steps gives object_requests and object_bytes then).
export function stepHeads(s) {
  return hasObjectSteps(s) ? [...STEP_HEADS, ...OBJECT_HEADS, ""] : [...STEP_HEADS, ""];
}

export function hasObjectSteps(s) {
  return !!s && (s.steps || []).some((x) => x.object_requests !== undefined);
}

export function stepCells(st, hasSteps, objects) {
  const cells = [hasSteps ? `step ${st.name}` : st.name, fmtNs(st.end - st.start), fmtBytes(st.bytes_read),
    fmtBytes(st.bytes_written), fmtInt(st.calls), fmtNs(st.io_time_ns), `${st.input_wait_pct.toFixed(1)} %`];
  if (objects) cells.push(fmtInt(st.object_requests || 0), fmtBytes(st.object_bytes || 0));
  return cells;
}

export function renderSteps(root, s, onPick) {
  clear(root);
  if (!s) return;
  if (!s.has_steps) root.appendChild(el("div", { class: "notice", text: s.message }));
  else root.appendChild(el("div", { class: "chart-note", text: `Steps from ${s.source}.` }));
  const objects = hasObjectSteps(s);
  const maxB = Math.max(1, ...s.steps.map((x) => x.bytes_read + x.bytes_written));
  const table = el("table", { class: "steps-table" },
    el("thead", {}, el("tr", {}, stepHeads(s).map((h) => el("th", { text: h })))));
  const tb = el("tbody");
  for (const st of s.steps) {
    const b = st.bytes_read + st.bytes_written;
    tb.appendChild(el("tr", { onclick: () => onPick && onPick(st), title: "Click to show this step in the timeline" },
      ...stepCells(st, s.has_steps, objects).map((t) => el("td", { text: t })),
      el("td", { class: "bar-cell" }, el("span", { class: "bar-track" },
        el("span", { class: "bar", style: { width: `${(100 * b) / maxB}%` } })))));
  }
  table.appendChild(tb);
  root.appendChild(table);
}

export function renderTopFiles(root, files, onSelect, selected) {
  clear(root);
  if (!files || !files.rows) {
    root.appendChild(el("div", { class: "empty-state", text: "No files." }));
    return;
  }
  const tot = [];
  for (let i = 0; i < files.rows; i++) {
    tot.push([(files.columns.bytes_read[i] || 0) + (files.columns.bytes_written[i] || 0), i]);
  }
  tot.sort((a, b) => b[0] - a[0]);
  const top = tot.slice(0, 10);
  const max = Math.max(1, ...top.map((t) => t[0]));
  root.appendChild(el("div", { class: "bars top-files" }, top.map(([v, i]) =>
    el("div", { class: `bar-row clickable${files.path[i] === selected ? " selected" : ""}`, title: files.path[i],
                onclick: () => onSelect(files.path[i] === selected ? null : files.path[i]) },
      el("span", { class: "bar-label path", text: `${files.path[i]} (${files.module[i]})` }),
      el("span", { class: "bar-track" }, el("span", { class: "bar", style: { width: `${(100 * v) / max}%` } })),
      el("span", { class: "bar-value", text: fmtBytes(v) })))));
}
