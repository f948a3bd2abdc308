"""A plain TensorFlow loop, no Keras, no step markers (as DLIO's TensorFlow reader): iterate a
tf.data pipeline with ``next()`` and time the loop's own wait for its data, as DLIO's timers do.
Run under ``tb-iotrace run --profile-every`` (no tb_iotrace code here).

    tf_plain_loop.py OUT SECONDS map|features

``map``: a generator of 64 KiB records, ``map`` of a ``tf.py_function`` busy for MAP_S a record
(wall time, whatever the load), batch 2, no prefetch: the loop waits in the IteratorGetNext op.
``features``: elements of FEATURES tensors each (a feature dict), prefetched: the op returns at
once and the wait is the iterator's Python packing the element (what the op alone leaves out).
The "compute" is a busy wait of STEP_S. Writes OUT/result.json: each step's start, end of its
wait and end (wall-clock ns, from perf_counter).
"""
import json
import os
import sys
import time

import numpy as np
import tensorflow as tf

MAP_S = 0.004
STEP_S = 0.004
FEATURES = 600


def busy(s: float) -> None:
    end = time.perf_counter() + s
    while time.perf_counter() < end:
        pass


def work(x):
    busy(MAP_S)
    return np.float32(x.numpy()[:16].sum())


def main() -> None:
    out, seconds, mode = sys.argv[1], float(sys.argv[2]), sys.argv[3]
    os.makedirs(out, exist_ok=True)
    if mode == "map":
        rec = np.ones(64 << 10, np.uint8)
        ds = tf.data.Dataset.from_generator(lambda: (rec for _ in range(10**6)),
                                            output_signature=tf.TensorSpec([64 << 10], tf.uint8))
        ds = ds.map(lambda r: tf.py_function(work, [r], tf.float32)).batch(2)
    else:
        ds = tf.data.Dataset.from_tensors({f"f{i}": tf.constant([i]) for i in range(FEATURES)}).repeat()
        ds = ds.prefetch(8)
    opts = tf.data.Options()
    opts.experimental_optimization.inject_prefetch = False
    opts.autotune.enabled = False
    ds = ds.with_options(opts)
    it = iter(ds)
    steps = []
    offset = time.time_ns() - time.perf_counter_ns()
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        t0 = time.perf_counter_ns()
        batch = next(it)
        t1 = time.perf_counter_ns()
        busy(STEP_S)
        if mode == "map":
            float(tf.reduce_sum(batch))
        del batch       # freeing the element is the step's, not the next() call's
        t2 = time.perf_counter_ns()
        steps.append([t0 + offset, t1 + offset, t2 + offset])
    with open(os.path.join(out, "result.json"), "w") as f:
        json.dump({"steps": steps, "mode": mode, "map_s": MAP_S, "step_s": STEP_S}, f)


if __name__ == "__main__":
    main()
