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


import threading  # noqa: E402

# On the TensorFlow backend, tf.data fetches the batches on a thread of its own and reads ahead
# as far as it likes: on a loaded machine it had read all 14 batches before the last window
# opened, which then held steps and no read. A batch is read at most one batch ahead of the one
# training (waited for, bounded), so every window holds the read of its batches after its first.
_trained = [-1]
_cond = threading.Condition()
PACED = keras.backend.backend() == "tensorflow"


class Pace(keras.callbacks.Callback):
    def on_train_batch_begin(self, batch, logs=None):
        with _cond:
            _trained[0] = batch
            _cond.notify_all()


class Batches(keras.utils.PyDataset):
    """Batch i is read from file i (whole, once), on the thread that trains (no workers)."""

    def __len__(self):
        return nbatch

    def __getitem__(self, i):
        if PACED:
            with _cond:
                _cond.wait_for(lambda: _trained[0] >= i - 1, timeout=60)
        x = read_batch(files[i])
        if how == "every_secs":
            time.sleep(0.05)
        return x, x.sum(axis=1, keepdims=True)


every = {"every_steps": int(n)} if how == "every_steps" else {"every_secs": n}
cb = tb_iotrace.keras.ProfileEvery(log_dir, steps=steps, **every)
model = keras.Sequential([keras.layers.Input((4,)), keras.layers.Dense(1)])
model.compile("sgd", "mse")
model.fit(Batches(), epochs=1, callbacks=[cb, Pace()], verbose=0, shuffle=False)   # the window opens first
print(json.dumps({"backend": keras.backend.backend(), "files": files,
                  "sizes": [os.path.getsize(p) for p in files], "windows": cb.windows,
                  "published": cb.published}))
