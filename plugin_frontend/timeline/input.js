// Mouse and keyboard input of the timeline: wheel zoom at the cursor (shift+wheel or a
// horizontal wheel pans), drag to pan, shift+drag (or the box-zoom button) to zoom to a
// box, W/S zoom in/out, A/D pan, R or 0 reset; hover shows the tooltip, click selects.
// Positions are content coordinates of the track area (coords.js: x from the plot's left
// edge, y from the top of all lanes, whatever is scrolled).

/**
 * tl: the Timeline (canvas, root, boxEl, scale, layout, capture, boxMode and its actions:
 * zoomBy, panBy, zoomTo, reset, toggleBox, contentPoint(ev), hover(ev), unhover(), click(x, y)).
 */
export function wireInput(tl) {
  const c = tl.canvas;
  c.addEventListener("wheel", (ev) => {
    ev.preventDefault();
    const { x } = tl.contentPoint(ev);
    if (ev.shiftKey || Math.abs(ev.deltaX) > Math.abs(ev.deltaY)) {
      tl.panBy((ev.deltaX || ev.deltaY) * 1.0, false);
    } else {
      tl.zoomBy(Math.exp(ev.deltaY * 0.0025), x, false);
    }
  }, { passive: false });
  let drag = null;
  c.addEventListener("mousedown", (ev) => {
    if (ev.button !== 0) return;
    ev.preventDefault();
    tl.root.focus({ preventScroll: true });
    const p = tl.contentPoint(ev);
    drag = { x0: p.x, y0: p.y, last: p.x, box: ev.shiftKey || tl.boxMode, moved: false };
  });
  window.addEventListener("mousemove", (ev) => {
    if (!drag) { tl.hover(ev); return; }
    const p = tl.contentPoint(ev);
    if (Math.abs(p.x - drag.x0) > 3 || Math.abs(p.y - drag.y0) > 3) drag.moved = true;
    if (drag.box) {
      const a = Math.min(drag.x0, p.x);
      const b = Math.max(drag.x0, p.x);
      Object.assign(tl.boxEl.style, { left: `${a}px`, width: `${b - a}px`, top: "0px", height: `${tl.layout.height}px` });
      tl.boxEl.hidden = !drag.moved;
    } else if (drag.moved) {
      tl.panBy(drag.last - p.x, false);
      drag.last = p.x;
    }
  });
  window.addEventListener("mouseup", (ev) => {
    const d = drag;
    if (!d) return;
    drag = null;
    tl.boxEl.hidden = true;
    const p = tl.contentPoint(ev);
    if (d.box && d.moved) {
      const a = Math.min(d.x0, p.x);
      const b = Math.max(d.x0, p.x);
      if (b - a >= 3) tl.zoomTo(tl.scale.t(a), tl.scale.t(b));
      if (tl.boxMode) tl.toggleBox();
    } else if (!d.moved) {
      tl.click(p.x, p.y);
    }
  });
  c.addEventListener("mouseleave", () => tl.unhover());
  window.addEventListener("keydown", (ev) => {
    const tag = (ev.target && ev.target.tagName) || "";
    if (/INPUT|SELECT|TEXTAREA/.test(tag) || ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (!tl.capture || !tl.root.isConnected) return;
    const k = ev.key.toLowerCase();
    const step = tl.scale.width * 0.15;
    if (k === "w") tl.zoomBy(0.7);
    else if (k === "s") tl.zoomBy(1 / 0.7);
    else if (k === "a") tl.panBy(-step);
    else if (k === "d") tl.panBy(step);
    else if (k === "r" || k === "0") tl.reset();
    else return;
    ev.preventDefault();
  });
}
