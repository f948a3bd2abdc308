"""Summaries against a hostile or careless logdir: a planted or outlived summary is not served
for a capture it does not describe, a linked plugins/iotrace gets nothing made at its target,
and reading a lone file writes nothing beside it."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tb_iotrace.store import summaries

DATA = Path(__file__).resolve().parents[1] / "data"
ROOT = Path(__file__).resolve().parents[2]
FORGED = {"source": "counters", "bytes_read": 10**15, "bytes_written": 0, "read_time_s": 1.0, "io_calls": 1,
          "files": 1, "input_wait_ns": 99, "input_wait_pct": 99.0, "span_ns": 100, "wait_basis": "steps"}


@pytest.fixture()
def cache(monkeypatch, tmp_path):
    monkeypatch.setenv(summaries.ENV, "1")
    monkeypatch.setenv("TB_IOTRACE_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache" / "summaries"


def _capture(root: Path, name: str = "vm") -> Path:
    p = root / "plugins" / "profile" / "s1" / f"{name}.xplane.pb"
    p.parent.mkdir(parents=True)
    shutil.copyfile(DATA / "jax_io.xplane.pb", p)
    return p


def test_a_planted_summary_is_not_served(tmp_path, cache):
    """A logdir shipped with a summary beside its capture (same name, size and mtime: copied
    with the capture, times kept) is not the truth about the capture where it lands."""
    cap = _capture(tmp_path / "a")
    assert summaries.save(str(cap), FORGED) is not None
    assert summaries.load(str(cap)) == FORGED         # (our own, in place: valid)
    shutil.copytree(tmp_path / "a", tmp_path / "b", copy_function=shutil.copy2)
    planted = tmp_path / "b" / "plugins" / "profile" / "s1" / "vm.xplane.pb"
    assert planted.stat().st_mtime_ns == cap.stat().st_mtime_ns
    assert list((tmp_path / "b").rglob("*" + summaries.SUFFIX))
    assert summaries.load(str(planted)) is None


@pytest.mark.parametrize("where", ["head", "middle", "tail"])
def test_a_capture_rewritten_at_the_same_size_and_mtime_loses_its_summary(tmp_path, cache, where):
    cap = _capture(tmp_path / "logdir")
    assert summaries.save(str(cap), FORGED) is not None
    st = cap.stat()
    data = bytearray(cap.read_bytes())
    at = {"head": 10, "middle": len(data) // 2, "tail": len(data) - 10}[where]
    data[at] ^= 0xFF
    with open(cap, "r+b") as fh:                      # in place: same inode
        fh.write(bytes(data))
    os.utime(cap, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert cap.stat().st_size == st.st_size and cap.stat().st_mtime_ns == st.st_mtime_ns
    assert summaries.load(str(cap)) is None


def test_a_linked_plugins_iotrace_gets_nothing_made_at_its_target(tmp_path, cache):
    root = tmp_path / "logdir"
    cap = _capture(root)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (root / "plugins" / "iotrace").symlink_to(elsewhere)
    got = summaries.save(str(cap), FORGED)
    assert list(elsewhere.iterdir()) == []            # not even an empty summaries/
    assert got is not None and cache in got.parents   # kept in the local cache instead
    assert summaries.load(str(cap)) == FORGED


@pytest.mark.parametrize("name", ["x.pt.trace.json.gz", "loose.xplane.pb"])
def test_report_on_a_lone_file_writes_nothing_beside_it(tmp_path, name):
    d = tmp_path / "checkout"
    d.mkdir()
    src = DATA / ("torch_loader.pt.trace.json.gz" if name.endswith(".gz") else "jax_io.xplane.pb")
    shutil.copyfile(src, d / name)
    before = sorted(p.relative_to(d) for p in d.rglob("*"))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TB_IOTRACE_CACHE": str(tmp_path / "cache")}
    env.pop(summaries.ENV, None)
    for extra in ([], ["--hosts"]):
        r = subprocess.run([sys.executable, "-m", "tb_iotrace", "report", str(d / name), "--json", *extra],
                           capture_output=True, text=True, env=env, timeout=300)
        assert r.returncode == 0, r.stderr
        json.loads(r.stdout)
    assert sorted(p.relative_to(d) for p in d.rglob("*")) == before
    # its summary is kept, in the local cache
    assert list((tmp_path / "cache" / "summaries").glob("*" + summaries.SUFFIX))


def test_a_fifo_under_a_captures_name_never_blocks_the_identity(tmp_path, cache):
    """The identity reads the capture's ends: a FIFO named like a capture is not opened blocking."""
    import threading

    fifo = tmp_path / "logdir" / "plugins" / "profile" / "s1" / "h.xplane.pb"
    fifo.parent.mkdir(parents=True)
    os.mkfifo(fifo)
    got: list[object] = []
    t = threading.Thread(target=lambda: got.append(summaries.identity(str(fifo))), daemon=True)
    t.start()
    t.join(timeout=30)
    assert not t.is_alive() and got == [None]
