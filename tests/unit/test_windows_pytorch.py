"""PyTorch traces are windows of their job in the tab's ``/windows``, beside the job's TensorFlow
/JAX profile runs: in time order, with the input wait, bytes and steps of each, who took it
(``tb-iotrace run --profile-every``, ``attach``, or the job's own torch.profiler) as
``tb-iotrace report`` lists them, and the window's verdict behind its row (``/findings`` of that
run). The windows are copies of a real trace (tests/data/torch_loader.pt.trace.json.gz) and of a
real JAX capture moved in time, one folder per PyTorch window as the zero-touch path writes them;
their names sort in another order than their starts."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tb_iotrace.analysis.run_result import build
from tb_iotrace.cli.report_text.document import render_report
from tb_iotrace.model.open_source import open_source as resolve
from tb_iotrace.store.xplane import load_xspace, profile_start_ns

from moved_capture import CAPTURE, HOUR_NS, write_moved
from moved_torch_trace import write_moved_trace

pytest.importorskip("tensorboard")
from plugin_client import make_client  # noqa: E402

T0 = 1795474975139669005            # the trace's profile start (its first step's op)
RUN = "pytorch/2026_11_24_12_22_55_7_1"
ATTACH = "pytorch/2026_11_24_11_22_55_9_1"


def _when(ns: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ns / 1e9))


@pytest.fixture()
def logdir(tmp_path: Path) -> Path:
    """Job ``pytorch``: its own trace at T0, an attached window 1 h later, a JAX profile run
    1.5 h later, a ``run --profile-every`` window 2 h later; another job's window apart."""
    job = tmp_path / "pytorch"
    write_moved_trace(job / "own", 0)
    write_moved_trace(job / ATTACH.split("/")[1], HOUR_NS, {"by": "tb-iotrace attach", "at_ns": T0 + HOUR_NS, "pid": 9})
    write_moved_trace(job / RUN.split("/")[1], 2 * HOUR_NS,
                      {"by": "tb-iotrace run --profile-every", "at_ns": T0 + 2 * HOUR_NS, "pid": 7,
                       "every_s": 3600.0, "for_s": 2.0})
    jax_shift = T0 - profile_start_ns(load_xspace(CAPTURE)) + 3 * HOUR_NS // 2
    write_moved(job / "plugins" / "profile" / "s1" / "vm.xplane.pb", jax_shift)
    write_moved_trace(tmp_path / "other" / "traces", 0)
    return tmp_path


def _findings(get: Any, run: str, host: str) -> dict[str, Any]:
    for _ in range(100):                  # hosts analysed in the background: bounded wait
        code, body = get("/findings", run=run, host=host)
        assert code == 200, body
        if not body.get("pending"):
            return body
        time.sleep(0.1)
    raise AssertionError(f"findings of {run} still pending")


def test_tab_lists_pytorch_windows_with_the_jobs_other_windows(logdir: Path) -> None:
    _, get = make_client(logdir)
    code, body = get("/windows", run=RUN)
    assert code == 200, body
    assert body["job"] == "pytorch" and body["unreadable"] == []
    ws = body["windows"]
    assert [w["run"] for w in ws] == ["pytorch/own", ATTACH, "pytorch/s1", RUN]       # time, not name
    assert [w["n"] for w in ws] == [1, 2, 3, 4]
    assert [w["kind"] for w in ws] == ["kineto", "kineto", "profile", "kineto"]
    assert [w["start_ns"] - T0 for w in ws] == [0, HOUR_NS, 3 * HOUR_NS // 2, 2 * HOUR_NS]
    assert [w.get("taken_by") for w in ws] == [
        None, f"tb-iotrace attach at {_when(T0 + HOUR_NS)} (pid 9)", None,
        f"tb-iotrace run --profile-every at {_when(T0 + 2 * HOUR_NS)} (pid 7)"]
    torch = [w for w in ws if w["kind"] == "kineto"]
    for w in torch:        # the trace's five steps; its two workers' reads of the eight files
        assert w["steps"] == 5 and w["bytes_read"] == 9036 and w["io_calls"] > 0 and w["hosts"] == 1
        assert 0 < w["input_wait_share"] < 1 and 0 < w["duration_ns"] < 10**9
    # the same list from any window of the job, a PyTorch one or the JAX one
    assert get("/windows", run="pytorch/s1")[1]["windows"] == ws
    assert get("/windows", run="other/traces")[1]["job"] == "other"
    # a trace that cannot be read is named, the other windows still listed
    [trace] = (logdir / ATTACH).glob("*.pt.trace.json.gz")
    trace.write_bytes(b"not gzip")
    code, body = get("/windows", run=RUN)
    assert code == 200 and [w["run"] for w in body["windows"]] == ["pytorch/own", "pytorch/s1", RUN]
    assert [u["run"] for u in body["unreadable"]] == [ATTACH] and "cannot read" in body["unreadable"][0]["error"]


def test_tab_and_report_list_the_same_windows(logdir: Path) -> None:
    doc = build(resolve(str(logdir)), jobs=1)
    [reported] = [j["windows"] for j in doc["jobs"] if j["job"] == "pytorch"]
    _, get = make_client(logdir)
    ws = get("/windows", run="pytorch/own")[1]["windows"]
    keys = ("n", "run", "start_ns", "stop_ns", "duration_ns", "steps", "bytes_read", "io_calls", "taken_by")
    assert [{k: w.get(k) for k in keys} for w in ws] == [{k: w.get(k) for k in keys} for w in reported]
    for got, want in zip(ws, reported):
        assert got["input_wait_share"] == pytest.approx(want["input_wait_share"], abs=1e-3)
    text = render_report(doc)
    assert "Profile windows of pytorch (4, in time order)" in text
    assert f"{RUN}  [tb-iotrace run --profile-every at {_when(T0 + 2 * HOUR_NS)} (pid 7)]" in text


def test_a_windows_verdict_is_behind_its_row(logdir: Path) -> None:
    """A click on a row shows that run: its verdict (``/findings``) has the row's input wait."""
    _, get = make_client(logdir)
    ws = get("/windows", run=RUN)[1]["windows"]
    for w in ws:
        code, runs = get("/runs")
        [info] = [r for r in runs["runs"] if r["run"] == w["run"]]
        body = _findings(get, w["run"], info["hosts"][0])
        [verdict] = body["verdicts"]
        assert verdict["bound"] == ("input" if w["kind"] == "kineto" else "not input"), verdict
        assert verdict["input_wait_share"] == pytest.approx(w["input_wait_share"], abs=1e-3)


def test_an_origin_that_is_not_a_time_is_said_as_unknown(tmp_path: Path) -> None:
    """A window's origin is read from a file anyone can write: a time that is not a number, or
    one past any date, is shown as ``?`` and the window still listed (no failed answer)."""
    job = tmp_path / "pytorch"
    write_moved_trace(job / "a", 0, {"by": "tb-iotrace attach", "at_ns": "soon", "pid": 3})
    write_moved_trace(job / "b", HOUR_NS, {"by": "tb-iotrace attach", "at_ns": 1e300, "pid": 4})
    _, get = make_client(tmp_path)
    code, body = get("/windows", run="pytorch/a")
    assert code == 200, body
    assert [w.get("taken_by") for w in body["windows"]] == ["tb-iotrace attach at ? (pid 3)",
                                                            "tb-iotrace attach at ? (pid 4)"]
    doc = build(resolve(str(tmp_path)), jobs=1)
    [ws] = [j["windows"] for j in doc["jobs"] if j["job"] == "pytorch"]
    assert [w["taken_by"] for w in ws] == ["tb-iotrace attach at ? (pid 3)", "tb-iotrace attach at ? (pid 4)"]
    assert "[window taken by tb-iotrace attach at ? (pid 4)]" in render_report(doc)
