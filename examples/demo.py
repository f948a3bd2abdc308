"""The demo behind `./dev.sh demo`: the same Keras model trained twice on the same images.

First on the input pipeline people write first (one file per image, a sequential `map`, no
prefetch), then on the one tb_iotrace's findings suggest (TFRecord shards, parallel `interleave`
and `map`, `prefetch`). Both runs read their files from a cold page cache, as the first epoch
of a real job or a data set larger than memory does. The TensorBoard callback profiles a few
steps of each; the demo prints both windows' findings side by side and the speedup measured
from the step times of the two runs, then serves TensorBoard with both runs (Ctrl-C stops it).
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")      # TensorFlow's start-up chatter

IMAGE = (32, 32, 3)                        # 3 KiB per image file
PROFILE = (6, 15)                          # the profiled batches (Keras counts from 1)
WARMUP = 3                                 # first batches left out of the step times (tracing)
RUNS = {
    "naive": "one file per image, sequential map, no prefetch",
    "tuned": "TFRecord shards, parallel interleave, batched parallel map, prefetch",
}


class Stop(Exception):
    """SIGTERM or SIGHUP arrived: stop serving like Ctrl-C does."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _raise_stop(signum: int, _frame: FrameType | None) -> None:
    raise Stop(signum)


# ---------------------------------------------------------------- data

def write_data(root: Path, images: int, shards: int) -> tuple[list[str], list[str]]:
    """The same images twice: one raw file each, and TFRecord shards. Synced to disk."""
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(0)
    img_dir, rec_dir = root / "images", root / "tfrecords"
    img_dir.mkdir(parents=True, exist_ok=True)
    rec_dir.mkdir(parents=True, exist_ok=True)
    files = [str(img_dir / f"img-{i:05d}.raw") for i in range(images)]
    shard_paths = [str(rec_dir / f"train-{s:03d}-of-{shards:03d}.tfrecord") for s in range(shards)]
    writers = [tf.io.TFRecordWriter(p) for p in shard_paths]
    for i, path in enumerate(files):
        img = rng.integers(0, 255, IMAGE, dtype=np.uint8)
        label = int(img[..., 0].mean() > img[..., 1].mean())
        raw = img.tobytes() + bytes([label])           # the label is the file's last byte
        with open(path, "wb") as f:
            f.write(raw)
        ex = tf.train.Example(features=tf.train.Features(feature={
            "raw": tf.train.Feature(bytes_list=tf.train.BytesList(value=[raw]))}))
        writers[i % shards].write(ex.SerializeToString())
    for w in writers:
        w.close()
    os.sync()
    return files, shard_paths


def drop_page_cache(paths: list[str]) -> None:
    """Evict the files from the page cache: the next reads go to the disk."""
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


# ---------------------------------------------------------------- the two pipelines

def _decode(raw: Any) -> tuple[Any, Any]:
    import tensorflow as tf

    data = tf.io.decode_raw(raw, tf.uint8)
    img = tf.reshape(data[:-1], IMAGE)
    return tf.cast(img, tf.float32) / 255.0, tf.cast(data[-1], tf.int64)


def naive_pipeline(files: list[str], batch: int) -> Any:
    """What people write first: read each image file in a sequential map, no prefetch."""
    import tensorflow as tf

    # tf.data's default rewrites would quietly parallelize this map (map_parallelization,
    # map_and_batch_fusion) and add a prefetch (inject_prefetch): off, so it runs as written
    options = tf.data.Options()
    options.experimental_optimization.apply_default_optimizations = False
    return (tf.data.Dataset.from_tensor_slices(files)
            .map(lambda p: _decode(tf.io.read_file(p)))
            .batch(batch)
            .with_options(options))


def tuned_pipeline(shards: list[str], batch: int) -> Any:
    """What the findings suggest: shards read in parallel, decoded a batch at a time in parallel
    (vectorized), prefetched."""
    import tensorflow as tf

    spec = {"raw": tf.io.FixedLenFeature([], tf.string)}

    def decode_batch(records: Any) -> tuple[Any, Any]:
        data = tf.io.decode_raw(tf.io.parse_example(records, spec)["raw"], tf.uint8)
        img = tf.reshape(data[:, :-1], (-1, *IMAGE))
        return tf.cast(img, tf.float32) / 255.0, tf.cast(data[:, -1], tf.int64)

    return (tf.data.Dataset.from_tensor_slices(shards)
            .interleave(tf.data.TFRecordDataset, cycle_length=len(shards), num_parallel_calls=tf.data.AUTOTUNE,
                        deterministic=False)
            .batch(batch)
            .map(decode_batch, num_parallel_calls=tf.data.AUTOTUNE)
            .prefetch(tf.data.AUTOTUNE))


def model() -> Any:
    import tensorflow as tf

    m = tf.keras.Sequential([
        tf.keras.layers.Input(IMAGE),
        tf.keras.layers.Conv2D(8, 3, strides=2, activation="relu"),
        tf.keras.layers.Conv2D(16, 3, strides=2, activation="relu"),
        tf.keras.layers.GlobalAveragePooling2D(),
        tf.keras.layers.Dense(2),
    ])
    m.compile(optimizer="adam", loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return m


# ---------------------------------------------------------------- training and timing

def train(pipelines: dict[str, tuple[Any, list[str]]], logdir: Path, steps: int, rounds: int) -> dict[str, Any]:
    """One model per pipeline, trained an epoch at a time in turns (naive, tuned, naive, ...), each
    epoch from a cold page cache, so both see the same machine load; the first epoch of each
    profiles the batches PROFILE. Returns each run's step times per epoch and its capture."""
    import tensorflow as tf

    class StepTimer(tf.keras.callbacks.Callback):
        def __init__(self) -> None:
            super().__init__()
            self.ends: list[float] = []

        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            self.ends.append(time.perf_counter())

    tf.keras.utils.set_random_seed(0)
    models = {name: model() for name in pipelines}
    runs: dict[str, dict[str, Any]] = {name: {"pipeline": RUNS[name], "step_s": [], "epoch_s": []}
                                       for name in pipelines}
    for r in range(rounds):
        for name, (dataset, inputs) in pipelines.items():
            drop_page_cache(inputs)
            timer = StepTimer()
            callbacks: list[Any] = [timer]
            if r == 0:      # first, so a profiled step's trace ends before the timer reads the clock
                callbacks.insert(0, tf.keras.callbacks.TensorBoard(log_dir=str(logdir / name), profile_batch=PROFILE))
            t0 = time.perf_counter()
            models[name].fit(dataset, epochs=1, steps_per_epoch=steps, shuffle=False, callbacks=callbacks,
                             verbose=0)
            ends = [t0] + timer.ends
            runs[name]["step_s"].append([b - a for a, b in zip(ends, ends[1:])])
            runs[name]["epoch_s"].append(time.perf_counter() - t0)
    for name in pipelines:
        captures = sorted((logdir / name).glob("**/plugins/profile/*/*.xplane.pb"))
        runs[name]["capture"] = str(captures[-1]) if captures else None
    return runs


def timed_steps(step_s: list[list[float]]) -> list[float]:
    """The step times that count: each epoch's after its warm-up, none of the profiled ones."""
    lo, hi = PROFILE
    return [t for r, epoch in enumerate(step_s) for i, t in enumerate(epoch, start=1)
            if i > WARMUP and not (r == 0 and lo <= i <= hi)]


def median_step(run: dict[str, Any]) -> float:
    return statistics.median(timed_steps(run["step_s"]))


def speedup(runs: dict[str, dict[str, Any]]) -> float:
    return median_step(runs["naive"]) / median_step(runs["tuned"])


# ---------------------------------------------------------------- what is printed

def findings_of(capture: str | None) -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, Any]]:
    """(findings, summary, verdict) of a capture."""
    from tb_iotrace.analysis import analyze

    a = analyze(capture) if capture else None
    if a is None:
        return [], {}, {}
    return a.findings, a.summary, a.verdict


def predicted_speedup(verdict: dict[str, Any]) -> float | None:
    """The speedup the verdict's advice expects: step time x (1 + expected change)."""
    change = verdict.get("expected_step_time_change")
    return 1.0 / (1.0 + change) if isinstance(change, (int, float)) and change > -1 else None


def side_by_side(runs: dict[str, dict[str, Any]]) -> str:
    cols = list(runs)
    width = 60
    rows: list[tuple[str, list[str]]] = [("pipeline", [runs[c]["pipeline"] for c in cols])]
    rows.append(("step time (median)", [f"{1e3 * median_step(runs[c]):.1f} ms" for c in cols]))
    waits = []
    for c in cols:
        s = runs[c]["summary"]
        waits.append(f"{s['input_wait_ps'] / s['step_time_ps']:.0%} of the step, "
                     f"{s['io_during_wait_ps'] / max(s['input_wait_ps'], 1):.0%} of it file I/O"
                     if s.get("step_time_ps") else "-")
    rows.append(("input wait (profiled)", waits))
    found = [[f"[{f['severity']}] {f['id']}" for f in runs[c]["findings"]] or ["none"] for c in cols]
    for i in range(max(len(f) for f in found)):
        rows.append(("findings" if i == 0 else "", [f[i] if i < len(f) else "" for f in found]))
    head = f"{'':<22}" + "".join(f"{c:<{width}}" for c in cols)
    head = head.rstrip()
    lines = [head, "-" * len(head)]
    lines += [f"{label:<22}" + "".join(f"{v:<{width}}" for v in vals).rstrip() for label, vals in rows]
    return "\n".join(lines)


def story(runs: dict[str, dict[str, Any]]) -> str:
    lines = ["", "What the findings said about the naive pipeline:"]
    for f in runs["naive"]["findings"]:
        lines.append(f"  [{f['severity']}] {f['id']}: {f['statement']}")
        lines.append(f"      suggestion: {f['suggestion']}")
    x = speedup(runs)
    v = runs["naive"].get("verdict") or {}
    if v.get("advice"):
        lines += ["", f"The verdict on the naive pipeline: {v['bound']}; {v['advice']}"]
    lines += ["", f"The tuned pipeline trains {x:.1f}x faster "
                  f"(median step {1e3 * median_step(runs['naive']):.1f} ms -> {1e3 * median_step(runs['tuned']):.1f} ms, "
                  f"{len(runs['naive']['step_s'])} epochs each, taken in turns)."]
    p = predicted_speedup(v)
    if p is not None:
        lines.append(f"Predicted by the naive run's verdict: {p:.1f}x (its one change only; the tuned pipeline "
                     f"changes more); measured: {x:.1f}x.")
    return "\n".join(lines)


# ---------------------------------------------------------------- TensorBoard

def serve(logdir: Path, port: int) -> int:
    """TensorBoard on the logdir until Ctrl-C, SIGTERM or SIGHUP; it never outlives the demo.
    Ctrl-C (SIGINT) stops it also when the demo was started in the background by a shell script,
    which starts such jobs with SIGINT ignored (and Python then keeps it ignored)."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _raise_stop)
    proc = None
    rc = 0
    try:
        proc = subprocess.Popen([sys.executable, "-m", "tensorboard.main", "--logdir", str(logdir),
                                 "--host", "127.0.0.1", "--port", str(port)])
        print(f"\nTensorBoard: http://localhost:{port}/#iotrace   (runs naive/train and tuned/train; "
              f"Profile tab: http://localhost:{port}/#profile)")
        print("Ctrl-C stops it.", flush=True)
        proc.wait()
        rc = proc.returncode
    except KeyboardInterrupt:
        rc = 0
    except Stop as stop:
        rc = 128 + stop.signum
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):    # a second one must not cut this short
            signal.signal(sig, signal.SIG_IGN)
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    return rc


# ---------------------------------------------------------------- main

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workdir", type=Path, default=Path("demo-run"), help="where data and logs go (default: %(default)s)")
    ap.add_argument("--images", type=int, default=2048, help="images in the data set (default: %(default)s)")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--epochs", type=int, default=3, help="epochs per pipeline (default: %(default)s)")
    ap.add_argument("--port", type=int, default=6006)
    ap.add_argument("--no-serve", action="store_true", help="print the comparison and exit")
    ap.add_argument("--serve-only", action="store_true", help="serve the logs of an earlier run, train nothing")
    args = ap.parse_args(argv)
    work = args.workdir.resolve()
    logdir = work / "logs"
    if args.serve_only:
        return serve(logdir, args.port)
    steps = args.images // args.batch
    if steps < PROFILE[1] + 3:
        ap.error(f"--images must give at least {PROFILE[1] + 3} batches")

    import tb_iotrace

    tb_iotrace.enable()
    import tensorflow as tf

    tf.get_logger().setLevel("ERROR")
    print(f"writing {args.images} images to {work / 'data'} (one file each, and 4 TFRecord shards)", flush=True)
    files, shards = write_data(work / "data", args.images, shards=4)
    pipelines = {"naive": (naive_pipeline(files, args.batch), files),
                 "tuned": (tuned_pipeline(shards, args.batch), shards)}
    print(f"training one model per pipeline, {args.epochs} epochs of {steps} steps each, in turns; the first "
          f"epoch of each profiles batches {PROFILE[0]}-{PROFILE[1]}", flush=True)
    runs = train(pipelines, logdir, steps, args.epochs)
    for run in runs.values():
        run["findings"], run["summary"], run["verdict"] = findings_of(run["capture"])
    print()
    print(side_by_side(runs))
    print(story(runs))
    summary = {name: {k: r[k] for k in ("pipeline", "epoch_s", "step_s", "capture", "findings", "verdict")}
               for name, r in runs.items()}
    summary["profile_batches"] = list(PROFILE)
    summary["warmup_batches"] = WARMUP
    summary["speedup"] = speedup(runs)
    summary["predicted_speedup"] = predicted_speedup(runs["naive"]["verdict"])
    (work / "demo.json").write_text(json.dumps(summary, indent=1))
    print(f"(step times and findings: {work / 'demo.json'})", flush=True)
    if args.no_serve:
        return 0
    return serve(logdir, args.port)


if __name__ == "__main__":
    sys.exit(main())
