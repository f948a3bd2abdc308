"""tb_iotrace.plugin.findings_worker, run in-process: ``main`` writes one strict JSON answer (or,
with ``--each``, one line per file, a bad file answered with its error and the others still
answered), and ``run_child``/``run_child_each`` turn a child's failure, silence or slowness into
a one-line RuntimeError, pointing the child at this checkout's package."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tb_iotrace.plugin import findings_worker as fw

DATA = Path(__file__).resolve().parents[1] / "data"


class Out:
    def __init__(self, capsys: pytest.CaptureFixture[str]) -> None:
        self.capsys = capsys

    def getvalue(self) -> str:
        return self.capsys.readouterr().out


@pytest.fixture()
def out(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Out:
    """main()'s stdout, with the child's priority and death signal left out of this process."""
    monkeypatch.setattr(fw, "_background", lambda: None)
    return Out(capsys)


def test_main_answers_one_capture_as_compact_json(out: Out) -> None:
    assert fw.main([str(DATA / "jax_plain.xplane.pb")]) == 0
    text = out.getvalue()
    got = json.loads(text)
    assert got["findings"] == [] and "no I/O data" in got["message"]
    assert text == json.dumps(got, separators=(",", ":"))       # compact, one line, no trailing newline


def test_each_answers_every_file_and_names_the_bad_ones(out: Out, tmp_path: Path) -> None:
    bad = tmp_path / "bad\x1b[2J\nname.xplane.pb"
    bad.write_bytes(b"\xff" * 64)
    paths = [str(DATA / "jax_io.xplane.pb"), str(bad), str(tmp_path / "gone.xplane.pb"),
             str(DATA / "jax_plain.xplane.pb")]
    assert fw.main(["--each", *paths]) == 0
    lines = out.getvalue().splitlines()
    assert len(lines) == 4                      # a newline in a file name does not split a line
    got = [json.loads(ln) for ln in lines]
    assert [g["path"] for g in got] == paths
    assert "out" in got[0] and "findings" in got[0]["out"] and "error" not in got[0]
    assert got[1]["error"].startswith("XPlaneError: ") and "truncated or corrupt" in got[1]["error"]
    assert got[2]["error"].startswith("SourceError: ") and "no such file" in got[2]["error"]
    assert "no I/O data" in got[3]["out"]["message"]


def test_each_with_no_files_writes_nothing(out: Out) -> None:
    assert fw.main(["--each"]) == 0 and out.getvalue() == ""


def test_each_a_non_finite_answer_does_not_cost_the_others_theirs(out: Out,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The module's rule: one bad capture does not cost the others their answer. An answer that
    strict JSON cannot hold (NaN) is such a capture."""
    answers = {"a": {"findings": [], "share": float("nan")}, "b": {"findings": [], "share": 0.5}}
    monkeypatch.setattr(fw, "findings_of", lambda p: answers[p])
    try:
        fw.main(["--each", "a", "b"])
    except ValueError:
        pass
    got = [json.loads(ln) for ln in out.getvalue().splitlines()]
    assert [g["path"] for g in got] == ["a", "b"]
    assert "error" in got[0] and got[1]["out"]["share"] == 0.5


def _completed(rc: int, stdout: str = "", stderr: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.CompletedProcess([], rc, stdout, stderr)


def test_run_child_env_points_at_this_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}

    def run(argv: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
        seen.update(kw, argv=argv)
        return _completed(0, '{"findings":[]}')

    monkeypatch.setattr(fw.subprocess, "run", run)
    monkeypatch.setenv("PYTHONPATH", os.pathsep + "/elsewhere" + os.pathsep)
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "1")
    assert fw.run_child("/x.xplane.pb", 7) == {"findings": []}
    assert seen["argv"][1:] == ["-m", "tb_iotrace.plugin.findings_worker", "/x.xplane.pb"]
    assert seen["timeout"] == 7 and seen["start_new_session"] is True
    assert not fw._installed_in_site()          # a checkout: the child is pointed at it
    assert seen["env"]["PYTHONPATH"].split(os.pathsep) == [fw._ROOT, "/elsewhere"]
    assert seen["env"]["TF_CPP_MIN_LOG_LEVEL"] == "1"           # the user's setting kept
    assert Path(fw._ROOT, "tb_iotrace", "plugin", "findings_worker.py").is_file()


def test_run_child_failure_says_the_last_stderr_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fw.subprocess, "run",
                        lambda argv, **kw: _completed(1, "", "Traceback\n  ...\nMemoryError: big\n\n"))
    with pytest.raises(RuntimeError, match=r"^the analysis failed \(MemoryError: big\)$"):
        fw.run_child("/x", 5)
    monkeypatch.setattr(fw.subprocess, "run", lambda argv, **kw: _completed(-9, "", "  \n"))
    with pytest.raises(RuntimeError, match=r"^the analysis failed \(no output\)$"):
        fw.run_child("/x", 5)


def test_run_child_timeout_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    def run(argv: list[str], **kw: Any) -> Any:
        raise subprocess.TimeoutExpired(argv, kw["timeout"])

    monkeypatch.setattr(fw.subprocess, "run", run)
    with pytest.raises(RuntimeError, match=r"^the analysis took longer than 3 s$"):
        fw.run_child("/x", 2.6)


def _scripted_popen(monkeypatch: pytest.MonkeyPatch, script: str) -> list[list[str]]:
    """Popen that runs ``script`` (python -c) in place of the worker; the argv it was given."""
    real, argvs = subprocess.Popen, []

    def popen(argv: list[str], **kw: Any) -> subprocess.Popen[str]:
        argvs.append(argv)
        return real([sys.executable, "-c", script], **kw)

    monkeypatch.setattr(fw.subprocess, "Popen", popen)
    return argvs


def test_run_child_each_delivers_lines_then_reports_a_failed_child(monkeypatch: pytest.MonkeyPatch) -> None:
    argvs = _scripted_popen(monkeypatch, "import sys; print('{\"path\":\"a\",\"out\":{\"n\":1}}', flush=True); "
                                         "print('{\"path\":\"b\",\"error\":\"XPlaneError: bad\"}', flush=True); "
                                         "sys.stderr.write('boom\\nKilled: oom\\n'); sys.exit(3)")
    got: list[tuple[str, Any, Any]] = []
    with pytest.raises(RuntimeError, match=r"^the analysis failed \(Killed: oom\)$"):
        fw.run_child_each(["a", "b", "c"], 30, lambda p, o, e: got.append((p, o, e)))
    assert got == [("a", {"n": 1}, None), ("b", None, "XPlaneError: bad")]
    assert argvs[0][1:] == ["-m", "tb_iotrace.plugin.findings_worker", "--each", "a", "b", "c"]


def test_run_child_each_timeout_kills_the_child(monkeypatch: pytest.MonkeyPatch) -> None:
    _scripted_popen(monkeypatch, "import time; print('{\"path\":\"a\",\"out\":{}}', flush=True); time.sleep(60)")
    got: list[str] = []
    with pytest.raises(RuntimeError, match=r"^the analysis took longer than 1 s$"):
        fw.run_child_each(["a", "b"], 0.8, lambda p, o, e: got.append(p))
    assert got == ["a"]
