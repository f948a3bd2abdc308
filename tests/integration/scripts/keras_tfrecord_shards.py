"""Keras fit with profile_batch over a TFRecordDataset of 8 shards, each shard read inside the
window (tests/integration/test_tf_profiler.py: where the shard reads lie on the host timeline).

    python keras_tfrecord_shards.py WORK
Writes WORK/result.json: the shards, the capture(s).
"""
import glob
import json
import os
import sys

import tb_iotrace

tb_iotrace.enable()   # before TensorFlow

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

# 32 batches a shard: the window (batches 2-254) starts 30 batches before shard 1's first read, more
# than tf.data's autotuned read-ahead (injected prefetch) reaches while the profiler starts on a
# loaded machine (CI saw 4 shards' worth, 10+ batches, with 4 batches a shard)
SHARDS, RECORDS, BATCH = 8, 512, 16
work = sys.argv[1]
os.makedirs(work, exist_ok=True)
rng = np.random.default_rng(0)
shards = []
for s in range(SHARDS):
    path = os.path.join(work, f"shard-{s}.tfrecord")
    with tf.io.TFRecordWriter(path) as w:
        for _ in range(RECORDS):
            w.write(rng.standard_normal(32).astype(np.float32).tobytes())
    shards.append(path)


def parse(rec):
    x = tf.io.decode_raw(rec, tf.float32)
    return x, tf.reduce_sum(x, keepdims=True)


ds = tf.data.TFRecordDataset(shards).map(parse).batch(BATCH)
model = tf.keras.Sequential([tf.keras.Input((32,)), tf.keras.layers.Dense(16), tf.keras.layers.Dense(1)])
model.compile("sgd", "mse")
logs = os.path.join(work, "logs")
model.fit(ds, epochs=1, verbose=0,
          callbacks=[tf.keras.callbacks.TensorBoard(logs, profile_batch=(2, SHARDS * RECORDS // BATCH - 1))])
with open(os.path.join(work, "result.json"), "w") as fh:
    json.dump({"shards": shards, "xplanes": sorted(glob.glob(os.path.join(logs, "**", "*.xplane.pb"),
                                                             recursive=True))}, fh)
