// The profile windows of the shown run's job (the /windows answer: TensorFlow/JAX profile runs and
// PyTorch traces), in time order: start, length, steps, input wait share, I/O and who took each,
// so that a job that slows down over hours shows where. The shown run's row is marked; a click on
// another row shows that window (its timeline, verdict and findings).

import { el, clear } from "../lib/dom.js";
import { fmtBytes, fmtInt, fmtNs, fmtPct, fmtSeconds } from "../lib/format.js";

/** "YYYY-MM-DD HH:MM:SS" (UTC) of epoch ns; "–" when unknown. Pure. */
export function fmtStart(ns) {
  if (ns === null || ns === undefined) return "–";
  return new Date(Math.floor(ns / 1e6)).toISOString().slice(0, 19).replace("T", " ");
}

/** Who took a window: tb-iotrace run or attach (who and when, from the answer); else the job
 * itself, by its own torch.profiler (trace_handler) for a PyTorch trace. Pure. */
export function takenBy(w) {
  if (w.taken_by) return w.taken_by;
  return w.kind === "kineto" ? "the job (its torch.profiler)" : "the job";
}

/** The table's cells of each window, in the answer's (time) order; TensorFlow/JAX profile runs
 * and PyTorch traces alike ("Kind"). Pure. */
export function windowRows(windows) {
  return windows.map((w) => ({
    run: w.run,
    cells: [String(w.n), fmtStart(w.start_ns), fmtNs(w.duration_ns), fmtInt(w.steps),
            w.input_wait_share === null || w.input_wait_share === undefined ? "–" : fmtPct(100 * w.input_wait_share),
            fmtBytes(w.bytes_read), fmtInt(w.io_calls), fmtSeconds(w.read_time_s),
            w.kind === "kineto" ? "PyTorch" : "TF/JAX", takenBy(w), w.run],
  }));
}

/** One line on how the input wait share moved from the first window that has one to the
 * last; "" with fewer than two such windows. Pure. */
export function waitTrend(windows) {
  const known = windows.filter((w) => w.input_wait_share !== null && w.input_wait_share !== undefined);
  if (known.length < 2) return "";
  const a = known[0];
  const b = known[known.length - 1];
  const most = known.reduce((m, w) => (w.input_wait_share > m.input_wait_share ? w : m), known[0]);
  return `Input wait share ${fmtPct(100 * a.input_wait_share)} in window ${a.n}, ` +
    `${fmtPct(100 * b.input_wait_share)} in window ${b.n}; most in window ${most.n} (${fmtPct(100 * most.input_wait_share)}).`;
}

export const WINDOW_COLUMNS = ["#", "Start (UTC)", "Length", "Steps", "Input wait", "Read", "I/O calls", "Read time", "Profile", "Taken by", "Run"];

export class WindowsTable {
  constructor({ onPickRun } = {}) {
    this.onPickRun = onPickRun || (() => {});
    this.note = el("div", { class: "chart-note" });
    this.table = el("table", { class: "windows-table" });
    this.root = el("div", { class: "windows" }, this.note, el("div", { class: "hosts-scroll" }, this.table));
  }

  /** Draws `data` (the /windows answer) with `run` marked; false when there is nothing to show
   * (an error, or fewer than two windows: one window is not a series). */
  setData(data, run) {
    clear(this.table);
    this.note.textContent = "";
    if (!data || data.error || !data.windows || data.windows.length < 2) return false;
    const bad = (data.unreadable || []).length;
    this.note.textContent = `${data.windows.length} windows of ${data.job || "the logdir's top level"}. ` +
      waitTrend(data.windows) + (bad ? ` ${bad} window(s) cannot be read.` : "");
    const head = el("tr");
    for (const c of WINDOW_COLUMNS) head.appendChild(el("th", { text: c }));
    const body = el("tbody");
    for (const r of windowRows(data.windows)) {
      const tr = el("tr", { class: r.run === run ? "current" : "", dataset: { run: r.run }, title: `Show ${r.run}`,
                            onclick: () => { if (r.run !== run) this.onPickRun(r.run); } });
      for (const c of r.cells) tr.appendChild(el("td", { text: c }));
      body.appendChild(tr);
    }
    this.table.appendChild(el("thead", {}, head));
    this.table.appendChild(body);
    return true;
  }
}
