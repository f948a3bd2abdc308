"""tb_iotrace.plugin.cache (LogdirIndex, cache_budget, file_key): the budget's parsing, the
capture cache's rules (kept while size and mtime stay, errors cached, LRU by bytes, never
outside the logdir), runs and hosts that disappear or appear, hostile names refused or quoted,
views reused only while their captures are the cached ones, and a URL logdir's sync errors."""
from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from tb_iotrace.plugin import cache as cache_mod
from tb_iotrace.plugin.cache import LogdirIndex, cache_budget, file_key
from tb_iotrace.store import remote
from tb_iotrace.store.logdir import BadName
from tb_iotrace.store.xplane import XPlaneError

DATA = Path(__file__).resolve().parents[1] / "data"
RUN = "run1"


class Fake:
    """A stand-in capture: what the budget counts is ``nbytes()``."""

    def __init__(self, path: str, n: int) -> None:
        self.path, self.n = path, n

    def nbytes(self) -> int:
        return self.n


def _logdir(root: Path, hosts: dict[str, str], run: str = RUN) -> Path:
    d = root / "plugins" / "profile" / run
    d.mkdir(parents=True, exist_ok=True)
    for host, src in hosts.items():
        shutil.copyfile(DATA / src, d / f"{host}.xplane.pb")
    return root


def _counting(index: LogdirIndex, make: Any) -> list[str]:
    calls: list[str] = []

    def loader(path: str, host: str) -> Any:
        calls.append(os.path.basename(path))
        return make(path, host)

    index.loader = loader
    return calls


@pytest.mark.parametrize("raw,want", [("1K", 1024), ("1.5k", 1536), (" 3m ", 3 << 20), ("0", 0),
                                      ("-5G", 0), ("1000", 1000)])
def test_cache_budget_units(monkeypatch: pytest.MonkeyPatch, raw: str, want: int) -> None:
    monkeypatch.setenv(cache_mod.CACHE_BYTES_ENV, raw)
    assert cache_budget() == want


@pytest.mark.parametrize("raw", ["G", "2KB", "1e3x", "nan", "inf", "1e400"])
def test_cache_budget_bad_values_say_the_variable(monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
    monkeypatch.setenv(cache_mod.CACHE_BYTES_ENV, raw)
    with pytest.raises(ValueError, match="TBIO_PLUGIN_CACHE_BYTES=.*expected a byte count"):
        cache_budget()


def test_file_key_follows_size_and_mtime(tmp_path: Path) -> None:
    p = tmp_path / "h.xplane.pb"
    p.write_bytes(b"abc")
    os.utime(p, ns=(5, 5))
    assert file_key(str(p)) == (3, 5)
    os.utime(p, ns=(6, 6))
    assert file_key(str(p)) == (3, 6)
    with pytest.raises(OSError):
        file_key(str(tmp_path / "gone.xplane.pb"))


def test_capture_is_kept_until_its_file_changes(tmp_path: Path) -> None:
    root = _logdir(tmp_path, {"w0": "jax_plain.xplane.pb"})
    index = LogdirIndex(str(root), max_bytes=1 << 30)
    calls = _counting(index, lambda p, h: Fake(p, 10))
    path = str(root / "plugins/profile" / RUN / "w0.xplane.pb")
    first = index.capture(path, "w0")
    assert index.capture(path, "w0") is first and calls == ["w0.xplane.pb"]
    os.utime(path, ns=(1, 1))
    assert index.capture(path, "w0") is not first and len(calls) == 2
    assert index.cached_bytes == 10            # the old one no longer counted


def test_decoding_errors_are_cached_and_worded(tmp_path: Path) -> None:
    root = _logdir(tmp_path, {"a": "jax_plain.xplane.pb", "b": "jax_plain.xplane.pb"})
    index = LogdirIndex(str(root), max_bytes=1 << 30)

    def bad(path: str, host: str) -> Any:
        if host == "a":
            raise ValueError("bad varint")
        raise RuntimeError("x" * 1000)

    calls = _counting(index, bad)
    d = root / "plugins/profile" / RUN
    for _ in range(2):
        with pytest.raises(XPlaneError, match="cannot decode: bad varint"):
            index.capture(str(d / "a.xplane.pb"), "a")
    with pytest.raises(XPlaneError) as got:
        index.capture(str(d / "b.xplane.pb"), "b")
    assert got.value.reason == "cannot decode (RuntimeError: " + "x" * 300 + ")"
    assert calls == ["a.xplane.pb", "b.xplane.pb"]             # errors decoded once each
    assert index.cached_bytes == 2 * cache_mod.ERROR_NBYTES


def test_missing_file_is_an_xplane_error_not_a_crash(tmp_path: Path) -> None:
    root = _logdir(tmp_path, {"w0": "jax_plain.xplane.pb"})
    index = LogdirIndex(str(root))
    with pytest.raises(XPlaneError, match="cannot read"):
        index.capture(str(root / "plugins/profile" / RUN / "gone.xplane.pb"), "gone")


def test_paths_outside_the_logdir_are_refused(tmp_path: Path) -> None:
    root = _logdir(tmp_path / "logs", {"w0": "jax_plain.xplane.pb"})
    outside = tmp_path / "secret.xplane.pb"
    shutil.copyfile(DATA / "jax_plain.xplane.pb", outside)
    link = root / "plugins/profile" / RUN / "link.xplane.pb"
    link.symlink_to(outside)
    index = LogdirIndex(str(root))
    calls = _counting(index, lambda p, h: Fake(p, 1))
    for p in (str(outside), str(link), str(root / ".." / "secret.xplane.pb")):
        with pytest.raises(KeyError, match="outside the logdir"):
            index.capture(p, "x")
    assert calls == []


def test_byte_budget_drops_least_recently_used_but_keeps_the_newest(tmp_path: Path) -> None:
    root = _logdir(tmp_path, {f"w{i}": "jax_plain.xplane.pb" for i in range(4)})
    d = root / "plugins/profile" / RUN
    index = LogdirIndex(str(root), max_bytes=250)
    calls = _counting(index, lambda p, h: Fake(p, 1000 if h == "w3" else 100))
    index.capture(str(d / "w0.xplane.pb"), "w0")
    index.capture(str(d / "w1.xplane.pb"), "w1")
    index.capture(str(d / "w0.xplane.pb"), "w0")               # w0 used last: w1 goes first
    index.capture(str(d / "w2.xplane.pb"), "w2")
    assert sorted(os.path.basename(p) for p in index._captures) == ["w0.xplane.pb", "w2.xplane.pb"]
    assert index.cached_bytes == 200
    big = index.capture(str(d / "w3.xplane.pb"), "w3")         # over budget alone: kept, others dropped
    assert big.n == 1000 and list(index._captures) == [str(d / "w3.xplane.pb")]
    assert index.cached_bytes == 1000
    assert calls == ["w0.xplane.pb", "w1.xplane.pb", "w2.xplane.pb", "w3.xplane.pb"]


def test_a_stand_in_without_nbytes_counts_as_its_file(tmp_path: Path) -> None:
    root = _logdir(tmp_path, {"w0": "jax_plain.xplane.pb"})
    index = LogdirIndex(str(root), max_bytes=1 << 30)

    class Plain:
        size = 5000

    index.loader = lambda p, h: Plain()
    index.capture(str(root / "plugins/profile" / RUN / "w0.xplane.pb"), "w0")
    assert index.cached_bytes == 5000 + cache_mod.ERROR_NBYTES


@pytest.mark.parametrize("run,host", [("../etc", None), ("/abs", None), ("a\x00b", None), ("a\\b", None),
                                      ("a//b", None), (RUN, "x/y"), (RUN, ".."), (RUN, "")])
def test_hostile_names_are_refused(tmp_path: Path, run: str, host: str | None) -> None:
    index = LogdirIndex(str(_logdir(tmp_path, {"w0": "jax_plain.xplane.pb"})))
    with pytest.raises(BadName):
        index.find(run, host)


def test_unknown_names_are_quoted_in_the_error(tmp_path: Path) -> None:
    index = LogdirIndex(str(_logdir(tmp_path, {"w0": "jax_plain.xplane.pb"})))
    for name in ("\x1b[31mred\x1b[0m", "two\nlines", "odd\udcff"):
        with pytest.raises(KeyError) as got:
            index.find(name)
        text = got.value.args[0]
        assert "\x1b" not in text and "\n" not in text and repr(name) in text
    with pytest.raises(KeyError) as host:
        index.find(RUN, "\x1b[2J")
    assert host.value.args[0] == "no host '\\x1b[2J' in run 'run1'"


def test_a_run_that_appears_is_found_on_refresh(tmp_path: Path) -> None:
    root = _logdir(tmp_path, {"w0": "jax_plain.xplane.pb"})
    index = LogdirIndex(str(root))
    assert [r.run for r in index.runs()] == [RUN]
    _logdir(root, {"h": "jax_plain.xplane.pb"}, run="run2")
    index._runs_at -= 2.0                                      # the last scan is over a second old
    info, path = index.find("run2", "h")
    assert info.run == "run2" and path is not None and path.endswith("h.xplane.pb")


def test_a_host_that_disappears_is_listed_unreadable_and_the_others_shown(tmp_path: Path) -> None:
    root = _logdir(tmp_path, {"w0": "jax_io.xplane.pb", "w1": "jax_io.xplane.pb"})
    index = LogdirIndex(str(root))
    info, _ = index.find(RUN)
    files = sorted(info.hosts.items())
    full = index.view(RUN, files)
    assert full.unreadable == [] and len(full.parts) == 2
    assert index.view(RUN, files) is full                      # reused with its memoized answers
    os.remove(info.hosts["w1"])
    part = index.view(RUN, files)
    assert part is not full and len(part.parts) == 1
    assert [(h, f) for h, f, _ in part.unreadable] == [("w1", "w1.xplane.pb")]
    assert "cannot read" in part.unreadable[0][2]
    os.remove(info.hosts["w0"])
    with pytest.raises(XPlaneError):
        index.view(RUN, files)
    info2, _ = index.find(RUN)                                 # a run gone: stale for up to RUNS_TTL_S
    index._runs_at -= cache_mod.RUNS_TTL_S + 1
    assert info2.run == RUN and index.runs() == []
    with pytest.raises(KeyError, match="no run 'run1'"):
        index.find(RUN)


def test_an_evicted_capture_drops_its_view(tmp_path: Path) -> None:
    root = _logdir(tmp_path, {"w0": "jax_io.xplane.pb", "w1": "jax_io.xplane.pb"})
    index = LogdirIndex(str(root), max_bytes=1)               # room for one capture only
    info, _ = index.find(RUN)
    v0 = index.view(RUN, [("w0", info.hosts["w0"])])
    assert len(index._views) == 1
    index.view(RUN, [("w1", info.hosts["w1"])])               # evicts w0, and the view on it
    assert [k[1][0][0] for k in index._views] == ["w1"]
    assert index.view(RUN, [("w0", info.hosts["w0"])]) is not v0


def test_views_kept_are_bounded(tmp_path: Path) -> None:
    n = cache_mod.VIEWS_KEPT + 2
    root = _logdir(tmp_path, {f"w{i:02d}": "jax_plain.xplane.pb" for i in range(n)})
    index = LogdirIndex(str(root), max_bytes=1 << 30)
    info, _ = index.find(RUN)
    for host, path in sorted(info.hosts.items()):
        index.view(RUN, [(host, path)])
    assert len(index._views) == cache_mod.VIEWS_KEPT
    assert [k[1][0][0] for k in index._views][0] == "w02"      # the oldest two dropped


def test_default_capture_is_the_last_run_and_its_first_host(tmp_path: Path) -> None:
    assert LogdirIndex(str(tmp_path)).default_capture() is None
    assert LogdirIndex(str(tmp_path / "missing")).default_capture() is None
    _logdir(tmp_path, {"b": "jax_plain.xplane.pb", "a": "jax_plain.xplane.pb"}, run="2024_b")
    _logdir(tmp_path, {"z": "jax_plain.xplane.pb"}, run="2024_a")
    got = LogdirIndex(str(tmp_path)).default_capture()
    assert got is not None and got[:2] == ("2024_b", "a") and got[2].endswith("2024_b/a.xplane.pb")


def test_prefetch_loads_the_newest_run_once_within_its_byte_limit(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TBIO_PLUGIN_PREFETCH", raising=False)
    _logdir(tmp_path, {"old": "jax_plain.xplane.pb"}, run="zz_old")
    _logdir(tmp_path, {"a": "jax_plain.xplane.pb", "b": "jax_plain.xplane.pb", "c": "jax_plain.xplane.pb"},
            run="aa_new")
    os.utime(tmp_path / "plugins/profile/zz_old/old.xplane.pb", (1, 1))
    index = LogdirIndex(str(tmp_path), max_bytes=1 << 30)
    calls = _counting(index, lambda p, h: Fake(p, 1))
    size = (DATA / "jax_plain.xplane.pb").stat().st_size
    t = index.prefetch_latest(max_bytes=2 * size)              # two of the three hosts fit
    assert t is not None
    t.join(10)
    assert calls == ["a.xplane.pb", "b.xplane.pb"]
    assert index.prefetch_latest() is None                     # once


def test_prefetch_can_be_turned_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TBIO_PLUGIN_PREFETCH", "0")
    _logdir(tmp_path, {"a": "jax_plain.xplane.pb"})
    index = LogdirIndex(str(tmp_path))
    calls = _counting(index, lambda p, h: Fake(p, 1))
    assert index.prefetch_latest() is None and calls == []


def test_local_logdir_never_syncs_and_file_urls_are_local(tmp_path: Path) -> None:
    root = _logdir(tmp_path, {"w0": "jax_plain.xplane.pb"})
    index = LogdirIndex("file://" + str(root))
    assert index.url is None and index.logdir == str(root)
    index.sync()
    index.sync_soon()
    assert index.remote_error is None and [r.run for r in index.runs()] == [RUN]


def test_url_sync_failure_is_kept_redacted_and_cleared(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TB_IOTRACE_CACHE", str(tmp_path / "cache"))
    outcome: list[BaseException | None] = [OSError("connection refused to s3://AKIAKEY:hunter2@b/logs")]

    def fetch(url: str, wanted: Any, lazy: Any = None) -> Path:
        assert lazy is not None and lazy("h.xplane.pb") and not lazy("h.123.json")
        if outcome[0] is not None:
            raise outcome[0]
        return Path(index.logdir)

    monkeypatch.setattr(remote, "fetch", fetch)
    index = LogdirIndex("s3://AKIAKEY:hunter2@b/logs/")
    assert index.url is not None and not index.url.endswith("/")
    assert str(tmp_path / "cache") in index.logdir and "hunter2" not in index.logdir
    index.sync()
    err = index.remote_error
    assert err is not None and "hunter2" not in err and "cannot reach the storage server" in err
    outcome[0] = None
    index.sync()
    assert index.remote_error is None
