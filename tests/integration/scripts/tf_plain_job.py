"""A TensorFlow loop with no profiler and no tb_iotrace in its code: each step reads 64 KiB of a
1 MiB file with tf.io.gfile, computes on it, sleeps 10 ms; for SECONDS, then prints ``ok``.

    tf_plain_job.py WORK SECONDS
"""
from __future__ import annotations

import os
import sys
import time

import tensorflow as tf


def main() -> None:
    work, seconds = sys.argv[1], float(sys.argv[2])
    path = os.path.join(work, "data.bin")
    with open(path, "wb") as fh:
        fh.write(bytes(range(256)) * 4096)
    step = tf.function(lambda x: tf.reduce_sum(tf.tanh(tf.matmul(x, x, transpose_b=True))))
    print("running", flush=True)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        with tf.io.gfile.GFile(path, "rb") as fh:
            b = fh.read(65536)
        x = tf.reshape(tf.cast(tf.io.decode_raw(b[:4096], tf.uint8), tf.float32), (64, 64))
        step(x).numpy()
        time.sleep(0.01)
    print("ok", flush=True)


if __name__ == "__main__":
    main()
