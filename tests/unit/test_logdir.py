"""tb_iotrace.store.logdir: names from requests that could escape are refused; the scan finds
profile sessions, whole-run records and PyTorch traces with the documented run and host names,
renames clashing runs, never follows links or leaves the logdir, and stops at its bounds;
each PyTorch trace file of a folder is its own host."""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tb_iotrace.store import logdir
from tb_iotrace.store.logdir import BadName, check_name, scan

RECORD = b'{"format":"tb_iotrace.run/2","host":"h"}'


def touch(p: Path, data: bytes = b"x") -> Path:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data)
    return p


@pytest.mark.parametrize("value, allow, words", [
    ("", True, "missing run"), ("a/../b", True, "'.', '..'"), ("/etc", True, "absolute"),
    ("a\\b", True, "invalid run"), ("a\x00b", True, "invalid run"), ("a//b", True, "empty segments"),
    ("a/", True, "empty segments"), (".", True, "'.'"), ("a/b", False, "invalid run"), ("x" * 1025, True, "invalid"),
])
def test_names_that_could_escape_are_refused(value: str, allow: bool, words: str) -> None:
    with pytest.raises(BadName) as exc:
        check_name(value, "run", allow)
    assert words in str(exc.value)


def test_odd_but_safe_names_pass() -> None:
    for v in ("a/b c/ü", "..x", "x..", "h\udcff"):
        assert check_name(v, "run", True) == v


def test_scan_finds_sessions_records_and_traces_with_their_names(tmp_path: Path) -> None:
    touch(tmp_path / "plugins/profile/s1/h1.xplane.pb")
    touch(tmp_path / "job/plugins/profile/s2/h2.xplane.pb")
    touch(tmp_path / "job/plugins/profile/s2/.hidden.xplane.pb")
    touch(tmp_path / "job/plugins/profile/empty/readme.txt")
    touch(tmp_path / "job/plugins/iotrace/node.12.json", RECORD)
    touch(tmp_path / "job/plugins/iotrace/node.12.exec1.json", RECORD)
    touch(tmp_path / "job/plugins/iotrace/junk.json", b'{"format":"other"}')
    touch(tmp_path / "torch/worker0.1700000000.pt.trace.json")
    touch(tmp_path / "torch/worker1.3.1700000001.pt.trace.json.gz")
    runs, cut = scan(str(tmp_path), records=True, kineto=True)
    got = {r.run: (r.kind, sorted(r.hosts)) for r in runs}
    assert not cut
    assert got == {"s1": ("profile", ["h1"]), "job/s2": ("profile", ["h2"]),
                   "job/iotrace": ("record", ["node.12", "node.12.exec1"]),
                   "torch": ("kineto", ["worker0", "worker1"])}
    assert [r.run for r in runs] == sorted(got)
    assert {r.run for r in scan(str(tmp_path))[0]} == {"s1", "job/s2"}          # records, kineto off


def test_clashing_run_names_are_told_apart(tmp_path: Path) -> None:
    touch(tmp_path / "plugins/profile/iotrace/h.xplane.pb")
    touch(tmp_path / "plugins/iotrace/n.1.json", RECORD)
    touch(tmp_path / "a/plugins/profile/b/h.xplane.pb")
    touch(tmp_path / "a/b/w.1.pt.trace.json")
    runs = {r.run: r.kind for r in scan(str(tmp_path), records=True, kineto=True)[0]}
    assert runs == {"iotrace": "profile", "iotrace (records)": "record", "a/b": "profile",
                    "a/b (PyTorch)": "kineto"}


def test_top_level_traces_are_named_after_the_logdir(tmp_path: Path) -> None:
    d = tmp_path / "mylogs"
    touch(d / "w.1.pt.trace.json")
    (run,) = scan(str(d), kineto=True)[0]
    assert (run.run, list(run.hosts)) == ("mylogs", ["w"])


def test_links_are_not_followed_out_of_the_logdir(tmp_path: Path) -> None:
    log, out = tmp_path / "log", tmp_path / "out"
    real = touch(out / "plugins/profile/s/evil.xplane.pb")
    touch(log / "plugins/profile/s/ok.xplane.pb")
    (log / "plugins/profile/s/leak.xplane.pb").symlink_to(real)
    (log / "linked").symlink_to(out, target_is_directory=True)
    (log / "plugins/profile/t").symlink_to(out / "plugins/profile/s", target_is_directory=True)
    touch(out / "w.1.pt.trace.json")
    (log / "w.1.pt.trace.json").symlink_to(out / "w.1.pt.trace.json")
    touch(out / "n.1.json", RECORD)
    touch(log / "plugins/iotrace/keep.1.json", RECORD)
    (log / "plugins/iotrace/n.1.json").symlink_to(out / "n.1.json")
    runs = {r.run: sorted(r.hosts) for r in scan(str(log), records=True, kineto=True)[0]}
    assert runs == {"s": ["ok"], "iotrace": ["keep.1"]}


def test_scan_bounds(tmp_path: Path) -> None:
    deep = tmp_path
    for i in range(logdir.MAX_DEPTH + 1):
        deep = deep / f"d{i}"
    touch(deep / "plugins/profile/s/h.xplane.pb")
    touch(tmp_path / "d0/plugins/profile/near/h.xplane.pb")
    assert [r.run for r in scan(str(tmp_path))[0]] == ["d0/near"]       # past MAX_DEPTH: not found
    runs, cut = scan(str(tmp_path), max_dirs=1)
    assert cut and runs == []
    assert scan(str(tmp_path / "missing"))[0] == [] and scan("")[0] == []
    assert len(scan(str(tmp_path), stop_at_first=True)[0]) == 1


def test_kineto_names() -> None:
    assert logdir.is_kineto_name("w.pt.trace.json.gz") and not logdir.is_kineto_name(".w.pt.trace.json")
    assert logdir.kineto_stem("a.1.pt.trace.json.gz") == "a.1" and logdir.kineto_stem("x.txt") == "x.txt"
    assert logdir.kineto_worker("w0.3.1700.pt.trace.json") == "w0"
    assert logdir.kineto_worker("123.pt.trace.json") == "123"           # nothing left: the stem
    assert logdir.kineto_worker("host_1.2.3.4.pt.trace.json") == "host_1.2"   # two numeric fields at most


def test_one_worker_several_traces_each_a_host(tmp_path: Path) -> None:
    for name in ("w.1.pt.trace.json", "w.2.pt.trace.json", "v.5.pt.trace.json"):
        touch(tmp_path / "t" / name)
    (run,) = scan(str(tmp_path), kineto=True)[0]
    assert sorted(run.hosts) == ["v", "w.1", "w.2"]


def test_every_trace_file_is_listed_even_gzipped_beside_plain(tmp_path: Path) -> None:
    """The same trace kept plain and gzipped: two files, both must be hosts (one lost otherwise)."""
    for name in ("w.1.pt.trace.json", "w.1.pt.trace.json.gz"):
        touch(tmp_path / "t" / name)
    (run,) = scan(str(tmp_path), kineto=True)[0]
    assert len(run.hosts) == 2, run.hosts


def test_small_helpers(tmp_path: Path) -> None:
    assert logdir.is_read_name("h.xplane.pb") and logdir.is_read_name("n.files.npz")
    assert not logdir.is_read_name(".h.xplane.pb") and not logdir.is_read_name("events.out")
    assert logdir.inside(str(tmp_path), str(tmp_path / "a")) and not logdir.inside(str(tmp_path / "a"), str(tmp_path / "ab"))
    assert logdir.capture_host("/x/h.1.json.gz") == "h.1" and logdir.capture_host("/x/h.xplane.pb") == "h"
    assert logdir.run_name(".", "s") == "s" and logdir.run_name("a/b", "s") == "a/b/s"


def test_profile_captures_since(tmp_path: Path) -> None:
    old = touch(tmp_path / "plugins/profile/old/h.xplane.pb")
    os.utime(old, ns=(1, 1))
    os.utime(old.parent, ns=(1, 1))
    since = time.time_ns() - 10**9
    new = touch(tmp_path / "plugins/profile/new/h.xplane.pb")
    touch(tmp_path / "plugins/profile/new/other.txt")
    assert logdir.profile_captures(str(tmp_path), since) == [str(new)]
    assert logdir.profile_captures(str(tmp_path / "none"), 0) == []
