"""Holistic Trace Analysis (HTA 0.5.0) reads a ``tb_iotrace.torch.trace_handler`` trace as it
reads PyTorch's own: one profiled window of a CPU loop whose DataLoader workers read
known files, written by both handlers from the same export
(tests/integration/scripts/torch_hta.py). HTA's parsed dataframe holds PyTorch's events
unchanged (same columns, types and values) plus our I/O calls with their names, files and
bytes (and the DataLoader workers' fetch spans, ``tb_iotrace::fetch``); its analyses give the
same results on both, and those that need GPU events (or fail on
a plain CPU trace with this HTA and pandas: critical path, call graph, temporal and idle time
breakdown) fail on ours the same way, no other way."""
from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable

import pytest

from tb_iotrace.analysis.attribution import op_kind
from tb_iotrace.store.kineto import CATEGORY, FETCH_CATEGORY, read_trace

pytest.importorskip("torch")
pytest.importorskip("hta")
import pandas as pd  # noqa: E402
from hta.common.trace import Trace  # noqa: E402
from hta.common.trace_call_graph import CallGraph  # noqa: E402
from hta.configs.parser_config import ParserConfig  # noqa: E402
from hta.trace_analysis import TraceAnalysis  # noqa: E402
from hta.trace_diff import DeviceType, LabeledTrace, TraceDiff  # noqa: E402

# HTA 0.5.0 warns of pandas 3 deprecations in its own code
pytestmark = [pytest.mark.torch, pytest.mark.filterwarnings("ignore::Warning:hta.*")]
SCRIPTS = Path(__file__).parent / "scripts"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("torch_hta")
    proc = subprocess.run([sys.executable, str(SCRIPTS / "torch_hta.py"), str(work)],
                          capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-4000:]
    result = json.loads((work / "result.json").read_text())
    assert len(result["ours"]) == 1 and len(result["plain"]) == 1, result
    logging.getLogger("hta").setLevel(logging.ERROR)   # HTA logs every parse at WARNING
    return {"work": work, **result, "ours_dir": str(work / "ours"), "plain_dir": str(work / "plain"),
            "ours_ta": TraceAnalysis(trace_dir=str(work / "ours")),
            "plain_ta": TraceAnalysis(trace_dir=str(work / "plain"))}


def decoded(ta: TraceAnalysis) -> pd.DataFrame:
    """Rank 0's dataframe with names and categories as strings (symbol ids differ per trace)."""
    df = ta.t.get_trace(0).copy()
    sym = ta.t.symbol_table.get_sym_table()
    df["name"] = df["name"].map(lambda i: sym[i])
    df["cat"] = df["cat"].map(lambda i: sym[i])
    return df


def test_same_events_and_types_as_pytorch_handler(run: dict[str, Any]) -> None:
    ours, plain = decoded(run["ours_ta"]), decoded(run["plain_ta"])
    assert list(ours.columns) == list(plain.columns)
    # HTA stores "bytes" (a memcpy's, a call's) in the smallest int type that holds the column
    types = ours.dtypes.to_dict()
    assert types.pop("bytes").kind == plain.dtypes["bytes"].kind == "i"
    assert types == plain.dtypes.drop("bytes").to_dict()
    io = ours["cat"] == CATEGORY
    assert io.sum() > 0 and (ours["cat"] == FETCH_CATEGORY).sum() > 0
    kept = ours[~(io | (ours["cat"] == FETCH_CATEGORY))].astype({"bytes": plain.dtypes["bytes"]})
    assert len(kept) == len(plain)
    # HTA starts each trace's clock at its first event: compare from the first PyTorch event
    for df in (kept, plain):
        df.loc[:, "end"] = df["end"] - df["ts"]
    kept = kept.assign(ts=kept["ts"] - kept["ts"].min())
    plain = plain.assign(ts=plain["ts"] - plain["ts"].min())
    pd.testing.assert_frame_equal(kept.reset_index(drop=True), plain.reset_index(drop=True))
    assert run["ours_ta"].get_profiler_steps() == run["plain_ta"].get_profiler_steps()


def test_io_calls_in_hta_dataframe(run: dict[str, Any]) -> None:
    """Every I/O call of the trace is a row of HTA's dataframe, on its process and thread, named
    by the call; with the arguments asked for, its file, offset and bytes: the workers' reads
    of the loop's files add up to the files' sizes."""
    (name,) = run["ours"]
    events = [e for e in read_trace(Path(run["ours_dir"]) / name)["traceEvents"] if e.get("cat") == CATEGORY]
    cfg = ParserConfig.get_default_cfg().clone()
    cfg.add_args([ParserConfig.make_attribute_spec("path", ""), ParserConfig.make_attribute_spec("offset", 0),
                  ParserConfig.make_attribute_spec("fd", 0)])
    t = Trace(trace_dir=run["ours_dir"], parser_config=cfg)
    t.load_traces()
    df = t.get_trace(0)
    sym = t.symbol_table.get_sym_table()
    df = df[df["cat"].map(lambda i: sym[i]) == CATEGORY].assign(name=df["name"].map(lambda i: sym[i]))
    assert len(df) == len(events)
    got = sorted(zip(df["name"], df["pid"].astype(int), df["tid"].astype(int), df["path"], df["bytes"]))
    want = sorted((e["name"], e["pid"], e["tid"], e["args"].get("path", ""), e["args"].get("bytes", -1))
                  for e in events)
    assert got == want
    files = run["files"]
    read: dict[str, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    for row in df.itertuples():
        if row.path in files and op_kind(row.name) == "read":
            assert row.offset >= 0
            read[row.path][int(row.pid)] += row.bytes
    assert {p: sum(by_pid.values()) for p, by_pid in read.items()} == files
    assert run["main_pid"] not in {pid for by_pid in read.values() for pid in by_pid}


def test_trace_diff_sees_only_the_io_calls(run: dict[str, Any]) -> None:
    """HTA's trace comparison (CPU operators, counts and total time, all steps): the same for
    every PyTorch operator; the differences are our calls and fetch spans, on ours only."""
    ours = LabeledTrace("ours", t=run["ours_ta"].t)
    plain = LabeledTrace("plain", t=run["plain_ta"].t)
    steps = run["plain_ta"].get_profiler_steps()
    diff = TraceDiff.compare_traces(plain, ours, control_iteration=steps, test_iteration=steps,
                                    device_type=DeviceType.CPU)
    df = decoded(run["ours_ta"])
    ours_rows = df["cat"].isin([CATEGORY, FETCH_CATEGORY])
    io_names = set(df.loc[ours_rows, "name"])
    in_steps = set(df.loc[ours_rows & df["iteration"].isin(steps), "name"])
    assert in_steps, "no I/O call inside a profiler step"
    changed = diff[diff["diff_counts"] != 0]
    assert set(changed.index) == in_steps
    assert (changed["plain_counts"] == 0).all()
    same = diff.drop(index=list(io_names & set(diff.index)))
    assert len(same) > 0
    assert (same["plain_counts"] == same["ours_counts"]).all()
    assert (same["plain_total_duration"] == same["ours_total_duration"]).all()


def _outcome(fn: Callable[[], Any]) -> tuple[str, Any]:
    try:
        return "ok", fn()
    except Exception as exc:   # noqa: BLE001 - the outcome compared is the exception's type
        return "error", type(exc).__name__


ANALYSES: dict[str, Callable[[TraceAnalysis], Any]] = {
    "gpu_kernel_breakdown": lambda ta: ta.get_gpu_kernel_breakdown(visualize=False),
    "cuda_kernel_launch_stats": lambda ta: ta.get_cuda_kernel_launch_stats(visualize=False),
    "comm_comp_overlap": lambda ta: ta.get_comm_comp_overlap(visualize=False),
    "gpu_user_annotation_breakdown": lambda ta: ta.get_gpu_user_annotation_breakdown(visualize=False),
    "queue_length_summary": lambda ta: ta.get_queue_length_summary(ranks=[0]),
    "memory_bw_summary": lambda ta: ta.get_memory_bw_summary(ranks=[0]),
    "temporal_breakdown": lambda ta: ta.get_temporal_breakdown(visualize=False),
    "idle_time_breakdown": lambda ta: ta.get_idle_time_breakdown(visualize=False),
    "potential_stragglers": lambda ta: ta.get_potential_stragglers(),
    "critical_path": lambda ta: ta.critical_path_analysis(rank=0, annotation="ProfilerStep", instance_id=1),
    "call_graph": lambda ta: CallGraph(ta.t),
}


def _same(a: Any, b: Any) -> None:
    if isinstance(a, pd.DataFrame):
        pd.testing.assert_frame_equal(a, b)
    elif isinstance(a, (tuple, list)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    elif isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            _same(a[k], b[k])
    else:
        assert a == b


@pytest.mark.parametrize("analysis", list(ANALYSES))
def test_analyses_same_as_on_pytorch_trace(run: dict[str, Any], analysis: str) -> None:
    """The GPU-side analyses find nothing on either CPU trace (no GPU events); those that fail on
    PyTorch's own CPU trace with HTA 0.5.0 and pandas 3 fail on ours with the same error."""
    plain = _outcome(lambda: ANALYSES[analysis](run["plain_ta"]))
    ours = _outcome(lambda: ANALYSES[analysis](run["ours_ta"]))
    assert ours[0] == plain[0], (plain, ours)
    if plain[0] == "error":
        assert ours[1] == plain[1]
    elif analysis not in ("critical_path", "call_graph"):
        _same(plain[1], ours[1])
