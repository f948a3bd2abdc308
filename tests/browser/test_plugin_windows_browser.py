"""The I/O tab's table of a job's profile windows in real headless Chromium (a real TensorBoard
process): three windows of one job (a real JAX capture moved by hours, tests/unit/fixtures/
moved_capture.py) whose names sort in another order than their starts. The table lists them in
time order with the shown window marked, and a click on a row shows that window. A screenshot
goes to ``test-artifacts/``."""
from __future__ import annotations

from pathlib import Path

import pytest

from moved_capture import job_logdir

pytest.importorskip("websocket", reason="websocket-client is needed to drive Chromium (requirements-dev.txt)")
from cdp import CHROMIUM, Browser  # noqa: E402
from tab import APP, D, tensorboard  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
# session -> hours after the capture's start: the tab opens the last run by name (job/d), the
# first window in time
SHIFTS = {"b": 1, "c": 2, "d": 0}

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} not installed (apt-get install chromium)"),
]

ROWS = (f"Array.from({D}.querySelectorAll('.windows-table tbody tr'))"
        ".map((tr) => [tr.dataset.run, tr.className, tr.children[1].textContent, tr.children[3].textContent])")


def _shown(p, run: str) -> list:
    p.wait_for(f"{APP}.capture && {APP}.capture.run === '{run}' && {D}.querySelector('#iotrace-root').dataset.panels"
               f" === 'ready' && !{D}.querySelector('.windows-section').hidden"
               f" && {D}.querySelector('.windows-table tr.current').dataset.run === '{run}'", timeout=90)
    return p.evaluate(ROWS)


def test_tab_lists_a_jobs_windows_in_time_order(tmp_path: Path) -> None:
    logdir = job_logdir(tmp_path / "logs", SHIFTS)
    with tensorboard(logdir, tmp_path / "tensorboard.log") as base:
        b = Browser(1500, 1100)
        try:
            p = b.new_page()
            p.call("Emulation.setDeviceMetricsOverride", width=1500, height=1100, deviceScaleFactor=1, mobile=False)
            p.navigate(base + "/#iotrace")
            rows = _shown(p, "job/d")
            assert [r[0] for r in rows] == ["job/d", "job/b", "job/c"]
            assert [r[1] for r in rows] == ["current", "", ""]
            starts = [r[2] for r in rows]
            assert starts == sorted(starts) and len(set(starts)) == 3            # an hour apart, UTC
            assert [r[3] for r in rows] == ["4", "4", "4"]                        # the capture's four steps
            note = p.evaluate(f"{D}.querySelector('.windows .chart-note').textContent")
            assert note.startswith("3 windows of job.")
            ARTIFACTS.mkdir(exist_ok=True)
            p.evaluate(f"{D}.querySelector('.windows-section').scrollIntoView()")
            p.screenshot(ARTIFACTS / "windows_table.png")
            # a click on the last window shows it, and the table marks it
            p.evaluate(f"{D}.querySelector('.windows-table tr[data-run=\"job/c\"]').click()")
            rows = _shown(p, "job/c")
            assert [r[0] for r in rows] == ["job/d", "job/b", "job/c"]
            assert [r[1] for r in rows] == ["", "", "current"]
            p.close()
        finally:
            b.close()
