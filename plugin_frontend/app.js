// The "I/O" tab: run/host pickers, the combined timeline with its details panel, the
// files table, charts and findings. Data flow: /runs -> /capture (lanes, extent, steps)
// -> /timeline per view change (level of detail, packed: lib/packed.js), /bandwidth aligned under it, and
// /files, /histograms, /steps, /findings (and /hosts for "All hosts", /windows for a profile
// run or PyTorch traces: its job's windows) once per capture;
// /event on click. A pick that supersedes an earlier one (an event, a file) drops the
// earlier answer, whichever comes first (lib/latest.js).

import { getJson, getPacked } from "./api.js";
import { el, clear, section } from "./lib/dom.js";
import { fmtInt } from "./lib/format.js";
import { Latest } from "./lib/latest.js";
import { Timeline } from "./timeline/timeline.js";
import { FilesTable } from "./views/table.js";
import { renderHistograms, renderSteps, renderTopFiles } from "./views/charts.js";
import { codeLine, dataFiles } from "./views/codefiles.js";
import { renderRunSeries } from "./views/runseries.js";
import { pollFindings, renderFindings, withHostsJob } from "./views/findings.js";
import { renderDetailsMessage, renderEvent, renderProcesses } from "./views/details.js";
import { HostsTable } from "./views/hosts.js";
import { renderCheckpoints } from "./views/checkpoints.js";
import { renderObjects } from "./views/objects.js";
import { WindowsTable } from "./views/windows.js";

const ALL_HOSTS = "__all__";
const PANELS_WAIT_MS = 3000;  // the panels wait at most this long for the timeline's first paint

export class App {
  constructor(root) {
    this.root = root;
    this.runs = [];
    this.run = null;
    this.host = null;
    this.ioBy = "thread";
    this.capture = null;
    this.files = null;       // what the tables show: data files, or all with the toggle
    this.allFiles = null;    // the /files answer
    this.selectedFile = null;
    this.eventReq = new Latest();
    this.histReq = new Latest();
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
      load: (scale, lanes, signal) => this._loadTimeline(scale, lanes, signal),
      loadBandwidth: (scale, bins, signal) => getJson("bandwidth", { ...this._params(), start: scale.t0, end: scale.t1, bins }, signal),
      onSelect: (sel) => this.showEvent(sel),
    });
    this.details = el("aside", { class: "details", "aria-label": "event details" },
      el("div", { class: "empty-state", text: "Click an event in the timeline to see its details." }));
    this.filesTable = new FilesTable({ onSelectFile: (p) => this.selectFile(p) });
    this.histRoot = el("div", { class: "histograms" });
    this.stepsRoot = el("div", { class: "steps" });
    this.topRoot = el("div", { class: "topfiles" });
    this.codeToggle = el("input", { type: "checkbox", class: "code-toggle", onchange: () => this._showFiles() });
    this.codeNote = el("div", { class: "notice code-loading", hidden: true },
      el("span", { class: "code-line" }), " ",
      el("label", { title: "List the files of code loading with the data files" }, this.codeToggle, " show them"));
    this.findingsRoot = el("div", { class: "findings" });
    this.hostsTable = new HostsTable({ onPickHost: (h) => this.pickHost(h) });
    this.runSeriesRoot = el("div", { class: "runseries" });
    this.runSeriesSection = section("Whole run: bandwidth over the process's life", this.runSeriesRoot, "runseries-section");
    this.runSeriesSection.hidden = true;
    this.checkpointsRoot = el("div", { class: "checkpoints" });
    this.checkpointsSection = section("Checkpoints", this.checkpointsRoot, "checkpoints-section");
    this.checkpointsSection.hidden = true;
    this.objectsRoot = el("div", { class: "objects" });
    this.objectsSection = section("Object storage (S3, GCS, HTTP requests)", this.objectsRoot, "objects-section");
    this.objectsSection.hidden = true;
    this.hostsSection = section("Hosts", this.hostsTable.root, "hosts-section");
    this.hostsSection.hidden = true;
    this.windowsTable = new WindowsTable({ onPickRun: (r) => this.pickRun(r) });
    this.windowsSection = section("Profile windows of this job, in time order", this.windowsTable.root, "windows-section");
    this.windowsSection.hidden = true;
    this.fileChip = el("div", { class: "file-chip", hidden: true });
    this.content = el("div", { class: "content" },
      el("div", { class: "main-row" }, this.timeline.root, this.details),
      this.fileChip,
      this.runSeriesSection,
      this.windowsSection,
      this.hostsSection,
      this.checkpointsSection,
      this.objectsSection,
      el("div", { class: "grid2" },
        section("Findings", this.findingsRoot, "findings-section"),
        section("Top files (bytes moved)", this.topRoot, "top-section")),
      this.codeNote,
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
      // whole-run records of `tb-iotrace run` (one host per process) and folders of PyTorch
      // traces (one host per trace file) next to profile runs
      const n = x.hosts.length;
      const text = x.kind === "record" ? `${x.run} (whole run, ${n} process${n === 1 ? "" : "es"})`
        : x.kind === "kineto" ? `${x.run} (PyTorch, ${n} trace${n === 1 ? "" : "s"})` : x.run;
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
    this.eventReq.cancel();  // details of the previous capture's event are not wanted any more
    this.setStatus("Loading capture…");
    this.empty.hidden = true;
    this.banner.hidden = true;
    this.procInfo.hidden = true;
    this.content.hidden = false;  // laid out now, so the plot width below is the real one
    let cap;
    let first = null;
    try {
      // The home window's timeline is fetched alongside the capture summary (the server
      // picks the window when start/end are left out). Not for "All hosts": that asks for
      // every lane, and the view asks for the visible ones once it knows them.
      const firstReq = keepView || this.host === ALL_HOSTS ? null : getPacked("timeline", { ...this._params(), io_by: this.ioBy,
                                                                  width: this.timeline.plotWidth(), enc: "bin" }).catch(() => null);
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
    renderProcesses(this.procInfo, cap.processes || []);
    this.banner.hidden = !msgs.length;
    clear(this.banner);
    msgs.forEach((m) => this.banner.appendChild(el("div", { text: m })));
    this.setStatus(`${fmtInt(cap.lanes.length)} lanes · ${fmtInt(cap.io.events)} I/O calls · ${fmtInt(cap.io.files)} file records`);
    this.timeline.setClock(record ? "time since process start" : "time since profile start",
      record && !cap.lanes.length ? "No per-call trace in this record: its per-file counters are in the files table below." : "");
    this.timeline.setCapture(cap, keepView, first);
    const series = cap.run_series || [];
    this.runSeriesSection.hidden = !series.length;
    renderRunSeries(this.runSeriesRoot, series, cap.lanes.length ? (a, b) => this.timeline.zoomTo(a, b) : null);
    this._renderFileChip();
    if (!keepView) this._loadPanels(token);
  }

  /** `lanes`: the lane keys to draw (null: all of them). The packed answer carries no lane
   * descriptions: its segments index the lanes of /capture. */
  async _loadTimeline(scale, lanes, signal) {
    return getPacked("timeline", { ...this._params(), start: scale.t0, end: scale.t1, width: Math.round(scale.width),
                                   io_by: this.ioBy, lanes: lanes === null ? undefined : lanes.join(",") || "none",
                                   enc: "bin" }, signal);
  }

  // Each panel is drawn when its own answer comes (the findings of a big run can take
  // seconds longer than the rest); data-panels is "ready" once all have come. They are
  // asked for once the timeline has painted (at most PANELS_WAIT_MS later), so that the
  // server answers the timeline first. Findings still `pending` (hosts being analysed in
  // the background) are asked for again until complete (data-findings).
  async _loadPanels(token) {
    const p = this._params();
    const panels = (this._panels = {});  // see the findings poll below
    this.root.dataset.panels = "loading";
    this.root.dataset.findings = "loading";
    const multi = this.host === ALL_HOSTS;
    this.hostsSection.hidden = !multi;
    const info = this.runs.find((x) => x.run === p.run);
    const profile = !!info && (info.kind === "profile" || info.kind === "kineto");  // a window of its job
    if (!profile) this.windowsSection.hidden = true;
    if (multi) this.hostsTable.setData(null);
    await this.timeline.painted(PANELS_WAIT_MS);
    if (token !== this._token) return;
    // the job verdict of "All hosts": /hosts has it from the ranks' stored facts at once after a
    // restart; the findings bring it (and their own findings) when every host is analysed
    let hostsJob = null;
    let lastFindings = null;
    const drawFindings = (findings) => {
      lastFindings = findings;
      const shown = withHostsJob(findings, hostsJob);
      if (findings.error) this.findingsRoot.textContent = findings.error;
      else renderFindings(this.findingsRoot, shown, { onFile: (f) => this.selectFile(f), onRange: (a, b) => this.timeline.zoomTo(a, b) });
      this.root.dataset.findings = findings.pending > 0 && !findings.error ? "pending" : "complete";
    };
    let firstFindings = null;
    const show = async (route, params, draw, signal = undefined) => {
      let r;
      try { r = await getJson(route, params, signal); } catch (e) { r = { error: e.message, aborted: e.name === "AbortError" }; }
      if (token === this._token && !r.aborted) draw(r);
    };
    const hist = this.histReq.begin();  // a file picked meanwhile wins (selectFile)
    await Promise.all([
      show("files", p, (files) => {
        this.allFiles = files.error ? null : files;
        this._showFiles(files.error);
      }),
      show("histograms", p, (h) => {
        if (!hist.current()) return;
        if (h.error) this.histRoot.textContent = h.error; else renderHistograms(this.histRoot, h);
      }, hist.signal),
      show("steps", p, (steps) => {
        if (steps.error) this.stepsRoot.textContent = steps.error;
        else renderSteps(this.stepsRoot, steps, (st) => this.timeline.zoomTo(st.start - (st.end - st.start) * 0.05, st.end + (st.end - st.start) * 0.05));
      }),
      show("findings", p, (findings) => {
        firstFindings = findings;
        drawFindings(findings);
      }),
      multi ? show("hosts", p, (hosts) => {
        this.hostsTable.setData(hosts);
        hostsJob = (hosts && hosts.job_verdict) || null;
        if (hostsJob && lastFindings && !lastFindings.job_verdict && !lastFindings.error) drawFindings(lastFindings);
      }) : null,
      this._loadCheckpoints(p, () => panels === this._panels),
      profile ? show("windows", { run: p.run }, (w) => { this.windowsSection.hidden = !this.windowsTable.setData(w, p.run); }) : null,
    ]);
    if (token !== this._token) return;
    this.root.dataset.panels = "ready";
    // the object-storage table after the panels, beside the findings' asking again: for many
    // hosts it is one more pass over every capture, which must not hold the hosts table back
    show("objects", p, (o) => { this.objectsSection.hidden = !renderObjects(this.objectsRoot, o); });
    if (firstFindings && firstFindings.pending > 0 && !firstFindings.error) {
      // asked again while these panels stand: switching the I/O lanes (same run and host)
      // keeps them, picking another run or host replaces them
      const current = () => panels === this._panels;
      const load = () => getJson("findings", p).catch((e) => ({ error: e.message }));
      await pollFindings(load, drawFindings, current, { first: firstFindings });
    }
  }

  /** The checkpoint lane and the per-save tables (asked again while hosts are pending, as
   * the findings are: they come from the same analysis). Resolves at the first answer; the
   * asking again goes on in the background while these panels stand (``current``), as the
   * findings' does, so a switch of the I/O lanes neither stops it nor holds the panels back. */
  _loadCheckpoints(p, current) {
    this.checkpointsSection.hidden = true;
    let answered;
    const first = new Promise((res) => { answered = res; });
    (async () => {
      for (let wait = 1000; ; wait = Math.min(wait * 2, 8000)) {
        let r;
        try { r = await getJson("checkpoints", p); } catch (e) { r = { error: e.message, phases: [], saves: [] }; }
        if (!current()) break;
        this.timeline.setCheckpoints(r);
        this.checkpointsSection.hidden = !(r.phases && r.phases.length);
        renderCheckpoints(this.checkpointsRoot, r, (a, b) => this.timeline.zoomTo(a - (b - a) * 0.1, b + (b - a) * 0.1));
        answered();
        if (!r.pending || r.error) break;
        await new Promise((res) => setTimeout(res, wait));
        if (!current()) break;
      }
      answered();
    })();
    return first;
  }

  /** Files table and top files: data files only unless the code-loading toggle is on. */
  _showFiles(error = undefined) {
    this.files = dataFiles(this.allFiles, this.codeToggle.checked);
    const line = codeLine(this.allFiles);
    this.codeNote.hidden = !line;
    this.codeNote.querySelector(".code-line").textContent = line ? `${line}${this.codeToggle.checked ? "." : ": not listed below."}` : "";
    this.filesTable.setData(this.files || { rows: 0, message: error });
    renderTopFiles(this.topRoot, this.files, (path) => this.selectFile(path), this.selectedFile);
  }

  async selectFile(path) {
    this.selectedFile = path;
    this.timeline.setSelectedFile(path);
    this.filesTable.setSelected(path);
    renderTopFiles(this.topRoot, this.files, (p) => this.selectFile(p), path);
    this._renderFileChip();
    const req = this.histReq.begin();
    try {
      const hist = await getJson("histograms", { ...this._params(), path: path || undefined }, req.signal);
      if (req.current()) renderHistograms(this.histRoot, hist);
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

  async showEvent(sel) {
    const req = this.eventReq.begin();
    renderDetailsMessage(this.details, "Loading…");
    let ev;
    try {
      ev = await getJson("event", { ...this._params(), lane: sel.lane.key, index: sel.index }, req.signal);
    } catch (e) {
      if (req.current() && e.name !== "AbortError") renderDetailsMessage(this.details, `Cannot load event: ${e.message}`, "error");
      return;
    }
    if (!req.current()) return;
    renderEvent(this.details, ev, {
      showHostOp: !!this.capture && this.capture.source !== "record",
      onHighlight: (f) => this.selectFile(f),
    });
  }
}
