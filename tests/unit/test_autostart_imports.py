"""A process started under ``tb-iotrace run`` imports at start only what the capture's start
needs: the profile-window upload wrappers (and the cloud store behind them) and jaxlib's table
reader are imported with TensorFlow or JAX, when one is, and then still wrap its profiler."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import tb_iotrace

REPO = Path(tb_iotrace.__file__).resolve().parent.parent
AUTOSTART = REPO / "tb_iotrace" / "recording" / "autostart"
LAZY = ("tb_iotrace.recording.url_profiles", "tb_iotrace.store.remote", "tb_iotrace.recording.jaxlib_check")

SCRIPT = r'''
import json, sys
lazy = sys.argv[1].split(",")
before = [m for m in lazy if m in sys.modules]
started = "tb_iotrace.recording.autostart" in sys.modules
import jax
from jax._src import profiler
print(json.dumps({"started": started, "before": before, "wrapped": bool(getattr(profiler.start_trace, "__tbio_url__", False)),
                  "after": [m for m in lazy if m in sys.modules]}))
'''


def test_start_imports_no_profile_upload_code_until_jax(tmp_path: Path) -> None:
    fake = tmp_path / "fake" / "jax" / "_src"
    fake.mkdir(parents=True)
    (fake.parent / "__init__.py").write_text("from jax._src import profiler\n")
    (fake / "__init__.py").write_text("")
    (fake / "profiler.py").write_text("def start_trace(logdir):\n    pass\n\ndef stop_trace():\n    pass\n")
    env = dict(os.environ, TB_IOTRACE_RUN_DIR=str(tmp_path / "logs"), TB_IOTRACE_FLUSH_S="0",
               PYTHONPATH=os.pathsep.join([str(AUTOSTART), str(REPO), str(tmp_path / "fake")]))
    r = subprocess.run([sys.executable, "-c", SCRIPT, ",".join(LAZY)], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got["started"] and got["before"] == []
    assert got["wrapped"], "the JAX profiler was not wrapped after its import"
    assert "tb_iotrace.recording.url_profiles" in got["after"]


NOT_AT_START = ("secrets", "hashlib", "_hashlib")
WAIT_FIRST_RECORD = r'''
import glob, json, os, sys, time
deadline = time.monotonic() + 60
while not glob.glob(os.path.join(os.environ["TB_IOTRACE_RUN_DIR"], "plugins", "iotrace", "*.json")) \
        and time.monotonic() < deadline:
    time.sleep(0.05)
print(json.dumps({"started": "tb_iotrace.recording.autostart" in sys.modules,
                  "imported": [m for m in sys.argv[1].split(",") if m in sys.modules]}))
'''


def test_start_and_first_record_import_no_hashing_library(tmp_path: Path) -> None:
    """The record's generation number is random bits from the OS: writing the first record does
    not load hashlib and OpenSSL into every process of the job (10 ms each on a loaded host)."""
    env = dict(os.environ, TB_IOTRACE_RUN_DIR=str(tmp_path / "logs"), TB_IOTRACE_FLUSH_S="5",
               PYTHONPATH=os.pathsep.join([str(AUTOSTART), str(REPO)]))
    r = subprocess.run([sys.executable, "-c", WAIT_FIRST_RECORD, ",".join(NOT_AT_START)], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got["started"] and list((tmp_path / "logs" / "plugins" / "iotrace").glob("*.json"))
    assert got["imported"] == []
