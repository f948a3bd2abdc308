"""tf.data job that is map-bound: a heavy ``map`` on one thread, reads from the page cache.

Expected verdict: input-bound (highly), the wait mostly ``decode`` (the map's CPU work, 4 ms
per record, busy; the TFRecord reads, of a file just written, a sliver). Top finding: the map's
work is a py_function, which holds the GIL: advice its work in TF ops or offline (a parallel map
alone would run it one call at a time).

    tf_map_bound.py WORK

A TFRecord file of 96 records of 16 KiB, ``map`` (a py_function busy for 4 ms), batch 4, a 2 ms
step; one tf.profiler.experimental window over 20 steps (``Trace("train", step_num=i, _r=1)``).
Writes WORK/result.json: the capture (``xplane``), the data file and the expected verdict.
"""
import glob
import json
import os
import sys
import time

import tb_iotrace

tb_iotrace.enable()   # before TensorFlow: registration happens at import

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

EXPECTED = {"verdict": "input-bound", "dominant": "decode",
            "top_finding": "py_function map: TF ops or offline preprocessing"}
DECODE_S = 0.004


def decode(r):
    def f(x):
        end = time.perf_counter() + DECODE_S
        v = np.frombuffer(x.numpy()[:1024], dtype=np.uint8).astype(np.float32)
        while time.perf_counter() < end:
            v = np.tanh(v * 1.0001)
        return np.float32(v.sum())
    return tf.py_function(f, [r], tf.float32)


def main() -> None:
    work = sys.argv[1]
    os.makedirs(work, exist_ok=True)
    path = os.path.join(work, "train.tfrecord")
    with tf.io.TFRecordWriter(path) as w:
        for i in range(96):
            w.write(bytes([i]) * (16 << 10))
    opts = tf.data.Options()
    opts.experimental_optimization.inject_prefetch = False
    opts.autotune.enabled = False
    ds = tf.data.TFRecordDataset(path).map(decode).batch(4).with_options(opts)
    logdir = os.path.join(work, "logs")
    it = iter(ds)
    next(it)     # tf.data starts its threads on the first element
    tf.profiler.experimental.start(logdir)
    steps = 0
    for i in range(20):
        with tf.profiler.experimental.Trace("train", step_num=i, _r=1):
            next(it)
            time.sleep(0.002)
        steps += 1
    tf.profiler.experimental.stop()
    result = {"xplane": sorted(glob.glob(os.path.join(logdir, "**", "*.xplane.pb"), recursive=True))[-1],
              "steps": steps, "data": path, "expected": EXPECTED}
    with open(os.path.join(work, "result.json"), "w") as fh:
        json.dump(result, fh)


if __name__ == "__main__":
    main()
