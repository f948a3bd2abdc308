"""A TensorFlow profile window (tf.profiler.experimental.start/stop) in which the process fetches
objects over HTTP (urllib, by host name) from a server on 127.0.0.1 in this process
(tests/integration/test_sockets_windows.py). argv: WORK. Writes WORK/result.json: the server's
port and counts (all of its traffic is inside the window)."""
import json
import os
import sys
import urllib.request

import tb_iotrace

tb_iotrace.enable()   # before TensorFlow: registration happens at import

import tensorflow as tf  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "unit", "fixtures"))
from counting_server import CountingServer  # noqa: E402

work = sys.argv[1]
logdir = os.path.join(work, "logs")
with CountingServer() as srv:
    tf.profiler.experimental.start(logdir)
    for i in range(6):
        with urllib.request.urlopen(f"http://localhost:{srv.port}/{20000 + i}", timeout=30) as r:
            tf.constant(len(r.read())).numpy()
    srv.wait_idle()
    tf.profiler.experimental.stop()
with open(os.path.join(work, "result.json"), "w") as f:
    json.dump({"port": srv.port, "received": srv.received, "sent": srv.sent, "connections": srv.connections}, f)
