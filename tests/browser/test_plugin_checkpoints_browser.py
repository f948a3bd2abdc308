"""The I/O tab's checkpoints in real headless Chromium (tests/browser/cdp.py): a two-rank
torch.distributed.checkpoint job (gloo, CPU) recorded with ``tb-iotrace run``; "All hosts"
shows the checkpoint lane under the steps (one row per rank, painted) and a table per save
with both ranks' bandwidth and finish time. Screenshot: test-artifacts/browser-checkpoints.png."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("websocket", reason="websocket-client is needed to drive Chromium (requirements-dev.txt)")
from cdp import CHROMIUM, Browser  # noqa: E402
from tab import APP, D, tensorboard  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
JOB = ROOT / "tests" / "integration" / "scripts" / "dcp_ranks_job.py"

pytestmark = [
    pytest.mark.browser, pytest.mark.torch, pytest.mark.slow,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} not installed (apt-get install chromium)"),
]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    work = tmp_path_factory.mktemp("dcp")
    logdir = work / "logdir"
    r = subprocess.run([sys.executable, "-m", "tb_iotrace", "run", "--quiet", "--flush", "0", "--logdir",
                        str(logdir / "dcp"), "--", sys.executable, str(JOB), str(work), "save"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    with tensorboard(logdir, work / "tensorboard.log") as url:
        yield url


def test_checkpoint_lane_and_per_save_tables(server):
    b = Browser(1500, 1100)
    p = b.new_page()
    try:
        p.call("Emulation.setDeviceMetricsOverride", width=1500, height=1100, deviceScaleFactor=1, mobile=False)
        p.navigate(server + "/#iotrace")
        p.wait_for(f"(() => {{ try {{ return {D}.querySelector('.timeline').dataset.state === 'ready'; }}"
                   " catch (e) { return false; } })()", timeout=60)
        p.evaluate(f"(() => {{ const s = {D}.querySelector('.host-select'); s.value = '__all__'; "
                   "s.dispatchEvent(new Event('change')); })()")
        # the checkpoints come with the findings' analysis, all hosts analysed in the background
        p.wait_for(f"(() => {{ try {{ return {D}.querySelectorAll('.checkpoints .ck-save').length === 2; }}"
                   " catch (e) { return false; } })()", timeout=240)
        labels = p.evaluate(f"[...{D}.querySelectorAll('.tl-ckpt-label')].map((e) => e.textContent)")
        assert labels == ["rank 0", "rank 1"]
        assert not p.evaluate(f"{D}.querySelector('.tl-ckpt-row').hidden")
        assert p.evaluate(f"{D}.querySelector('.timeline').dataset.checkpoints") == "4"
        # the lane is painted: blue pixels (a save) in each row
        painted = p.evaluate(f"""(() => {{
            const c = {D}.querySelector('.tl-ckpt'); const ctx = c.getContext('2d');
            const px = ctx.getImageData(0, 0, c.width, c.height).data; let n = 0;
            for (let i = 0; i < px.length; i += 4) if (px[i + 2] > 150 && px[i] < 120) n++;
            return n; }})()""")
        assert painted > 0
        # one table per save: both ranks with their MiB/s and finish time, one of them last
        rows = p.evaluate(f"[...{D}.querySelectorAll('.checkpoints .ck-save')].map((s) => "
                          "[...s.querySelectorAll('tbody tr')].map((r) => [...r.children].map((td) => td.textContent)))")
        for save in rows:
            assert [r[0] for r in save] == ["0", "1"]
            assert all(float(r[3]) > 0 for r in save) and sum("(last)" in r[5] for r in save) == 1
        # a click on a save's title zooms the timeline to it
        p.evaluate(f"{D}.querySelector('.checkpoints .ck-title').click()")
        p.wait_for(f"{APP}.timeline.scale.span < 5e9", timeout=10)
        kinds = {e["method"] for e in p.events}
        assert "Runtime.exceptionThrown" not in kinds
        p.screenshot(ARTIFACTS / "browser-checkpoints.png")
    finally:
        p.close()
        b.close()
