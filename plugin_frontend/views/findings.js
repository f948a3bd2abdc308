// The findings panel: what the backend's analysis reports, with its evidence. Accepts the
// shape of tb_iotrace.analysis findings ({id, severity, title, statement, suggestion,
// evidence: {name: value}, files: [path], ops}) and a list-of-evidence variant
// ({detail, evidence: [{kind: "file"|"range"|"event", path?, start?, end?, label}]}).
// Everything is rendered as text.

import { el, clear } from "../lib/dom.js";
import { fmtNs } from "../lib/format.js";

function evidenceItems(item, onFile, onRange) {
  const out = [];
  const ev = item.evidence;
  if (Array.isArray(ev)) {
    for (const e of ev) {
      const label = e.label || e.path || (e.start !== undefined ? `${fmtNs(e.start)}–${fmtNs(e.end)}` : e.kind);
      const act = e.kind === "file" && onFile ? () => onFile(e.path)
        : (e.kind === "range" || e.kind === "event") && onRange && e.start !== undefined
          ? () => onRange(e.start, e.end ?? e.start + 1) : null;
      out.push(act ? el("button", { class: "link", onclick: act, text: label }) : el("span", { text: label }));
    }
  } else if (ev && typeof ev === "object") {
    for (const [k, v] of Object.entries(ev)) {
      out.push(el("span", { text: `${k}: ${typeof v === "object" ? JSON.stringify(v) : v}` }));
    }
  }
  for (const f of item.files || []) {
    out.push(onFile ? el("button", { class: "link path", onclick: () => onFile(f), text: f }) : el("span", { class: "path", text: f }));
  }
  return out;
}

export function renderFindings(root, f, { onFile, onRange } = {}) {
  clear(root);
  const list = (f && f.findings) || [];
  // the analysis's notes (what it could not see: no step markers, a partial record...)
  for (const note of (f && f.notes) || []) {
    root.appendChild(el("div", { class: "finding-note", text: String(note) }));
  }
  if (!list.length) {
    root.appendChild(el("div", { class: "empty-state", text: (f && f.message) || "No findings." }));
    return;
  }
  for (const item of list) {
    const ev = evidenceItems(item, onFile, onRange);
    root.appendChild(el("div", { class: `finding ${item.severity || "info"}`, dataset: { id: item.id || "" } },
      el("div", { class: "finding-head" }, el("span", { class: "sev", text: item.severity || "info" }),
        el("span", { class: "finding-title", text: item.title || item.id || "" })),
      item.statement || item.detail ? el("p", { text: item.statement || item.detail }) : null,
      item.suggestion ? el("p", { class: "suggestion", text: item.suggestion }) : null,
      ev.length ? el("ul", { class: "evidence" }, ev.map((x) => el("li", {}, x))) : null));
  }
}
