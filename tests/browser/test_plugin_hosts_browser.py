"""The I/O tab's "All hosts" view of a 64-host run in real headless Chromium (a real
TensorBoard process, over the DevTools protocol): 64 small synthetic captures (I/O only,
24 threads each: 1,536 lanes, taller than the ~32k px a browser canvas can be). The track
canvas stays the size of the viewport, the lanes on screen are drawn, scrolling brings
others in (asked of the server then, not before), and the per-host table lists every host
with the slow one marked. Screenshots go to ``test-artifacts/``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tb_iotrace.plugin.synthetic import synthetic_trace
from tb_iotrace.store.xplane import io_space_bytes

pytest.importorskip("websocket", reason="websocket-client is needed to drive Chromium (requirements-dev.txt)")
from cdp import CHROMIUM, Browser  # noqa: E402
from tab import APP, D, ink, tensorboard  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
RUN = "many_hosts"
HOSTS = [f"w{i:02d}" for i in range(64)]
THREADS = 24
SLOW = "w17"  # ten times the calls of the others: the most read time
BASE_NS = 1_700_000_000_000_000_000
CANVAS_LIMIT_PX = 32_767

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} not installed (apt-get install chromium)"),
]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("hosts")
    run = logdir / "plugins" / "profile" / RUN
    run.mkdir(parents=True)
    for i, host in enumerate(HOSTS):
        trace = synthetic_trace(2400 if host == SLOW else 240, 0, 2_000_000_000, n_threads=THREADS, n_files=6,
                                seed=i, base_ns=BASE_NS, hostile=False)
        (run / f"{host}.xplane.pb").write_bytes(io_space_bytes(trace, "/host:CPU", start_ns=BASE_NS))
    # the All-hosts findings answer after 0.2 s with the hosts done so far (the tab asks again)
    old = os.environ.get("TBIO_PLUGIN_FINDINGS_ALL_WAIT_S")
    os.environ["TBIO_PLUGIN_FINDINGS_ALL_WAIT_S"] = "0.2"
    try:
        with tensorboard(logdir, logdir / "tensorboard.log") as base:
            if old is None:
                os.environ.pop("TBIO_PLUGIN_FINDINGS_ALL_WAIT_S")
            else:
                os.environ["TBIO_PLUGIN_FINDINGS_ALL_WAIT_S"] = old
            yield base
    finally:
        if old is None:
            os.environ.pop("TBIO_PLUGIN_FINDINGS_ALL_WAIT_S", None)


@pytest.fixture(scope="module")
def page(server):
    b = Browser(1500, 1100)
    p = b.new_page()
    p.call("Emulation.setDeviceMetricsOverride", width=1500, height=1100, deviceScaleFactor=1, mobile=False)
    p.navigate(server + "/#iotrace")
    # (not waiting for the findings: every panel is drawn when its own answer comes)
    ready = f"(() => {{ try {{ return {D}.querySelector('.timeline').dataset.state === 'ready'; }} catch (e) {{ return false; }} }})()"
    p.wait_for(ready, timeout=90)
    p.evaluate(f"(() => {{ const s = {D}.querySelector('.host-select'); s.value = '__all__'; s.dispatchEvent(new Event('change')); return true; }})()")
    p.wait_for(f"{APP}.host === '__all__' && {APP}.capture && {APP}.capture.hosts.length === {len(HOSTS)} && {ready}",
               timeout=120)
    yield p
    p.close()
    b.close()


def _geometry(p) -> dict:
    return p.evaluate(f"""(() => {{ const t = {APP}.timeline;
        return {{ layout: t.layout.height, lanes: {APP}.capture.lanes.length, cssHeight: t.canvas.getBoundingClientRect().height,
                 backing: t.canvas.height, viewport: t.scroll.clientHeight, window: {APP}.root.ownerDocument.defaultView.innerHeight,
                 asked: t.dataLanes === null ? -1 : t.dataLanes.size, viewTop: t.viewTop }}; }})()""")


def _lane_key(p, host: str, k: int = 0) -> str:
    return p.evaluate(f"{APP}.capture.lanes.filter((l) => l.host === {host!r})[{k}].key")


def test_the_canvas_fits_the_viewport_and_only_visible_lanes_are_asked_for(page):
    p = page
    g = _geometry(p)
    assert g["lanes"] == len(HOSTS) * THREADS
    assert g["layout"] > CANVAS_LIMIT_PX  # all lanes stacked would not fit in one canvas
    assert 100 < g["cssHeight"] <= g["viewport"] <= g["window"]
    assert g["backing"] <= g["viewport"] * 2  # device pixels: dpr 1 here
    assert 0 < g["asked"] < 200  # the lanes on screen and a viewport's margin, not 1,536
    # the first host's lanes are drawn
    assert ink(p, _lane_key(p, HOSTS[0])) > 0.001
    p.screenshot(ARTIFACTS / "browser-hosts-top.png")


def test_scrolling_brings_other_lanes_in(page):
    p = page
    for host in (HOSTS[31], HOSTS[-1]):
        key = _lane_key(p, host, THREADS - 1)
        assert not p.evaluate(f"{APP}.timeline.hasLane({key!r})")  # off screen: not asked for yet
        assert ink(p, key) > 0.001, host
        g = _geometry(p)
        assert g["viewTop"] > 0 and g["cssHeight"] <= g["viewport"]
        assert 0 < g["asked"] < 200
    p.screenshot(ARTIFACTS / "browser-hosts-bottom.png")
    # scrolling the lane list itself (as the scroll bar does): the canvas follows, and the
    # lanes that come into view are asked for and drawn
    first = _lane_key(p, HOSTS[0])
    assert not p.evaluate(f"{APP}.timeline.hasLane({first!r})")
    p.evaluate(f"(() => {{ {APP}.timeline.scroll.scrollTop = 0; return true; }})()")
    p.wait_for(f"{APP}.timeline.viewTop === 0 && {APP}.timeline.hasLane({first!r})", timeout=30)
    assert ink(p, first) > 0.001


def test_only_the_labels_near_the_screen_are_built(page):
    p = page
    p.evaluate(f"(() => {{ {APP}.timeline.scroll.scrollTop = 0; return true; }})()")
    p.wait_for(f"{APP}.timeline.viewTop === 0", timeout=30)
    labels = p.evaluate(f"[...{D}.querySelectorAll('.tl-label')].map((e) => e.dataset.key)")
    assert 0 < len(labels) < 300  # of 1,536 lanes
    assert _lane_key(p, HOSTS[0]) in labels and _lane_key(p, HOSTS[-1], THREADS - 1) not in labels
    last = _lane_key(p, HOSTS[-1], THREADS - 1)
    p.evaluate(f"(() => {{ {APP}.timeline.showLane({last!r}); return true; }})()")
    p.wait_for(f"!!{D}.querySelector('.tl-label[data-key=\"{last}\"]')", timeout=30)
    assert p.evaluate(f"{D}.querySelectorAll('.tl-label').length") < 300


def test_all_hosts_findings_are_asked_for_until_complete(page):
    """The findings of 64 hosts come from a background child: the tab asks again (with
    progress shown) until none is pending, also across a switch of the I/O lanes (which
    keeps the panels)."""
    p = page
    state = p.evaluate(f"{APP}.root.dataset.findings")
    if state == "pending":  # (the first answer came after 0.2 s: it is, unless the child was quick)
        assert p.evaluate(f"{D}.querySelector('.findings-progress progress').max") == len(HOSTS)
        for io_by in ("file", "thread"):
            p.evaluate(f"(() => {{ const s = {D}.querySelector('.ioby-select'); s.value = '{io_by}'; "
                       "s.dispatchEvent(new Event('change')); return true; })()")
            p.wait_for(f"{APP}.root.dataset.state === 'ready' && {APP}.capture.io_by === '{io_by}'", timeout=60)
    p.wait_for(f"{APP}.root.dataset.findings === 'complete'", timeout=240, interval=0.2)
    assert not p.evaluate(f"!!{D}.querySelector('.findings-progress')")
    notes = p.evaluate(f"[...{D}.querySelectorAll('.finding-note')].map((e) => e.textContent)")
    assert not any("still being analysed" in n for n in notes), notes


def test_the_hosts_table_lists_every_host_and_marks_the_slow_one(page):
    p = page
    p.wait_for(f"{D}.querySelectorAll('.hosts-table tbody tr').length === {len(HOSTS)}", timeout=30)
    assert not p.evaluate(f"{D}.querySelector('.hosts-section').hidden")
    rows = p.evaluate(f"[...{D}.querySelectorAll('.hosts-table tbody tr')].map((r) => r.dataset.host)")
    assert sorted(rows) == HOSTS
    assert p.evaluate(f"[...{D}.querySelectorAll('.hosts-table tbody tr.slowest')].map((r) => r.dataset.host)") == [SLOW]
    assert SLOW in p.evaluate(f"{D}.querySelector('.hosts .chart-note').textContent")
    # sorted by read time, most first: the slow host on top
    p.evaluate(f"{D}.querySelector('.hosts-table th[data-key=read_time_s]').click()")
    assert p.evaluate(f"{D}.querySelector('.hosts-table tbody tr').dataset.host") == SLOW
    p.evaluate(f"{D}.querySelector('.hosts-section').scrollIntoView()")
    p.screenshot(ARTIFACTS / "browser-hosts-table.png")
    # clicking a host shows it alone
    p.evaluate(f"{D}.querySelector('.hosts-table tbody tr[data-host={SLOW}]').click()")
    p.wait_for(f"{APP}.host === {SLOW!r} && {APP}.capture && {APP}.capture.hosts.length === 1", timeout=60)
    assert p.evaluate(f"{D}.querySelector('.hosts-section').hidden")
