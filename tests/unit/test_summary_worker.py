"""tb_iotrace.plugin.summary_worker, run in-process: ``row_line`` answers the tab's host row of
a capture and keeps it as the summary of the version it decoded (never of a version written
meanwhile), a bad or missing capture is one error line with its reason, and ``main`` writes one
strict JSON line per HOST PATH pair whatever the names hold."""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tb_iotrace.analysis.capture_row import capture_row
from tb_iotrace.model.tab.load import load_any
from tb_iotrace.plugin import summary_worker as sw
from tb_iotrace.store import summaries

DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.fixture()
def logdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TB_IOTRACE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv(summaries.ENV, "1")
    d = tmp_path / "logs" / "plugins" / "profile" / "run1"
    d.mkdir(parents=True)
    shutil.copyfile(DATA / "jax_io.xplane.pb", d / "w0.xplane.pb")
    shutil.copyfile(DATA / "jax_plain.xplane.pb", d / "w1.xplane.pb")
    return d


def test_row_is_the_tabs_row_and_is_kept(logdir: Path) -> None:
    path = str(logdir / "w0.xplane.pb")
    assert summaries.load(path) is None
    got = sw.row_line("w0", path)
    assert got == {"path": path, "row": capture_row("w0", load_any(path, "w0"))}
    assert got["row"]["io_calls"] > 0 and got["row"]["host"] == "w0"
    kept = summaries.load(path)
    assert kept is not None and kept == summaries.row_of(got["row"])


def test_a_capture_rewritten_while_decoded_keeps_no_summary_of_the_new_version(
        logdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = logdir / "w0.xplane.pb"

    def load_then_rewrite(p: str, host: str) -> Any:
        cap = load_any(p, host)
        shutil.copyfile(DATA / "jax_plain.xplane.pb", path)   # a new version lands meanwhile
        return cap

    monkeypatch.setattr(sw, "load_any", load_then_rewrite)
    got = sw.row_line("w0", str(path))
    assert got["row"]["io_calls"] > 0
    assert summaries.load(str(path)) is None                  # the old row is not the new file's


def test_a_corrupt_capture_is_an_error_line_and_nothing_is_kept(logdir: Path) -> None:
    bad = logdir / "bad.xplane.pb"
    bad.write_bytes(b"\x0a\xff\xff\xff\xff\x0f not a capture")
    got = sw.row_line("bad", str(bad))
    assert set(got) == {"path", "error"} and got["error"].startswith("cannot read this capture: ")
    assert summaries.load(str(bad)) is None


def test_a_missing_capture_is_an_error_line(logdir: Path) -> None:
    path = str(logdir / "gone.xplane.pb")
    got = sw.row_line("gone", path)
    assert got["path"] == path and "row" not in got and got["error"]


def test_any_other_failure_is_named_and_cut_short(logdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(p: str, host: str) -> Any:
        raise RecursionError("deep " * 200)

    monkeypatch.setattr(sw, "load_any", boom)
    got = sw.row_line("w0", str(logdir / "w0.xplane.pb"))
    assert got["error"].startswith("cannot decode (RecursionError: deep deep")
    assert len(got["error"]) == len("cannot decode (RecursionError: ") + 300 + 1


def test_main_writes_one_strict_line_per_pair(logdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    odd = logdir / "odd\x1b[31m\nname.xplane.pb"
    shutil.copyfile(DATA / "jax_io.xplane.pb", odd)
    argv = ["w0", str(logdir / "w0.xplane.pb"), "h\u2028\x1b", str(odd), "w1", str(logdir / "w1.xplane.pb"),
            "dangling"]                                            # a host without a path: no line
    assert sw.main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3
    got = [json.loads(ln) for ln in lines]
    assert [g["path"] for g in got] == [argv[1], argv[3], argv[5]]
    assert got[1]["row"]["host"] == "h\u2028\x1b" and got[1]["row"]["io_calls"] == got[0]["row"]["io_calls"]
    assert got[2]["row"]["io_calls"] == 0
    assert all("\x1b" not in ln for ln in lines)                   # escaped by the JSON


def test_main_a_non_finite_row_does_not_cost_the_others_theirs(monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """One bad capture does not cost the others their row (the module's rule): a row strict JSON
    cannot hold (NaN) must come back as that capture's error line, not end the worker."""
    rows = {"a": {"path": "a", "row": {"input_wait_pct": float("nan")}}, "b": {"path": "b", "row": {"x": 1}}}
    monkeypatch.setattr(sw, "row_line", lambda host, path: rows[path])
    try:
        sw.main(["ha", "a", "hb", "b"])
    except ValueError:
        pass
    got = [json.loads(ln) for ln in capsys.readouterr().out.splitlines()]
    assert [g["path"] for g in got] == ["a", "b"]
    assert "error" in got[0] and got[1]["row"] == {"x": 1}
