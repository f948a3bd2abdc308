"""Subprocess workload for test_profile_windows (run under `tb-iotrace run --profile-every`, no
tb_iotrace code here): a TensorFlow or JAX loop that reads one file of its own per step (whole,
once) for SECONDS after the framework is imported, each step marked as the framework marks
training steps.

argv: tensorflow|jax DATADIR SECONDS
Prints one JSON line: the files and their sizes.
"""
import json
import os
import sys
import time

framework, datadir, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
os.makedirs(datadir, exist_ok=True)
files, sizes = [], []
for i in range(int(seconds / 0.02) + 50):
    p = os.path.join(datadir, f"part{i:04d}.bin")
    with open(p, "wb") as f:
        f.write(os.urandom(1000 + 37 * i))
    files.append(p)
    sizes.append(os.path.getsize(p))

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
while time.monotonic() < end and step < len(files):
    with marker(step):
        with open(files[step], "rb") as f:
            compute(f.read())
        time.sleep(0.02)
    step += 1
print(json.dumps({"files": files, "sizes": sizes, "steps": step}))
