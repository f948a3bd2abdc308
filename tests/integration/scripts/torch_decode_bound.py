"""PyTorch job that is decode-bound: cached reads, a heavy transform, one worker.

Expected verdict: input-bound (highly: the step waits most of its time, far above 20%), the wait
mostly ``decode`` (the worker busy transforming, its file reads a sliver: the files come from
the page cache). Top finding: too few DataLoader workers for the decode work, advice
``num_workers=1 -> N`` (N from the recorded CPU count), expected to cut the wait about N-fold.

    torch_decode_bound.py WORK

One fork worker (persistent), 96 files of 32 KiB read whole, 8 ms of CPU work per sample, batch
4 (32 ms a batch), a 2 ms step; the profile skips 2 steps and records 16.
"""
from __future__ import annotations

import sys

from torch.utils.data import DataLoader

import diag_torch as d

EXPECTED = {"verdict": "input-bound", "dominant": "decode", "top_finding": "num_workers 1 -> N (decode-bound workers)"}


def main() -> None:
    work = sys.argv[1]
    h = d.handler(work)
    paths = d.make_files(work, 96)
    loader = DataLoader(d.Decoded(paths, 0.008), batch_size=4, num_workers=1, persistent_workers=True,
                        multiprocessing_context="fork")
    steps = d.train(loader, h, compute_s=0.002, skip=2, active=16)
    d.write_result(work, h, EXPECTED, steps=steps, files=paths, num_workers=1)


if __name__ == "__main__":
    main()
