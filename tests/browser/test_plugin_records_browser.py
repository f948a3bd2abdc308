"""The I/O tab on a whole-run record (``tb-iotrace run``) in real headless Chromium, driving a
real TensorBoard process over the DevTools protocol (tests/browser/cdp.py).

Data: a small script run under ``tb-iotrace run`` (run ``train/iotrace``): its main thread
writes two files (one named ``<img src=x onerror=alert(1)>.bin``), a thread named ``reader``
reads one back in 4 KiB reads; and a process SIGKILLed after a periodic flush (run
``killed/iotrace``, a partial record, beside a copy of it named ``<img src=x onerror=alert(2)>.9``).
No TensorFlow capture, no GPU data. Screenshots go to
``test-artifacts/``.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tb_iotrace.store.runrecord import RecordError, read_record, table_path

pytest.importorskip("websocket", reason="websocket-client is needed to drive Chromium (requirements-dev.txt)")
from cdp import CHROMIUM, Browser  # noqa: E402
from tab import APP, D, ink, tensorboard  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
EVIL_FILE = "<img src=x onerror=alert(1)>.bin"
EVIL_HOST = "<img src=x onerror=alert(2)>.9"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} not installed (apt-get install chromium)"),
]


SCRIPT = textwrap.dedent(f"""
    import ctypes, os, sys, threading
    d = sys.argv[1]
    data = os.path.join(d, "data.bin")
    with open(data, "wb") as f:
        f.write(os.urandom(400_000))
    with open(os.path.join(d, {EVIL_FILE!r}), "wb") as f:
        f.write(b"x" * 1000)
    def reader():
        ctypes.CDLL(None).prctl(15, b"reader")  # PR_SET_NAME: the record keeps OS thread names
        fd = os.open(data, os.O_RDONLY)
        while os.read(fd, 4096):
            pass
        os.close(fd)
    t = threading.Thread(target=reader)
    t.start(); t.join()
""")

KILLED = textwrap.dedent("""
    import os, sys, time
    with open(sys.argv[1], "wb") as f:
        f.write(b"k" * 3333)
    print("ok", flush=True)
    time.sleep(60)
""")



@pytest.fixture(scope="module")
def server(tmp_path_factory):
    base = tmp_path_factory.mktemp("rec")
    data = base / "data"
    data.mkdir()
    (base / "job.py").write_text(SCRIPT)
    logdir = base / "logdir"
    r = subprocess.run([sys.executable, "-m", "tb_iotrace", "run", "--flush", "0", "--logdir", str(logdir / "train"),
                        "--", sys.executable, str(base / "job.py"), str(data)],
                       capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr[-3000:]
    (base / "killed.py").write_text(KILLED)
    k = subprocess.Popen([sys.executable, "-m", "tb_iotrace", "run", "--flush", "0.3", "--logdir", str(logdir / "killed"),
                          "--", sys.executable, str(base / "killed.py"), str(data / "k.bin")],
                         stdout=subprocess.PIPE, start_new_session=True)
    try:
        assert k.stdout.readline().strip() == b"ok"
        rec = logdir / "killed" / "plugins" / "iotrace"
        # kill once a periodic flush holds the write (flushes back off with their own cost,
        # so a fixed wait can end before the first flush after it: the tab then had 0 files)
        deadline = time.monotonic() + 60
        while not _flushed(rec, str(data / "k.bin")) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _flushed(rec, str(data / "k.bin")), "no periodic flush recorded the killed job's write in 60 s"
        os.killpg(k.pid, signal.SIGKILL)
    finally:
        k.wait(timeout=30)
        k.stdout.close()
    (only,) = rec.glob("*.json")
    shutil.copyfile(only, rec / f"{EVIL_HOST}.json")
    shutil.copyfile(table_path(only), table_path(rec / f"{EVIL_HOST}.json"))   # its file table beside it
    with tensorboard(logdir, base / "tensorboard.log") as url:
        yield url, data


def _flushed(rec: Path, path: str) -> bool:
    """A record in ``rec`` lists ``path`` with its bytes written."""
    for j in rec.glob("*.json"):
        try:
            if any(f["path"] == path and f["counters"].get("POSIX_BYTES_WRITTEN") == 3333
                   for f in read_record(j).files):
                return True
        except (RecordError, OSError, ValueError):
            pass                        # being replaced: look again
    return False


@pytest.fixture(scope="module")
def browser():
    b = Browser(1500, 1100)
    yield b
    b.close()


def test_tab_shows_a_whole_run_record(server, browser):
    url, data = server
    p = browser.new_page()
    try:
        p.call("Emulation.setDeviceMetricsOverride", width=1500, height=1100, deviceScaleFactor=1, mobile=False)
        p.navigate(url + "/#iotrace")
        p.wait_for(f"(() => {{ try {{ return {D}.querySelector('.timeline').dataset.state === 'ready'"
                   f" && {D}.querySelector('#iotrace-root').dataset.panels === 'ready'; }} catch (e) {{ return false; }} }})()",
                   timeout=60)
        # the run picker lists the record folder under the name `tb-iotrace report` uses
        opts = p.evaluate(f"[...{D}.querySelectorAll('.run-select option')].map((o) => [o.value, o.textContent])")
        assert opts == [["killed/iotrace", "killed/iotrace (whole run, 2 processes)"],
                        ["train/iotrace", "train/iotrace (whole run, 1 process)"]]
        assert p.evaluate(f"{D}.querySelector('.run-select').value") == "train/iotrace"
        # I/O lanes only, one per thread, named after the record's threads; each drawn
        lanes = p.evaluate(f"[...{D}.querySelectorAll('.tl-label')].map((e) => [e.dataset.key, e.dataset.group, e.textContent])")
        assert {g for _, g, _ in lanes} == {"io"} and len(lanes) == 2
        assert any(name.startswith("reader (tid ") for _, _, name in lanes)
        assert p.evaluate(f"{D}.querySelectorAll('.tl-header').length") == 1
        for key, _, _ in lanes:
            assert ink(p, key) > 0.0005, key
        assert p.evaluate(f"{D}.querySelector('.tl-corner').textContent") == "time since process start"
        assert p.evaluate(f"{D}.querySelector('.tl-nolanes').hidden")
        # which process it is
        info = p.evaluate(f"{D}.querySelector('.proc-info').textContent")
        assert "job.py" in info and "exited" in info
        # the files table: the record's counters, the hostile name as text
        rows = p.evaluate(f"[...{D}.querySelectorAll('.files-table tbody tr:not(.detail)')].map((r) => r.dataset.path)")
        assert str(data / "data.bin") in rows and str(data / EVIL_FILE) in rows
        cells = p.evaluate(f"[...{D}.querySelectorAll('.files-table tbody tr td:first-child')].map((td) => td.textContent)")
        assert str(data / EVIL_FILE) in cells
        assert p.evaluate(f"{D}.querySelectorAll('img').length") == 0
        # the whole-run series: one strip, columns with read bars, a click zooms the timeline there
        assert not p.evaluate(f"{D}.querySelector('.runseries-section').hidden")
        assert p.evaluate(f"{D}.querySelectorAll('.runseries .rs-row').length") == 1
        assert p.evaluate(f"[...{D}.querySelectorAll('.runseries .rs-read')].some((b) => parseFloat(b.style.height) > 0)")
        p.evaluate(f"(() => {{ const c = [...{D}.querySelectorAll('.runseries .rs-col')]; c[c.length - 1].click(); }})()")
        p.wait_for(f"{APP}.timeline.scale && {APP}.timeline.scale.t0 > 0", timeout=10)
        # per-step panel: equal windows, saying why; findings from the record's trace
        assert "whole-run record" in p.evaluate(f"{D}.querySelector('.steps').textContent")
        p.wait_for(f"{D}.querySelector('.findings').textContent.includes('Most reads are small')", timeout=30)
        kinds = {e["method"] for e in p.events}
        assert "Runtime.exceptionThrown" not in kinds and "Page.javascriptDialogOpening" not in kinds
        p.screenshot(ARTIFACTS / "browser-record.png")
        # the partial record: counters only, a note where the timeline would be, the warning
        p.evaluate(f"(() => {{ const s = {D}.querySelector('.run-select'); s.value = 'killed/iotrace'; s.dispatchEvent(new Event('change')); }})()")
        p.wait_for(f"{APP}.capture && {APP}.capture.run === 'killed/iotrace' && {D}.querySelector('#iotrace-root').dataset.panels === 'ready'", timeout=30)
        assert p.evaluate(f"{D}.querySelectorAll('.tl-label').length") == 0
        assert not p.evaluate(f"{D}.querySelector('.tl-nolanes').hidden")
        assert "No per-call trace" in p.evaluate(f"{D}.querySelector('.tl-nolanes').textContent")
        assert "Partial record" in p.evaluate(f"{D}.querySelector('.banner').textContent")
        assert "did not finish" in p.evaluate(f"{D}.querySelector('.proc-info').textContent")
        p.wait_for(f"[...{D}.querySelectorAll('.files-table tbody tr')].some((r) => r.dataset.path === {str(data / 'k.bin')!r})", timeout=20)
        # the findings panel says its findings come from the counters only
        p.wait_for(f"[...{D}.querySelectorAll('.findings .finding-note')].some((n) => n.textContent.includes('This record is partial'))", timeout=30)
        kinds = {e["method"] for e in p.events}
        assert "Runtime.exceptionThrown" not in kinds
        p.screenshot(ARTIFACTS / "browser-record-partial.png")
        # a hostile record name is a host name shown as text
        hosts = p.evaluate(f"[...{D}.querySelectorAll('.host-select option')].map((o) => o.textContent)")
        assert EVIL_HOST in hosts and "All hosts (one clock)" in hosts
        p.evaluate(f"(() => {{ const s = {D}.querySelector('.host-select'); s.value = {EVIL_HOST!r}; s.dispatchEvent(new Event('change')); }})()")
        p.wait_for(f"{APP}.capture && {APP}.capture.hosts[0] === {EVIL_HOST!r} && {D}.querySelector('#iotrace-root').dataset.panels === 'ready'", timeout=30)
        assert p.evaluate(f"{D}.querySelector('.proc-info b').textContent") == f"{EVIL_HOST}: "
        assert p.evaluate(f"{D}.querySelectorAll('img').length") == 0
        kinds = {e["method"] for e in p.events}
        assert "Runtime.exceptionThrown" not in kinds and "Page.javascriptDialogOpening" not in kinds
    finally:
        p.close()
