// The per-file table: Darshan counters per (module, file), sortable (click a header),
// filterable by module, searchable by path. Clicking a row selects the file (highlighted
// in the timeline) and shows every raw counter of that record.

import { el, clear } from "../lib/dom.js";
import { fmtBytes, fmtInt, fmtRate, fmtSeconds } from "../lib/format.js";

export const COLUMNS = [
  { key: "path", label: "File", kind: "text" },
  { key: "module", label: "Module", kind: "text" },
  { key: "bytes_read", label: "Read", kind: "bytes" },
  { key: "bytes_written", label: "Written", kind: "bytes" },
  { key: "reads", label: "Reads", kind: "int" },
  { key: "writes", label: "Writes", kind: "int" },
  { key: "opens", label: "Opens", kind: "int" },
  { key: "seq_pct", label: "Seq. reads", kind: "pct" },
  { key: "read_time", label: "Read time", kind: "sec" },
  { key: "write_time", label: "Write time", kind: "sec" },
  { key: "meta_time", label: "Meta time", kind: "sec" },
  { key: "bandwidth", label: "Bandwidth", kind: "rate" },
  { key: "traced_calls", label: "Traced calls", kind: "int" },
];
const MAX_ROWS = 500;

function fmt(kind, v) {
  if (v === null || v === undefined) return "–";
  switch (kind) {
    case "bytes": return fmtBytes(v);
    case "int": return fmtInt(v);
    case "pct": return `${v.toFixed(1)} %`;
    case "sec": return fmtSeconds(v);
    case "rate": return fmtRate(v);
    default: return String(v);
  }
}

export class FilesTable {
  constructor({ onSelectFile }) {
    this.onSelectFile = onSelectFile || (() => {});
    this.files = null;
    this.sort = { key: "bytes_read", dir: -1 };
    this.query = "";
    this.module = "";
    this.selected = null;
    this.search = el("input", { type: "search", class: "files-search", placeholder: "Search paths…",
                                "aria-label": "search files", oninput: () => { this.query = this.search.value; this.render(); } });
    this.moduleSel = el("select", { class: "files-module", "aria-label": "module filter",
                                    onchange: () => { this.module = this.moduleSel.value; this.render(); } },
      el("option", { value: "", text: "POSIX + STDIO" }), el("option", { value: "POSIX", text: "POSIX" }),
      el("option", { value: "STDIO", text: "STDIO" }));
    this.count = el("span", { class: "files-count" });
    this.table = el("table", { class: "files-table" });
    this.empty = el("div", { class: "empty-state", hidden: true });
    this.root = el("div", { class: "files" },
      el("div", { class: "files-controls" }, this.search, this.moduleSel, this.count), this.empty,
      el("div", { class: "files-scroll" }, this.table));
  }

  setData(files) {
    this.files = files;
    this.render();
  }

  setSelected(path) {
    this.selected = path;
    this.render();
  }

  rows() {
    const f = this.files;
    if (!f) return [];
    const q = this.query.trim().toLowerCase();
    const out = [];
    for (let i = 0; i < f.rows; i++) {
      if (this.module && f.module[i] !== this.module) continue;
      if (q && !f.path[i].toLowerCase().includes(q)) continue;
      out.push(i);
    }
    const { key, dir } = this.sort;
    const get = (i) => (key === "path" ? f.path[i] : key === "module" ? f.module[i] : f.columns[key][i]);
    out.sort((a, b) => {
      const va = get(a);
      const vb = get(b);
      if (va === vb) return a - b;
      if (va === null || va === undefined) return 1;
      if (vb === null || vb === undefined) return -1;
      return (va < vb ? -1 : 1) * dir;
    });
    return out;
  }

  render() {
    const f = this.files;
    clear(this.table);
    if (!f || !f.rows) {
      this.empty.hidden = false;
      this.empty.textContent = (f && f.message) || "No file records.";
      this.count.textContent = "";
      return;
    }
    this.empty.hidden = true;
    const head = el("tr");
    for (const c of COLUMNS) {
      const active = this.sort.key === c.key;
      head.appendChild(el("th", {
        dataset: { key: c.key }, class: `${c.kind}${active ? " sorted" : ""}`, role: "columnheader",
        "aria-sort": active ? (this.sort.dir > 0 ? "ascending" : "descending") : "none",
        title: "Click to sort",
        onclick: () => {
          this.sort = { key: c.key, dir: active ? -this.sort.dir : (c.kind === "text" ? 1 : -1) };
          this.render();
        },
      }, c.label, active ? (this.sort.dir > 0 ? " ▲" : " ▼") : ""));
    }
    const thead = el("thead", {}, head);
    const tbody = el("tbody");
    const rows = this.rows();
    for (const i of rows.slice(0, MAX_ROWS)) {
      const path = f.path[i];
      const sel = path === this.selected;
      const tr = el("tr", { class: sel ? "selected" : "", dataset: { path, module: f.module[i] },
                            onclick: () => this.onSelectFile(sel ? null : path) });
      for (const c of COLUMNS) {
        const v = c.key === "path" ? path : c.key === "module" ? f.module[i] : f.columns[c.key][i];
        tr.appendChild(el("td", { class: c.kind, title: c.key === "path" ? path : null, text: fmt(c.kind, v) }));
      }
      tbody.appendChild(tr);
      if (sel) tbody.appendChild(this._detailRow(i));
    }
    this.table.appendChild(thead);
    this.table.appendChild(tbody);
    this.count.textContent = rows.length > MAX_ROWS
      ? `showing ${MAX_ROWS} of ${fmtInt(rows.length)} records (${fmtInt(f.rows)} in total)`
      : `${fmtInt(rows.length)} of ${fmtInt(f.rows)} records`;
  }

  _detailRow(i) {
    const f = this.files;
    const grid = el("div", { class: "counter-grid" });
    f.counters.forEach((name, k) => {
      const v = f.values[i][k];
      if (v === null || v === undefined) return;
      grid.appendChild(el("div", { class: "counter" }, el("span", { class: "cname", text: name }),
        el("span", { class: "cval", text: /^.*_F_/.test(name) ? String(v) : fmtInt(v) })));
    });
    return el("tr", { class: "detail" }, el("td", { colspan: String(COLUMNS.length) }, grid));
  }
}
