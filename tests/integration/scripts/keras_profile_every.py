"""Subprocess workload for test_keras_profile_every: Keras 3 (backend from KERAS_BACKEND) with
tb_iotrace.keras.ProfileEvery, each batch read from its own file on the training thread.

argv: WORKDIR LOG_DIR every_steps|every_secs N STEPS NBATCH
Prints one JSON line: the files, their sizes and what the callback published.
"""
import json
import os
import sys
import time

work, log_dir, how, n, steps, nbatch = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), \
    int(sys.argv[5]), int(sys.argv[6])

import tb_iotrace  # noqa: E402

tb_iotrace.enable()

import keras  # noqa: E402
import numpy as np  # noqa: E402
from npy_batches import read_batch, write_batches  # noqa: E402

import tb_iotrace.keras  # noqa: E402

files = write_batches(work, nbatch)


class Batches(keras.utils.PyDataset):
    """Batch i is read from file i (whole, once), on the thread that trains (no workers)."""

    def __len__(self):
        return nbatch

    def __getitem__(self, i):
        x = read_batch(files[i])
        if how == "every_secs":
            time.sleep(0.05)
        return x, x.sum(axis=1, keepdims=True)


every = {"every_steps": int(n)} if how == "every_steps" else {"every_secs": n}
cb = tb_iotrace.keras.ProfileEvery(log_dir, steps=steps, **every)
model = keras.Sequential([keras.layers.Input((4,)), keras.layers.Dense(1)])
model.compile("sgd", "mse")
model.fit(Batches(), epochs=1, callbacks=[cb], verbose=0, shuffle=False)
print(json.dumps({"backend": keras.backend.backend(), "files": files,
                  "sizes": [os.path.getsize(p) for p in files], "windows": cb.windows,
                  "published": cb.published}))
