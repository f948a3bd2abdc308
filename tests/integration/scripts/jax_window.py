"""Subprocess workload for test_jax_profiler: JAX profile windows, by MODE.

argv: MODE WORKDIR
  startstop  enable() before import jax; start_trace/stop_trace around reads of known
             .npy files, one StepTraceAnnotation per file, one file read on a second thread
  context    import jax first, then enable(); the jax.profiler.trace() context manager
  twice      two windows in a row, each reading its own file
  disabled   no enable(): the capture has no I/O plane
  unknown    a jaxlib whose table check tb_iotrace cannot read (played): warn once, capture untouched
  failing    the I/O plane cannot be built: the capture and the job go on
Writes WORKDIR/result.json with what the test checks.
"""
import glob
import io
import json
import os
import sys
import threading
import time

mode, work = sys.argv[1], sys.argv[2]
os.makedirs(work, exist_ok=True)

import tb_iotrace  # noqa: E402

if mode == "unknown":
    from tb_iotrace.recording import jax as jaxhook
    from tb_iotrace.recording.jaxlib_check import TableCheck

    jaxhook.read_check = lambda: (TableCheck("unknown", detail="played by the test"), "")
if mode == "failing":
    from tb_iotrace.recording import window

    def broken(cap):
        raise RuntimeError("simulated serialization failure")

    window.serialize = broken
if mode not in ("context", "disabled"):
    tb_iotrace.enable()   # before jax: registration happens at import

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

if mode == "context":
    tb_iotrace.enable()   # after jax: registration happens now

datadir = os.path.join(work, "data")
os.makedirs(datadir, exist_ok=True)
files = []
for i in range(4):
    p = os.path.join(datadir, f"part{i}.npy")
    np.save(p, np.arange(2000 * (i + 1), dtype=np.float32))
    files.append(p)
side = os.path.join(datadir, "side.bin")
with open(side, "wb") as f:
    f.write(os.urandom(30000))
result = {"files": files, "sizes": [os.path.getsize(p) for p in files], "side": side,
          "side_size": os.path.getsize(side)}


@jax.jit
def step(x):
    return (x * 2.0).sum()


def load(p):
    # one pass over the file (np.load on the file itself reads the header twice)
    with open(p, "rb") as f:
        return np.load(io.BytesIO(f.read()))


def side_reader(out):
    with jax.profiler.TraceAnnotation("side_region"):
        with open(side, "rb") as f:
            while f.read(4096):
                pass
    out["tid"] = threading.get_native_id()


def window(logdir):
    """Reads every file inside one step each; the side file on a thread of its own."""
    total = 0.0
    t0 = time.time_ns()
    for i, p in enumerate(files):
        with jax.profiler.StepTraceAnnotation("train", step_num=i):
            with jax.profiler.TraceAnnotation("load_region"):
                x = load(p)
            total += float(step(jnp.asarray(x)))
    out = {}
    t = threading.Thread(target=side_reader, args=(out,), name="side-reader")
    t.start()
    t.join()
    result["region_ns"] = [t0, time.time_ns()]
    result["side_tid"] = out["tid"]
    result["total"] = total


logdir = os.path.join(work, "logs")
if mode == "context":
    with jax.profiler.trace(logdir):
        window(logdir)
elif mode == "twice":
    jax.profiler.start_trace(os.path.join(work, "logs1"))
    load(files[0])
    jax.profiler.stop_trace()
    jax.profiler.start_trace(os.path.join(work, "logs2"))
    load(files[1])
    jax.profiler.stop_trace()
else:
    for k in range(2 if mode == "unknown" else 1):
        # a logdir per window: two windows in one second would share a run directory
        jax.profiler.start_trace(logdir + (str(k) if k else ""))
        window(logdir)
        jax.profiler.stop_trace()

from tb_iotrace.recording import jax as jaxhook

result["hook"] = jaxhook.hook_state()
result["xplanes"] = sorted(glob.glob(os.path.join(work, "logs*", "**", "*.xplane.pb"), recursive=True))
with open(os.path.join(work, "result.json"), "w") as f:
    json.dump(result, f)
