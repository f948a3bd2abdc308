"""The data set of the Keras profile-window jobs (keras_profile_every.py, keras_jax_window.py):
batch i is the file ``<work>/data/batch<i>.npy`` (16 + i rows of 4 floats), read whole."""
from __future__ import annotations

import io
import os

import numpy as np


def write_batches(work: str, nbatch: int) -> list[str]:
    datadir = os.path.join(work, "data")
    os.makedirs(datadir, exist_ok=True)
    files = []
    rng = np.random.default_rng(0)
    for i in range(nbatch):
        p = os.path.join(datadir, f"batch{i}.npy")
        np.save(p, rng.normal(size=(16 + i, 4)).astype(np.float32))
        files.append(p)
    return files


def read_batch(path: str) -> np.ndarray:
    """One batch, the file read whole in one go (so the window holds its bytes)."""
    with open(path, "rb") as f:
        return np.load(io.BytesIO(f.read()))
