// The per-host table of an "All hosts" view (the /hosts answer): bytes, read time and
// input wait per host, sortable, with the slowest worker marked, so it stands out.

import { el, clear } from "../lib/dom.js";
import { fmtBytes, fmtInt, fmtNs, fmtPct, fmtSeconds } from "../lib/format.js";

export const HOST_COLUMNS = [
  { key: "host", label: "Host", kind: "text" },
  { key: "bytes_read", label: "Read", kind: "bytes" },
  { key: "bytes_written", label: "Written", kind: "bytes" },
  { key: "read_time_s", label: "Read time", kind: "sec" },
  { key: "io_calls", label: "I/O calls", kind: "int" },
  { key: "input_wait_ns", label: "Waiting on input", kind: "ns" },
  { key: "input_wait_pct", label: "Input wait share", kind: "pct" },
  { key: "files", label: "Files", kind: "int" },
];

function fmt(kind, v) {
  switch (kind) {
    case "bytes": return fmtBytes(v);
    case "sec": return fmtSeconds(v);
    case "int": return fmtInt(v);
    case "ns": return fmtNs(v);
    case "pct": return fmtPct(v);
    default: return v === null || v === undefined ? "–" : String(v);
  }
}

/** Row order for a sort key and direction (1 ascending, -1 descending); ties keep host order. Pure. */
export function sortHosts(hosts, key, dir) {
  return hosts.map((h, i) => [h, i]).sort((a, b) => {
    const va = a[0][key];
    const vb = b[0][key];
    if (va === vb) return a[1] - b[1];
    if (va === null || va === undefined) return 1;
    if (vb === null || vb === undefined) return -1;
    return (va < vb ? -1 : 1) * dir;
  }).map((x) => x[0]);
}

/** The host that stands out: the most input wait, else the longest read time; null when all are equal. Pure. */
export function slowestHost(hosts) {
  for (const key of ["input_wait_ns", "read_time_s"]) {
    const vals = hosts.map((h) => h[key] || 0);
    const max = Math.max(0, ...vals);
    if (max > 0 && vals.some((v) => v < max)) return hosts[vals.indexOf(max)].host;
  }
  return null;
}

export class HostsTable {
  constructor({ onPickHost } = {}) {
    this.onPickHost = onPickHost || (() => {});
    this.data = null;
    this.sort = { key: "input_wait_ns", dir: -1 };
    this.note = el("div", { class: "chart-note" });
    this.table = el("table", { class: "hosts-table" });
    this.root = el("div", { class: "hosts" }, this.note, el("div", { class: "hosts-scroll" }, this.table));
  }

  setData(data) {
    this.data = data;
    this.render();
  }

  render() {
    clear(this.table);
    const d = this.data;
    if (!d || d.error) {
      this.note.textContent = (d && d.error) || "";
      return;
    }
    const slow = slowestHost(d.hosts);
    this.note.textContent = slow
      ? `${slow} waits on input the longest (${d.hosts.length} hosts; click a host to show it alone).`
      : `${d.hosts.length} hosts; click a host to show it alone.`;
    const head = el("tr");
    for (const c of HOST_COLUMNS) {
      const active = this.sort.key === c.key;
      head.appendChild(el("th", {
        dataset: { key: c.key }, class: `${c.kind}${active ? " sorted" : ""}`,
        "aria-sort": active ? (this.sort.dir > 0 ? "ascending" : "descending") : "none",
        onclick: () => {
          this.sort = { key: c.key, dir: active ? -this.sort.dir : (c.kind === "text" ? 1 : -1) };
          this.render();
        },
      }, c.label, active ? (this.sort.dir > 0 ? " ▲" : " ▼") : ""));
    }
    const body = el("tbody");
    for (const h of sortHosts(d.hosts, this.sort.key, this.sort.dir)) {
      const tr = el("tr", { class: h.host === slow ? "slowest" : "", dataset: { host: h.host },
                            title: `Show ${h.host} alone`, onclick: () => this.onPickHost(h.host) });
      for (const c of HOST_COLUMNS) tr.appendChild(el("td", { class: c.kind, text: fmt(c.kind, h[c.key]) }));
      body.appendChild(tr);
    }
    this.table.appendChild(el("thead", {}, head));
    this.table.appendChild(body);
  }
}
