"""A JAX loop with no profiler and no tb_iotrace in its code: each step reads 64 KiB of a 1 MiB
file, computes on it, sleeps 10 ms; for SECONDS, then prints ``ok``.

    jax_plain_job.py WORK SECONDS
"""
from __future__ import annotations

import os
import sys
import time

import jax
import jax.numpy as jnp


def main() -> None:
    work, seconds = sys.argv[1], float(sys.argv[2])
    path = os.path.join(work, "data.bin")
    with open(path, "wb") as fh:
        fh.write(bytes(range(256)) * 4096)
    f = jax.jit(lambda x: jnp.tanh(x @ x.T).sum())
    f(jnp.zeros((64, 64), jnp.float32)).block_until_ready()
    print("running", flush=True)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        with open(path, "rb") as fh:
            b = fh.read(65536)
        x = jnp.frombuffer(b, dtype=jnp.uint8)[:4096].astype(jnp.float32).reshape(64, 64)
        f(x).block_until_ready()
        time.sleep(0.01)
    print("ok", flush=True)


if __name__ == "__main__":
    main()
