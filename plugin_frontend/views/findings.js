// The findings panel: each host's verdict on top, then what the backend's analysis reports,
// ordered by impact, with its evidence. Accepts the shape of tb_iotrace.analysis findings
// ({id, severity, title, statement, suggestion, impact: {step_share, ms_per_step},
// evidence: {name: value}, files: [path], ops}) and a list-of-evidence variant
// ({detail, evidence: [{kind: "file"|"range"|"event", path?, start?, end?, label}]}).
// Everything is rendered as text.

import { el, clear } from "../lib/dom.js";
import { fmtNs, fmtValue } from "../lib/format.js";

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
      out.push(el("span", { text: `${k}: ${fmtValue(v)}` }));
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

const BOUND_WORDS = { "input": "Input-bound", "partly input": "Partly input-bound", "not input": "Not input-bound",
  "unknown": "No verdict" };
const WAIT_PARTS = [["file_io", "file I/O"], ["object_io", "object I/O"], ["decode", "decode"], ["starved", "starved"], ["copy", "copy"],
  ["other", "other"]];
const pct = (x) => `${(100 * x).toFixed(x < 0.1 ? 1 : 0)}%`;

/**
 * The text of a host's verdict (tb_iotrace.analysis.verdict): {head, wait, unmeasured, advice}
 * (wait/unmeasured "" when there is nothing to say); `host`: name the host (several verdicts).
 * Pure, for the box and the tests.
 */
export function verdictLines(v, { host = true } = {}) {
  const share = v.input_wait_share;
  const waitsFor = v.waits_for && v.waits_for.label ? `Waits for ${v.waits_for.label}'s input (job verdict)` : "";
  let head = `${waitsFor || BOUND_WORDS[v.bound] || v.bound}${host && v.host ? ` (${v.host})` : ""}`;
  if (share !== null && share !== undefined) head += `: the step waits for input ${pct(share)} of its time`;
  if (v.collectives && v.collective_wait_share !== null && v.collective_wait_share !== undefined) {
    head += `, in collectives ${pct(v.collective_wait_share)}`;
  }
  const b = v.wait_breakdown || {};
  const parts = WAIT_PARTS.filter(([k]) => b[k] !== null && b[k] !== undefined && b[k] > 0)
    .map(([k, name]) => `${name} ${pct(b[k])}`);
  if ((v.unmeasured || []).length && v.unmeasured_share > 0) {
    parts.push(`${v.unmeasured.join(" or ")} (not measured) ${pct(v.unmeasured_share)}`);
  }
  return { head, wait: share ? `The wait: ${parts.join(", ")}` : "", unmeasured: share ? v.reason || "" : "",
    advice: v.advice || "" };
}

/**
 * The job verdict across the view's hosts as ranks (tb_iotrace.analysis.job_verdict):
 * {head, advice, bound} for the box on top of "All hosts"; null without one. Pure, for the tests.
 */
export function jobVerdictLines(jv) {
  if (!jv) return null;
  const steps = jv.matched_steps ? `, ${jv.matched_steps} steps matched by number` : ", no steps matched";
  let head = `Job (${jv.ranks} ranks${steps}): ${BOUND_WORDS[jv.bound] || jv.bound}`;
  if (jv.straggler) head += ` on ${jv.straggler.label}`;
  return { head, advice: jv.advice || "", bound: jv.bound || "unknown" };
}

/**
 * The findings answer to draw: its own job verdict, else the one "/hosts" made from the ranks'
 * stored facts (``hostsJob``: shown at once after a restart, while the hosts are analysed again).
 * Pure, for the tests.
 */
export function withHostsJob(findings, hostsJob) {
  if (!findings || findings.error || findings.job_verdict || !hostsJob) return findings;
  return { ...findings, job_verdict: hostsJob };
}

function renderJobVerdict(jv) {
  const t = jobVerdictLines(jv);
  return el("div", { class: `verdict job-verdict ${String(t.bound).replace(/ /g, "-")}`, role: "status" },
    el("div", { class: "verdict-head", text: t.head }),
    t.advice ? el("div", { class: "verdict-advice", text: t.advice }) : null);
}

function renderVerdict(v, host) {
  const t = verdictLines(v, { host });
  return el("div", { class: `verdict ${String(v.bound || "unknown").replace(/ /g, "-")}`, role: "status" },
    el("div", { class: "verdict-head", text: t.head }),
    t.wait ? el("div", { text: t.wait }) : null,
    t.unmeasured ? el("div", { class: "verdict-note", text: `Not measured: ${t.unmeasured}` }) : null,
    t.advice ? el("div", { class: "verdict-advice", text: t.advice }) : null);
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
  // the verdict of each host first: is the step waiting for input, on what, what to change
  const verdicts = (f && f.verdicts) || [];
  if (f && f.job_verdict) root.appendChild(renderJobVerdict(f.job_verdict));   // the ranks as one job, on top
  for (const v of verdicts) root.appendChild(renderVerdict(v, verdicts.length > 1));
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
      item.impact && item.impact.step_share !== null && item.impact.step_share !== undefined
        ? el("p", { class: "impact", text: `Impact: ${pct(item.impact.step_share)} of step time`
          + (item.impact.ms_per_step !== null && item.impact.ms_per_step !== undefined
            ? `, ${item.impact.ms_per_step.toFixed(3)} ms per step` : "") }) : null,
      item.suggestion ? el("p", { class: "suggestion", text: item.suggestion }) : null,
      ev.length ? el("ul", { class: "evidence" }, ev.map((x) => el("li", {}, x))) : null));
  }
}
