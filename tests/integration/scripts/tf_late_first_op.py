"""A TensorFlow job that imports TensorFlow, waits SLEEP seconds, then iterates a tf.data
pipeline for SECONDS. Run under ``tb-iotrace run --profile-every`` with a short period: windows
open during the import, the wait and the loop. Writes OUT/result.json: the wall-clock ns of the
first op, of the loop's first batch (the pipeline and its iterator made: under load that alone
takes longer than a short window) and of the loop's end.

    tf_late_first_op.py OUT SLEEP SECONDS
"""
import json
import os
import sys
import time

import tensorflow as tf


def main() -> None:
    out, sleep_s, seconds = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
    os.makedirs(out, exist_ok=True)
    time.sleep(sleep_s)
    first_op = time.time_ns()
    ds = tf.data.Dataset.from_tensors({f"f{i}": tf.constant([i]) for i in range(50)}).repeat().prefetch(4)
    it = iter(ds)
    next(it)
    loop = time.time_ns()
    end = time.monotonic() + seconds
    n = 1
    while time.monotonic() < end:
        next(it)
        n += 1
    with open(os.path.join(out, "result.json"), "w") as f:
        json.dump({"first_op_ns": first_op, "loop_ns": loop, "end_ns": time.time_ns(), "steps": n}, f)


if __name__ == "__main__":
    main()
