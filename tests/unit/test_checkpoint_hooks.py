"""torch.save/torch.load wrapped while a profiler records (tb_iotrace.recording.checkpoint_hooks)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

from tb_iotrace.recording import checkpoint_hooks


def test_spans_get_kind_and_path_only_inside_a_profiler(tmp_path: Path) -> None:
    checkpoint_hooks.install()
    checkpoint_hooks.install()                               # idempotent: wrapped once
    assert torch.save.__tbio_wrapper__ and torch.serialization.load is torch.load
    assert not hasattr(torch.save.__wrapped__, "__tbio_wrapper__")
    outside = tmp_path / "outside.pt"
    torch.save({"w": torch.ones(4)}, outside)                 # not profiling: not noted
    path = tmp_path / "m.pt"
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        torch.save({"w": torch.ones(1024)}, path)
        with open(path, "rb") as fh:
            got = torch.load(fh)
    assert torch.equal(got["w"], torch.ones(1024))
    prof.export_chrome_trace(str(tmp_path / "t.json"))
    trace = json.loads((tmp_path / "t.json").read_text())
    assert checkpoint_hooks.annotate(trace) == 2
    spans = [e for e in trace["traceEvents"] if e.get("name") == checkpoint_hooks.SPAN_NAME]
    assert [(e["args"]["kind"], e["args"]["path"]) for e in sorted(spans, key=lambda e: e["ts"])] == [
        ("save", str(path)), ("load", str(path))]
    assert checkpoint_hooks.annotate(trace) == 0            # the calls were used: forgotten


def test_distributed_checkpoint_save_and_load_are_spans(tmp_path: Path) -> None:
    import torch.distributed.checkpoint as dcp

    checkpoint_hooks.install()
    assert dcp.save.__tbio_wrapper__ and dcp.load.__tbio_wrapper__
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        dcp.save({"w": torch.ones(256, 256)}, checkpoint_id=str(tmp_path / "ck"))
        sd = {"w": torch.zeros(256, 256)}
        dcp.load(sd, checkpoint_id=tmp_path / "ck")
    assert torch.equal(sd["w"], torch.ones(256, 256))
    prof.export_chrome_trace(str(tmp_path / "t.json"))
    trace = json.loads((tmp_path / "t.json").read_text())
    assert checkpoint_hooks.annotate(trace) == 2
    spans = sorted((e for e in trace["traceEvents"] if e.get("name") == checkpoint_hooks.SPAN_NAME),
                   key=lambda e: e["ts"])
    assert [(e["args"]["kind"], e["args"]["path"], e["args"]["call"]) for e in spans] == [
        ("save", str(tmp_path / "ck"), "torch.distributed.checkpoint.save"),
        ("load", str(tmp_path / "ck"), "torch.distributed.checkpoint.load")]
