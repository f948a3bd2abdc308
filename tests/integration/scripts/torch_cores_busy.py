"""PyTorch job whose DataLoader workers already keep every usable core busy (DLIO on 2 cores).

Expected verdict: input-bound, the wait mostly ``decode``; advice: no more DataLoader workers
(they would share the same cores), what can help instead (cheaper decode, decode on the GPU,
offline preprocessing, more cores) and the effect of halving the work by the stated model.
Before: ``num_workers=2 -> 3 (the 2 usable cores are the limit): -33%``, which made DLIO 11%
slower.

    torch_cores_busy.py WORK

As many fork workers (persistent) as the process's usable cores, each decoding 8 ms of CPU
work per sample (busy, wall time), batch 4 (32 ms a batch per worker); a 2 ms step. Every
worker is always busy (the main process waits for each batch), so a step's CPU work over the
cores is the step time, whatever the machine's load.
"""
from __future__ import annotations

import sys

from torch.utils.data import DataLoader

import diag_torch as d
from tb_iotrace.store.machine import machine_facts

EXPECTED = {"verdict": "input-bound", "dominant": "decode", "top_finding": "no more workers (the cores are busy)"}


def main() -> None:
    work = sys.argv[1]
    cores = int(machine_facts()["cpus"])
    h = d.handler(work)
    paths = d.make_files(work, 32 * cores + 64)
    loader = DataLoader(d.Decoded(paths, 0.008), batch_size=4, num_workers=cores, persistent_workers=True,
                        multiprocessing_context="fork")
    steps = d.train(loader, h, compute_s=0.002, skip=2 + cores, active=16)
    d.write_result(work, h, EXPECTED, steps=steps, files=paths, num_workers=cores)


if __name__ == "__main__":
    main()
