"""The verdict (tb_iotrace.analysis.verdict, issue 19): how much of step time waits for input,
how that wait divides into file I/O, decode, starved, copy and other, and the change with the
biggest expected effect, on synthetic PyTorch traces (with and without the workers' fetch
spans), a synthetic TF capture with tf.data iterator threads, and the real H200 trace."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tb_iotrace.analysis import analyze
from tb_iotrace.kineto_xspace import read_xspace

import torch_fetch_trace

DATA = Path(__file__).resolve().parents[1] / "data"


def _verdict(path: Path) -> dict:
    a = analyze(read_xspace(path))
    assert a is not None
    return a.verdict


def test_decode_bound_workers(tmp_path: Path) -> None:
    """Every 4 ms wait of a 10 ms step: a worker fetching all of it, reading for 1 ms of it:
    file_io 1/4, decode 3/4; advice: more workers, by the stated model."""
    p = tmp_path / "decode.pt.trace.json.gz"
    torch_fetch_trace.make(p)
    v = _verdict(p)
    assert v["input_wait_share"] == pytest.approx(0.4) and v["basis"] == "steps" and v["bound"] == "input"
    assert v["wait_breakdown"] == pytest.approx({"file_io": 0.25, "decode": 0.75, "starved": 0.0, "copy": 0.0,
                                                 "other": 0.0})
    assert v["unmeasured"] == [] and v["cause"] == "decode"
    # ceil(1.5 x 2 / (1 - 0.4)) = 5 workers; step time max(0.6, 2/5) = 60% of now
    assert v["change"].startswith("num_workers=2 -> 5")
    assert v["expected_step_time_change"] == pytest.approx(-0.4)
    assert "expected step time -40%" in v["advice"] and "up to 40%" in v["advice"]


def test_starved_workers(tmp_path: Path) -> None:
    """The workers fetch for 2 ms of each 4 ms wait (reading 1 ms of it), then nothing is in
    flight: starved 1/2; persistent workers: a larger prefetch_factor."""
    p = tmp_path / "starved.pt.trace.json.gz"
    torch_fetch_trace.make(p, fetch_ms=2)
    v = _verdict(p)
    assert v["wait_breakdown"] == pytest.approx({"file_io": 0.25, "decode": 0.25, "starved": 0.5, "copy": 0.0,
                                                 "other": 0.0})
    assert v["cause"] == "starved" and v["change"] == "prefetch_factor=2 -> 4"
    assert v["expected_step_time_change"] == pytest.approx(-0.2)


def test_without_fetch_spans_decode_is_not_guessed(tmp_path: Path) -> None:
    """A trace from before the fetch spans: the reads are measured, decode and starved are not
    (None, listed, with the reason), and the shares still sum to 1."""
    p = tmp_path / "old.pt.trace.json.gz"
    torch_fetch_trace.make(p, fetch_ms=None)
    v = _verdict(p)
    b = v["wait_breakdown"]
    assert b["file_io"] == pytest.approx(0.25) and b["decode"] is None and b["starved"] is None
    assert v["unmeasured"] == ["decode", "starved"] and v["unmeasured_share"] == pytest.approx(0.75)
    assert "fetch spans" in v["reason"]
    assert sum(x for x in b.values() if x is not None) + v["unmeasured_share"] == pytest.approx(1.0)
    assert v["cause"] == "decode or starved" and v["change"].startswith("num_workers=2 -> 5")


def test_gpu_run_copy_and_pin_memory(tmp_path: Path) -> None:
    """A GPU run without pin_memory: the copies after the wait are not part of it (copy 0,
    measured), and the advice adds pin_memory=True."""
    p = tmp_path / "gpu.pt.trace.json.gz"
    torch_fetch_trace.make(p, gpu=True)
    v = _verdict(p)
    assert v["wait_breakdown"]["copy"] == 0.0 and "copy" not in v["unmeasured"]
    assert "pin_memory=True" in v["change"]


def test_main_process_loading(tmp_path: Path) -> None:
    """num_workers=0: the main process is the loader inside __next__: the wait is its reads and
    its decode; advice: workers, the whole wait can go."""
    p = tmp_path / "main.pt.trace.json.gz"
    torch_fetch_trace.make(p, fetch_ms=None, num_workers=0)
    v = _verdict(p)
    assert v["wait_breakdown"]["decode"] == pytest.approx(0.75) and v["unmeasured"] == []
    assert v["change"].startswith("num_workers=0 -> 2") and v["expected_step_time_change"] == pytest.approx(-0.4)


def test_not_input_bound(tmp_path: Path) -> None:
    p = tmp_path / "fast.pt.trace.json.gz"
    torch_fetch_trace.make(p, wait_ms=0.3, fetch_ms=0.3, read_ms=0.1)
    v = _verdict(p)
    assert v["bound"] == "not input" and v["input_wait_share"] == pytest.approx(0.03)
    assert v["advice"].startswith("Not input-bound") and v["expected_step_time_change"] == pytest.approx(-0.03)


def test_moderately_input_bound_is_partly(tmp_path: Path) -> None:
    p = tmp_path / "mid.pt.trace.json.gz"
    torch_fetch_trace.make(p, wait_ms=1, fetch_ms=1, read_ms=0.5)
    assert _verdict(p)["bound"] == "partly input"


def test_h200_tuned_job_is_not_input_bound(tmp_path: Path) -> None:
    """The real H200 trace of the tuned job (8 workers, pin_memory, persistent; ~2% wait): not
    input-bound, and no finding is a warning (small reads, many small files and the EOF probes
    are there, but the step barely waits for them)."""
    src = tmp_path / "h200_tuned.pt.trace.json.gz"
    shutil.copy(DATA / "h200_tuned.pt.trace.json.gz", src)
    a = analyze(read_xspace(src))
    v = a.verdict
    assert v["bound"] == "not input" and v["input_wait_share"] == pytest.approx(0.0202, abs=0.001)
    assert v["basis"] == "steps" and v["steps"] == 6
    assert [f["severity"] for f in a.findings if f["severity"] != "info"] == []
    assert {"small-reads", "many-small-files"} <= set(a.ids)
    for f in a.findings:
        assert f["impact"]["step_share"] < 0.05, f


def test_report_json_and_text_lead_with_the_verdict(tmp_path: Path, capsys) -> None:
    """``tb-iotrace report``: the main process's host carries the verdict (JSON) and its text
    begins with it; the workers' hosts have none; findings carry their impact, ordered by it,
    and input-bound's impact is the verdict's wait share."""
    import json

    from tb_iotrace.cli import main

    p = tmp_path / "job.pt.trace.json.gz"
    torch_fetch_trace.make(p)
    assert main(["report", str(p), "--json", "--no-progress", "--jobs", "1"]) == 0
    hosts = json.loads(capsys.readouterr().out)["runs"][0]["hosts"]
    main_host = next(h for h in hosts if h["verdict"])
    assert [h["verdict"] for h in hosts if h is not main_host] == [None, None]
    v = main_host["verdict"]
    assert v["bound"] == "input" and v["wait_breakdown"]["decode"] == pytest.approx(0.75)
    shares = [f["impact"]["step_share"] for f in main_host["findings"]]
    assert shares == sorted(shares, reverse=True)
    ib = next(f for f in main_host["findings"] if f["id"] == "input-bound")
    assert ib["impact"]["step_share"] == pytest.approx(v["input_wait_share"])
    assert ib["impact"]["ms_per_step"] == pytest.approx(4.0) and ib["severity"] == "warning"
    assert main(["report", str(p), "--no-progress", "--jobs", "1"]) == 0
    text = capsys.readouterr().out
    first = text.split("\n\n")[0].splitlines()
    assert first[2].startswith("Verdict: INPUT-BOUND: the step waits for input 40.0% of its time")
    assert "decode 75%" in first[3] and "num_workers=2 -> 5: expected step time -40%" in first[4]


def test_tab_findings_carry_the_verdict(tmp_path: Path) -> None:
    """The tab's /findings: the host's verdict (the same as the report's) beside its findings;
    input-bound's suggestion leads with the verdict's advice."""
    from plugin_client import make_client

    run = tmp_path / "logs" / "j"
    run.mkdir(parents=True)
    torch_fetch_trace.make(run / "w.1.pt.trace.json.gz")
    _, get = make_client(tmp_path / "logs")
    code, f = get("/findings", run="j", host="w")
    assert code == 200
    (v,) = f["verdicts"]
    assert v["host"] == "w" and v == dict(_verdict(run / "w.1.pt.trace.json.gz"), host="w")
    ib = next(x for x in f["findings"] if x["id"] == "input-bound")
    assert ib["suggestion"].startswith(v["advice"]) and ib["impact"]["step_share"] == pytest.approx(0.4)
