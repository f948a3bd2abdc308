"""Keras ModelCheckpoint saving a .keras file each epoch (tests/integration/test_keras_checkpoints.py):
prints the saved files' paths and sizes as JSON."""
from __future__ import annotations

import json
import os
import sys

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
import keras  # noqa: E402
import numpy as np  # noqa: E402


def main() -> None:
    work = sys.argv[1]
    model = keras.Sequential([keras.Input((256,)), keras.layers.Dense(1024), keras.layers.Dense(1024),
                              keras.layers.Dense(1)])            # 5 MiB of weights
    model.compile("sgd", "mse")
    x = np.random.rand(64, 256).astype("float32")
    y = np.random.rand(64, 1).astype("float32")
    ck = keras.callbacks.ModelCheckpoint(os.path.join(work, "m-{epoch}.keras"))
    model.fit(x, y, epochs=3, batch_size=16, verbose=0, callbacks=[ck])
    print(json.dumps({os.path.join(work, f): os.path.getsize(os.path.join(work, f))
                      for f in os.listdir(work) if f.endswith(".keras")}))


if __name__ == "__main__":
    main()
