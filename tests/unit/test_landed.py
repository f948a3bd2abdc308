"""tb_iotrace.analysis.landed, the summary child's main, run in-process: its argument forms
(pairs, --facts, --uploaded, --scan/--records with a bad or a real "since"), one stderr line per
capture it cannot summarize (no credential of an uploaded URL in it) while the others go on,
keep_landed's summary kept once per version, none for a missing file or with summaries off, and
none valid for a capture rewritten while it was read; keep_uploaded removes its local copy."""
from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from tb_iotrace.analysis import landed
from tb_iotrace.store import summaries
from tb_iotrace.store.logdir import capture_host
from tb_iotrace.store.record_files import record_dir


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, list[tuple[Any, ...]]]:
    """main's work recorded instead of done; the process priority left alone."""
    got: dict[str, list[tuple[Any, ...]]] = {"landed": [], "uploaded": []}
    monkeypatch.setattr(landed, "lowest_priority", lambda: None)
    monkeypatch.setattr(landed, "keep_landed", lambda *a: got["landed"].append(a) or [])
    monkeypatch.setattr(landed, "keep_uploaded", lambda *a: got["uploaded"].append(a) or [])
    return got


@pytest.fixture
def cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("TB_IOTRACE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("TBIO_SUMMARIES", "local")
    monkeypatch.setattr(landed, "lowest_priority", lambda: None)
    return tmp_path / "cache"


def test_pairs_and_facts(calls: dict[str, list[tuple[Any, ...]]]) -> None:
    assert landed.main(["h1", "/p1", "h2", "/p2"]) == 0
    assert calls["landed"] == [("h1", "/p1", False), ("h2", "/p2", False)]
    calls["landed"].clear()
    assert landed.main(["--facts", "h", "/p", "odd"]) == 0
    assert calls["landed"] == [("h", "/p", True)]          # an unpaired last word is no capture


def test_uploaded_then_pairs(calls: dict[str, list[tuple[Any, ...]]]) -> None:
    landed.main(["--facts", "--uploaded", "h", "/l1", "s3://b/x", "--uploaded", "g", "/l2", "gs://b/y", "h2", "/p"])
    assert calls["uploaded"] == [("h", "/l1", "s3://b/x", True), ("g", "/l2", "gs://b/y", True)]
    assert calls["landed"] == [("h2", "/p", True)]


def test_scan_with_a_bad_since_is_skipped(calls: dict[str, list[tuple[Any, ...]]], tmp_path: Path) -> None:
    landed.main(["--scan", str(tmp_path), "notanumber", "--records", str(tmp_path / "none"), "0", "h", "/p"])
    assert calls["landed"] == [("h", "/p", False)]


def test_records_since(calls: dict[str, list[tuple[Any, ...]]], tmp_path: Path) -> None:
    d = record_dir(tmp_path)
    d.mkdir(parents=True)
    old, new = d / "host.1.json", d / "host.2.json"
    old.write_text("{}")
    new.write_text("{}")
    os.utime(old, ns=(1_000_000_000, 1_000_000_000))
    since = time.time_ns() - 60 * 10**9
    landed.main(["--records", str(tmp_path), str(since)])
    assert calls["landed"] == [(capture_host(str(new)), str(new), False)]


def test_failures_cost_one_line_each_without_secrets(monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    done: list[str] = []

    def keep(host: str, path: str, facts: bool) -> list[str]:
        if host == "bad":
            raise ValueError("boom\n" + "x" * 500)
        done.append(path)
        return ["summary"]

    def upload(*a: Any) -> list[str]:
        raise OSError("denied")

    monkeypatch.setattr(landed, "lowest_priority", lambda: None)
    monkeypatch.setattr(landed, "keep_landed", keep)
    monkeypatch.setattr(landed, "keep_uploaded", upload)
    rc = landed.main(["--uploaded", "h", "/l", "s3://AKIAKEYID:SECRETVAL@b/x", "bad", "/bad", "good", "/good"])
    err = capsys.readouterr().err
    assert rc == 0 and done == ["/good"]
    lines = err.splitlines()
    assert lines[0].startswith("tb_iotrace: no summary kept for s3://***@b/x (OSError: ")
    assert "SECRETVAL" not in lines[0].split("(")[0] and "AKIAKEYID" not in lines[0].split("(")[0]
    assert lines[1].startswith("tb_iotrace: no summary kept for /bad (ValueError: boom")
    assert len(lines[1]) < 300


def test_an_uploaded_object_that_is_gone_is_one_line_without_secrets(
        cache: Path, tmp_path: Path, jax_captures: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The real keep_uploaded against an empty in-memory bucket: the store's error, one line,
    with neither the URL's user nor its password, and the local copy removed."""
    from fsspec.implementations.memory import MemoryFileSystem

    monkeypatch.setattr(MemoryFileSystem, "store", {})
    monkeypatch.setattr(MemoryFileSystem, "pseudo_dirs", [""])
    local = tmp_path / "copies" / "h.xplane.pb"
    local.parent.mkdir()
    shutil.copy(jax_captures[0], local)
    url = "memory://tbuser:SECRETPW9@b/logs/run/plugins/profile/s1/h.xplane.pb?token=TOKVAL77"
    assert landed.main(["--uploaded", "h", str(local), url]) == 0
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "no summary kept for memory://***@b/logs/" in err
    assert not any(s in err for s in ("tbuser", "SECRETPW9", "TOKVAL77")), err
    assert not local.exists() and not local.parent.exists()


def test_keep_landed_once_per_version(cache: Path, tmp_path: Path, jax_captures: tuple[Path, Path]) -> None:
    p = tmp_path / "h.xplane.pb"
    shutil.copy(jax_captures[0], p)
    assert landed.keep_landed("h", str(p), False) == ["summary"]
    assert summaries.load(str(p)) is not None
    assert landed.keep_landed("h", str(p), False) == []       # valid already: not decoded again
    assert landed.keep_landed("h", str(tmp_path / "missing.xplane.pb"), False) == []


def test_keep_landed_with_summaries_off(cache: Path, tmp_path: Path, jax_captures: tuple[Path, Path],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TBIO_SUMMARIES", "off")
    p = tmp_path / "h.xplane.pb"
    shutil.copy(jax_captures[0], p)
    assert landed.keep_landed("h", str(p), True) == []
    assert not (cache / "summaries").exists()


def test_a_capture_rewritten_while_read_gets_no_valid_summary(cache: Path, tmp_path: Path,
                                                              jax_captures: tuple[Path, Path],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    p = tmp_path / "h.xplane.pb"
    shutil.copy(jax_captures[0], p)
    real = landed.load_any

    def load_then_rewrite(path: str, host: str) -> Any:
        cap = real(path, host)
        shutil.copy(jax_captures[1], path)          # another capture under the same name
        return cap

    monkeypatch.setattr(landed, "load_any", load_then_rewrite)
    landed.keep_landed("h", str(p), False)
    assert summaries.load(str(p)) is None            # the new version has none of the old one's row
    monkeypatch.setattr(landed, "load_any", real)
    assert landed.keep_landed("h", str(p), False) == ["summary"]
    assert summaries.load(str(p)) is not None


def test_a_record_it_cannot_read_is_one_line(cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = record_dir(tmp_path)
    d.mkdir(parents=True)
    bad = d / "host.1.json"
    bad.write_text("{not json")
    assert landed.main([capture_host(str(bad)), str(bad)]) == 0
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith(f"tb_iotrace: no summary kept for {bad} (")
    assert summaries.load(str(bad)) is None


def test_keep_uploaded_removes_its_copy_even_when_nothing_is_kept(cache: Path, tmp_path: Path) -> None:
    folder = tmp_path / "landed-copies"
    folder.mkdir()
    local = folder / "h.xplane.pb"
    local.write_bytes(b"x")
    assert landed.keep_uploaded("h", str(local), "memory://b/loose.bin", False) == []   # no summaries folder
    assert not local.exists() and not folder.exists()


def test_an_error_quoting_the_url_prints_no_secret(monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """A client's message that quotes the URL it was given (credentials and all) is printed with
    them masked, whatever layer raised it."""
    url = "s3://AKIAKEYID:SECRETVAL@b/x"

    def upload(*a: Any) -> list[str]:
        raise OSError(f"cannot read {url}: access denied for AKIAKEYID")

    monkeypatch.setattr(landed, "lowest_priority", lambda: None)
    monkeypatch.setattr(landed, "keep_uploaded", upload)
    assert landed.main(["--uploaded", "h", "/l", url]) == 0
    err = capsys.readouterr().err
    assert "SECRETVAL" not in err and "AKIAKEYID" not in err and "access denied" in err, err
