"""Subprocess: a JAX process with the profiler server on PORT, reading its own file in a
loop until WORKDIR/stop appears (or 120 s)."""
import os
import sys
import time

import tb_iotrace

tb_iotrace.enable()
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

port, work = int(sys.argv[1]), sys.argv[2]
data = os.path.join(work, "worker.bin")
with open(data, "wb") as f:
    f.write(os.urandom(64 * 1024))
jax.profiler.start_server(port)
x = jnp.ones(8)
open(os.path.join(work, "ready"), "w").close()
deadline = time.time() + 120
while time.time() < deadline and not os.path.exists(os.path.join(work, "stop")):
    with open(data, "rb") as f:
        while f.read(16384):
            pass
    x = (x + 1.0).block_until_ready()
    time.sleep(0.01)
jax.profiler.stop_server()
