"""A loop that restores a checkpoint at start and saves one every few steps with a checkpoint
library, timing each save itself (tests/integration/test_checkpoint_libraries.py).

    python library_checkpoint_job.py WORK LIB [MODE]     # LIB: safetensors | orbax | tf
MODE: run (default: under ``tb-iotrace run``), window (the restore and the loop in a profile
window of the library's framework, written to WORK/logs: tb_iotrace.torch.trace_handler for
safetensors, tf.profiler for tf, jax.profiler for orbax; a step event per step), wait (orbax:
each save followed by ``wait_until_finished``, the job timing each: ``waits_s``).
safetensors: safetensors.torch.save_file/load_file (a 32 MiB state, one file per save);
orbax: orbax.checkpoint.StandardCheckpointer save/restore of a JAX pytree (a directory per
save; the save is async: the job times the call, the writes go on in the background); tf: tf.train.Checkpoint save/restore (prefix files .index + .data-00000-of-00001).
The checkpoints go to WORK/ckpt. The first save (init) is made before the loop and
restored at its start. Writes
WORK/result.json: the save calls' times, the loop's, each save's path and its files' sizes.
"""
from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Iterator

STEPS, EVERY = 9, 3


def sizes_under(path: str) -> int:
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


@contextlib.contextmanager
def _nothing() -> Iterator[None]:
    yield


class Window:
    """The framework's profile window around the loop, one step event per step."""

    def __init__(self, lib: str, logs: str) -> None:
        self.lib, self.logs, self.prof, self.handler = lib, logs, None, None
        if lib == "safetensors":
            import tb_iotrace.torch as tbt

            self.handler = tbt.trace_handler(logs)
        else:
            import tb_iotrace

            tb_iotrace.enable()        # before TensorFlow/JAX: the profiler plugin registers at import

    def start(self) -> None:
        if self.lib == "safetensors":
            import torch

            sched = torch.profiler.schedule(wait=0, warmup=0, active=STEPS + 1, repeat=1)
            self.prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], schedule=sched,
                                               on_trace_ready=self.handler)
            self.prof.__enter__()
        elif self.lib == "tf":
            import tensorflow as tf

            tf.profiler.experimental.start(self.logs)
        else:
            import jax

            jax.profiler.start_trace(self.logs)

    @contextlib.contextmanager
    def step(self, k: int) -> Iterator[None]:
        if self.lib == "safetensors":
            yield
            self.prof.step()
        elif self.lib == "tf":
            import tensorflow as tf

            with tf.profiler.experimental.Trace("train", step_num=k, _r=1):
                yield
        else:
            import jax

            with jax.profiler.StepTraceAnnotation("train", step_num=k):
                yield

    def stop(self) -> None:
        if self.lib == "safetensors":
            self.prof.__exit__(None, None, None)
        elif self.lib == "tf":
            import tensorflow as tf

            tf.profiler.experimental.stop()
        else:
            import jax

            jax.profiler.stop_trace()


def main() -> None:
    work, lib = sys.argv[1], sys.argv[2]
    mode = sys.argv[3] if len(sys.argv) > 3 else "run"
    # before the library's import: its functions are wrapped where the job binds them
    window = Window(lib, os.path.join(work, "logs")) if mode == "window" else None
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
    waits: list[float] = []
    out: dict[str, int] = {}
    t0 = time.perf_counter()
    if window is not None:
        window.start()
    load(init)
    for k in range(STEPS):
        with window.step(k) if window is not None else _nothing():
            for _ in range(10):
                x = np.tanh(x @ weights[k % 4])
            if (k + 1) % EVERY == 0:
                path = os.path.join(ckdir, name.format(k + 1))
                s = time.perf_counter()
                save(path)
                saves.append(time.perf_counter() - s)
                if mode == "wait":
                    s = time.perf_counter()
                    ckptr.wait_until_finished()
                    waits.append(time.perf_counter() - s)
    if window is not None:
        window.stop()
    loop_s = time.perf_counter() - t0
    if lib == "orbax":
        ckptr.wait_until_finished()
    for k in range(EVERY, STEPS + 1, EVERY):
        path = os.path.join(ckdir, name.format(k))
        out[path] = sizes_under(os.path.dirname(path) if lib == "tf" else path)
    with open(os.path.join(work, "result.json"), "w") as fh:
        json.dump({"saves_s": saves, "waits_s": waits, "loop_s": loop_s, "sizes": out, "pid": os.getpid(), "init": init,
                   "init_size": sizes_under(os.path.dirname(init) if lib == "tf" else init)}, fh)


if __name__ == "__main__":
    main()
