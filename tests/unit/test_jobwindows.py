"""A job's profile windows in time order: ``tb-iotrace report`` (JSON ``jobs`` and the
text table) and the tab's ``/windows`` list the same windows with the same figures. The windows
are copies of a real JAX capture (tests/data/jax_io.xplane.pb) moved in time: their names sort
in another order than their starts."""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tb_iotrace.analysis.run_result import build
from tb_iotrace.cli.report_text.document import render_report
from tb_iotrace.cli.report_text.job_text import render_windows
from tb_iotrace.model.open_source import open_source as resolve
from tb_iotrace.analysis.jobwindows import job_of, jobs, window_row
from tb_iotrace.store.xplane import load_xspace, profile_start_ns

from moved_capture import CAPTURE, HOUR_NS, job_logdir

# session name -> hours after the capture's own start: name order b, c, d; time order d, b, c
SHIFTS = {"b": 1, "c": 2, "d": 0}



@pytest.fixture()
def logdir(tmp_path: Path) -> Path:
    job_logdir(tmp_path, SHIFTS)
    other = tmp_path / "other" / "plugins" / "profile" / "s1" / "vm.xplane.pb"
    other.parent.mkdir(parents=True)
    shutil.copyfile(CAPTURE, other)
    return tmp_path


def test_job_of() -> None:
    assert job_of("a/b/2026_01_01") == "a/b" and job_of("2026_01_01") == ""


def test_window_row_sums_hosts() -> None:
    hosts = [{"bytes_read": 10, "bytes_written": 1, "read_time_s": 0.5, "io_calls": 3, "input_wait_ns": 30,
              "span_ns": 100},
             {"bytes_read": 5, "bytes_written": 0, "read_time_s": 0.25, "io_calls": 2, "input_wait_ns": 10,
              "span_ns": 100}]
    row = window_row("j/w", hosts, [200, 100], [900, None], [4, 3])
    assert (row["job"], row["start_ns"], row["stop_ns"], row["duration_ns"]) == ("j", 100, 900, 800)
    assert (row["bytes_read"], row["io_calls"], row["steps"], row["hosts"]) == (15, 5, 4, 2)
    assert row["input_wait_share"] == pytest.approx(40 / 200) and row["read_time_s"] == pytest.approx(0.75)
    bare = window_row("w", [], [None], [None], [])
    assert bare["start_ns"] is None and bare["duration_ns"] is None and bare["input_wait_share"] is None
    # a window without a start goes last; jobs come by name
    listed = jobs([bare, row, {**row, "run": "j/v", "start_ns": 50}])
    assert [(j["job"], [w["run"] for w in j["windows"]]) for j in listed] == [("", ["w"]), ("j", ["j/v", "j/w"])]
    assert render_windows(listed) != "" and "Profile windows of j (2" in render_windows(listed) and "of . " not in render_windows(listed)


def test_report_lists_a_jobs_windows_in_time_order(logdir: Path) -> None:
    doc = build(resolve(str(logdir)), jobs=1)
    by_job = {j["job"]: j["windows"] for j in doc["jobs"]}
    assert sorted(by_job) == ["job", "other"]
    ws = by_job["job"]
    assert [w["run"] for w in ws] == ["job/d", "job/b", "job/c"]
    base = profile_start_ns(load_xspace(CAPTURE))
    assert [w["start_ns"] - base for w in ws] == [0, HOUR_NS, 2 * HOUR_NS]
    hosts = {r["run"]: r["hosts"][0] for r in doc["runs"]}
    for w in ws:
        h = hosts[w["run"]]
        assert w["bytes_read"] == h["summary"]["bytes_read"] > 0
        assert w["steps"] == len(h["steps"]) == 4                        # four StepTraceAnnotation steps
        assert w["duration_ns"] == h["profile"]["stop_ns"] - h["profile"]["start_ns"] > 0
        assert w["input_wait_ns"] == h["summary"]["input_wait_ns"]
    text = render_report(doc)
    assert "Profile windows of job (3, in time order)" in text
    assert "Profile windows of other" not in text                  # one window is not a series
    lines = [ln for ln in text.splitlines() if ln.rstrip().endswith(("job/b", "job/c", "job/d"))]
    assert [ln.split()[-1] for ln in lines] == ["job/d", "job/b", "job/c"]


def test_tab_lists_the_same_windows(logdir: Path) -> None:
    pytest.importorskip("tensorboard")
    from plugin_client import make_client

    doc = build(resolve(str(logdir)), jobs=1)
    [reported] = [j["windows"] for j in doc["jobs"] if j["job"] == "job"]
    _, get = make_client(logdir)
    code, body = get("/windows", run="job/c")
    assert code == 200, body
    assert body["job"] == "job" and body["unreadable"] == []
    keys = ("n", "run", "start_ns", "stop_ns", "duration_ns", "steps", "bytes_read", "io_calls")
    assert [{k: w[k] for k in keys} for w in body["windows"]] == [{k: w[k] for k in keys} for w in reported]
    for got, want in zip(body["windows"], reported):
        assert got["input_wait_share"] == pytest.approx(want["input_wait_share"], abs=1e-3)
    # a corrupt window is named, the others still listed
    (logdir / "job" / "plugins" / "profile" / "b" / "vm.xplane.pb").write_bytes(b"\x0a\xff\xff\xff")
    code, body = get("/windows", run="job/c")
    assert code == 200 and [w["run"] for w in body["windows"]] == ["job/d", "job/c"]
    assert [u["run"] for u in body["unreadable"]] == ["job/b"] and "cannot read" in body["unreadable"][0]["error"]
    assert get("/windows", run="job/nosuch")[0] == 404
    assert get("/windows")[0] == 400
    assert get("/windows", run="../x")[0] == 400


def test_windows_taken_by_run_or_attach_say_so(logdir: Path) -> None:
    """``tb-iotrace run --profile-every`` and ``attach`` leave ``tb_iotrace.origin.json`` beside
    the capture they published: the report's window list, its host title and the tab's /windows
    row say who took the window and when; the job's own windows say nothing."""
    from tb_iotrace.store.window_origin import write_origin

    base = profile_start_ns(load_xspace(CAPTURE))
    session = logdir / "job" / "plugins" / "profile"
    write_origin([str(session / "b" / "vm.xplane.pb")], {"by": "tb-iotrace attach", "at_ns": base, "pid": 42})
    write_origin([str(session / "c" / "vm.xplane.pb"), "s3://bucket/c/vm.xplane.pb"],
                 {"by": "tb-iotrace run --profile-every", "at_ns": base, "pid": 7})
    doc = build(resolve(str(logdir)), jobs=1)
    [ws] = [j["windows"] for j in doc["jobs"] if j["job"] == "job"]
    taken = {w["run"]: w.get("taken_by") for w in ws}
    when = jobwindows_when(base)
    assert taken == {"job/d": None, "job/b": f"tb-iotrace attach at {when} (pid 42)",
                     "job/c": f"tb-iotrace run --profile-every at {when} (pid 7)"}
    text = render_report(doc)
    assert f"[window taken by tb-iotrace attach at {when} (pid 42)]" in text
    assert f"job/b  [tb-iotrace attach at {when} (pid 42)]" in text
    pytest.importorskip("tensorboard")
    from plugin_client import make_client

    _, get = make_client(logdir)
    code, body = get("/windows", run="job/c")
    assert code == 200 and {w["run"]: w.get("taken_by") for w in body["windows"]} == taken


def jobwindows_when(ns: int) -> str:
    import time

    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ns / 1e9))
