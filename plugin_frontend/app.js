// The "I/O" tab: run/host pickers, the combined timeline with its details panel, the
// files table, charts and findings. Data flow: /runs -> /capture (lanes, extent, steps)
// -> /timeline per view change (level of detail), /bandwidth aligned under it, and
// /files, /histograms, /steps, /findings once per capture; /event on click.

import { getJson } from "./api.js";
import { el, clear, fmtBytes, fmtInt, fmtNs } from "./dom.js";
import { Timeline } from "./timeline/timeline.js";
import { FilesTable } from "./table.js";
import { renderHistograms, renderSteps, renderTopFiles } from "./charts.js";
import { renderFindings } from "./findings.js";

const ALL_HOSTS = "__all__";

export class App {
  constructor(root) {
    this.root = root;
    this.runs = [];
    this.run = null;
    this.host = null;
    this.ioBy = "thread";
    this.capture = null;
    this.files = null;
    this.selectedFile = null;
    this._build();
  }

  _build() {
    this.runSel = el("select", { class: "run-select", "aria-label": "run", onchange: () => this.pickRun(this.runSel.value) });
    this.hostSel = el("select", { class: "host-select", "aria-label": "host", onchange: () => this.pickHost(this.hostSel.value) });
    this.ioBySel = el("select", { class: "ioby-select", "aria-label": "I/O lanes", onchange: () => { this.ioBy = this.ioBySel.value; this.loadCapture(true); } },
      el("option", { value: "thread", text: "I/O lanes per thread" }), el("option", { value: "file", text: "I/O lanes per file" }));
    this.refreshBtn = el("button", { class: "tl-btn", title: "Look for new runs", onclick: () => this.start(true) }, "Refresh");
    this.status = el("span", { class: "status", role: "status" });
    this.banner = el("div", { class: "banner", hidden: true, role: "note" });
    this.procInfo = el("div", { class: "notice proc-info", hidden: true });
    this.empty = el("div", { class: "empty-state big", hidden: true });
    this.timeline = new Timeline({
      load: (scale, collapsed, signal) => this._loadTimeline(scale, collapsed, signal),
      loadBandwidth: (scale, bins) => getJson("bandwidth", { ...this._params(), start: scale.t0, end: scale.t1, bins }),
      onSelect: (sel) => this.showEvent(sel),
    });
    this.details = el("aside", { class: "details", "aria-label": "event details" },
      el("div", { class: "empty-state", text: "Click an event in the timeline to see its details." }));
    this.filesTable = new FilesTable({ onSelectFile: (p) => this.selectFile(p) });
    this.histRoot = el("div", { class: "histograms" });
    this.stepsRoot = el("div", { class: "steps" });
    this.topRoot = el("div", { class: "topfiles" });
    this.findingsRoot = el("div", { class: "findings" });
    this.fileChip = el("div", { class: "file-chip", hidden: true });
    this.content = el("div", { class: "content" },
      el("div", { class: "main-row" }, this.timeline.root, this.details),
      this.fileChip,
      el("div", { class: "grid2" },
        section("Findings", this.findingsRoot, "findings-section"),
        section("Top files (bytes moved)", this.topRoot, "top-section")),
      section("Files (Darshan counters)", this.filesTable.root, "files-section"),
      el("div", { class: "grid2" },
        section("Access sizes", this.histRoot, "hist-section"),
        section("Per-step I/O", this.stepsRoot, "steps-section")));
    this.root.appendChild(el("div", { class: "iotrace" },
      el("header", { class: "topbar" }, el("h1", { text: "I/O" }),
        el("label", {}, "Run ", this.runSel), el("label", {}, "Host ", this.hostSel), this.ioBySel,
        this.refreshBtn, this.status),
      this.procInfo, this.banner, this.empty, this.content));
    this.content.hidden = true;
  }

  _params() { return { run: this.run, host: this.host }; }

  setStatus(text) { this.status.textContent = text || ""; }

  showEmpty(text) {
    this.empty.textContent = text;
    this.empty.hidden = false;
    this.content.hidden = true;
    this.root.dataset.state = "empty";
  }

  async start(refresh = false) {
    this.setStatus("Looking for profiles…");
    let r;
    try {
      r = await getJson("runs", refresh ? { refresh: 1 } : {});
    } catch (e) {
      this.setStatus("");
      this.showEmpty(`Cannot list runs: ${e.message}`);
      return;
    }
    this.runs = r.runs;
    this.setStatus("");
    clear(this.runSel);
    if (!this.runs.length) {
      this.showEmpty(r.message || "No profile runs found.");
      return;
    }
    for (const x of this.runs) {
      // whole-run records of `tb-iotrace run` (one host per process) next to profile runs
      const text = x.kind === "record" ? `${x.run} (whole run, ${x.hosts.length} process${x.hosts.length === 1 ? "" : "es"})` : x.run;
      this.runSel.appendChild(el("option", { value: x.run, text }));
    }
    const keep = this.runs.find((x) => x.run === this.run);
    this.pickRun(keep ? keep.run : this.runs[this.runs.length - 1].run);
  }

  pickRun(run) {
    this.run = run;
    this.runSel.value = run;
    const info = this.runs.find((x) => x.run === run);
    clear(this.hostSel);
    for (const h of info.hosts) this.hostSel.appendChild(el("option", { value: h, text: h }));
    if (info.hosts.length > 1) this.hostSel.appendChild(el("option", { value: ALL_HOSTS, text: "All hosts (one clock)" }));
    this.pickHost(info.hosts.includes(this.host) ? this.host : info.hosts[0]);
  }

  pickHost(host) {
    this.host = host;
    this.hostSel.value = host;
    this.selectedFile = null;
    this.loadCapture();
  }

  async loadCapture(keepView = false) {
    const token = (this._token = {});
    this.setStatus("Loading capture…");
    this.empty.hidden = true;
    this.banner.hidden = true;
    this.procInfo.hidden = true;
    this.content.hidden = false;  // laid out now, so the plot width below is the real one
    let cap;
    let first = null;
    try {
      // The home window's timeline is fetched alongside the capture summary (the server
      // picks the window when start/end are left out).
      const firstReq = keepView ? null : getJson("timeline", { ...this._params(), io_by: this.ioBy,
                                                                width: this.timeline.plotWidth() }).catch(() => null);
      cap = await getJson("capture", { ...this._params(), io_by: this.ioBy });
      first = firstReq ? await firstReq : null;
    } catch (e) {
      if (token !== this._token) return;
      this.setStatus("");
      const file = e.body && e.body.file ? ` (${e.body.file})` : "";
      this.showEmpty(e.status === 422
        ? `This run's capture cannot be read${file}: ${e.message}. Other runs are still available in the Run menu.`
        : `Cannot load this run: ${e.message}`);
      this.root.dataset.state = "error";
      return;
    }
    if (token !== this._token) return;
    this.capture = cap;
    this.content.hidden = false;
    this.root.dataset.state = "ready";
    const record = cap.source === "record";
    const msgs = [...cap.messages, ...cap.warnings.map((w) => (record ? w : `Capture warning: ${w}`))];
    this._renderProcesses(cap);
    this.banner.hidden = !msgs.length;
    clear(this.banner);
    msgs.forEach((m) => this.banner.appendChild(el("div", { text: m })));
    this.setStatus(`${fmtInt(cap.lanes.length)} lanes · ${fmtInt(cap.io.events)} I/O calls · ${fmtInt(cap.io.files)} file records`);
    this.timeline.setClock(record ? "time since process start" : "time since profile start",
      record && !cap.lanes.length ? "No per-call trace in this record: its per-file counters are in the files table below." : "");
    this.timeline.setCapture(cap, keepView, first);
    this._renderFileChip();
    if (!keepView) this._loadPanels(token);
  }

  async _loadTimeline(scale, collapsed, signal) {
    const lanes = collapsed.length
      ? this.capture.lanes.filter((l) => !collapsed.includes(l.group)).map((l) => l.key).join(",") || "none"
      : undefined;
    return getJson("timeline", { ...this._params(), start: scale.t0, end: scale.t1, width: Math.round(scale.width),
                                 io_by: this.ioBy, lanes }, signal);
  }

  async _loadPanels(token) {
    const p = this._params();
    this.root.dataset.panels = "loading";
    const jobs = {
      files: getJson("files", p), hist: getJson("histograms", p), steps: getJson("steps", p),
      findings: getJson("findings", p),
    };
    const settle = async (k) => { try { return await jobs[k]; } catch (e) { return { error: e.message }; } };
    const [files, hist, steps, findings] = await Promise.all(["files", "hist", "steps", "findings"].map(settle));
    if (token !== this._token) return;
    this.files = files.error ? null : files;
    this.filesTable.setData(this.files || { rows: 0, message: files.error });
    renderTopFiles(this.topRoot, this.files, (path) => this.selectFile(path), this.selectedFile);
    if (hist.error) this.histRoot.textContent = hist.error; else renderHistograms(this.histRoot, hist);
    if (steps.error) this.stepsRoot.textContent = steps.error;
    else renderSteps(this.stepsRoot, steps, (st) => this.timeline.zoomTo(st.start - (st.end - st.start) * 0.05, st.end + (st.end - st.start) * 0.05));
    if (findings.error) this.findingsRoot.textContent = findings.error;
    else renderFindings(this.findingsRoot, findings, { onFile: (f) => this.selectFile(f), onRange: (a, b) => this.timeline.zoomTo(a, b) });
    this.root.dataset.panels = "ready";
  }

  async selectFile(path) {
    this.selectedFile = path;
    this.timeline.setSelectedFile(path);
    this.filesTable.setSelected(path);
    renderTopFiles(this.topRoot, this.files, (p) => this.selectFile(p), path);
    this._renderFileChip();
    try {
      const hist = await getJson("histograms", { ...this._params(), path: path || undefined });
      renderHistograms(this.histRoot, hist);
    } catch (_) { /* keep the previous chart */ }
  }

  _renderFileChip() {
    clear(this.fileChip);
    this.fileChip.hidden = !this.selectedFile;
    if (!this.selectedFile) return;
    this.fileChip.appendChild(el("span", { text: "Highlighting accesses to " }));
    this.fileChip.appendChild(el("code", { class: "path", text: this.selectedFile }));
    this.fileChip.appendChild(el("button", { class: "tl-btn", onclick: () => this.selectFile(null) }, "Clear"));
  }

  // Whole-run records: which process each host is and how it ended.
  _renderProcesses(cap) {
    clear(this.procInfo);
    const procs = cap.processes || [];
    this.procInfo.hidden = !procs.length;
    for (const p of procs) {
      const ex = p.exit || {};
      const how = ex.how === "flush" ? "did not finish (last periodic flush)"
        : ex.signal ? `ended by signal ${ex.signal}`
        : ex.exception ? `ended by ${ex.exception}`
        : ex.how ? `exited${ex.code !== null && ex.code !== undefined ? ` with code ${ex.code}` : ""}` : "";
      const dur = p.end_ns && p.start_ns ? ` · ${fmtNs(p.end_ns - p.start_ns)} recorded` : "";
      const argv = Array.isArray(p.argv) ? p.argv.map(String).join(" ") : String(p.argv ?? "");
      this.procInfo.appendChild(el("div", { class: "proc" },
        el("b", { text: `${p.host}: ` }), el("span", { text: `process ${p.pid} (parent ${p.ppid}) ` }),
        el("code", { class: "argv", text: argv || "?" }), el("span", { text: ` · ${how}${dur}` })));
    }
  }

  async showEvent(sel) {
    clear(this.details);
    this.details.appendChild(el("div", { class: "muted", text: "Loading…" }));
    let ev;
    try {
      ev = await getJson("event", { ...this._params(), lane: sel.lane.key, index: sel.index });
    } catch (e) {
      clear(this.details);
      this.details.appendChild(el("div", { class: "error", text: `Cannot load event: ${e.message}` }));
      return;
    }
    clear(this.details);
    const rows = [];
    const add = (k, v, cls) => rows.push(el("dt", { text: k }), el("dd", { class: cls || "", text: v }));
    this.details.appendChild(el("h3", { class: "ev-name", text: ev.name || "(unnamed)" }));
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
      if (this.capture && this.capture.source !== "record") {
        add("TF op", ev.host_op ? `${ev.host_op.name} (${fmtNs(ev.host_op.dur)})` : "none found on this thread");
      }
    } else {
      for (const [k, v] of Object.entries(ev.stats || {})) add(k, String(v));
    }
    add("Step", ev.step ? `step ${ev.step.name}` : "–");
    this.details.appendChild(el("dl", { class: "ev-fields" }, rows));
    if (ev.group === "io" && ev.file) {
      this.details.appendChild(el("button", { class: "tl-btn", onclick: () => this.selectFile(ev.file) }, "Highlight this file"));
    }
    this.details.dataset.lane = ev.lane;
    this.details.dataset.index = String(ev.index);
  }
}

function section(title, body, cls) {
  return el("section", { class: `panel ${cls}` }, el("h2", { text: title }), body);
}
