"""tb_iotrace.cli._reaper, in a process of its own (it re-parents orphans to itself and reaps
every child): a grandchild orphaned by its parent becomes its child, is named while it runs, and
is waited for; one that outlives the wait is named."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = r"""
import json, os, subprocess, sys, time
from tb_iotrace.cli import _reaper

ok = _reaper.become_subreaper()
# a child that starts a grandchild (sleeping ARG s) and ends at once: the grandchild is orphaned
def orphan(secs):
    out = subprocess.run([sys.executable, "-c",
                          "import subprocess, sys; p = subprocess.Popen(['sleep', sys.argv[1]], stdout=subprocess.DEVNULL,"
                          " stderr=subprocess.DEVNULL); print(p.pid)",
                          str(secs)], capture_output=True, text=True, check=True)
    return int(out.stdout)
# the short one sleeps past the other's start (a Python start-up: seconds on a loaded machine; a
# 0.2 s one had ended, and was reaped, before it was seen)
long_, short = orphan(60), orphan(3)
seen = _reaper.children()
left = _reaper.wait_for_children(8)
os.kill(long_, 9)
time.sleep(0.2)
print(json.dumps({"subreaper": ok, "seen": sorted(seen), "short": short, "long": long_, "left": left,
                  "after": _reaper.wait_for_children(5)}))
"""


def test_orphans_are_waited_for_and_the_late_one_named():
    r = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120, cwd=ROOT,
                       env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["subreaper"] is True
    assert {got["short"], got["long"]} <= set(got["seen"])      # re-parented to the reaper
    assert got["left"] == [got["long"]]                          # the short one ended and was reaped
    assert got["after"] == []
