"""The I/O tab in real headless Chromium, driving a real TensorBoard process with the plugin
installed (entry point), over the DevTools protocol (tests/browser/cdp.py).

Data: the multi-GPU capture of tests/data/ with 20,000 synthetic file accesses merged in (one file
is named ``<img src=x onerror=alert(1)>``), plus a corrupt run. Screenshots go to
``test-artifacts/``.
"""

from __future__ import annotations

import re
import urllib.parse
from pathlib import Path

import pytest

from tb_iotrace.plugin.synthetic import HOSTILE_NAME, make_logdir
from tb_iotrace.store.xplane import load_xspace, read_io_data

pytest.importorskip("websocket", reason="websocket-client is needed to drive Chromium (requirements-dev.txt)")
from cdp import CHROMIUM, Browser  # noqa: E402
from tab import APP, D, W, ink, tensorboard  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
RUN = "2024_01_01_00_00_00"
JAX_IO, JAX_PLAIN = "2022_jax_io", "2022_jax_plain"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} not installed (apt-get install chromium)"),
]




@pytest.fixture(scope="module")
def capture(tmp_path_factory, gpu_capture):
    """The run's capture. Seed 10 puts the hostile name among the ten files that moved the most
    bytes (the top files list); test_hostile_file_name_renders_as_text checks it does."""
    return make_logdir(tmp_path_factory.mktemp("tb"), gpu_capture, run=RUN, host="worker0",
                       n_events=20_000, seed=10)


@pytest.fixture(scope="module")
def server(capture, jax_captures):
    logdir = capture.parents[3]
    broken = logdir / "plugins" / "profile" / "2023_broken"
    broken.mkdir(parents=True)
    (broken / "host.xplane.pb").write_bytes(b"\x0a\xff\xff\xff\x0fgarbage")
    # two real JAX captures (tests/data), made with and without tb_iotrace
    for run, src in zip((JAX_IO, JAX_PLAIN), jax_captures):
        (logdir / "plugins" / "profile" / run).mkdir(parents=True)
        (logdir / "plugins" / "profile" / run / "vm.xplane.pb").write_bytes(src.read_bytes())
    with tensorboard(logdir, logdir / "tensorboard.log") as base:
        yield base


def top_files(capture, n: int = 10) -> list[str]:
    """The labels the top files list must show: the n file records (path, module) of the
    capture's counters that moved the most bytes, most first."""
    moved = []
    for f in read_io_data(load_xspace(capture)).counters:
        c = f["counters"]
        m = f["module"]
        moved.append((c.get(f"{m}_BYTES_READ", 0) + c.get(f"{m}_BYTES_WRITTEN", 0), f"{f['path']} ({m})"))
    moved.sort(key=lambda t: -t[0])
    assert len(moved) > n and moved[n - 1][0] > moved[n][0], "the top files must not tie at the cut"
    return [label for _, label in moved[:n]]


@pytest.fixture(scope="module")
def browser():
    b = Browser(1500, 1100)
    yield b
    b.close()


@pytest.fixture
def page(server, browser, request):
    p = browser.new_page()
    p.call("Emulation.setDeviceMetricsOverride", width=1500, height=1100, deviceScaleFactor=1, mobile=False)
    p.navigate(server + "/#iotrace")
    p.wait_for(f"(() => {{ try {{ return {D}.querySelector('.timeline').dataset.state === 'ready'"
               f" && {D}.querySelector('#iotrace-root').dataset.panels === 'ready'; }} catch (e) {{ return false; }} }})()",
               timeout=60)
    yield p
    try:
        p.screenshot(ARTIFACTS / f"browser-{request.node.name}.png")
    finally:
        p.close()


def _iframe_origin(p) -> tuple[float, float]:
    r = p.evaluate("(() => { const r = document.querySelector('iframe[src*=\"plugin_entry\"]').getBoundingClientRect(); return [r.left, r.top]; })()")
    return r[0], r[1]


def _canvas_point(p, x: float, y: float) -> tuple[float, float]:
    """Page coordinates of track point (x, y) (content coordinates, CSS px: y from the top of
    all lanes), scrolling it into view first."""
    p.evaluate(f"(() => {{ {APP}.timeline.scrollIntoView({y} - 30, {y} + 30); {W}.scrollTo(0, 0); return true; }})()")
    ox, oy = _iframe_origin(p)
    cr = p.evaluate(f"(() => {{ const r = {APP}.timeline.plot.getBoundingClientRect(); return [r.left, r.top]; }})()")
    return ox + cr[0] + x, oy + cr[1] + y


def _paint_seq(p) -> int:
    return int(p.evaluate(f"{APP}.timeline.root.dataset.paintSeq || '0'"))


def _wait_paint(p, after: int) -> None:
    p.wait_for(f"Number({APP}.timeline.root.dataset.paintSeq || 0) > {after}", timeout=30)


def _range(p) -> tuple[float, float]:
    r = p.evaluate(f"[{APP}.timeline.scale.t0, {APP}.timeline.scale.t1]")
    return float(r[0]), float(r[1])


# --------------------------------------------------------------------------- tests


def test_tab_loads_and_draws_gpu_host_and_io_lanes(page):
    p = page
    # TensorBoard's own tab bar shows the tab.
    assert p.evaluate("[...document.querySelectorAll('a, button, .mat-tab-label, [role=tab]')]"
                      ".some((e) => e.textContent.trim() === 'I/O')")
    lanes = p.evaluate(f"[...{D}.querySelectorAll('.tl-label')].map((e) => [e.dataset.key, e.dataset.group, e.textContent])")
    groups = {g for _, g, _ in lanes}
    assert groups == {"io", "host", "device"}
    streams = [k for k, g, name in lanes if g == "device" and "Stream #" in name]
    host = [k for k, g, name in lanes if g == "host" and "python3" in name]
    io = [k for k, g, _ in lanes if g == "io"]
    assert len(io) == 4 and streams and host
    assert p.evaluate(f"{D}.querySelectorAll('.tl-label .badge').length") >= 1  # tf.data threads marked
    # pixels, not just a canvas: every I/O lane, a GPU compute stream and the host thread have ink
    for key in io:
        assert ink(p, key) > 0.05, key
    compute = next(k for k, g, name in lanes if "Stream #134(Compute)" in name)
    assert ink(p, compute) > 0.0005
    assert ink(p, host[0]) > 0.0005
    # group headers collapse/expand
    p.evaluate(f"{D}.querySelector('.tl-header[data-group=device]').click()")
    assert p.evaluate(f"{D}.querySelectorAll('.tl-label.tl-device').length") == 0
    p.evaluate(f"{D}.querySelector('.tl-header[data-group=device]').click()")
    assert p.evaluate(f"{D}.querySelectorAll('.tl-label.tl-device').length") == len([1 for _, g, _ in lanes if g == "device"])
    p.screenshot(ARTIFACTS / "browser-tab.png")


def test_zoom_pan_box_and_reset_change_the_visible_range(page):
    p = page
    t0, t1 = _range(p)
    p.evaluate(f"{APP}.timeline.root.focus()")
    seq = _paint_seq(p)
    p.key("w")
    _wait_paint(p, seq)
    a0, a1 = _range(p)
    assert (a1 - a0) == pytest.approx((t1 - t0) * 0.7, rel=0.02)
    assert float(p.evaluate(f"{APP}.timeline.root.dataset.start")) == pytest.approx(a0)
    # A/D pan
    seq = _paint_seq(p)
    p.key("d")
    _wait_paint(p, seq)
    b0, b1 = _range(p)
    assert b0 > a0 and (b1 - b0) == pytest.approx(a1 - a0, rel=1e-6)
    # wheel zooms in around the cursor
    x, y = _canvas_point(p, 300, 40)
    seq = _paint_seq(p)
    p.wheel(x, y, dy=-300)
    _wait_paint(p, seq)
    c0, c1 = _range(p)
    assert (c1 - c0) < (b1 - b0) * 0.6
    # box zoom: shift+drag from 100 px to 400 px
    sx, sy = _canvas_point(p, 100, 30)
    ex, _ = _canvas_point(p, 400, 30)
    scale = p.evaluate(f"[{APP}.timeline.scale.t(100), {APP}.timeline.scale.t(400)]")
    seq = _paint_seq(p)
    p.mouse("mouseMoved", sx, sy, button="none")
    p.mouse("mousePressed", sx, sy, modifiers=8)
    p.mouse("mouseMoved", (sx + ex) / 2, sy, button="left", modifiers=8)
    p.mouse("mouseMoved", ex, sy, button="left", modifiers=8)
    p.mouse("mouseReleased", ex, sy, modifiers=8)
    _wait_paint(p, seq)
    d0, d1 = _range(p)
    assert d0 == pytest.approx(scale[0], rel=1e-3) and d1 == pytest.approx(scale[1], rel=1e-3)
    # the server answered for the new window
    assert p.evaluate(f"{APP}.timeline.data.start") == pytest.approx(d0)
    p.screenshot(ARTIFACTS / "browser-zoomed.png")
    # the bandwidth strip follows once the view settles (asked for 150 ms after the paint)
    p.wait_for(f"{APP}.timeline.bw && Math.abs({APP}.timeline.bw.start - {d0}) < 1", timeout=20)
    assert p.evaluate(f"{APP}.timeline.bw.read_bps.length") > 0
    seq = _paint_seq(p)
    p.key("r")
    _wait_paint(p, seq)
    assert _range(p) == pytest.approx((t0, t1))
    p.wait_for(f"{APP}.timeline.bw && Math.abs({APP}.timeline.bw.start - {t0}) < 1", timeout=20)
    assert p.evaluate(f"{APP}.timeline.bw.read_bps.some((x) => x > 0)")


def _zoom_to_single_io_item(p) -> int:
    """Zoom into the middle until I/O calls are drawn one by one; returns an item index."""
    lo, hi = p.evaluate(f"{APP}.capture.extent")
    mid = (lo + hi) / 2
    span = (hi - lo) / 400
    seq = _paint_seq(p)
    p.evaluate(f"{APP}.timeline.zoomTo({mid}, {mid + span})")
    _wait_paint(p, seq)
    i = p.evaluate(f"""(() => {{ const d = {APP}.timeline.data, it = d.items;
        for (let i = 0; i < it.start.length; i++) {{
          const lane = d.lanes[it.lane[i]];
          if (lane.group === 'io' && it.count[i] === 1 && it.file[i] >= 0 && it.bytes[i] > 0
              && {APP}.timeline.scale.x(it.start[i] + it.dur[i]) - {APP}.timeline.scale.x(it.start[i]) >= 3) return i;
        }}
        return -1; }})()""")
    assert i >= 0, "no single I/O call wide enough to click"
    return i


def test_clicking_an_io_event_shows_its_file_and_bytes(page):
    p = page
    i = _zoom_to_single_io_item(p)
    want_file, want_bytes = p.evaluate(f"(() => {{ const d = {APP}.timeline.data; return [d.files[d.items.file[{i}]], d.items.bytes[{i}]]; }})()")
    c = p.evaluate(f"{APP}.timeline.itemCenter({i})")
    x, y = _canvas_point(p, c["x"], c["y"])
    p.click(x, y)
    p.wait_for(f"{D}.querySelector('.details .ev-file') !== null", timeout=20)
    shown_file = p.evaluate(f"{D}.querySelector('.details .ev-file').textContent")
    shown_bytes = p.evaluate(f"{D}.querySelector('.details .ev-bytes').textContent")
    assert shown_file == want_file
    assert shown_bytes.startswith(f"{want_bytes:,}")
    text = p.evaluate(f"{D}.querySelector('.details').textContent")
    for label in ("Call", "Offset", "Duration", "errno", "TF op", "Step"):
        assert label in text
    # "highlight this file" selects it everywhere
    p.evaluate(f"[...{D}.querySelectorAll('.details button')].find((b) => b.textContent.includes('Highlight')).click()")
    p.wait_for(f"{D}.querySelector('.files-table tr.selected') !== null")
    assert p.evaluate(f"{D}.querySelector('.files-table tr.selected').dataset.path") == want_file
    assert p.evaluate(f"{D}.querySelector('.file-chip code').textContent") == want_file
    p.screenshot(ARTIFACTS / "browser-details.png")


def test_sorting_the_files_table_reorders_rows(page):
    p = page
    rows = f"[...{D}.querySelectorAll('.files-table tbody tr:not(.detail)')].map((r) => r.dataset.path)"
    before = p.evaluate(rows)
    assert len(before) > 10
    # a real click on the "File" header
    p.evaluate(f"{D}.querySelector('.files-table th[data-key=path]').scrollIntoView({{block: 'center'}})")
    ox, oy = _iframe_origin(p)
    r = p.evaluate(f"(() => {{ const r = {D}.querySelector('.files-table th[data-key=path]').getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; }})()")
    p.click(ox + r[0], oy + r[1])
    p.wait_for(f"{D}.querySelector('.files-table th[data-key=path]').getAttribute('aria-sort') === 'ascending'")
    asc = p.evaluate(rows)
    assert asc != before and asc == sorted(asc) and sorted(asc) == sorted(before)
    p.evaluate(f"{D}.querySelector('.files-table th[data-key=path]').click()")
    desc = p.evaluate(rows)
    assert desc == sorted(desc, reverse=True)
    # numeric column: bytes written, descending first
    p.evaluate(f"{D}.querySelector('.files-table th[data-key=bytes_written]').click()")
    top = p.evaluate(rows)[0]
    assert top == "/ckpt/model.ckpt-1.data"
    # module filter and search
    p.evaluate(f"(() => {{ const s = {D}.querySelector('.files-module'); s.value = 'STDIO'; s.dispatchEvent(new Event('change')); }})()")
    assert len(p.evaluate(rows)) == 1
    p.evaluate(f"(() => {{ const s = {D}.querySelector('.files-module'); s.value = ''; s.dispatchEvent(new Event('change')); }})()")


def test_hostile_file_name_renders_as_text(page, capture):
    p = page
    p.evaluate(f"(() => {{ const s = {D}.querySelector('.files-search'); s.value = 'onerror'; s.dispatchEvent(new Event('input')); }})()")
    cells = p.evaluate(f"[...{D}.querySelectorAll('.files-table tbody tr td:first-child')].map((td) => td.textContent)")
    assert cells == [HOSTILE_NAME]
    # per-file lanes: the lane label shows the name literally too
    p.evaluate(f"(() => {{ const s = {D}.querySelector('.ioby-select'); s.value = 'file'; s.dispatchEvent(new Event('change')); }})()")
    p.wait_for(f"[...{D}.querySelectorAll('.tl-label.tl-io .tl-label-text')].some((e) => e.textContent === {HOSTILE_NAME!r})")
    p.wait_for(f"{APP}.timeline.data && {APP}.timeline.data.lanes.some((l) => l.name === {HOSTILE_NAME!r})")
    # top files list, too: exactly the ten records that moved the most bytes, the name literally
    expected = top_files(capture)
    assert f"{HOSTILE_NAME} (POSIX)" in expected
    assert p.evaluate(f"[...{D}.querySelectorAll('.topfiles .bar-label')].map((e) => e.textContent)") == expected
    # nothing was interpreted as HTML: no <img>, no dialog, no script error
    assert p.evaluate(f"{D}.querySelectorAll('img').length") == 0
    assert p.evaluate("document.querySelectorAll('img[src=x]').length") == 0
    kinds = {e["method"] for e in p.events}
    assert "Page.javascriptDialogOpening" not in kinds
    assert "Runtime.exceptionThrown" not in kinds
    p.screenshot(ARTIFACTS / "browser-hostile-name.png")


def test_corrupt_run_shows_an_error_and_the_others_still_load(page):
    p = page
    runs = p.evaluate(f"[...{D}.querySelectorAll('.run-select option')].map((o) => o.value)")
    assert runs == [JAX_IO, JAX_PLAIN, "2023_broken", RUN]
    p.evaluate(f"(() => {{ const s = {D}.querySelector('.run-select'); s.value = '2023_broken'; s.dispatchEvent(new Event('change')); }})()")
    p.wait_for(f"!{D}.querySelector('.empty-state.big').hidden")
    msg = p.evaluate(f"{D}.querySelector('.empty-state.big').textContent")
    assert "cannot be read" in msg and "host.xplane.pb" in msg
    p.screenshot(ARTIFACTS / "browser-corrupt-run.png")
    p.evaluate(f"(() => {{ const s = {D}.querySelector('.run-select'); s.value = {RUN!r}; s.dispatchEvent(new Event('change')); }})()")
    p.wait_for(f"{D}.querySelector('.empty-state.big').hidden && {D}.querySelector('.timeline').dataset.state === 'ready'")


def test_coordinate_spaces_and_hover_tooltip(page):
    p = page
    # TimeScale (timeline/coords.js): x = (t - t0) / nsPerPx; zoom keeps the time under x
    got = p.evaluate(f"""(() => {{ const S = {APP}.timeline.scale.constructor; const s = new S(1000, 3000, 200);
        const z = s.zoom(0.5, 50); const q = s.pan(20);
        return [s.x(2000), s.t(50), z.t(50), z.span, q.t0, q.t1]; }})()""")
    assert got == [100, 1500, 1500, 1000, 1200, 3200]
    # hovering an I/O call shows its name, size and file in the tooltip
    i = _zoom_to_single_io_item(p)
    name, file = p.evaluate(f"(() => {{ const d = {APP}.timeline.data; return [d.names[d.items.name[{i}]], d.files[d.items.file[{i}]]]; }})()")
    c = p.evaluate(f"{APP}.timeline.itemCenter({i})")
    x, y = _canvas_point(p, c["x"], c["y"])
    p.mouse("mouseMoved", x, y, button="none")
    p.wait_for(f"!{D}.querySelector('.tl-tooltip').hidden")
    tip = p.evaluate(f"[...{D}.querySelectorAll('.tl-tooltip div')].map((e) => e.textContent)")
    assert tip[0] == name and file in tip and any("moved" in t for t in tip)
    p.screenshot(ARTIFACTS / "browser-tooltip.png")


def test_findings_panel_renders_findings_as_text(page):
    """The panel shows the host's verdict, then the backend's findings (tb_iotrace.analysis on
    the synthetic trace: mostly small reads) with their impact, and renders a finding in the analysis module's shape with its
    evidence and files as text."""
    p = page
    p.wait_for(f"{D}.querySelector('.findings').textContent.includes('Most reads are small')")
    # the host's verdict on top of the findings, each finding's impact under it
    head = p.evaluate(f"{D}.querySelector('.findings .verdict .verdict-head').textContent")
    assert head.split(":")[0] in ("Input-bound", "Partly input-bound", "Not input-bound", "No verdict"), head
    assert p.evaluate(f"{D}.querySelector('.findings > .verdict') === {D}.querySelector('.findings').firstElementChild")
    assert "of step time" in p.evaluate(f"{D}.querySelector('.findings .finding .impact').textContent")
    p.evaluate(f"{D}.querySelector('.findings').scrollIntoView()")
    p.screenshot(ARTIFACTS / "browser-verdict.png")
    p.evaluate(f"""(async () => {{
        const m = await import({W}.location.href.replace(/plugin_entry.html.*$/, 'plugin/iotrace/static/views/findings.js'));
        m.renderFindings({D}.querySelector('.findings'), {{findings: [{{id: 'small_reads', severity: 'warning',
          title: 'Small reads', statement: 'Most reads are < 4 KiB', suggestion: 'Batch them',
          evidence: {{reads: 1200, median_bytes: 512}}, files: [{HOSTILE_NAME!r}]}}]}}, {{onFile: (f) => {APP}.selectFile(f)}});
        return true; }})()""")
    text = p.evaluate(f"{D}.querySelector('.findings').textContent")
    assert "Small reads" in text and "reads: 1200" in text and HOSTILE_NAME in text
    assert p.evaluate(f"{D}.querySelectorAll('.findings img').length") == 0
    p.evaluate(f"{D}.querySelector('.findings button.link').click()")
    p.wait_for(f"{D}.querySelector('.file-chip code') && {D}.querySelector('.file-chip code').textContent === {HOSTILE_NAME!r}")


def _delay_requests(p, pattern: str, ms: int) -> None:
    """Make the tab's fetches whose URL matches ``pattern`` (a JS regex source) answer
    ``ms`` later than the server does (the page's own fetch, wrapped)."""
    p.evaluate(f"""(() => {{ const w = {W}; const real = w.__realFetch || (w.__realFetch = w.fetch);
        const re = new RegExp({pattern!r});
        w.fetch = (url, opts) => real(url, opts).then((r) => re.test(String(url))
          ? new Promise((ok) => setTimeout(() => ok(r), {ms})) : r);
        return true; }})()""")


def _restore_fetch(p) -> None:
    p.evaluate(f"(() => {{ const w = {W}; if (w.__realFetch) w.fetch = w.__realFetch; return true; }})()")


def test_the_details_panel_shows_the_event_picked_last(page):
    """D12: the details panel shows the event picked last, even when the answer for the
    one picked before it arrives later."""
    p = page
    i = _zoom_to_single_io_item(p)
    # two different I/O events of the current view: the first one's answer is slowed down
    j = p.evaluate(f"""(() => {{ const d = {APP}.timeline.data, it = d.items;
        for (let k = 0; k < it.start.length; k++) {{
          if (k !== {i} && d.lanes[it.lane[k]].group === 'io' && it.count[k] === 1) return k; }}
        return -1; }})()""")
    assert j >= 0
    sel = "(k) => { const d = {A}.timeline.data; return { lane: d.lanes[d.items.lane[k]], index: d.items.index[k] }; }".replace("{A}", APP)
    first, second = p.evaluate(f"(() => {{ const s = {sel}; return [s({i}).index, s({j}).index]; }})()")
    assert first != second
    _delay_requests(p, f"event\\?.*index={int(first)}(&|$)", 1500)
    try:
        p.evaluate(f"(() => {{ const s = {sel}; {APP}.showEvent(s({i})); {APP}.showEvent(s({j})); return true; }})()")
        p.wait_for(f"{D}.querySelector('.details').dataset.index === '{int(second)}'", timeout=20)
        p.evaluate("new Promise((ok) => setTimeout(() => ok(true), 2500))")  # the slow answer has come by now
        assert p.evaluate(f"{D}.querySelector('.details').dataset.index") == str(int(second))
    finally:
        _restore_fetch(p)


def test_the_access_size_chart_shows_the_file_picked_last(page):
    """D12: selecting file A then file B shows B's access sizes even when A's answer is
    slower."""
    p = page
    files = p.evaluate(f"(() => {{ const f = {APP}.files, o = []; for (let k = 0; k < f.rows; k++) if (f.module[k] === 'POSIX') o.push(f.path[k]); return o; }})()")
    hists = {}
    for f in files[:40]:
        h = p.evaluate(f"""(async () => {{ const r = await {W}.fetch('histograms?run={RUN}&host=worker0&path=' + encodeURIComponent({f!r}));
            return (await r.json()).read; }})()""")
        hists.setdefault(tuple(h), f)
    assert len(hists) >= 2, "need two files with different access sizes"
    slow, fast = list(hists.values())[:2]
    _delay_requests(p, "histograms\\?.*path=" + re.escape(urllib.parse.quote(slow, safe="")), 1500)
    try:
        p.evaluate(f"(() => {{ {APP}.selectFile({slow!r}); {APP}.selectFile({fast!r}); return true; }})()")
        p.evaluate("new Promise((ok) => setTimeout(() => ok(true), 3000))")
        want = p.evaluate(f"""(async () => {{ const r = await {W}.fetch('histograms?run={RUN}&host=worker0&path=' + encodeURIComponent({fast!r}));
            return (await r.json()).read.map((v) => Math.round(v).toLocaleString('en-US')); }})()""")
        shown = p.evaluate(f"[...{D}.querySelectorAll('.histograms .bars.read .bar-value')].map((e) => e.textContent)")
        assert shown == want
        assert p.evaluate(f"{APP}.selectedFile") == fast
    finally:
        _restore_fetch(p)


def _select_run(p, run: str) -> None:
    p.evaluate(f"(() => {{ const s = {D}.querySelector('.run-select'); s.value = {run!r}; s.dispatchEvent(new Event('change')); }})()")
    p.wait_for(f"{APP}.capture && {APP}.capture.run === {run!r}"
               f" && {D}.querySelector('.timeline').dataset.state === 'ready'"
               f" && {D}.querySelector('#iotrace-root').dataset.panels === 'ready'", timeout=60)


def test_jax_capture_draws_io_beside_jax_threads_and_a_plain_one_says_why(page):
    """A JAX capture made with tb_iotrace: its I/O lanes sit under JAX's host threads, with ink,
    and the files table lists the five files it read; one made without says why it has none."""
    p = page
    _select_run(p, JAX_IO)
    lanes = p.evaluate(f"[...{D}.querySelectorAll('.tl-label')].map((e) => [e.dataset.key, e.dataset.group, e.textContent])")
    io = [k for k, g, _ in lanes if g == "io"]
    assert len(io) == 2 and any(g == "host" for _, g, _ in lanes)
    for key in io:
        assert ink(p, key) > 0.0005, key
    rows = p.evaluate(f"[...{D}.querySelectorAll('.files-table tbody tr:not(.detail)')].map((r) => r.dataset.path)")
    assert sorted(rows) == sorted([f"/tmp/tbio_jax_data/part{i}.npy" for i in range(4)] + ["/tmp/tbio_jax_data/side.bin"])
    assert p.evaluate(f"{D}.querySelector('.banner').hidden")
    p.screenshot(ARTIFACTS / "browser-jax-capture.png")
    _select_run(p, JAX_PLAIN)
    p.wait_for(f"!{D}.querySelector('.banner').hidden")
    msg = p.evaluate(f"{D}.querySelector('.banner').textContent")
    assert "JAX 0.10.2 (jaxlib 0.10.2, a version tb_iotrace hooks)" in msg and "not enabled" in msg
    assert not any(g == "io" for g in p.evaluate(f"[...{D}.querySelectorAll('.tl-label')].map((e) => e.dataset.group)"))
    p.screenshot(ARTIFACTS / "browser-jax-plain.png")
