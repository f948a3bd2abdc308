"""A PyTorch job whose samples are objects in a bucket (or files): two DataLoader workers, each
sample one object of 64 KiB, batch 2, a ~1 ms step; the profile skips 2 steps and records 12.

    torch_objects_job.py MODE START OUT ENDPOINT [URLS]

MODE: ``boto3`` (one GetObject per sample), ``s3fs`` / ``gcsfs`` (fsspec, the object read in
16 KiB pieces with ``block_size=16384`` and no cache: four small ranged GETs per sample, the
latency-bound pattern), ``requests`` (GET of presigned URLs listed one a line in URLS),
``http`` (GET of ENDPOINT/sNNN.bin from a plain file server), ``local`` (the same objects as
files under ENDPOINT, a folder). START: the workers' start method (fork, spawn). The bucket
is ``objs`` (key ``shards/sNNN.bin``), NNN 000..031. Prints the traces written.
"""
from __future__ import annotations

import os
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset

import tb_iotrace.torch

N, SIZE, PIECE = 32, 64 << 10, 16 << 10


class Objects(Dataset):
    def __init__(self, mode: str, endpoint: str, urls: list[str]) -> None:
        self.mode, self.endpoint, self.urls = mode, endpoint, urls
        self.client = None

    def __len__(self) -> int:
        return N

    def _client(self):
        if self.client is None:
            if self.mode == "boto3":
                import boto3

                self.client = boto3.client("s3", endpoint_url=self.endpoint)
            elif self.mode in ("s3fs", "gcsfs"):
                import fsspec

                proto = "s3" if self.mode == "s3fs" else "gs"
                kw = {"endpoint_url": self.endpoint} if proto == "s3" else {}
                self.client = fsspec.filesystem(proto, skip_instance_cache=True, **kw)
            elif self.mode in ("requests", "http"):
                import requests

                self.client = requests.Session()
        return self.client

    def read(self, i: int) -> bytes:
        key = f"shards/s{i:03d}.bin"
        c = self._client()
        if self.mode == "boto3":
            return c.get_object(Bucket="objs", Key=key)["Body"].read()
        if self.mode in ("s3fs", "gcsfs"):
            out = b""
            with c.open(f"objs/{key}", "rb", block_size=PIECE, cache_type="none") as f:
                while piece := f.read(PIECE):
                    out += piece
            return out
        if self.mode == "requests":
            return c.get(self.urls[i], timeout=60).content
        if self.mode == "http":
            return c.get(f"{self.endpoint}/s{i:03d}.bin", timeout=60).content
        with open(os.path.join(self.endpoint, f"s{i:03d}.bin"), "rb") as fh:
            return fh.read()

    def __getitem__(self, i: int) -> torch.Tensor:
        data = self.read(i)
        assert len(data) == SIZE, (i, len(data))
        return torch.frombuffer(bytearray(data[:64]), dtype=torch.uint8).float()


def main() -> None:
    mode, start, out, endpoint = sys.argv[1:5]
    urls = open(sys.argv[5]).read().split() if len(sys.argv) > 5 else []
    handler = tb_iotrace.torch.trace_handler(out, worker_name=f"{mode}-{start}")
    loader = DataLoader(Objects(mode, endpoint, urls), batch_size=2, num_workers=2,
                        multiprocessing_context=start)
    torch.set_num_threads(1)        # the step: a short sleep, not a matmul that a loaded machine's threads slow down
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                schedule=torch.profiler.schedule(wait=1, warmup=1, active=12, repeat=1),
                                on_trace_ready=handler) as prof:
        for x in loader:
            time.sleep(0.005)
            prof.step()
    print("\n".join(handler.written))


if __name__ == "__main__":
    main()
