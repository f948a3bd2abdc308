"""Findings for the I/O tab, computed in a child process.

``tb_iotrace.analysis`` works on protobuf objects and walks them in Python: for a capture
with a million I/O events it takes about a minute of CPU and ~700 MB. Run inside
TensorBoard's process it would hold the GIL all that time (every timeline request waits
behind it) and keep the memory. So the plugin runs it here, in a child process at the
lowest CPU priority, and reads the JSON answer from stdout:

    python -m tb_iotrace.plugin.findings_worker <capture.xplane.pb | record.json>

A whole-run record (``.json`` of ``tb-iotrace run``) is analysed from its trace and
counters alone (no TensorFlow timeline, so no steps or input waits).
"""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
from typing import Any

import tb_iotrace

# The package root this process imported tb_iotrace from: the child must use the same code.
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(tb_iotrace.__file__)))


def findings_of(path: str) -> dict[str, Any]:
    """What /findings shows for one capture: ``{findings, notes, message}``."""
    from ..analysis import analyze  # imported here: heavy, and only the child needs it

    partial = False
    if path.endswith(".json"):
        from ..runrecord import read_record
        from .records import record_trace

        partial = read_record(path).partial
        a = analyze(None, trace=record_trace(path))
    else:
        a = analyze(path)
    if a is None:
        from ..xplane import load_xspace
        from ..xplane.origin import missing_io_reason

        return {"findings": [], "message": missing_io_reason(load_xspace(path).planes)}
    d = a.to_dict()
    notes = list(d.get("notes", []))
    if partial:
        notes.insert(0, "This record is partial (the process did not finish writing it): findings come "
                        "from its counters up to the last periodic flush; it has no trace.")
    return {"findings": d["findings"], "notes": notes,
            "message": "No findings for this capture." if not d["findings"] else ""}


def _installed_in_site() -> bool:
    """Is the package root a site-packages folder (the child finds the package there anyway,
    and putting it on PYTHONPATH would put it before the standard library)?"""
    sites = set(site.getsitepackages() + [site.getusersitepackages()])
    return os.path.realpath(_ROOT) in {os.path.realpath(p) for p in sites}


def run_child(path: str, timeout_s: float) -> dict[str, Any]:
    """Run :func:`findings_of` in a child process (raises RuntimeError with its reason)."""
    env = dict(os.environ)
    if not _installed_in_site():  # a checkout or an editable install: point the child at it
        env["PYTHONPATH"] = os.pathsep.join([_ROOT] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    try:
        r = subprocess.run([sys.executable, "-m", "tb_iotrace.plugin.findings_worker", path],
                           capture_output=True, text=True, timeout=timeout_s, env=env,
                           start_new_session=True)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"the analysis took longer than {timeout_s:.0f} s") from None
    if r.returncode != 0:
        tail = (r.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"the analysis failed ({tail})")
    return json.loads(r.stdout)


def _background() -> None:
    """Lowest CPU priority, and die with the thread that started us (TensorBoard)."""
    try:
        import ctypes
        import signal

        ctypes.CDLL(None).prctl(1, int(signal.SIGTERM))  # PR_SET_PDEATHSIG
    except Exception:  # not Linux: the timeout still bounds us
        pass
    try:
        # With autogroup scheduling a nice value only counts inside the session: this
        # process runs in its own session, whose group nice is set too.
        with open("/proc/self/autogroup", "w") as fh:
            fh.write("19")
    except OSError:
        pass
    try:
        os.nice(19)
    except OSError:
        pass


def main(argv: list[str]) -> int:
    _background()  # never compete with TensorBoard answering the tab
    out = findings_of(argv[0])
    sys.stdout.write(json.dumps(out, separators=(",", ":"), allow_nan=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
