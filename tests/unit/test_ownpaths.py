"""tb_iotrace's own files (tb_iotrace.base.ownpaths: profile windows, records, staging, the
PyTorch spool) are never the job's I/O: not data files, not checkpoint saves, not findings. Before,
a whole-run record under ``run --profile-every`` listed its profile windows (18.2 MiB) as a
checkpoint save."""
from __future__ import annotations

import pytest

from tb_iotrace.analysis import analyze
from tb_iotrace.base.codepaths import code_paths
from tb_iotrace.base.ownpaths import is_own_path

from test_analysis import make_trace
from test_checkpoint_detection import MOUNTS, T0, MiB, save

WINDOW = "/root/.cache/tb_iotrace/staging/window-ab12/plugins/profile/2026_11_28_04_00_00/host.xplane.pb"
PUBLISHED = "/logs/run1/plugins/profile/2026_11_28_04_00_00/host.xplane.pb"


@pytest.mark.parametrize("path", [WINDOW, PUBLISHED, "/logs/run1/plugins/iotrace/host.123.json",
                                  "/logs/run1/plugins/iotrace/host.123.files.npz",
                                  "/tmp/tb_iotrace-torch-x1y2/3.456.json",
                                  "/root/.cache/tb_iotrace/summaries/abc.json"])
def test_own_paths(path: str) -> None:
    assert is_own_path(path) and path in code_paths([path])


@pytest.mark.parametrize("path", ["/data/ckpt/model.pt", "/logs/run1/train/events.out.tfevents.1.host",
                                  "/data/profile/x.bin", "/work/tb_iotrace_data/a.npy"])
def test_job_paths_are_not_own(path: str) -> None:
    assert not is_own_path(path) and path not in code_paths([path])


def test_profile_windows_are_not_a_checkpoint_save() -> None:
    """A window profiled into staging and published to the log dir, 18 MiB each, written as a
    checkpoint would be (chunks, fsync, rename): no checkpoint, no data file, no finding; the
    same bytes to /data are a save (the control)."""
    staged, end = save(WINDOW + ".tmp", T0, 18 * MiB, MiB, rename=WINDOW)
    published, _ = save(PUBLISHED + ".tmp", end + 10**6, 18 * MiB, MiB, rename=PUBLISHED)
    a = analyze(None, trace=make_trace(staged + published), mountinfo=MOUNTS)
    assert a is not None and a.checkpoints == [] and a.findings == []
    assert not [f for f in a.files if is_own_path(f["path"])]
    control, _ = save("/data/ck/model.pt.tmp", T0, 18 * MiB, MiB, rename="/data/ck/model.pt")
    b = analyze(None, trace=make_trace(control), mountinfo=MOUNTS)
    assert [c["kind"] for c in b.checkpoints] == ["save"]
