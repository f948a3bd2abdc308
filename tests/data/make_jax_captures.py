"""Regenerates the two small JAX captures in this folder (CPU jax 0.10.2, tb_iotrace enabled for
one, not for the other):

    python tests/data/make_jax_captures.py OUTDIR            # jax_io.xplane.pb
    python tests/data/make_jax_captures.py OUTDIR --plain    # jax_plain.xplane.pb

jax_io.xplane.pb: four StepTraceAnnotation("train") steps, each reading one 16 KiB .npy file
(/tmp/tbio_jax_data/part<i>.npy) on the main thread, then a 16 KiB side file on a thread
named "loader" inside a TraceAnnotation("side_region").
jax_plain.xplane.pb: the same job without tb_iotrace.
The Python tracer is off (python_tracer_level=0) to keep the files small.
"""
import glob
import io
import os
import shutil
import sys
import threading

out = sys.argv[1]
with_io = "--plain" not in sys.argv
data = "/tmp/tbio_jax_data"
if with_io:
    import tb_iotrace

    tb_iotrace.enable()
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

os.makedirs(data, exist_ok=True)
files = []
for i in range(4):
    p = os.path.join(data, f"part{i}.npy")
    np.save(p, np.full(4096 - 32, i, dtype=np.float32))
    files.append(p)
side = os.path.join(data, "side.bin")
with open(side, "wb") as f:
    f.write(bytes(range(256)) * 64)


@jax.jit
def step(x):
    return (x * 2.0).sum()


step(jnp.ones(4096 - 32)).block_until_ready()   # compiled before the window


def side_reader():
    with jax.profiler.TraceAnnotation("side_region"):
        with open(side, "rb") as f:
            while f.read(4096):
                pass


logdir = os.path.join(out, "logs_io" if with_io else "logs_plain")
opts = jax.profiler.ProfileOptions()
opts.python_tracer_level = 0
jax.profiler.start_trace(logdir, profiler_options=opts)
for i, p in enumerate(files):
    with jax.profiler.StepTraceAnnotation("train", step_num=i):
        with open(p, "rb") as f:
            x = np.load(io.BytesIO(f.read()))
        step(jnp.asarray(x)).block_until_ready()
t = threading.Thread(target=side_reader, name="loader")
t.start()
t.join()
jax.profiler.stop_trace()
src = glob.glob(os.path.join(logdir, "plugins", "profile", "*", "*.xplane.pb"))[0]
shutil.copy(src, os.path.join(out, "jax_io.xplane.pb" if with_io else "jax_plain.xplane.pb"))
