"""Subprocess workload for test_profile_windows: the job profiles itself with the framework's
own API and a URL log dir (tf.profiler.experimental.start/stop, jax.profiler.start_trace/
stop_trace), reading one file whole inside the window.

argv: tensorflow|jax LOG_DIR DATAFILE
"""
import sys

import tb_iotrace

tb_iotrace.enable()
framework, log_dir, data = sys.argv[1], sys.argv[2], sys.argv[3]

if framework == "jax":
    import jax

    jax.profiler.start_trace(log_dir)
    with open(data, "rb") as f:
        f.read()
    jax.profiler.stop_trace()
else:
    import tensorflow as tf

    tf.profiler.experimental.start(log_dir)
    with open(data, "rb") as f:
        f.read()
    tf.profiler.experimental.stop()
print("done")
