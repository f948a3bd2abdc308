"""Subprocess workload for test_profile_windows (run under `tb-iotrace run --profile-every`, no
tb_iotrace code here): a TensorFlow or JAX loop that reads one file of its own per step (whole,
once), each step marked as the framework marks training steps, for SECONDS after the framework
is imported, or, given STOPFILE, until that file exists (the test creates it once the windows
it needs are in the bucket; SECONDS then only bounds the run).

argv: tensorflow|jax DATADIR SECONDS [STOPFILE]
Prints one JSON line: the files and their sizes.
"""
import json
import os
import sys
import time

framework, datadir, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
stopfile = sys.argv[4] if len(sys.argv) > 4 else None
os.makedirs(datadir, exist_ok=True)
files, sizes = [], []


def data_file(i):
    """The file step ``i`` reads, written before its step (outside its marker)."""
    p = os.path.join(datadir, f"part{i:05d}.bin")
    with open(p, "wb") as f:
        f.write(os.urandom(1000 + 37 * (i % 1000)))
    files.append(p)
    sizes.append(os.path.getsize(p))
    return p


if framework == "jax":
    import jax
    import jax.numpy as jnp

    def marker(step):
        return jax.profiler.StepTraceAnnotation("train", step_num=step)

    @jax.jit
    def total(x):
        return jnp.sum(x.astype(jnp.float32))

    def compute(data):   # the first 1000 bytes: one shape, compiled once
        return float(total(jnp.frombuffer(data[:1000], dtype=jnp.uint8)))
else:
    import numpy as np
    import tensorflow as tf

    def marker(step):
        return tf.profiler.experimental.Trace("train", step_num=step, _r=1)

    def compute(data):
        return float(tf.reduce_sum(tf.cast(tf.constant(np.frombuffer(data[:1000], dtype=np.uint8)), tf.float32)))

end = time.monotonic() + seconds
step = 0
while time.monotonic() < end and not (stopfile and os.path.exists(stopfile)):
    path = data_file(step)
    with marker(step):
        with open(path, "rb") as f:
            compute(f.read())
        time.sleep(0.02)
    step += 1
print(json.dumps({"files": files, "sizes": sizes, "steps": step}))
