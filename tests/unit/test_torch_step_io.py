"""The per-step I/O of a PyTorch job counts every process of the job: the DataLoader workers
read the batches the main process's steps take. Before, `report --json` gave the main
process's steps only its own I/O (155 B a step on DLIO while the workers read 16 MiB)."""
from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import torch_fetch_trace


def test_steps_count_the_workers_reads(tmp_path: Path) -> None:
    from tb_iotrace.cli import main

    p = tmp_path / "job.pt.trace.json.gz"
    torch_fetch_trace.make(p)        # each step: one worker reads 8192 B
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["report", str(p), "--json", "--no-progress", "--jobs", "1"]) == 0
    hosts = [h for r in json.loads(out.getvalue())["runs"] for h in r["hosts"]]
    (main_host,) = [h for h in hosts if h.get("verdict")]
    steps = main_host["steps"]
    assert len(steps) == 10
    assert [s["io_bytes"] for s in steps] == [8192] * 10 and all(s["io_calls"] == 1 for s in steps)
