"""The I/O tab on a PyTorch (Kineto) trace in real headless Chromium, driving a real TensorBoard
process over the DevTools protocol (tests/browser/cdp.py).

Data: tests/data/torch_loader.pt.trace.json.gz, a real CPU torch 2.13 run of
tb_iotrace.torch.trace_handler whose DataLoader(num_workers=2) read 8 known files (sizes and
pids in tests/data/torch_loader.json), in ``train/`` where the trace handler writes it; beside it
``broken/`` with a truncated trace. Screenshots go to ``test-artifacts/``.
"""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

pytest.importorskip("websocket", reason="websocket-client is needed to drive Chromium (requirements-dev.txt)")
from cdp import CHROMIUM, Browser  # noqa: E402
from tab import APP, D, ink, tensorboard  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
ARTIFACTS = ROOT / "test-artifacts"
TRACE = DATA / "torch_loader.pt.trace.json.gz"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} not installed (apt-get install chromium)"),
]


@pytest.fixture(scope="module")
def manifest() -> dict:
    return json.loads((DATA / "torch_loader.json").read_text())


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("torch") / "logs"
    (logdir / "train").mkdir(parents=True)
    shutil.copyfile(TRACE, logdir / "train" / "worker0.1795474975155532512.pt.trace.json.gz")
    (logdir / "broken").mkdir()
    # a synthetic trace whose workers GET objects (tests/unit/fixtures/torch_fetch_trace.py)
    sys.path.insert(0, str(ROOT / "tests" / "unit" / "fixtures"))
    import torch_fetch_trace

    (logdir / "objects").mkdir()
    torch_fetch_trace.make(logdir / "objects" / "w0.1790857026000.pt.trace.json.gz", object_ms=2)
    (logdir / "broken" / "worker0.1.pt.trace.json.gz").write_bytes(TRACE.read_bytes()[:400])
    with tensorboard(logdir, logdir.parent / "tensorboard.log") as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    b = Browser(1500, 1100)
    yield b
    b.close()


def test_tab_shows_a_pytorch_run(server, browser, manifest):
    p = browser.new_page()
    try:
        p.call("Emulation.setDeviceMetricsOverride", width=1500, height=1100, deviceScaleFactor=1, mobile=False)
        p.navigate(server + "/#iotrace")
        p.wait_for(f"(() => {{ try {{ return {D}.querySelector('.timeline').dataset.state === 'ready'"
                   f" && {D}.querySelector('#iotrace-root').dataset.panels === 'ready'; }} catch (e) {{ return false; }} }})()",
                   timeout=90)
        # the run is listed (the trace folder), its trace a host named after the worker
        opts = p.evaluate(f"[...{D}.querySelectorAll('.run-select option')].map((o) => [o.value, o.textContent])")
        assert opts == [["broken", "broken (PyTorch, 1 trace)"], ["objects", "objects (PyTorch, 1 trace)"],
                        ["train", "train (PyTorch, 1 trace)"]]
        assert p.evaluate(f"{D}.querySelector('.run-select').value") == "train"
        hosts = p.evaluate(f"[...{D}.querySelectorAll('.host-select option')].map((o) => o.value)")
        assert "worker0" in hosts
        # lanes: the main thread's aten ops, one I/O lane per DataLoader worker; each drawn
        lanes = p.evaluate(f"[...{D}.querySelectorAll('.tl-label')].map((e) => [e.dataset.key, e.dataset.group, e.textContent])")
        groups = {g for _, g, _ in lanes}
        assert groups == {"host", "io"}, lanes
        ops = [k for k, g, _ in lanes if g == "host"]
        io = [(k, name) for k, g, name in lanes if g == "io"]
        assert len(ops) == 1 and len(io) == 2
        for pid in manifest["worker_pids"]:
            assert any(name.startswith(f"worker {pid}: ") for _, name in io), io
        for key in ops + [k for k, _ in io]:
            assert ink(p, key) > 0.0005, key
        # the steps are the ProfilerStep#N ranges
        assert p.evaluate(f"{APP}.capture.steps.map((s) => s.name)") == ["0", "1", "2", "3", "4"]
        p.wait_for(f"{D}.querySelector('.steps').textContent.includes('ProfilerStep#')", timeout=30)
        # the files table: every file the workers read, with its exact bytes (the counter detail)
        rows = p.evaluate(f"[...{D}.querySelectorAll('.files-table tbody tr:not(.detail)')].map((r) => r.dataset.path)")
        assert set(manifest["files"]) <= set(rows)
        for path, size in manifest["files"].items():
            p.evaluate(f"{APP}.selectFile({path!r})")
            p.wait_for(f"{D}.querySelector('.files-table tr.selected') !== null && "
                       f"{D}.querySelector('.files-table tr.selected').dataset.path === {path!r}", timeout=20)
            got = p.evaluate(f"""(() => {{
                const c = [...{D}.querySelectorAll('.files-table tr.detail .counter')]
                  .find((e) => e.querySelector('.cname').textContent === 'POSIX_BYTES_READ');
                return c ? c.querySelector('.cval').textContent : null; }})()""")
            assert got is not None and int(got.replace(",", "")) == size, (path, got)
        kinds = {e["method"] for e in p.events}
        assert "Runtime.exceptionThrown" not in kinds and "Page.javascriptDialogOpening" not in kinds
        p.screenshot(ARTIFACTS / "browser-torch.png")
        # a truncated trace: a clear error for that run, and the good run loads again after
        p.evaluate(f"(() => {{ const s = {D}.querySelector('.run-select'); s.value = 'broken'; s.dispatchEvent(new Event('change')); }})()")
        p.wait_for(f"!{D}.querySelector('.empty-state.big').hidden", timeout=30)
        msg = p.evaluate(f"{D}.querySelector('.empty-state.big').textContent")
        assert "not a readable Kineto trace" in msg and "worker0.1.pt.trace.json.gz" in msg, msg
        p.evaluate(f"(() => {{ const s = {D}.querySelector('.run-select'); s.value = 'train'; s.dispatchEvent(new Event('change')); }})()")
        p.wait_for(f"{D}.querySelector('.empty-state.big').hidden && {D}.querySelector('.timeline').dataset.state === 'ready'",
                   timeout=30)
        kinds = {e["method"] for e in p.events}
        assert "Runtime.exceptionThrown" not in kinds
    finally:
        p.close()


def test_object_lanes_and_steps(server, browser):
    """A run whose workers GET objects: one object lane per worker, drawn, its requests named in
    the tooltip with their bytes; the steps table has the object columns."""
    p = browser.new_page()
    try:
        p.call("Emulation.setDeviceMetricsOverride", width=1500, height=1100, deviceScaleFactor=1, mobile=False)
        p.navigate(server + "/#iotrace")
        p.wait_for(f"(() => {{ try {{ return {D}.querySelector('.timeline').dataset.state === 'ready'; }}"
                   f" catch (e) {{ return false; }} }})()", timeout=90)
        p.evaluate(f"(() => {{ const s = {D}.querySelector('.run-select'); s.value = 'objects'; s.dispatchEvent(new Event('change')); }})()")
        p.wait_for(f"{APP}.capture && {APP}.capture.lanes.some((l) => l.group === 'object')"
                   f" && {D}.querySelector('.timeline').dataset.state === 'ready'", timeout=60)
        lanes = p.evaluate(f"[...{D}.querySelectorAll('.tl-label')].map((e) => [e.dataset.key, e.dataset.group])")
        obj = sorted(k for k, g in lanes if g == "object")
        assert obj == ["obj.p201.t201", "obj.p202.t202"], lanes
        heads = p.evaluate(f"[...{D}.querySelectorAll('.tl-header, [data-group]')].map((e) => e.textContent)")
        assert any("Object requests" in h for h in heads), heads
        for key in obj:
            assert ink(p, key) > 0.0005, key
        # hovering a request: its method and object, its bytes
        tip = p.evaluate(f"""(() => {{
            const t = {APP}.timeline, d = t.data, it = d.items;
            let i = -1;
            for (let k = 0; k < it.name.length; k++)
              if (d.lanes[it.lane[k]].group === 'object' && it.count[k] === 1 && it.bytes[k] > 0) {{ i = k; break; }}
            if (i < 0) return null;
            const c = t.itemCenter(i);
            t.scrollIntoView(c.y - 30, c.y + 30);
            const c2 = t.itemCenter(i), r = t.plot.getBoundingClientRect();
            t.hover({{ clientX: r.left + c2.x, clientY: r.top + c2.y }});
            return [...{D}.querySelectorAll('.tl-tooltip div')].map((e) => e.textContent); }})()""")
        assert tip is not None and tip[0].startswith("GET s3://objs/shards/s0"), tip
        assert "16.0 KiB moved" in tip, tip
        # the panels of this run (its capture is shown, so "loading" was set before): the steps
        # table of the run shown first stands until this run's steps come
        p.wait_for(f"{D}.querySelector('#iotrace-root').dataset.panels === 'ready'", timeout=60)
        cols = p.evaluate(f"[...{D}.querySelectorAll('.steps-table th')].map((e) => e.textContent)")
        assert "Object requests" in cols and "Object bytes" in cols, cols
        row = p.evaluate(f"[...{D}.querySelector('.steps-table tbody tr').children].map((e) => e.textContent)")
        assert row[cols.index("Object requests")] == "4" and row[cols.index("Object bytes")] == "64.0 KiB", row
        kinds = {e["method"] for e in p.events}
        assert "Runtime.exceptionThrown" not in kinds
        p.screenshot(ARTIFACTS / "browser-torch-objects.png")
    finally:
        p.close()
