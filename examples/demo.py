"""The demo behind `./dev.sh demo`.

Writes a small TFRecord dataset and a folder of small files, trains a small
Keras model for a few epochs with tb_iotrace enabled and the TensorBoard
callback profiling a few steps, prints the I/O report of the profiled window,
then serves TensorBoard on localhost with the logdir (Ctrl-C stops it).
"""
from __future__ import annotations

import argparse
import glob
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import tb_iotrace

tb_iotrace.enable()           # before TensorFlow: its own reads are traced too

import tensorflow as tf  # noqa: E402

from tb_iotrace.cli import main as tb_iotrace_cli  # noqa: E402

IMAGE = (32, 32, 3)


def write_data(root: Path, shards: int, per_shard: int, small_files: int) -> tuple[list[str], list[str]]:
    """TFRecord shards of raw 32x32x3 images and a folder of small .raw files, same content."""
    rng = np.random.default_rng(0)
    rec_dir, img_dir = root / "tfrecords", root / "images"
    rec_dir.mkdir(parents=True, exist_ok=True)
    img_dir.mkdir(parents=True, exist_ok=True)
    shard_paths = []
    for s in range(shards):
        path = rec_dir / f"train-{s:03d}.tfrecord"
        shard_paths.append(str(path))
        with tf.io.TFRecordWriter(str(path)) as w:
            for _ in range(per_shard):
                img = rng.integers(0, 255, IMAGE, dtype=np.uint8)
                label = int(img.mean() > 127)
                ex = tf.train.Example(features=tf.train.Features(feature={
                    "image": tf.train.Feature(bytes_list=tf.train.BytesList(value=[img.tobytes()])),
                    "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[label])),
                }))
                w.write(ex.SerializeToString())
    file_paths = []
    for i in range(small_files):
        path = img_dir / f"img-{i:05d}.raw"
        path.write_bytes(rng.integers(0, 255, IMAGE, dtype=np.uint8).tobytes())
        file_paths.append(str(path))
    return shard_paths, file_paths


def datasets(shards: list[str], files: list[str], batch: int) -> tf.data.Dataset:
    spec = {"image": tf.io.FixedLenFeature([], tf.string), "label": tf.io.FixedLenFeature([], tf.int64)}

    def parse(rec):
        ex = tf.io.parse_single_example(rec, spec)
        img = tf.reshape(tf.io.decode_raw(ex["image"], tf.uint8), IMAGE)
        return tf.cast(img, tf.float32) / 255.0, ex["label"]

    def load_file(path):
        img = tf.reshape(tf.io.decode_raw(tf.io.read_file(path), tf.uint8), IMAGE)
        return tf.cast(img, tf.float32) / 255.0, tf.cast(tf.reduce_mean(tf.cast(img, tf.float32)) > 127.0, tf.int64)

    records = (tf.data.Dataset.from_tensor_slices(shards)
               .interleave(tf.data.TFRecordDataset, cycle_length=2, num_parallel_calls=2)
               .map(parse, num_parallel_calls=2))
    small = tf.data.Dataset.from_tensor_slices(files).map(load_file)   # per-sample files, serial
    return records.concatenate(small).shuffle(256, seed=0).batch(batch).prefetch(2)


def model() -> tf.keras.Model:
    m = tf.keras.Sequential([
        tf.keras.layers.Input(IMAGE),
        tf.keras.layers.Conv2D(8, 3, activation="relu"),
        tf.keras.layers.GlobalAveragePooling2D(),
        tf.keras.layers.Dense(2),
    ])
    m.compile(optimizer="adam", loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return m


def latest_capture(logdir: Path) -> str | None:
    found = sorted(glob.glob(str(logdir / "**" / "plugins" / "profile" / "*" / "*.xplane.pb"), recursive=True),
                   key=os.path.getmtime)
    return found[-1] if found else None


def serve(logdir: Path, port: int) -> int:
    cmd = [sys.executable, "-m", "tensorboard.main", "--logdir", str(logdir), "--host", "127.0.0.1",
           "--port", str(port)]
    proc = subprocess.Popen(cmd)
    print(f"\nTensorBoard: http://localhost:{port}/#iotrace   (Profile tab: http://localhost:{port}/#profile)")
    print("Ctrl-C stops it.", flush=True)
    try:
        return proc.wait()
    except KeyboardInterrupt:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workdir", type=Path, default=Path("demo-run"), help="where data and logs go")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--port", type=int, default=6006)
    ap.add_argument("--no-serve", action="store_true", help="print the report and exit")
    args = ap.parse_args(argv)
    work = args.workdir.resolve()
    logdir = work / "logs"
    shards, files = write_data(work / "data", shards=4, per_shard=256, small_files=256)
    ds = datasets(shards, files, batch=32)
    cb = tf.keras.callbacks.TensorBoard(log_dir=str(logdir), profile_batch=(4, 8))
    t0 = time.time()
    model().fit(ds, epochs=args.epochs, callbacks=[cb], verbose=2)
    print(f"trained {args.epochs} epochs in {time.time() - t0:.1f} s")
    path = latest_capture(logdir)
    if path is None:
        print("no profile was written", file=sys.stderr)
        return 1
    print(f"\n$ tb-iotrace report {logdir}", flush=True)
    rc = tb_iotrace_cli(["report", str(logdir)])
    if rc != 0:
        return rc
    if args.no_serve:
        return 0
    return serve(logdir, args.port)


if __name__ == "__main__":
    sys.exit(main())
