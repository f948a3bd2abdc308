"""A PyTorch job with no tb_iotrace in it, for ``tb-iotrace run`` (tests/integration/test_torch_run.py).

    torch_run_job.py DATA START_METHOD OUT

Writes NFILES known files to DATA, then iterates a DataLoader(num_workers=2) with the given
start method (``fork`` or ``spawn``) over them: each sample is one file read whole in a
worker, and says which worker (pid) read it. Writes OUT (JSON): the main pid, the file sizes,
which pid read each file."""
from __future__ import annotations

import json
import os
import sys

import torch
from torch.utils.data import DataLoader, Dataset

NFILES = 10


class Files(Dataset):
    def __init__(self, paths: list[str]) -> None:
        self.paths = paths

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, i: int) -> torch.Tensor:
        with open(self.paths[i], "rb") as fh:
            data = fh.read()
        return torch.tensor([i, os.getpid(), len(data)], dtype=torch.int64)


def main() -> None:
    data, method, out = sys.argv[1], sys.argv[2], sys.argv[3]
    paths = []
    for i in range(NFILES):
        p = os.path.join(data, f"sample{i:02d}.bin")
        with open(p, "wb") as fh:
            fh.write(bytes([i]) * (3000 + 101 * i))
        paths.append(p)
    loader = DataLoader(Files(paths), batch_size=2, num_workers=2, multiprocessing_context=method)
    read_by: dict[str, int] = {}
    for batch in loader:
        for i, pid, n in batch.tolist():
            assert n == os.path.getsize(paths[i])
            read_by[paths[i]] = pid
    with open(out, "w") as fh:
        json.dump({"main_pid": os.getpid(), "sizes": {p: os.path.getsize(p) for p in paths},
                   "read_by": read_by}, fh)


if __name__ == "__main__":
    main()
