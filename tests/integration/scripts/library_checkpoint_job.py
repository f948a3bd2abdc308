"""A loop that restores a checkpoint at start and saves one every few steps with a checkpoint
library, timing each save itself (tests/integration/test_checkpoint_libraries.py).

    python library_checkpoint_job.py WORK LIB     # LIB: safetensors | orbax | tf
safetensors: safetensors.torch.save_file/load_file (a 32 MiB state, one file per save);
orbax: orbax.checkpoint.StandardCheckpointer save/restore of a JAX pytree (a directory per
save; the save is async: the job times the call, the writes go on in the background); tf: tf.train.Checkpoint save/restore (prefix files .index + .data-00000-of-00001).
The checkpoints go to WORK/ckpt. The first save (init) is made before the loop and
restored at its start. Writes
WORK/result.json: the save calls' times, the loop's, each save's path and its files' sizes.
"""
from __future__ import annotations

import json
import os
import sys
import time

STEPS, EVERY = 9, 3


def sizes_under(path: str) -> int:
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


def main() -> None:
    work, lib = sys.argv[1], sys.argv[2]
    ckdir = os.path.join(work, "ckpt")          # the checkpoints; the job's own result beside it
    os.makedirs(ckdir, exist_ok=True)
    import numpy as np

    rng = np.random.default_rng(0)
    weights = [rng.standard_normal((512, 512)).astype(np.float32) for _ in range(4)]     # 4 MiB

    if lib == "safetensors":
        import torch
        from safetensors.torch import load_file, save_file

        # 32 MiB: a save takes tens of ms, well above a loaded machine's scheduling delays
        state = {f"w{i}": torch.from_numpy(rng.standard_normal((1024, 1024)).astype(np.float32)) for i in range(8)}

        def save(path: str) -> None:
            save_file(state, path)

        def load(path: str) -> None:
            load_file(path)

        name = "step{}.safetensors"
    elif lib == "orbax":
        import jax.numpy as jnp
        import orbax.checkpoint as ocp

        ckptr = ocp.StandardCheckpointer()
        state = {f"w{i}": jnp.asarray(w) for i, w in enumerate(weights)}

        def save(path: str) -> None:       # async: the call stages and returns, the writes go on
            ckptr.save(path, state)

        def load(path: str) -> None:
            ckptr.restore(path, state)

        name = "step{}"
    else:
        import tensorflow as tf

        ck = tf.train.Checkpoint(**{f"w{i}": tf.Variable(w) for i, w in enumerate(weights)})
        paths: dict[str, str] = {}

        def save(path: str) -> None:
            paths[path] = ck.save(path)

        def load(path: str) -> None:
            ck.restore(paths[path]).assert_consumed()

        name = "step{}/ckpt"
    init = os.path.join(ckdir, name.format(0))
    save(init)
    if lib == "orbax":
        ckptr.wait_until_finished()
    x = np.ones((64, 512), np.float32)
    saves: list[float] = []
    out: dict[str, int] = {}
    t0 = time.perf_counter()
    load(init)
    for k in range(STEPS):
        for _ in range(10):
            x = np.tanh(x @ weights[k % 4])
        if (k + 1) % EVERY == 0:
            path = os.path.join(ckdir, name.format(k + 1))
            s = time.perf_counter()
            save(path)
            saves.append(time.perf_counter() - s)
    loop_s = time.perf_counter() - t0
    if lib == "orbax":
        ckptr.wait_until_finished()
    for k in range(EVERY, STEPS + 1, EVERY):
        path = os.path.join(ckdir, name.format(k))
        out[path] = sizes_under(os.path.dirname(path) if lib == "tf" else path)
    with open(os.path.join(work, "result.json"), "w") as fh:
        json.dump({"saves_s": saves, "loop_s": loop_s, "sizes": out, "pid": os.getpid(), "init": init,
                   "init_size": sizes_under(os.path.dirname(init) if lib == "tf" else init)}, fh)


if __name__ == "__main__":
    main()
