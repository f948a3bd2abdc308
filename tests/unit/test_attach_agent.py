"""The agent ``tb-iotrace attach`` runs inside a process (tb_iotrace.recording.attach_agent), in
a plain Python process (no framework: a whole-run record of the attached seconds): a process
that exits long before the window's end ends the attach at its exit: its record written with
what it did until then, ``done`` answered with a note, and the exit not held for the window."""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

JOB = r"""
import json, os, sys, time
from tb_iotrace.recording import attach_agent

ctrl, work = sys.argv[1], sys.argv[2]
with open(os.path.join(ctrl, "request.json"), "w") as fh:
    json.dump({"pid": os.getpid(), "for_s": 600, "logdir": os.path.join(work, "log")}, fh)
attach_agent.start(ctrl, "request.json")        # as the injected call does, on the main thread
with open(os.path.join(ctrl, f"status.{os.getpid()}.json")) as fh:
    st = json.load(fh)
assert st["state"] == "ready" and st["mode"] == "record", st
with open(os.path.join(ctrl, "go.tmp"), "w") as fh:          # the CLI's go: a 600 s window
    json.dump({"deadline_ns": time.time_ns() + 600 * 10**9}, fh)
os.replace(os.path.join(ctrl, "go.tmp"), os.path.join(ctrl, "go"))
while os.path.exists(os.path.join(ctrl, "go")) and attach_agent._active.deadline_ns != json.load(
        open(os.path.join(ctrl, "go")))["deadline_ns"]:
    time.sleep(0.02)                             # the agent's thread took the go
with open(os.path.join(work, "data.bin"), "wb") as fh:
    fh.write(b"x" * 12345)
"""


def test_a_process_that_exits_while_attached_writes_its_record_at_exit(tmp_path: Path) -> None:
    ctrl, work = tmp_path / "ctrl", tmp_path / "work"
    ctrl.mkdir()
    work.mkdir()
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-c", JOB, str(ctrl), str(work)], capture_output=True, text=True,
                       timeout=300)
    took = time.monotonic() - t0
    assert r.returncode == 0, r.stderr[-3000:]
    assert took < 120, took                               # its exit not held for the 600 s window
    (status,) = ctrl.glob("status.*.json")
    st = json.loads(status.read_text())
    assert st["state"] == "done", st
    assert any("exited" in n and "before the window's end" in n for n in st["notes"]), st["notes"]
    (out,) = st["outputs"]
    assert Path(out).is_file() and Path(out).parent == work / "log" / "plugins" / "iotrace"
    rep = subprocess.run([sys.executable, "-m", "tb_iotrace", "report", str(work / "log"), "--json",
                          "--no-progress"], capture_output=True, text=True, timeout=120)
    assert rep.returncode == 0, rep.stderr
    (host,) = json.loads(rep.stdout)["runs"][0]["hosts"]
    written = [f["counters"]["POSIX_BYTES_WRITTEN"] for f in host["files"] if f["path"] == str(work / "data.bin")]
    assert written == [12345], [f["path"] for f in host["files"]]
