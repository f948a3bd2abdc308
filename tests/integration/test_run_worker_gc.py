"""A forked DataLoader worker under ``tb-iotrace run`` never pays a full garbage collection of
the heap it inherited. Measured: the run's own allocations in the parent (its thread, its flushes)
move CPython's collection counters, so every forked worker of a restarted-each-epoch loader ran
a full collection early in its life (~90 ms of CPU each on a torch parent, most of it
copy-on-write page faults) where the same job's plain workers ran none. The worker's inherited
objects are frozen (``gc.freeze()``, as CPython advises for forked workers) when torch's worker
loop starts, so a collection there visits only what the worker made."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytestmark = [pytest.mark.torch, pytest.mark.slow]
PY = sys.executable

JOB = r'''
import gc, json, sys
import torch
from torch.utils.data import DataLoader, Dataset

class Probe(Dataset):
    def __len__(self): return 4
    def __getitem__(self, i):
        return torch.tensor([gc.get_freeze_count(), len(gc.get_objects(2))])

parent_objects = len(gc.get_objects())
loader = DataLoader(Probe(), batch_size=1, num_workers=2, multiprocessing_context="fork")
rows = [b[0].tolist() for b in loader]
json.dump({"parent_objects": parent_objects, "rows": rows}, open(sys.argv[1], "w"))
'''


def test_forked_dataloader_workers_collect_only_their_own_objects(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    r = subprocess.run([PY, "-m", "tb_iotrace", "run", "--quiet", "--logdir", str(tmp_path / "logs"), "--",
                        PY, "-c", JOB, str(out)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    got = json.loads(out.read_text())
    assert len(got["rows"]) == 4
    for frozen, oldest in got["rows"]:
        # the parent's objects (torch's modules, the dataset) are frozen in the worker: a full
        # collection there would visit only the few the worker made since
        assert frozen > got["parent_objects"] // 2, got
        assert oldest < frozen // 10, got
