"""One rule for steps and input wait (tb_iotrace.model.stepwait): the report, the tab's
/hosts and /steps, the chrome export's step track and the findings give the same input wait
for the same capture. Before, the tab summed each thread's outermost waits (tf.data's
``Iterator::`` events included) against the capture's whole span, the report the union of
``IteratorGetNext``/``__next__`` inside the steps against their span: 0.6% against 2.0% on the
shared H200 trace, 24.9% against 14.4% on its untuned twin."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from tb_iotrace.cli import main
from tb_iotrace.model.stepwait import covered, input_wait, is_input_wait, merge

from plugin_client import make_client

DATA = Path(__file__).resolve().parents[1] / "data"


def test_rule_on_made_up_intervals() -> None:
    iv = merge(np.array([0, 5, 30, 8]), np.array([10, 12, 40, 9]))
    assert iv[0].tolist() == [0, 30] and iv[1].tolist() == [12, 40]
    assert covered(iv, [0, 10, 35], [10, 35, 100]).tolist() == [10, 7, 5]
    got = input_wait(iv, [0, 20], [20, 50])
    assert (got.wait, got.time, got.basis, got.per_step) == (22, 50, "steps", (12, 10))
    assert got.share == pytest.approx(22 / 50)
    no_steps = input_wait(iv)
    assert (no_steps.wait, no_steps.time, no_steps.basis) == (22, 40, "input waits")
    assert input_wait(merge(np.zeros(0), np.zeros(0))).basis == "none"
    # tf.data's own iterator events are the loader at work, not the step waiting
    assert is_input_wait("IteratorGetNextOp::DoCompute") and is_input_wait(
        "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__")
    assert not is_input_wait("Iterator::Root::Prefetch::ParallelMapV2")
    # grain: the step asking its prefetch iterator (grain's "prefetch" stage on the consumer's
    # thread); grain's stages at work (a source read, a map, the prefetch threads' _getitem) are not
    assert is_input_wait("PrefetchDatasetIterator.__next__") and is_input_wait("ThreadPrefetchDatasetIterator.__next__")
    assert not any(is_input_wait(n) for n in ("Prefetch._getitem", "MapMapDataset.__getitem__",
                                              "ArrayRecordDataSource.__getitem__", "MapDatasetIterator.__next__"))


def _kineto_logdir(tmp_path: Path) -> tuple[Path, str]:
    run = tmp_path / "logs" / "t"
    run.mkdir(parents=True)
    shutil.copy(DATA / "torch_loader.pt.trace.json.gz", run / "worker0.1.pt.trace.json.gz")
    return tmp_path / "logs", "t"


def _h200_logdir(tmp_path: Path) -> tuple[Path, str]:
    run = tmp_path / "logs" / "h"
    run.mkdir(parents=True)
    shutil.copy(DATA / "h200_tuned.pt.trace.json.gz", run / "h200.1.pt.trace.json.gz")
    return tmp_path / "logs", "h"


def _tf_logdir(tmp_path: Path) -> tuple[Path, str]:
    from tb_iotrace.plugin.synthetic import make_logdir

    make_logdir(tmp_path / "logs", DATA / "gpu_multi_worker.xplane.pb", run="r", host="w0", n_events=2000, seed=0)
    return tmp_path / "logs", "r"


@pytest.mark.parametrize("make", [_kineto_logdir, _h200_logdir, _tf_logdir],
                         ids=["pytorch", "pytorch-h200", "tensorflow-gpu"])
def test_report_tab_exports_and_findings_agree(make, tmp_path: Path, capsys) -> None:
    from tb_iotrace.analysis import analyze
    from tb_iotrace.model.open_source import open_source as resolve

    logdir, run = make(tmp_path)
    assert main(["report", str(logdir), "--json", "--no-progress", "--jobs", "1"]) == 0
    doc = json.loads(capsys.readouterr().out)
    host = next(h for r in doc["runs"] for h in r["hosts"] if h["steps"])
    rep = host["summary"]
    assert rep["wait_basis"] == "steps" and rep["input_wait_ns"] > 0
    # the report's steps table adds up to its summary
    assert sum(s["input_wait_ps"] for s in host["steps"]) // 1000 == pytest.approx(rep["input_wait_ns"], abs=1)
    assert sum(s["duration_ps"] for s in host["steps"]) // 1000 == pytest.approx(rep["span_ns"], abs=1)

    _, get = make_client(logdir)
    (tab_host,) = next(r["hosts"] for r in get("/runs")[1]["runs"] if r["run"] == run)
    tab = get("/hosts", run=run, host=tab_host)[1]["hosts"][0]
    assert tab["input_wait_ns"] == pytest.approx(rep["input_wait_ns"], abs=1)
    assert tab["span_ns"] == pytest.approx(rep["span_ns"], abs=1)
    assert tab["input_wait_pct"] == rep["input_wait_pct"]
    steps = get("/steps", run=run, host=tab_host)[1]
    assert steps["has_steps"] and len(steps["steps"]) == len(host["steps"])
    for a, b in zip(steps["steps"], host["steps"]):
        assert a["input_wait_ns"] == pytest.approx(b["input_wait_ps"] / 1000, abs=1)
        assert a["end"] - a["start"] == pytest.approx(b["duration_ps"] / 1000, abs=1)

    out = tmp_path / "chrome.json"
    assert main(["export", str(logdir), "--format", "chrome", "-o", str(out), "--no-progress"]) == 0
    spans = [e for e in json.loads(out.read_text())["traceEvents"]
             if e.get("ph") == "X" and "input_wait_us" in (e.get("args") or {})]
    assert len(spans) == len(host["steps"])
    assert sum(e["args"]["input_wait_us"] for e in spans) * 1000 == pytest.approx(rep["input_wait_ns"], abs=len(spans))

    src = next(s for s in resolve(str(logdir), None, None) if s.host == host["host"])
    a = analyze(src.space(), trace=src.io_trace())
    assert a.summary["input_wait_ps"] // 1000 == pytest.approx(rep["input_wait_ns"], abs=1)
    assert a.summary["step_time_ps"] // 1000 == pytest.approx(rep["span_ns"], abs=1)
    if host["verdict"] is not None:          # the verdict's share is the same wait
        assert host["verdict"]["input_wait_share"] == pytest.approx(rep["input_wait_ns"] / rep["span_ns"], rel=1e-6)
