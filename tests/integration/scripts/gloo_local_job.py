"""Two gloo ranks (CPU, two processes, ``env://`` on 127.0.0.1) that read files through a
DataLoader, all-reduce every step, and fetch a small object over HTTP from a server on
127.0.0.1 after the steps (tests/integration/test_gloo_local.py).

    python gloo_local_job.py WORK handler   # each rank profiled by tb_iotrace.torch.trace_handler
    python gloo_local_job.py WORK plain     # no profiler (run it under ``tb-iotrace run``)

The store's connections and gloo's pairs are the job's own traffic; the HTTP server is storage.
In ``handler`` mode the profiler's handler is made after ``init_process_group`` (its sockets
exist before tb_iotrace is enabled) and a second group is made inside the profiled window (its
pairs connect while recording). Writes WORK/truth.json: the server's port, bytes and
connections, the store's port, and the bytes each rank read from its files.
"""
from __future__ import annotations

import http.server
import json
import os
import socket
import sys
import threading

WORLD, STEPS, BATCH, SAMPLE, BODY, GETS = 2, 6, 2, 16 << 10, 3000, 3


def rank_main(rank: int, work: str, mode: str, http_port: int) -> None:
    os.environ["RANK"] = str(rank)
    import urllib.request

    import torch
    import torch.distributed as dist
    from torch.utils.data import DataLoader, Dataset

    torch.set_num_threads(1)
    folder = os.path.join(work, "data", f"rank{rank}")
    paths = sorted(os.path.join(folder, f) for f in os.listdir(folder))
    read = [0]

    class Shard(Dataset):
        def __len__(self) -> int:
            return len(paths)

        def __getitem__(self, i: int) -> torch.Tensor:
            with open(paths[i], "rb") as fh:
                data = fh.read()
            read[0] += len(data)
            return torch.frombuffer(bytearray(data[:256]), dtype=torch.float32)

    dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=WORLD)
    prof = None
    if mode == "handler":
        import tb_iotrace.torch as tbt

        prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                      schedule=torch.profiler.schedule(wait=0, warmup=0, active=STEPS + 1,
                                                                       repeat=1),
                                      on_trace_ready=tbt.trace_handler(os.path.join(work, "logs"),
                                                                       worker_name=f"rank{rank}"))
        prof.start()
    fetched = 0
    group = None
    for k, x in enumerate(DataLoader(Shard(), batch_size=BATCH, num_workers=0)):
        if k == 1:
            group = dist.new_group([0, 1])       # its pairs connect inside the window
        t = x.sum().reshape(1)
        dist.all_reduce(t)
        if group is not None:
            dist.all_reduce(t, group=group)
        if prof is not None:
            prof.step()
    # storage, after the steps (in the window): an endpoint, and no step waits on it
    for k in range(GETS):
        with urllib.request.urlopen(f"http://127.0.0.1:{http_port}/obj{rank}-{k}", timeout=30) as r:
            fetched += len(r.read())
    if prof is not None:
        prof.stop()
    dist.barrier()
    dist.destroy_process_group()
    with open(os.path.join(work, f"rank{rank}.json"), "w") as fh:
        json.dump({"rank": rank, "pid": os.getpid(), "file_bytes": read[0], "fetched": fetched}, fh)


class _Handler(http.server.BaseHTTPRequestHandler):
    counts = {"requests": 0}

    def do_GET(self) -> None:  # noqa: N802
        body = b"o" * BODY
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        _Handler.counts["requests"] += 1

    def log_message(self, *a: object) -> None:
        pass


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> None:
    import multiprocessing as mp

    work, mode = sys.argv[1], sys.argv[2]
    for rank in range(WORLD):
        folder = os.path.join(work, "data", f"rank{rank}")
        os.makedirs(folder, exist_ok=True)
        for i in range(STEPS * BATCH):
            with open(os.path.join(folder, f"s{i:03d}.bin"), "wb") as fh:
                fh.write(os.urandom(SAMPLE))
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(_free_port())
    os.environ["WORLD_SIZE"] = str(WORLD)
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=rank_main, args=(r, work, mode, srv.server_address[1])) for r in range(WORLD)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=240)
    for p in procs:
        if p.is_alive():
            p.kill()
    srv.shutdown()
    ranks = [json.load(open(os.path.join(work, f"rank{r}.json"))) for r in range(WORLD)
             if os.path.exists(os.path.join(work, f"rank{r}.json"))]
    with open(os.path.join(work, "truth.json"), "w") as fh:
        json.dump({"http_port": srv.server_address[1], "store_port": int(os.environ["MASTER_PORT"]),
                   "requests": _Handler.counts["requests"], "ranks": ranks}, fh)
    sys.exit(max(abs(p.exitcode or 0) for p in procs))


if __name__ == "__main__":
    main()
