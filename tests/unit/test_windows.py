"""``/windows`` (tb_iotrace.plugin.endpoints.windows): the profile windows of the job a run
belongs to, in time order, each row kept while its files are unchanged, a window that cannot be
read named apart. The windows are copies of a real JAX capture moved in time (moved_capture)."""
from __future__ import annotations

from pathlib import Path

import pytest

from moved_capture import HOUR_NS, job_logdir
from tb_iotrace.plugin.cache import LogdirIndex
from tb_iotrace.plugin.endpoints import windows
from tb_iotrace.plugin.endpoints.windows import windows_impl

SHIFTS = {"b": 1, "c": 2, "d": 0}     # name order b, c, d; time order d, b, c


def test_the_jobs_windows_in_time_order(tmp_path: Path) -> None:
    job_logdir(tmp_path, SHIFTS)
    got = windows_impl(LogdirIndex(str(tmp_path)), "job/b")
    assert got["job"] == "job" and got["unreadable"] == []
    ws = got["windows"]
    assert [w["run"] for w in ws] == ["job/d", "job/b", "job/c"]
    assert [w["start_ns"] - ws[0]["start_ns"] for w in ws] == [0, HOUR_NS, 2 * HOUR_NS]
    assert all(w["kind"] == "profile" and w["hosts"] == 1 and w["bytes_read"] > 0 for w in ws)
    assert all("taken_by" not in w for w in ws)       # the job's own profiler took them
    with pytest.raises(KeyError):
        windows_impl(LogdirIndex(str(tmp_path)), "job/nosuch")


def test_rows_kept_until_a_file_changes(tmp_path: Path, monkeypatch) -> None:
    job_logdir(tmp_path, SHIFTS)
    monkeypatch.setattr(windows, "_rows", type(windows._rows)())
    calls: list[str] = []
    real = windows.hosts_impl
    monkeypatch.setattr(windows, "hosts_impl", lambda view: calls.append(view.run) or real(view))
    index = LogdirIndex(str(tmp_path))
    windows_impl(index, "job/c")
    windows_impl(index, "job/c")
    assert sorted(calls) == ["job/b", "job/c", "job/d"]        # each window decoded once
    (tmp_path / "job" / "plugins" / "profile" / "b" / "vm.xplane.pb").write_bytes(b"\x0a\xff\xff\xff")
    got = windows_impl(LogdirIndex(str(tmp_path)), "job/c")
    assert [w["run"] for w in got["windows"]] == ["job/d", "job/c"]
    assert [u["run"] for u in got["unreadable"]] == ["job/b"] and "cannot read" in got["unreadable"][0]["error"]
