"""tf.data job that is read-bound: the pipeline waits on slow reads.

Expected verdict: input-bound (highly), the wait mostly ``file_io`` (a generator reading a named
pipe whose writer, a process that is not traced, writes one 64 KiB chunk per 15 ms; no prefetch,
one read in flight). Top finding: the reads are slow and serial (advice: read in parallel,
``interleave(num_parallel_calls=...)`` and ``prefetch``, or faster storage); no finding calls the
pipe's reads redundant.

    tf_read_bound.py WORK

Captured with tf.profiler.experimental.start/stop; each step is
``tf.profiler.experimental.Trace("train", step_num=i, _r=1)`` around ``next()`` and a 1 ms
compute. Writes WORK/result.json: the capture (``xplane``), the pipe and the expected verdict.
"""
import glob
import itertools
import json
import os
import subprocess
import sys
import time

import tb_iotrace

tb_iotrace.enable()   # before TensorFlow: registration happens at import

import tensorflow as tf  # noqa: E402

EXPECTED = {"verdict": "input-bound", "dominant": "file_io",
            "top_finding": "serial slow reads (interleave/prefetch or storage); no redundant-reads"}
CHUNK, CHUNKS, DELAY_S = 64 << 10, 30, 0.015
WRITER = """
import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY)
chunk = b"f" * int(sys.argv[2])
for _ in range(int(sys.argv[3])):
    time.sleep(float(sys.argv[4]))
    os.write(fd, chunk)
os.close(fd)
"""


def main() -> None:
    work = sys.argv[1]
    os.makedirs(work, exist_ok=True)
    fifo = os.path.join(work, "slow.fifo")
    os.mkfifo(fifo)

    def gen():
        fd = os.open(fifo, os.O_RDONLY)
        try:
            while True:
                b = os.read(fd, CHUNK)
                if not b:
                    return
                yield len(b)
        finally:
            os.close(fd)

    opts = tf.data.Options()
    opts.experimental_optimization.inject_prefetch = False   # tf.data would add one by itself
    ds = tf.data.Dataset.from_generator(gen, output_signature=tf.TensorSpec((), tf.int64)).with_options(opts)
    logdir = os.path.join(work, "logs")
    writer = subprocess.Popen([sys.executable, "-c", WRITER, fifo, str(CHUNK), str(CHUNKS), str(DELAY_S)])
    tf.profiler.experimental.start(logdir)
    it = iter(ds)
    steps = 0
    for i in itertools.count():
        with tf.profiler.experimental.Trace("train", step_num=i, _r=1):
            try:
                next(it)
            except StopIteration:
                break
            time.sleep(0.001)
        steps += 1
    tf.profiler.experimental.stop()
    writer.wait()
    result = {"xplane": sorted(glob.glob(os.path.join(logdir, "**", "*.xplane.pb"), recursive=True))[-1],
              "steps": steps, "fifo": fifo, "expected": EXPECTED}
    with open(os.path.join(work, "result.json"), "w") as fh:
        json.dump(result, fh)


if __name__ == "__main__":
    main()
