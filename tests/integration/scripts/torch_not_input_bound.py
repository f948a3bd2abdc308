"""PyTorch job that is not input-bound: two persistent workers keep well ahead of a 500 ms step.

Expected verdict: not input-bound (the step waits well under 5% of its time); no finding above
info (the small files and small reads are a sliver of a wait that is itself negligible).

    torch_not_input_bound.py WORK

Two fork workers, 64 files of 32 KiB from the page cache, 0.5 ms of CPU work per sample, batch 4
(2 ms a batch per worker), a 500 ms step (a sleep: it leaves the CPUs to the workers even on a
loaded machine); an unprofiled first epoch starts the workers and fills
their prefetch; the profile of the second skips 2 steps and records 8. Tensors cross from the
workers by the ``file_system`` sharing strategy: with the default ``file_descriptor`` one, the
main process gets each batch's descriptor from a thread of the worker that sent it, and on a
loaded machine (load 7 on 2 cores) that round trip alone took 19% of the step (2% with
``file_system``): a real input wait, not what this job stands for. The step is long because even
with the batch ready, ``__next__`` costs the main process its own receipt of it (the queue, the
unpickling, the index queue's feeder thread taking the GIL), ~1 ms idle but 6-18 ms a step under
load 11-14 on 2 cores, when the process waits out other processes' time slices: 9-11% of a
100 ms step ('partly input'), 1-4% of a 500 ms one.
"""
from __future__ import annotations

import sys

import torch.multiprocessing
from torch.utils.data import DataLoader

import diag_torch as d

EXPECTED = {"verdict": "not input-bound", "dominant": None, "top_finding": None}


def main() -> None:
    work = sys.argv[1]
    torch.multiprocessing.set_sharing_strategy("file_system")
    h = d.handler(work)
    paths = d.make_files(work, 64)
    loader = DataLoader(d.Decoded(paths, 0.0005), batch_size=4, num_workers=2, persistent_workers=True,
                        multiprocessing_context="fork")
    for _ in loader:     # unprofiled epoch: the workers start here
        pass
    steps = d.train(loader, h, compute_s=0.5, skip=2, active=8)
    d.write_result(work, h, EXPECTED, steps=steps, files=paths, num_workers=2)


if __name__ == "__main__":
    main()
