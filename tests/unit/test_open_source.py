"""tb_iotrace.model.open_source: finding sources under a path. Proves the host and run names of a
trace's processes and of captures (hidden files left out), a trace's rank, the errors of a missing
file, a Darshan log, a trace without or with a malformed tb_iotrace record, a folder of traces
where some are corrupt (skipped, noted on stderr, printable) or all are, the run/host filters'
messages, a URL read through its mirror (names and errors given as the URL), and group_by_run."""
from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tb_iotrace.model.open_source import SKIPPED, group_by_run, kineto_sources, open_source
from tb_iotrace.model.sources import SourceError
from tb_iotrace.store import remote

DATA = Path(__file__).resolve().parents[1] / "data"
BASE: dict[str, Any] = json.loads(gzip.decompress((DATA / "torch_loader.pt.trace.json.gz").read_bytes()))


def trace(path: Path, drop: bool = False, **rec: Any) -> Path:
    doc = dict(BASE)
    if drop:
        del doc["tb_iotrace"]
    else:
        doc["tb_iotrace"] = {**BASE["tb_iotrace"], **rec}
    path.write_text(json.dumps(doc))
    return path


def test_a_traces_processes_are_hosts_named_after_it(tmp_path: Path) -> None:
    p = trace(tmp_path / "w0.5.pt.trace.json", notes=["n1", 2])
    got = open_source(str(p))
    assert [(s.run, s.host) for s in got] == [(tmp_path.name, "w0.5"), (tmp_path.name, "w0.5/pid15360"),
                                              (tmp_path.name, "w0.5/pid15362")]
    assert all(s.notes == ["n1", "2"] and s.proc["rank"] is None for s in got)
    doc = dict(BASE, distributedInfo={"rank": 3})
    (tmp_path / "r.pt.trace.json").write_text(json.dumps(doc))
    assert {s.proc["rank"] for s in kineto_sources(tmp_path / "r.pt.trace.json", "x")} == {3}


@pytest.mark.parametrize("rec, words", [({"drop": True}, "without tb_iotrace I/O"),
                                        ({"format": "x/9"}, "unknown format"),
                                        ({"processes": [{"role": "main"}]}, "a process without a pid"),
                                        ({"processes": [{"pid": True, "role": "main"}]}, "a process without a pid")])
def test_a_trace_that_is_none_of_ours(tmp_path: Path, rec: dict[str, Any], words: str) -> None:
    p = trace(tmp_path / "w.pt.trace.json", **rec)
    with pytest.raises(SourceError, match=words):
        open_source(str(p))


def test_a_folder_of_traces_skips_the_corrupt_ones(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace(tmp_path / "good.pt.trace.json")
    (tmp_path / "bad\x1b[2J.pt.trace.json").write_text("{garbage")
    hosts = [s.host for s in open_source(str(tmp_path))]
    assert hosts[0] == "good" and len(hosts) == 3
    err = capsys.readouterr().err
    assert err.startswith(SKIPPED) and "\x1b" not in err and "\\x1b[2J" in err   # printable


def test_a_folder_of_only_corrupt_traces_is_one_error(tmp_path: Path) -> None:
    (tmp_path / "a.pt.trace.json").write_text("{garbage")
    trace(tmp_path / "b.pt.trace.json", drop=True)
    with pytest.raises(SourceError) as err:
        open_source(str(tmp_path))
    assert "a.pt.trace.json" in str(err.value) and "b.pt.trace.json" in str(err.value)


def test_captures_of_a_run_folder_and_the_filters(tmp_path: Path) -> None:
    run = tmp_path / "sess"
    run.mkdir()
    for name in ("vm.xplane.pb", "zz.xplane.pb", ".hidden.xplane.pb"):
        shutil.copyfile(DATA / "jax_plain.xplane.pb", run / name)
    got = open_source(str(run))
    assert [(s.run, s.host) for s in got] == [("sess", "vm"), ("sess", "zz")]
    assert [s.host for s in open_source(str(run), host="zz")] == ["zz"]
    with pytest.raises(SourceError, match=r"no host 'nope' in .* \(hosts: vm, zz\)"):
        open_source(str(run), host="nope")
    with pytest.raises(SourceError, match=r"no run 'r2' in .* \(runs: sess\)"):
        open_source(str(run), run="r2")
    assert list(group_by_run(got + got[:1])) == ["sess"] and len(group_by_run(got)["sess"]) == 2


def test_missing_darshan_and_empty(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="no such file or directory"):
        open_source(str(tmp_path / "gone"))
    (tmp_path / "x.darshan").write_bytes(b"\x00")
    with pytest.raises(SourceError, match="tb-iotrace import-darshan .*x.darshan --logdir DIR"):
        open_source(str(tmp_path / "x.darshan"))
    (tmp_path / "e").mkdir()
    with pytest.raises(SourceError, match="no profile captures"):
        open_source(str(tmp_path / "e"))


def test_a_record_file_and_a_corrupt_one(tmp_path: Path) -> None:
    shutil.copytree(DATA / "run_v1", tmp_path / "r")
    [p] = (tmp_path / "r" / "plugins" / "iotrace").glob("*.json")
    [src] = open_source(str(p))
    assert (src.run, src.host) == ("iotrace", "vm.21889")
    [src] = open_source(str(p.parent))                       # a plugins/iotrace folder
    assert (src.run, src.host) == ("iotrace", "vm.21889")
    bad = tmp_path / "h.1.json"
    bad.write_text('{"format": "tb_iotrace.run/2", "host": "h"}')
    with pytest.raises(SourceError, match="h.1.json"):
        open_source(str(bad))


def test_a_url_is_read_through_its_mirror(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mirror = tmp_path / "mirror" / "sess"
    mirror.mkdir(parents=True)
    shutil.copyfile(DATA / "jax_plain.xplane.pb", mirror / "vm.xplane.pb")
    monkeypatch.setattr(remote, "fetch", lambda url, wanted: mirror)
    [src] = open_source("s3://bkt/sess/")
    assert src.shown == "s3://bkt/sess/vm.xplane.pb" and src.name == src.shown and src.path.startswith(str(mirror))
    with pytest.raises(SourceError) as err:
        open_source("s3://bkt/sess/", host="nope")
    assert "s3://bkt/sess/" in str(err.value) and str(mirror) not in str(err.value)

    def down(url: str, wanted: Any) -> Path:
        raise remote.RemoteError("s3://bkt/x: access denied")
    monkeypatch.setattr(remote, "fetch", down)
    with pytest.raises(SourceError, match="access denied"):
        open_source("s3://bkt/x")
