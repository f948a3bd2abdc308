"""JAX job fed by grain that is decode-bound: a heavy per-record ``map`` in grain's one
read thread, reads of an ArrayRecord file from the page cache.

Expected verdict: input-bound (highly), the wait mostly ``decode`` (the map's CPU work, 4 ms per
record, busy; the reads a sliver). Top finding: too little grain parallelism for the decode,
advice more workers (``grain.DataLoader(worker_count=N)`` / ``mp_prefetch``) or read threads.

    jax_grain_decode_bound.py WORK

An ArrayRecord file of 64 records of 16 KiB; ``MapDataset.source(...).map(decode)
.to_iter_dataset(ReadOptions(num_threads=1, prefetch_buffer_size=1))``; a 24-step JAX profile
window, each step ``StepTraceAnnotation("train", step_num=i)`` around ``next()`` and a small
jitted computation. Writes WORK/result.json: the capture (``xplane``), the data file and the
expected verdict.
"""
import glob
import json
import os
import sys
import time

import tb_iotrace

tb_iotrace.enable()

import grain  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from array_record.python.array_record_module import ArrayRecordWriter  # noqa: E402

EXPECTED = {"verdict": "input-bound", "dominant": "decode", "top_finding": "grain worker count / read threads"}
DECODE_S = 0.004


def decode(record: bytes) -> np.ndarray:
    end = time.perf_counter() + DECODE_S
    v = np.frombuffer(record[:1024], dtype=np.uint8).astype(np.float32)
    while time.perf_counter() < end:
        v = np.tanh(v * 1.0001)
    return v


def main() -> None:
    work = sys.argv[1]
    os.makedirs(work, exist_ok=True)
    path = os.path.join(work, "data.array_record")
    writer = ArrayRecordWriter(path, "group_size:1")
    for i in range(64):
        writer.write(bytes([i]) * (16 << 10))
    writer.close()
    ds = (grain.MapDataset.source(grain.sources.ArrayRecordDataSource([path])).map(decode)
          .to_iter_dataset(grain.ReadOptions(num_threads=1, prefetch_buffer_size=1)))
    step = jax.jit(lambda x: jnp.sum(x * 2.0))
    it = iter(ds)
    step(next(it)).block_until_ready()    # compile, start grain's thread
    logdir = os.path.join(work, "logs")
    jax.profiler.start_trace(logdir)
    steps = 0
    for i in range(24):
        with jax.profiler.StepTraceAnnotation("train", step_num=i):
            step(next(it)).block_until_ready()
        steps += 1
    jax.profiler.stop_trace()
    result = {"xplane": sorted(glob.glob(os.path.join(logdir, "**", "*.xplane.pb"), recursive=True))[-1],
              "steps": steps, "data": path, "expected": EXPECTED}
    with open(os.path.join(work, "result.json"), "w") as fh:
        json.dump(result, fh)


if __name__ == "__main__":
    main()
