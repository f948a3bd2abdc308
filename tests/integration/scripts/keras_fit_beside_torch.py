"""A Keras fit (TensorFlow backend) in a process that imports torch too, with no profiler and
no tb_iotrace in the code: the loop is TensorFlow's, torch only sits in ``sys.modules``.

    keras_fit_beside_torch.py WORK SECONDS

Fits a small model on random arrays, one epoch per ``fit`` call, until SECONDS have passed;
prints ``steps N`` and writes WORK/result.json (``start_ns`` and ``end_ns`` of the fitting).
"""
from __future__ import annotations

import json
import os
import sys
import time

import torch  # noqa: F401  (imported, never used: the loop is Keras')

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
import keras  # noqa: E402
import numpy as np  # noqa: E402


def main() -> None:
    work, seconds = sys.argv[1], float(sys.argv[2])
    rng = np.random.default_rng(0)
    x, y = rng.random((512, 64), dtype=np.float32), rng.random((512, 1), dtype=np.float32)
    model = keras.Sequential([keras.Input((64,)), keras.layers.Dense(32, activation="relu"), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    start, steps = time.time_ns(), 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        model.fit(x, y, batch_size=16, epochs=1, verbose=0)
        steps += 512 // 16
    print(f"steps {steps}", flush=True)
    os.makedirs(work, exist_ok=True)
    with open(os.path.join(work, "result.json"), "w") as fh:
        json.dump({"start_ns": start, "end_ns": time.time_ns(), "steps": steps}, fh)


if __name__ == "__main__":
    main()
