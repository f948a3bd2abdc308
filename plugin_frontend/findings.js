// The findings panel: what the backend's analysis reports, with its evidence.

import { el, clear, fmtNs } from "./dom.js";

export function renderFindings(root, f, { onFile, onRange } = {}) {
  clear(root);
  const list = (f && f.findings) || [];
  if (!list.length) {
    root.appendChild(el("div", { class: "empty-state", text: (f && f.message) || "No findings." }));
    return;
  }
  for (const item of list) {
    const ev = (item.evidence || []).map((e) => {
      const label = e.label || e.path || (e.start !== undefined ? `${fmtNs(e.start)}–${fmtNs(e.end)}` : e.kind);
      const onclick = e.kind === "file" && onFile ? () => onFile(e.path)
        : (e.kind === "range" || e.kind === "event") && onRange && e.start !== undefined ? () => onRange(e.start, e.end ?? e.start + 1)
          : null;
      return el("li", {}, onclick ? el("button", { class: "link", onclick, text: label }) : el("span", { text: label }));
    });
    root.appendChild(el("div", { class: `finding ${item.severity || "info"}` },
      el("div", { class: "finding-head" }, el("span", { class: "sev", text: item.severity || "info" }),
        el("span", { class: "finding-title", text: item.title || "" })),
      item.detail ? el("p", { text: item.detail }) : null,
      ev.length ? el("ul", { class: "evidence" }, ev) : null));
  }
}
