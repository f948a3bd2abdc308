"""Subprocess workload for test_findings' slow-filesystem test: one tf.data pipeline reading
TFRecord shards from two file systems in one profile window: a directory on the disk and
/dev/shm (tmpfs, traced through ``set_filters``).

argv: DISK_DIR SHM_DIR WORKDIR NAME [NAME ...]   (NAME: ``cold`` or ``warm``)
env:  TBIO_TEST_CGROUP: a cgroup directory whose blkio/io throttle caps this disk's read
      bandwidth; the process joins it only around the reads (TF's own start-up reads are
      never throttled) and goes back to TBIO_TEST_CGROUP_HOME afterwards.
Writes WORKDIR/result.json: {"data": {...}, "probe": {...bandwidths...}, "runs": {NAME: {...}}}.

``cold``: the disk shards are dropped from the page cache (fsync, then
posix_fadvise(DONTNEED)), so every read goes to the throttled disk. ``warm``: its twin, the
same files read once before the window, so both file systems serve from memory.
"""
import glob
import json
import os
import sys
import time

import tb_iotrace

tb_iotrace.enable()   # before TensorFlow: registration happens at import
tb_iotrace.set_filters(include=["/dev/shm/"])   # tmpfs is left out by default, like Darshan

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from cold_disk import evict, join  # noqa: E402

disk_dir, shm_dir, work, names = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
cgroup, home = os.environ["TBIO_TEST_CGROUP"], os.environ["TBIO_TEST_CGROUP_HOME"]
rng = np.random.default_rng(11)
RECORD, RECORDS, SHARDS = 16 << 10, 128, 4          # 4 x 2 MiB per file system
BUF = 256 << 10                                     # TFRecordDataset's read size
# larger than what a block throttle lets through at once (its first time slice: 0.1 s of bandwidth)
PROBE_BYTES = 4 << 20


def write_tfrecord(path: str) -> None:
    with tf.io.TFRecordWriter(path) as w:
        for _ in range(RECORDS):
            w.write(rng.bytes(RECORD))
    fd = os.open(path, os.O_RDONLY)
    os.fsync(fd)          # clean pages: fadvise(DONTNEED) cannot drop dirty ones
    os.close(fd)


def read_all(paths: list[str]) -> float:
    """Bandwidth of reading the files in BUF-sized reads: bytes / time inside read()."""
    total, spent = 0, 0.0
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        while True:
            t = time.perf_counter()
            b = os.read(fd, BUF)
            spent += time.perf_counter() - t
            if not b:
                break
            total += len(b)
        os.close(fd)
    return total / spent


def probe() -> dict[str, float]:
    """The check before the windows: is the disk, cold, really slower than tmpfs here?"""
    d, s = os.path.join(disk_dir, "probe.bin"), os.path.join(shm_dir, "probe.bin")
    blob = rng.bytes(PROBE_BYTES)
    for p in (d, s):
        with open(p, "wb") as f:
            f.write(blob)
            f.flush()
            os.fsync(f.fileno())
    out = {}
    evict([d])
    out["disk_cold_unthrottled"] = read_all([d])     # for the record: the bare disk, cold
    evict([d])
    join(cgroup)
    try:
        out["disk_cold"] = read_all([d])
        out["disk_warm"] = read_all([d])
    finally:
        join(home)
    out["shm"] = read_all([s])
    os.unlink(d)
    os.unlink(s)
    return out


disk = [os.path.join(disk_dir, f"disk{i}.tfrecord") for i in range(SHARDS)]
shm = [os.path.join(shm_dir, f"shm{i}.tfrecord") for i in range(SHARDS)]
for p in disk + shm:
    write_tfrecord(p)
result = {"data": {"disk": disk, "shm": shm, "size": os.path.getsize(disk[0]), "buffer": BUF},
          "probe": probe(), "runs": {}}


def pipeline() -> tf.data.Dataset:
    # shards of both file systems interleaved, read in 256 KiB calls, prefetched
    files = [p for pair in zip(disk, shm) for p in pair]
    return (tf.data.Dataset.from_tensor_slices(files)
            .interleave(lambda f: tf.data.TFRecordDataset(f, buffer_size=BUF),
                        cycle_length=2, num_parallel_calls=2, deterministic=True)
            .map(tf.strings.length, num_parallel_calls=2).batch(16).prefetch(4))


for name in names:
    logdir = os.path.join(work, "logs", name)
    evict(disk)
    if name == "warm":
        read_all(disk)            # the twin: disk shards in the page cache before the window
    join(cgroup)
    try:
        tf.profiler.experimental.start(logdir)
        it, steps = iter(pipeline()), 0
        while True:
            with tf.profiler.experimental.Trace("train", step_num=steps, _r=1):
                try:
                    next(it)          # the input wait
                except StopIteration:
                    break
                time.sleep(0.002)     # the compute
            steps += 1
        tf.profiler.experimental.stop()
    finally:
        join(home)
    files = sorted(glob.glob(os.path.join(logdir, "**", "*.xplane.pb"), recursive=True))
    result["runs"][name] = {"xplane": files[-1], "steps": steps}
with open(os.path.join(work, "result.json"), "w") as f:
    json.dump(result, f)
