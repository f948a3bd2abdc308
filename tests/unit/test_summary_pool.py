"""The first "All hosts" of captures nobody has summarized: their rows made in child processes
(tb_iotrace.plugin.summary_pool), equal to the rows TensorBoard's own process makes, their
summaries kept, an unreadable capture still listed as such."""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
pytest.importorskip("tensorboard")

from tb_iotrace.store import summaries  # noqa: E402
from tb_iotrace.plugin import summary_pool  # noqa: E402
from tb_iotrace.plugin.summary_worker import row_line  # noqa: E402
from plugin_client import make_client  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "data"
RUN = "many"


def _logdir(root: Path) -> Path:
    d = root / "plugins" / "profile" / RUN
    d.mkdir(parents=True)
    for i in range(10):
        shutil.copyfile(DATA / ("jax_io.xplane.pb" if i % 2 else "jax_plain.xplane.pb"), d / f"w{i:02d}.xplane.pb")
    (d / "bad.xplane.pb").write_bytes(b"\x0a\xff\xff\xff\xff\x0f not a capture")
    return root


def _hosts(root: Path) -> dict:
    _, get = make_client(root)
    code, got = get("/hosts", run=RUN, host="__all__")
    assert code == 200
    return got


def test_rows_made_in_children_equal_the_rows_made_here(tmp_path, monkeypatch):
    monkeypatch.setenv("TB_IOTRACE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv(summaries.ENV, "0")               # nothing kept: every request decodes
    here_root, there_root = _logdir(tmp_path / "a"), _logdir(tmp_path / "b")
    monkeypatch.setenv(summary_pool.ENV, "1")
    here = _hosts(here_root)
    calls = []
    real = summary_pool.rows_in_children

    def counting(items, *a, **k):
        calls.append(len(items))
        return real(items, *a, **k)

    monkeypatch.setattr(summary_pool, "rows_in_children", counting)
    monkeypatch.setattr(summary_pool, "MIN_BYTES", 0)     # these captures are small
    monkeypatch.setenv(summary_pool.ENV, "2")
    there = _hosts(there_root)
    assert calls == [11]                                  # every capture went to the children
    assert there == here and len(here["hosts"]) == 10 and [u["host"] for u in here["unreadable"]] == ["bad"]


def test_children_keep_the_summaries(tmp_path, monkeypatch):
    monkeypatch.setenv("TB_IOTRACE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv(summaries.ENV, "1")
    monkeypatch.setenv(summary_pool.ENV, "2")
    monkeypatch.setattr(summary_pool, "MIN_BYTES", 0)
    root = _logdir(tmp_path / "a")
    cold = _hosts(root)
    kept = list((root / "plugins" / "iotrace" / "summaries").glob("*" + summaries.SUFFIX))
    assert len(kept) == 10
    assert _hosts(root) == cold


def test_a_bad_capture_is_an_error_line_not_a_failure(tmp_path):
    bad = tmp_path / "bad.xplane.pb"
    bad.write_bytes(b"\x0a\xff\xff\xff\xff\x0f not a capture")
    got = row_line("bad", str(bad))
    assert got["path"] == str(bad) and "row" not in got and got["error"]


def test_jobs_from_the_environment(monkeypatch):
    monkeypatch.setenv(summary_pool.ENV, "3")
    assert summary_pool.jobs() == 3
    monkeypatch.setenv(summary_pool.ENV, "x")
    assert summary_pool.jobs() >= 1


def test_small_captures_are_decoded_here_not_in_children(tmp_path, monkeypatch):
    """Under MIN_BYTES in all, a child's start costs more than the decoding: none is started."""
    monkeypatch.setenv("TB_IOTRACE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv(summaries.ENV, "0")
    monkeypatch.setenv(summary_pool.ENV, "2")
    calls = []
    monkeypatch.setattr(summary_pool, "rows_in_children", lambda items, *a, **k: calls.append(items) or {})
    got = _hosts(_logdir(tmp_path / "a"))
    assert calls == [] and len(got["hosts"]) == 10
