"""Subprocess workload for test_findings: several tf.data pipelines, each in its own TF
profile window (one TF start-up for all of them).

argv: WORKDIR NAME [NAME ...]
env (optional): TBIO_TEST_COLD_DIR, a directory on a disk for the ``serial``/``parallel`` shards
(default WORKDIR/data); TBIO_TEST_CGROUP, a cgroup whose block throttle caps that disk's reads:
the process joins it only around the ``serial`` pipeline's window (so its cold reads are slow by
construction, whatever else loads the machine) and goes back to TBIO_TEST_CGROUP_HOME after.
Writes WORKDIR/result.json: {"data": {...paths and sizes...}, "runs": {NAME: xplane path}}.

Every pipeline runs its steps as ``tf.profiler.experimental.Trace("train", step_num=i)`` around
``next(iterator)`` (the input wait) and a simulated compute (sleep), like a custom training loop.
"""
import glob
import itertools
import json
import os
import queue
import subprocess
import sys
import threading
import time

import tb_iotrace

tb_iotrace.enable()   # before TensorFlow: registration happens at import

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from cold_disk import evict, join  # noqa: E402

work, names = sys.argv[1], sys.argv[2:]
os.makedirs(work, exist_ok=True)
data = os.path.join(work, "data")
os.makedirs(os.path.join(data, "small"), exist_ok=True)
rng = np.random.default_rng(7)

BIG_RECORD = 16 * 1024
BIG_RECORDS = 128                      # 2 MiB (+ framing) per big file
N_BIG = 3
N_SMALL = 120
SMALL_SIZE = 4000


def write_tfrecord(path, n, size):
    with tf.io.TFRecordWriter(path) as w:
        for _ in range(n):
            w.write(rng.bytes(size))


big = [os.path.join(data, f"big{i}.tfrecord") for i in range(N_BIG)]
for p in big:
    write_tfrecord(p, BIG_RECORDS, BIG_RECORD)
small = [os.path.join(data, "small", f"s{i:04d}.tfrecord") for i in range(N_SMALL)]
for p in small:
    write_tfrecord(p, 1, SMALL_SIZE)
blob = os.path.join(data, "blob.bin")
with open(blob, "wb") as f:
    f.write(rng.bytes(4 << 20))
info = {"big": big, "big_size": os.path.getsize(big[0]), "small": small,
        "small_size": os.path.getsize(small[0]), "blob": blob, "blob_size": os.path.getsize(blob)}
AUTOTUNE = tf.data.AUTOTUNE
COLD_DIR = os.environ.get("TBIO_TEST_COLD_DIR") or data
COLD = [os.path.join(COLD_DIR, f"shard{i}.bin") for i in range(4)]   # 8 MiB of fixed-length records
THROTTLE, THROTTLE_HOME = os.environ.get("TBIO_TEST_CGROUP"), os.environ.get("TBIO_TEST_CGROUP_HOME")
for p in COLD:
    with open(p, "wb") as f:
        f.write(rng.bytes(2 << 20))
        f.flush()
        os.fsync(f.fileno())      # clean pages: fadvise(DONTNEED) cannot drop dirty ones


def steps(ds, n=None, compute_s=0.01, write=None):
    """A training loop: each step waits for its input, then 'computes' for compute_s."""
    it = iter(ds)
    i = 0
    while n is None or i < n:
        with tf.profiler.experimental.Trace("train", step_num=i, _r=1):
            try:
                next(it)
            except StopIteration:
                break
            time.sleep(compute_s)
            if write:
                write(i)
        i += 1
    return i


NO_PREFETCH = tf.data.Options()
NO_PREFETCH.experimental_optimization.inject_prefetch = False   # tf.data would add one by itself


def parse(r):
    return tf.strings.length(r)


def clean_ds():
    # large sequential reads (256 KiB), parallel interleave, prefetch
    return (tf.data.Dataset.from_tensor_slices(big)
            .interleave(lambda f: tf.data.TFRecordDataset(f, buffer_size=256 << 10),
                        cycle_length=N_BIG, num_parallel_calls=N_BIG, deterministic=False)
            .map(parse, num_parallel_calls=2).batch(16).prefetch(4))


def warm(ds):
    """Start the pipeline and let prefetch fill before the steps (like the first epoch's start)."""
    it = iter(ds)
    next(it)          # tf.data starts its background threads on the first get_next
    time.sleep(0.3)
    return it


def slow_decode(r, delay=0.004):
    def f(x):
        time.sleep(delay)
        return np.int64(len(x.numpy()))
    return tf.py_function(f, [r], tf.int64)


_fd = {}


def pread_at(kind):
    if "blob" not in _fd:
        _fd["blob"] = os.open(blob, os.O_RDONLY)
    fd = _fd["blob"]
    size = info["blob_size"]
    chunk = 64 << 10
    offsets = rng.permutation(size // chunk) * chunk if kind == "random" else None
    if offsets is not None:
        info["random_offsets"] = offsets.tolist()
    info["chunk"] = chunk

    def f(i):
        i = int(i.numpy())
        off = int(offsets[i % len(offsets)]) if offsets is not None else (i * chunk) % size
        return np.int64(len(os.pread(fd, chunk, off)))
    return lambda i: tf.py_function(f, [i], tf.int64)


def stat_heavy(i):
    def f(x):
        p = small[int(x.numpy()) % N_SMALL]
        n = 0
        for _ in range(8):      # "does it exist, how big is it" checks before every read
            n += os.stat(p).st_size
            os.path.exists(p)
        return np.int64(n)
    return tf.py_function(f, [i], tf.int64)


FIFO_CHUNK = 64 << 10
FIFO_CHUNKS = 24
FIFO_PERIOD_S = 0.06
info["fifo"] = os.path.join(work, "slow.fifo")
info["fifo_bytes"] = FIFO_CHUNK * FIFO_CHUNKS
# Feeds a named pipe slowly, from a process of its own (not traced): one 64 KiB chunk per 60 ms,
# far behind the consumer's step even on a loaded machine: the step's wait is a read blocked on
# the pipe for most of 60 ms, against a few ms of the generator's own Python between reads,
# however long a load of 4 on 2 cores stretches those (at 4 ms a chunk a step slowed by load
# kept the pipe full; at 12 ms the generator's time between reads, stretched by such a load,
# outweighed the reads and the verdict said decode).
FIFO_WRITER = """
import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY)
chunk = b"f" * int(sys.argv[2])
for _ in range(int(sys.argv[3])):
    time.sleep(float(sys.argv[4]))
    os.write(fd, chunk)
os.close(fd)
"""


def fifo_ds(hop=False):
    """A generator reading a slow named pipe, no prefetch: one read in flight at a time, the
    step waiting on it. tf.data runs the generator on whichever of its threads asks for the
    next element, so the reads may hop threads by chance (the issue saw 47/121 on two threads;
    four runs here: 74/23, 44/53, 96/1, 96/1). ``hop=True`` makes that hop certain: each read
    is handed to one of two reader threads in turn, still one at a time."""
    fifo = info["fifo"]
    if not os.path.exists(fifo):
        os.mkfifo(fifo)
    writer = subprocess.Popen([sys.executable, "-c", FIFO_WRITER, fifo, str(FIFO_CHUNK), str(FIFO_CHUNKS),
                               str(FIFO_PERIOD_S)])

    def reader(fd, inbox, outbox):
        while inbox.get():
            outbox.put(os.read(fd, FIFO_CHUNK))

    def gen():
        fd = os.open(fifo, os.O_RDONLY)
        inboxes, outbox = [queue.SimpleQueue(), queue.SimpleQueue()], queue.SimpleQueue()
        readers = [threading.Thread(target=reader, args=(fd, q, outbox)) for q in inboxes] if hop else []
        for t in readers:
            t.start()
        try:
            for k in itertools.count():
                if hop:
                    inboxes[k % 2].put(True)
                    b = outbox.get()
                else:
                    b = os.read(fd, FIFO_CHUNK)
                if not b:
                    break
                yield len(b)
        finally:
            for q in inboxes:
                q.put(False)
            for t in readers:
                t.join()
            os.close(fd)
            writer.wait()

    return (tf.data.Dataset.from_generator(gen, output_signature=tf.TensorSpec((), tf.int64))
            .with_options(NO_PREFETCH))


def run(name):
    """Build the pipeline and drive it (inside the profile window)."""
    if name in ("serial_fifo", "serial_fifo_hop"):
        return steps(fifo_ds(hop=name.endswith("hop")), compute_s=0.001)
    if name == "clean":
        ds = clean_ds()
        it = warm(ds)
        return steps(it, compute_s=0.02)
    if name == "input_bound":
        # decode-bound: a Python decode per record, no parallelism, no prefetch
        ds = tf.data.TFRecordDataset(big[0], buffer_size=256 << 10).map(slow_decode).batch(4)
        return steps(ds, n=12, compute_s=0.002)
    if name == "input_bound_no_steps":
        # the same decode-bound loop without step markers
        n = 0
        for _ in tf.data.TFRecordDataset(big[0], buffer_size=256 << 10).map(slow_decode).batch(4).take(12):
            time.sleep(0.002)
            n += 1
        return n
    if name == "serial":
        # cold shards read one after the other on one thread, no prefetch: the step waits on reads
        ds = (tf.data.FixedLengthRecordDataset(COLD, 256 << 10, buffer_size=64 << 10).batch(4)
              .with_options(NO_PREFETCH))
        return steps(ds, compute_s=0.001)
    if name == "parallel":
        # its twin: the same cold shards read by a parallel interleave, prefetched
        ds = (tf.data.Dataset.from_tensor_slices(COLD)
              .interleave(lambda f: tf.data.FixedLengthRecordDataset(f, 256 << 10, buffer_size=64 << 10),
                          cycle_length=len(COLD), num_parallel_calls=len(COLD)).batch(4).prefetch(8))
        return steps(warm(ds), compute_s=0.01)
    if name == "small_reads":
        ds = (tf.data.TFRecordDataset(big[0], buffer_size=4096).batch(16).prefetch(4))
        return steps(warm(ds), compute_s=0.02)
    if name == "small_files":
        # one file per sample: TFRecord files of one record each
        ds = (tf.data.Dataset.from_tensor_slices(small)
              .interleave(tf.data.TFRecordDataset, cycle_length=4, num_parallel_calls=4)
              .batch(16).prefetch(2))
        return steps(warm(ds), compute_s=0.02)
    if name == "metadata":
        ds = tf.data.Dataset.range(60).map(stat_heavy).batch(6).prefetch(2)
        return steps(warm(ds), compute_s=0.02)
    if name in ("random", "sequential"):
        ds = tf.data.Dataset.range(64).map(pread_at(name)).batch(4).prefetch(2)
        return steps(warm(ds), compute_s=0.02)
    if name == "redundant":
        # three epochs over the same file, no cache()
        ds = tf.data.TFRecordDataset(big[0], buffer_size=256 << 10).repeat(3).batch(32).prefetch(4)
        return steps(warm(ds), compute_s=0.01)
    if name == "cached":
        ds = (tf.data.TFRecordDataset(big[0], buffer_size=256 << 10).cache().repeat(3)
              .batch(32).prefetch(4))
        return steps(warm(ds), compute_s=0.01)
    if name == "staging":
        # two large shards plus many small side files (labels, masks)
        ds = (tf.data.Dataset.from_tensor_slices(big[:2] + small[:60])
              .interleave(lambda f: tf.data.TFRecordDataset(f, buffer_size=256 << 10),
                          cycle_length=4, num_parallel_calls=4)
              .batch(16).prefetch(4))
        return steps(warm(ds), compute_s=0.01)
    if name == "blocking_writes":
        ckpt = os.path.join(work, "ckpt.bin")

        payload = rng.bytes(2 << 20)

        def save(i):
            # a checkpoint every step, synced, on the training thread
            with open(ckpt, "wb") as f:
                f.write(payload)
                f.flush()
                os.fsync(f.fileno())
        return steps(warm(clean_ds()), compute_s=0.01, write=save)
    if name == "async_writes":
        # its twin: the same checkpoints written by a background thread
        ckpt = os.path.join(work, "ckpt_async.bin")
        payload = rng.bytes(2 << 20)
        done = threading.Event()

        def saver():
            while not done.is_set():
                with open(ckpt, "wb") as f:
                    f.write(payload)
                    f.flush()
                    os.fsync(f.fileno())
                done.wait(0.05)     # every few steps
        t = threading.Thread(target=saver)
        t.start()
        n = steps(warm(clean_ds()), compute_s=0.01)
        done.set()
        t.join()
        return n
    if name == "small_writes":
        log = os.path.join(work, "metrics.log")

        def logger():
            with open(log, "w", buffering=1) as f:   # line-buffered: one write() per line
                for i in range(400):
                    f.write(f"step {i} loss {1.0 / (i + 1):.6f}\n")
        t = threading.Thread(target=logger)
        t.start()
        n = steps(warm(clean_ds()), compute_s=0.02)
        t.join()
        return n
    if name == "big_writes":
        log = os.path.join(work, "metrics_big.log")

        def logger():
            with open(log, "w") as f:     # buffered: a few large writes
                f.write("".join(f"step {i} loss {1.0 / (i + 1):.6f}\n" for i in range(20000)))
        t = threading.Thread(target=logger)
        t.start()
        n = steps(warm(clean_ds()), compute_s=0.02)
        t.join()
        return n
    raise SystemExit(f"unknown pipeline {name}")


def keras_fit(name, logdir):
    """Keras fit; its TensorBoard callback opens the profile window over batches 5-10 (after
    the start-up, once the buffer tf.data prefetched while Keras traced its function is used)."""
    if name == "keras_input_bound":
        ds = (tf.data.TFRecordDataset(big[0], buffer_size=256 << 10)
              .map(lambda r: slow_decode(r, 0.008)).batch(4))
    else:
        ds = clean_ds()
    ds = ds.map(lambda x: (tf.cast(tf.reshape(x, [-1, 1]), tf.float32), tf.zeros([tf.size(x), 1])))
    # the clean twin's model does some real compute per step (two 1024-wide layers), as a model does
    hidden = [tf.keras.layers.Dense(1024, activation="relu") for _ in range(2)] if name == "keras_clean" else []
    model = tf.keras.Sequential([tf.keras.layers.Input((1,)), *hidden, tf.keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    cb = tf.keras.callbacks.TensorBoard(logdir, profile_batch=(5, 10))
    model.fit(ds.take(14), epochs=1, callbacks=[cb], verbose=0)
    return 6


runs = {}
for name in names:
    logdir = os.path.join(work, "logs", name)
    if name in ("serial", "parallel"):
        evict(COLD)
    if name.startswith("keras"):
        t0 = time.time_ns()
        n = keras_fit(name, logdir)
        t1 = time.time_ns()
    else:
        throttled = name == "serial" and THROTTLE is not None
        tf.profiler.experimental.start(logdir)
        if throttled:
            join(THROTTLE)
        t0 = time.time_ns()
        n = run(name)
        t1 = time.time_ns()
        if throttled:
            join(THROTTLE_HOME)
        tf.profiler.experimental.stop()
    files = sorted(glob.glob(os.path.join(logdir, "**", "*.xplane.pb"), recursive=True))
    runs[name] = {"xplane": files[-1], "steps": n, "window_ns": [t0, t1]}
with open(os.path.join(work, "result.json"), "w") as f:
    json.dump({"data": info, "runs": runs}, f)
