"""PyTorch job that is read-bound: the workers wait on slow reads.

Expected verdict: input-bound (highly), the wait mostly ``file_io`` (the workers' reads in
flight: each blocks until its pipe's writer, one 64 KiB chunk per 15 ms, has written). Top
finding: the reads are slow (the storage), and no finding calls the pipes' reads redundant
(a named pipe has no size; nothing is read twice).

    torch_read_bound.py WORK

Two fork workers, each reading its own named pipe (an IterableDataset: worker k reads
WORK/pipe<k>, one sample per read, fed by a writer process that is not traced), batch 2, a 1 ms
step; the profile skips 2 steps and records 20.
"""
from __future__ import annotations

import os
import subprocess
import sys

import torch
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

import diag_torch as d

EXPECTED = {"verdict": "input-bound", "dominant": "file_io", "top_finding": "slow reads (storage); no redundant-reads"}
CHUNK = 64 << 10
CHUNKS = 24            # per worker: 12 batches of 2
DELAY_S = 0.015
WRITER = """
import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY)
chunk = b"p" * int(sys.argv[2])
for _ in range(int(sys.argv[3])):
    time.sleep(float(sys.argv[4]))
    os.write(fd, chunk)
os.close(fd)
"""


class Pipes(IterableDataset):
    def __init__(self, work: str) -> None:
        self.work = work

    def __iter__(self):
        info = get_worker_info()
        fd = os.open(os.path.join(self.work, f"pipe{info.id if info else 0}"), os.O_RDONLY)
        try:
            while True:
                b = os.read(fd, CHUNK)
                if not b:
                    return
                yield torch.frombuffer(bytearray(b[:64].ljust(64, b"\0")), dtype=torch.uint8).float()
        finally:
            os.close(fd)


def main() -> None:
    work = sys.argv[1]
    h = d.handler(work)
    pipes = [os.path.join(work, f"pipe{k}") for k in range(2)]
    writers = []
    for p in pipes:
        os.mkfifo(p)
        writers.append(subprocess.Popen([sys.executable, "-c", WRITER, p, str(CHUNK), str(CHUNKS), str(DELAY_S)]))
    loader = DataLoader(Pipes(work), batch_size=2, num_workers=2, multiprocessing_context="fork")
    steps = d.train(loader, h, compute_s=0.001, skip=2, active=20)
    for w in writers:
        w.wait()
    d.write_result(work, h, EXPECTED, steps=steps, files=pipes, num_workers=2)


if __name__ == "__main__":
    main()
