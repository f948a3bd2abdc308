"""PyTorch job that loads in the main process: ``num_workers=0``.

Expected verdict: input-bound (highly), the wait being the main process's own loading (reads
from the page cache plus the transform, inside ``DataLoader.__next__``; no worker exists).
Top finding: the DataLoader loads in the main process, advice ``num_workers=0 -> N`` (N from
the recorded CPU count).

    torch_main_process_loading.py WORK

64 files of 32 KiB, 16 ms of CPU work per sample (busy wall time), batch 4, a 2 ms step; the
profile skips 1 step and records 12. The decode is long against the reads on purpose: the reads'
wall time grows with the machine's load (a read preempted waits out other processes' time
slices) while the decode's does not, so at 4 ms a sample a loaded machine (load 11-14 on 2 cores)
pushed the reads past 5% of the step and made ``many-small-files`` a warning; at 16 ms the same
preemptions are a quarter of that share.
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
    loader = DataLoader(d.Decoded(paths, 0.016), batch_size=4, num_workers=0)
    steps = d.train(loader, h, compute_s=0.002, skip=1, active=12)
    d.write_result(work, h, EXPECTED, steps=steps, files=paths, num_workers=0)


if __name__ == "__main__":
    main()
