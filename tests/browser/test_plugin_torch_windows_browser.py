"""The I/O tab's table of a job's windows when they are PyTorch traces, in real headless Chromium
(a real TensorBoard process): three windows of job ``pytorch`` (a real trace moved by hours,
tests/unit/fixtures/moved_torch_trace.py), one folder each as ``tb-iotrace run --profile-every``
and ``attach`` write them, and one the job's own torch.profiler wrote. The table lists them in
time order with who took each, and a click on a row shows that window. A screenshot goes to
``test-artifacts/``."""
from __future__ import annotations

from pathlib import Path

import pytest

from moved_capture import HOUR_NS
from moved_torch_trace import write_moved_trace

pytest.importorskip("websocket", reason="websocket-client is needed to drive Chromium (requirements-dev.txt)")
from cdp import CHROMIUM, Browser  # noqa: E402
from tab import APP, D, tensorboard  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
T0 = 1795474975139669005            # the trace's profile start
RUN = "pytorch/2026_11_24_12_22_55_7_1"
ATTACH = "pytorch/2026_11_24_11_22_55_9_1"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} not installed (apt-get install chromium)"),
]

ROWS = (f"Array.from({D}.querySelectorAll('.windows-table tbody tr'))"
        ".map((tr) => [tr.dataset.run, tr.className, tr.children[3].textContent, tr.children[4].textContent,"
        " tr.children[8].textContent, tr.children[9].textContent])")


def _shown(p, run: str) -> list:
    p.wait_for(f"{APP}.capture && {APP}.capture.run === '{run}' && {D}.querySelector('#iotrace-root').dataset.panels"
               f" === 'ready' && !{D}.querySelector('.windows-section').hidden"
               f" && {D}.querySelector('.windows-table tr.current').dataset.run === '{run}'", timeout=90)
    return p.evaluate(ROWS)


def test_tab_lists_pytorch_windows_with_who_took_them(tmp_path: Path) -> None:
    logdir = tmp_path / "logs"
    job = logdir / "pytorch"
    write_moved_trace(job / "own", 0)        # sorts last by name: the tab opens it first
    write_moved_trace(job / ATTACH.split("/")[1], HOUR_NS, {"by": "tb-iotrace attach", "at_ns": T0 + HOUR_NS, "pid": 9})
    write_moved_trace(job / RUN.split("/")[1], 2 * HOUR_NS,
                      {"by": "tb-iotrace run --profile-every", "at_ns": T0 + 2 * HOUR_NS, "pid": 7})
    with tensorboard(logdir, tmp_path / "tensorboard.log") as base:
        b = Browser(1500, 1100)
        try:
            p = b.new_page()
            p.call("Emulation.setDeviceMetricsOverride", width=1500, height=1100, deviceScaleFactor=1, mobile=False)
            p.navigate(base + "/#iotrace")
            rows = _shown(p, "pytorch/own")
            assert [r[0] for r in rows] == ["pytorch/own", ATTACH, RUN]
            assert [r[1] for r in rows] == ["current", "", ""]
            assert [r[2] for r in rows] == ["5", "5", "5"]                  # the trace's five steps
            assert all(r[3].endswith("%") and r[3] != "0.0 %" for r in rows), rows   # its input wait
            assert [r[4] for r in rows] == ["PyTorch"] * 3
            assert rows[0][5] == "the job (its torch.profiler)"
            assert rows[1][5].startswith("tb-iotrace attach at ") and rows[1][5].endswith("(pid 9)")
            assert rows[2][5].startswith("tb-iotrace run --profile-every at ") and rows[2][5].endswith("(pid 7)")
            note = p.evaluate(f"{D}.querySelector('.windows .chart-note').textContent")
            assert note.startswith("3 windows of pytorch.")
            ARTIFACTS.mkdir(exist_ok=True)
            p.evaluate(f"{D}.querySelector('.windows-section').scrollIntoView()")
            p.screenshot(ARTIFACTS / "windows_table_pytorch.png")
            # a click on the run window shows it (its timeline, verdict and findings), and the table marks it
            p.evaluate(f"{D}.querySelector('.windows-table tr[data-run=\"{RUN}\"]').click()")
            rows = _shown(p, RUN)
            assert [r[1] for r in rows] == ["", "", "current"]
            p.close()
        finally:
            b.close()
