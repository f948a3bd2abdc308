"""Subprocess: a training-like process with the profiler server on PORT,
reading its own file in a loop until WORKDIR/stop appears (or 120 s)."""
import os
import sys
import time

import tb_iotrace

tb_iotrace.enable()
import tensorflow as tf  # noqa: E402

port, work, name = int(sys.argv[1]), sys.argv[2], sys.argv[3]
data = os.path.join(work, f"{name}.bin")
with open(data, "wb") as f:
    f.write(os.urandom(64 * 1024))
tf.profiler.experimental.server.start(port)
open(os.path.join(work, f"{name}.ready"), "w").close()
deadline = time.time() + 120
x = tf.constant(1.0)
while time.time() < deadline and not os.path.exists(os.path.join(work, "stop")):
    with open(data, "rb") as f:
        while f.read(16384):
            pass
    x = x + 1.0
    time.sleep(0.01)
