"""Subprocess workload (Python >= 3.12) for test_jax_keras: Keras 3 on the JAX backend, its
TensorBoard callback profiling batches FIRST..FIRST+2 while each batch reads its own file.

argv: WORKDIR FIRST
Writes WORKDIR/result.json with what the test checks.
"""
import glob
import json
import os
import sys

os.environ["KERAS_BACKEND"] = "jax"
work, first = sys.argv[1], int(sys.argv[2])

import tb_iotrace  # noqa: E402

tb_iotrace.enable()

import keras  # noqa: E402
import numpy as np  # noqa: E402
from npy_batches import read_batch, write_batches  # noqa: E402

assert keras.backend.backend() == "jax"
nbatch = 8
files = write_batches(work, nbatch)


class Batches(keras.utils.PyDataset):
    """Batch i is read from file i, on the thread that trains (no workers)."""

    def __len__(self):
        return nbatch

    def __getitem__(self, i):
        x = read_batch(files[i])
        return x, x.sum(axis=1, keepdims=True)


logdir = os.path.join(work, "logs")
model = keras.Sequential([keras.layers.Input((4,)), keras.layers.Dense(1)])
model.compile("sgd", "mse")
cb = keras.callbacks.TensorBoard(logdir, profile_batch=(first, first + 2))
model.fit(Batches(), epochs=1, callbacks=[cb], verbose=0, shuffle=False)
result = {"files": files, "sizes": [os.path.getsize(p) for p in files],
          "xplanes": sorted(glob.glob(os.path.join(logdir, "**", "*.xplane.pb"), recursive=True))}
with open(os.path.join(work, "result.json"), "w") as f:
    json.dump(result, f)
