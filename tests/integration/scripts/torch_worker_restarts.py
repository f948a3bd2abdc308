"""PyTorch job whose workers restart every epoch: ``persistent_workers=False``.

Expected verdict: input-bound, the wait mostly ``starved`` (no worker running at each epoch's
start: the two workers are forked again and take 0.2 s to initialise, in ``worker_init_fn``,
standing for opening a dataset and importing its libraries). Top finding: workers restart at
every epoch, advice ``persistent_workers=True``.

    torch_worker_restarts.py WORK

Two fork workers, 4 epochs of 4 batches (16 files of 32 KiB, batch 4), 1 ms of CPU work per
sample, a 5 ms step; one window over all four epochs.
"""
from __future__ import annotations

import sys
import time

from torch.utils.data import DataLoader

import diag_torch as d

EXPECTED = {"verdict": "input-bound", "dominant": "starved", "top_finding": "persistent_workers=True (workers restart every epoch)"}
INIT_S = 0.2


def slow_init(_worker_id: int) -> None:
    time.sleep(INIT_S)


def main() -> None:
    work = sys.argv[1]
    h = d.handler(work)
    paths = d.make_files(work, 16)
    loader = DataLoader(d.Decoded(paths, 0.001), batch_size=4, num_workers=2, persistent_workers=False,
                        worker_init_fn=slow_init, multiprocessing_context="fork")
    steps = d.train(loader, h, compute_s=0.005, epochs=4)
    d.write_result(work, h, EXPECTED, steps=steps, files=paths, num_workers=2, epochs=4)


if __name__ == "__main__":
    main()
