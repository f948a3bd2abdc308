"""A PyTorch job with no tb_iotrace in it that ends its DataLoader workers in a given way, for
``tb-iotrace run`` (tests/integration/test_run_endings.py).

    torch_end_job.py DATA HOW OUT [START_METHOD]

Writes NFILES ``.npy`` files to DATA (sizes known), then iterates a 2-worker DataLoader
(START_METHOD, ``fork`` by default) over them, each sample one file read whole and decoded
(``np.load``) in a worker, and writes OUT (JSON: the main pid, each file's size, which worker
pid read it) once every file was read. HOW:

- ``persistent``: ``persistent_workers=True``, 2 epochs, then a normal exit with the loader
  still referenced (the workers are terminated by multiprocessing's exit handler: SIGTERM
  from their parent);
- ``terminated``: 1 epoch with persistent workers, then the job terminates each worker itself
  (``Process.terminate``) and exits;
- ``os_exit``: 1 epoch with persistent workers, then ``os._exit(0)`` (the workers notice the
  parent gone and end);
- ``sigterm`` / ``sigint``: 1 epoch with persistent workers, then OUT, then the job waits for
  the signal (the test sends it to the job's process group, as a shell's Ctrl-C or a
  scheduler would), up to 60 s.
"""
from __future__ import annotations

import io
import json
import os
import sys
import time

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

NFILES = 12
LOADERS: list[DataLoader] = []   # alive until the interpreter exits, as a trainer object's would be


class Files(Dataset):
    def __init__(self, paths: list[str]) -> None:
        self.paths = paths

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, i: int) -> torch.Tensor:
        with open(self.paths[i], "rb") as fh:   # every byte of the file, one read
            a = np.load(io.BytesIO(fh.read()))
        return torch.tensor([i, os.getpid(), a.size], dtype=torch.int64)


def main() -> None:
    data, how, out = sys.argv[1], sys.argv[2], sys.argv[3]
    method = sys.argv[4] if len(sys.argv) > 4 else "fork"
    paths = []
    for i in range(NFILES):
        p = os.path.join(data, f"s{i:02d}.npy")
        np.save(p, np.full(1000 + 37 * i, i, dtype=np.float32))
        paths.append(p)
    loader = DataLoader(Files(paths), batch_size=2, num_workers=2, persistent_workers=True,
                        multiprocessing_context=method)
    LOADERS.append(loader)
    read_by: dict[str, list[int]] = {}
    for _ in range(2 if how == "persistent" else 1):
        for batch in loader:
            for i, pid, _n in batch.tolist():
                read_by.setdefault(paths[i], []).append(pid)
    with open(out, "w") as fh:
        json.dump({"main_pid": os.getpid(), "sizes": {p: os.path.getsize(p) for p in paths},
                   "read_by": read_by}, fh)
    if how == "terminated":
        it = loader._iterator  # the persistent workers' iterator
        for w in it._workers:
            w.terminate()
        for w in it._workers:
            w.join(10)
    elif how == "os_exit":
        os._exit(0)
    elif how in ("sigterm", "sigint"):
        for _ in range(600):
            time.sleep(0.1)


if __name__ == "__main__":
    main()
