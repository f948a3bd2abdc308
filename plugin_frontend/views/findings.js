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

// "All hosts" findings come in as a background child analyses the hosts: while an answer
// says some are `pending`, the tab asks again after these delays (the last one repeated; the
// server itself holds each request up to a few seconds for news).
export const FINDINGS_POLL_MS = [500, 1000, 2000, 4000];
export const FINDINGS_MAX_POLLS = 150;

/**
 * Ask for the findings until none is pending. `load()` -> a /findings answer (or {error});
 * `show(answer)` after each one; `current()` false stops it (another capture was picked);
 * `first`: an answer already shown (the next ask waits the first delay). Returns the last
 * answer, or null when stopped.
 */
export async function pollFindings(load, show, current, {
  first = null, delays = FINDINGS_POLL_MS, maxPolls = FINDINGS_MAX_POLLS,
  sleep = (ms) => new Promise((r) => setTimeout(r, ms)),
} = {}) {
  let f = first;
  for (let k = 0; ; k++) {
    if (f === null) {
      f = await load();
      if (!current()) return null;
      show(f);
    }
    if (!f || f.error || !(f.pending > 0) || k >= maxPolls) return f;
    await sleep(delays[Math.min(k, delays.length - 1)]);
    if (!current()) return null;
    f = null;
  }
}

/** The progress line of an answer with hosts still being analysed: {done, total, text} or null. */
export function findingsProgress(f) {
  const pending = (f && f.pending) || 0;
  if (!(pending > 0)) return null;
  const total = f.hosts > 0 ? f.hosts : null;
  const done = total === null ? null : total - pending;
  return { done, total, text: total === null ? `Analysing ${pending} more hosts…` : `Analysing hosts: ${done} of ${total} done…` };
}

export function renderFindings(root, f, { onFile, onRange } = {}) {
  clear(root);
  const progress = findingsProgress(f);
  if (progress) {
    root.appendChild(el("div", { class: "findings-progress", role: "status" },
      progress.total === null ? null : el("progress", { max: String(progress.total), value: String(progress.done) }),
      el("span", { text: ` ${progress.text}` })));
  }
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
