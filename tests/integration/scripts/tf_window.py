"""Subprocess workload for test_tf_profiler: one TF profile window, by MODE.

argv: MODE (startstop | profile | keras | keras_warmup | cap | failing | overlap | unsaved) WORKDIR
Writes WORKDIR/result.json with what the test checks.
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

mode, work = sys.argv[1], sys.argv[2]
os.makedirs(work, exist_ok=True)
logdir = os.path.join(work, "logs")
rec = os.path.join(work, "data.tfrecord")
with tf.io.TFRecordWriter(rec) as w:
    rng = np.random.default_rng(1)
    for i in range(300):
        w.write(rng.bytes(1000 + (i % 7) * 13))
plain = os.path.join(work, "plain.bin")
with open(plain, "wb") as f:
    f.write(os.urandom(50000))
result = {"tfrecord": rec, "tfrecord_size": os.path.getsize(rec), "plain": plain}


def read_all():
    n = 0
    for _ in tf.data.TFRecordDataset(rec):
        n += 1
    return n


if mode == "failing":
    # the I/O plane cannot be built: the capture and the job must go on
    from tb_iotrace.recording import window

    def broken(cap):
        raise RuntimeError("simulated serialization failure")

    window.serialize = broken

if mode == "overlap":
    # a user capture() around a TF profile window: both see the window's reads
    with tb_iotrace.capture() as outer:
        with open(plain, "rb") as f:
            f.read()
        tf.profiler.experimental.start(logdir)
        result["records"] = read_all()
        tf.profiler.experimental.stop()
    result["outer_tfrecord_bytes"] = outer.file(rec).counters["POSIX_BYTES_READ"]
    result["outer_plain_bytes"] = outer.file(plain).counters["POSIX_BYTES_READ"]
elif mode == "cap":
    # more calls than the trace keeps: counters stay exact, the file says how many were dropped
    tb_iotrace.set_trace_cap(1000)
    tf.profiler.experimental.start(logdir)
    fd = os.open(plain, os.O_RDONLY)
    for i in range(5000):
        os.pread(fd, 10, i)
    os.close(fd)
    tf.profiler.experimental.stop()
elif mode == "unsaved":
    # windows stopped with save=False are never collected: nothing of them may stay behind
    from tb_iotrace.recording import tensorflow as tfhook

    tf.profiler.experimental.start(os.path.join(work, "unsaved"))
    read_all()
    tf.profiler.experimental.stop(save=False)
    result["kept_after_unsaved_stop"] = tfhook.STATE.pending is not None
    cb = tf.keras.callbacks.TensorBoard(os.path.join(work, "unused"), profile_batch=(3, 4))  # its warm-up window
    result["kept_after_keras_warmup"] = tfhook.STATE.pending is not None
    result["windows"] = tfhook.STATE.windows
    tf.profiler.experimental.start(logdir)                  # a saved window still carries its I/O
    result["records"] = read_all()
    tf.profiler.experimental.stop()
elif mode in ("startstop", "profile", "failing"):
    ctx = tf.profiler.experimental.Profile(logdir) if mode == "profile" else None
    if ctx:
        ctx.__enter__()
    else:
        tf.profiler.experimental.start(logdir)
    result["records"] = read_all()
    t0 = time.time_ns()
    with tf.profiler.experimental.Trace("plain_region"):
        with open(plain, "rb") as f:
            while f.read(8192):
                pass
    result["region_ns"] = [t0, time.time_ns()]
    if ctx:
        ctx.__exit__(None, None, None)
    else:
        tf.profiler.experimental.stop()
else:
    first = 3 if mode == "keras_warmup" else 1
    # a small read buffer so the profiled batches do file reads of their own
    ds = (tf.data.TFRecordDataset(rec, buffer_size=4096).map(lambda r: (tf.cast(tf.strings.length(r), tf.float32)[None], 1.0))
          .batch(10))
    model = tf.keras.Sequential([tf.keras.layers.Input((1,)), tf.keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    cb = tf.keras.callbacks.TensorBoard(logdir, profile_batch=(first, first + 3))
    model.fit(ds, epochs=1, callbacks=[cb], verbose=0)

files = sorted(glob.glob(os.path.join(logdir, "**", "*.xplane.pb"), recursive=True))
result["xplanes"] = files
with open(os.path.join(work, "result.json"), "w") as f:
    json.dump(result, f)
