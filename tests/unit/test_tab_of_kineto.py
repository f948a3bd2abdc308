"""tb_iotrace.model.tab.of_kineto: a PyTorch trace converted once per version of the file
into this process's own folder (an older version's copy removed), a file that is no trace named
with its reason, the trace handler's notes shown as the capture's warnings, and the folders of
dead processes removed (only theirs, only folders, this user's)."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tb_iotrace.model.tab.of_kineto import FOLDER_PREFIX, converted, decode_kineto, remove_stale_folders
from tb_iotrace.store.kineto import add_io, read_trace, write_trace
from tb_iotrace.store.xplane import XPlaneError

DATA = Path(__file__).resolve().parents[1] / "data"


def _trace(path: Path, notes: list[str]) -> Path:
    write_trace(str(path), add_io(read_trace(str(DATA / "kineto_gpu_synthetic.pt.trace.json")), [], notes=notes))
    return path


def test_converted_once_per_version(tmp_path):
    p = _trace(tmp_path / "w0.1.pt.trace.json", ["first"])
    out = converted(str(p))
    assert os.path.basename(os.path.dirname(out)).startswith(f"{FOLDER_PREFIX}{os.getpid()}-")
    made = os.stat(out).st_mtime_ns
    assert converted(str(p)) == out and os.stat(out).st_mtime_ns == made       # not converted again
    _trace(p, ["second, a longer note than the first"])                           # another version
    again = converted(str(p))
    assert again != out and os.path.isfile(again) and not os.path.exists(out)   # the older copy gone
    cap = decode_kineto(str(p), "w0")
    assert "The trace handler noted: second, a longer note than the first" in cap.warnings
    bad = tmp_path / "bad.pt.trace.json"
    bad.write_text('{"traceEvents": 7}')
    with pytest.raises(XPlaneError) as got:
        converted(str(bad))
    assert str(bad) in str(got.value)


def test_only_dead_processes_folders_are_removed(tmp_path):
    dead = subprocess.Popen(["true"])
    dead.wait()
    gone = tmp_path / f"{FOLDER_PREFIX}{dead.pid}-abc"
    alive = tmp_path / f"{FOLDER_PREFIX}{os.getppid()}-abc"
    mine = tmp_path / f"{FOLDER_PREFIX}{os.getpid()}-abc"
    other = tmp_path / "not-ours-1"
    for d in (gone, alive, mine, other):
        d.mkdir()
        (d / "x.xplane.pb").write_bytes(b"x")
    link = tmp_path / f"{FOLDER_PREFIX}{dead.pid}-link"
    link.symlink_to(other)
    plain = tmp_path / f"{FOLDER_PREFIX}{dead.pid}-file"
    plain.write_text("x")
    assert remove_stale_folders(str(tmp_path)) == [str(gone)]
    assert not gone.exists() and alive.is_dir() and mine.is_dir() and other.is_dir()
    assert link.is_symlink() and plain.is_file() and (other / "x.xplane.pb").exists()
