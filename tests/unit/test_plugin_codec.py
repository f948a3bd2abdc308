"""TensorBoard never loads the interposer: the plugin decodes captures with the codec module
(``tb_iotrace._codec``), and the GOT-patching shim (``tb_iotrace._native``, the library that
exports ``TF_InitProfiler``) is never mapped into the server process."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from tb_iotrace.store import xplane as X

PY = sys.executable
T0 = 1_700_000_000_000_000_000


def _capture(logdir: Path) -> Path:
    """A small capture: the Task Environment plane (profile start), a host plane and 2,000
    I/O calls on two threads."""
    space = X.XSpace()
    env = space.planes.add(id=0, name=X.TASK_ENV_PLANE)
    env.stat_metadata[1].id = 1
    env.stat_metadata[1].name = "profile_start_time"
    env.stats.add(metadata_id=1, uint64_value=T0)
    space.planes.add(id=1, name=X.HOST_PLANE)
    n = 2000
    start = T0 + 1000 + np.arange(n, dtype=np.int64) * 10_000
    trace = X.IoTrace(
        op=np.array(["pread64", "read"] * (n // 2), dtype=object),
        path=np.array([f"/data/shard-{i % 7}.rec" for i in range(n)], dtype=object),
        offset=np.arange(n, dtype=np.int64) * 4096, requested=np.full(n, 4096, np.int64),
        returned=np.full(n, 4096, np.int64), fd=np.full(n, 5, np.int32), errno=np.zeros(n, np.int32),
        start_ns=start, end_ns=start + 5000, tid=np.where(np.arange(n) % 2 == 0, 101, 102))
    X.add_io_to_space(space, trace, start_ns=T0)
    run = logdir / "plugins" / "profile" / "run1"
    run.mkdir(parents=True)
    path = run / "host.xplane.pb"
    path.write_bytes(space.SerializeToString())
    return path


PROBE = textwrap.dedent("""
    import json, sys, types
    from werkzeug.test import Client
    from werkzeug.wrappers import Response
    import tb_iotrace.plugin as p
    from tb_iotrace.model import columnar

    plugin = p.IoTracePlugin(types.SimpleNamespace(logdir=sys.argv[1]))
    apps = plugin.get_plugin_apps()
    assert plugin.is_active()
    runs = json.loads(Client(apps["/runs"], Response).get("/runs").get_data())
    cap = plugin.index.capture(sys.argv[2], "host")
    with open("/proc/self/maps") as fh:
        maps = [line.split()[-1] for line in fh if "/" in line]
    print(json.dumps({
        "native_scanner": columnar._native_lib() is not None,
        "io_events": int(len(cap.io.start)) if cap.io is not None else 0,
        "runs": runs,
        "maps_native": [m for m in maps if "_native" in m.rsplit("/", 1)[-1]],
        "maps_codec": [m for m in maps if "_codec" in m.rsplit("/", 1)[-1]],
        "modules": sorted(m for m in sys.modules if m.startswith(("tb_iotrace._native", "tb_iotrace.recording.ffi",
                                                                  "tb_iotrace.recording", "tensorflow"))),
    }))
""")


def test_plugin_decodes_with_the_codec_module_and_never_maps_the_shim(tmp_path):
    codec = pytest.importorskip("tb_iotrace._codec")   # built by setup.py with the shim
    assert codec.lib.tbio_xd_count_events
    logdir = tmp_path / "logs"
    path = _capture(logdir)
    r = subprocess.run([PY, "-c", PROBE, str(logdir), str(path)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got["native_scanner"] is True and got["io_events"] == 2000
    assert got["maps_codec"], "the native scanner did not load tb_iotrace._codec"
    assert got["maps_native"] == [] and got["modules"] == []
