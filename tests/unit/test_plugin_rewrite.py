"""A capture rewritten in place (truncated, then written: ``cp new old``) while the tab decodes
it must not kill TensorBoard (the decoder once memory-mapped the file, and a
page past the new end of file is a SIGBUS)."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow   # rewrites a capture under a decoding child for seconds

# The serving process: decodes the capture in a loop through the plugin's routes, as a tab
# polling it would, until told to stop; prints how many answers of each status it got.
SERVER = r"""
import sys, time, collections
from plugin_client import make_client
_, get = make_client(sys.argv[1])
stop = time.monotonic() + float(sys.argv[2])
seen = collections.Counter()
while time.monotonic() < stop:
    for route in ("/capture", "/files", "/timeline"):
        # each request finds the file changed (size or mtime) and decodes it again
        status, _ = get(route, run="r", host="h")
        seen[status] += 1
print(dict(seen), flush=True)
"""
# The findings' child and `tb-iotrace report`: the analysis's reader, same loop.
ANALYSIS = r"""
import sys, time, collections
from tb_iotrace.analysis.slim_xspace import read_slim_xspace
from tb_iotrace.store.xplane import XPlaneError

path = sys.argv[1] + "/plugins/profile/r/h.xplane.pb"
stop = time.monotonic() + float(sys.argv[2])
seen = collections.Counter()
while time.monotonic() < stop:
    try:
        read_slim_xspace(path)
        seen[200] += 1
    except XPlaneError:
        seen[422] += 1
print(dict(seen), flush=True)
"""
CHUNK = 256 << 10


@pytest.mark.parametrize("reader", ["tab", "analysis"])
def test_rewrite_in_place_while_decoding(gpu_capture: Path, tmp_path: Path, reader: str):
    d = tmp_path / "plugins" / "profile" / "r"
    d.mkdir(parents=True)
    cap = d / "h.xplane.pb"
    shutil.copyfile(gpu_capture, cap)
    body = gpu_capture.read_bytes()
    fixtures = Path(__file__).parent / "fixtures"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(fixtures), os.environ.get("PYTHONPATH", "")]),
               TBIO_PLUGIN_PREFETCH="0")
    child = subprocess.Popen([sys.executable, "-c", SERVER if reader == "tab" else ANALYSIS, str(tmp_path), "6"], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    rewrites = 0
    try:
        while child.poll() is None:
            # truncate, then write it back in pieces: what `cp` or a rewriting profiler does
            with open(cap, "wb") as fh:
                time.sleep(0.002)
                for at in range(0, len(body), CHUNK):
                    fh.write(body[at:at + CHUNK])
                    fh.flush()
            rewrites += 1
            time.sleep(0.001)
        out, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    assert child.returncode == 0, (f"the serving process died ({signal.Signals(-child.returncode).name if child.returncode < 0 else child.returncode}) "
                                   f"after {rewrites} rewrites:\n{err[-2000:]}")
    assert rewrites > 20
    seen = eval(out.strip().splitlines()[-1])  # {status: count}
    # answers while the file is half written are 422 (a corrupt capture), never a 500
    assert set(seen) <= {200, 422}, seen
    assert seen.get(200, 0) + seen.get(422, 0) > 10
