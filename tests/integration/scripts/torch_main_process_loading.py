"""PyTorch job that loads in the main process: ``num_workers=0``.

Expected verdict: input-bound (highly), the wait being the main process's own loading (reads
from the page cache plus the transform, inside ``DataLoader.__next__``; no worker exists).
Top finding: the DataLoader loads in the main process, advice ``num_workers=0 -> N`` (N from
the recorded CPU count).

    torch_main_process_loading.py WORK

64 files of 32 KiB, 4 ms of CPU work per sample, batch 4, a 2 ms step; the profile skips 1 step
and records 12.
"""
from __future__ import annotations

import sys

from torch.utils.data import DataLoader

import diag_torch as d

EXPECTED = {"verdict": "input-bound", "dominant": "main-process loading",
            "top_finding": "num_workers 0 -> N (loading in the main process)"}


def main() -> None:
    work = sys.argv[1]
    h = d.handler(work)
    paths = d.make_files(work, 64)
    loader = DataLoader(d.Decoded(paths, 0.004), batch_size=4, num_workers=0)
    steps = d.train(loader, h, compute_s=0.002, skip=1, active=12)
    d.write_result(work, h, EXPECTED, steps=steps, files=paths, num_workers=0)


if __name__ == "__main__":
    main()
