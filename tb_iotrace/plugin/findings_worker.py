"""Findings for the I/O tab, computed in a child process.

``tb_iotrace.analysis`` works on protobuf objects and walks them in Python: for a capture
with a million I/O events it takes about a minute of CPU and ~700 MB. Run inside
TensorBoard's process it would hold the GIL all that time (every timeline request waits
behind it) and keep the memory. So the plugin runs it here, in a child process at the
lowest CPU priority, and reads the JSON answer from stdout:

    python -m tb_iotrace.plugin.findings_worker <capture.xplane.pb | record.json>
    python -m tb_iotrace.plugin.findings_worker --each <file> <file> ...

``--each`` (the "All hosts" view) analyses several files in this one process, one JSON line
per file as soon as it is done (``{"path", "out"}`` or ``{"path", "error"}``): one interpreter
and one import of the analysis for a 64-host run instead of 64.

A whole-run record (``.json`` of ``tb-iotrace run``) is analysed from its trace and
counters alone (no TensorFlow timeline, so no steps or input waits).
"""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
import tempfile
import threading
from typing import Any, Callable

import tb_iotrace
from tb_iotrace.base.priority import lowest_priority
from tb_iotrace.analysis.capture_findings import findings_of

# The package root this process imported tb_iotrace from: the child must use the same code.
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(tb_iotrace.__file__)))


def _installed_in_site() -> bool:
    """Is the package root a site-packages folder (the child finds the package there anyway,
    and putting it on PYTHONPATH would put it before the standard library)?"""
    sites = set(site.getsitepackages() + [site.getusersitepackages()])
    return os.path.realpath(_ROOT) in {os.path.realpath(p) for p in sites}


def run_child(path: str, timeout_s: float) -> dict[str, Any]:
    """Run :func:`~tb_iotrace.analysis.capture_findings.findings_of` in a child process (raises RuntimeError with its reason)."""
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


def run_child_each(paths: list[str], timeout_s: float,
                   on_result: Callable[[str, dict[str, Any] | None, str | None], None]) -> None:
    """Run :func:`~tb_iotrace.analysis.capture_findings.findings_of` for every path in one child process, calling
    ``on_result(path, answer, None)`` or ``on_result(path, None, reason)`` as each line
    arrives; raises RuntimeError (with its reason) when the child fails or runs past
    ``timeout_s`` in all (the paths it did not answer get no call)."""
    env = dict(os.environ)
    if not _installed_in_site():
        env["PYTHONPATH"] = os.pathsep.join([_ROOT] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    with tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen([sys.executable, "-m", "tb_iotrace.plugin.findings_worker", "--each", *paths],
                                stdout=subprocess.PIPE, stderr=err, text=True, env=env,
                                start_new_session=True)
        timed_out = threading.Event()

        def expire() -> None:
            timed_out.set()
            proc.kill()

        timer = threading.Timer(timeout_s, expire)
        timer.start()
        try:
            assert proc.stdout is not None
            for line in proc.stdout:
                got = json.loads(line)
                on_result(got["path"], got.get("out"), got.get("error"))
            rc = proc.wait()
        finally:
            timer.cancel()
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        if timed_out.is_set():
            raise RuntimeError(f"the analysis took longer than {timeout_s:.0f} s")
        if rc != 0:
            err.seek(0)
            tail = (err.read().strip().splitlines() or ["no output"])[-1]
            raise RuntimeError(f"the analysis failed ({tail})")


def _background() -> None:
    """Lowest CPU priority, and die with the thread that started us (TensorBoard)."""
    try:
        import ctypes
        import signal

        ctypes.CDLL(None).prctl(1, int(signal.SIGTERM))  # PR_SET_PDEATHSIG
    except Exception:  # not Linux: the timeout still bounds us
        pass
    lowest_priority()     # in its own session: its autogroup's nice is set too


def main(argv: list[str]) -> int:
    _background()  # never compete with TensorBoard answering the tab
    if argv and argv[0] == "--each":
        for path in argv[1:]:
            try:
                # (encoded here: an answer JSON cannot hold, a NaN, is this capture's error too)
                text = json.dumps({"path": path, "out": findings_of(path)}, separators=(",", ":"), allow_nan=False)
            except Exception as exc:  # one bad capture does not cost the others their answer
                text = json.dumps({"path": path, "error": f"{type(exc).__name__}: {exc}"}, separators=(",", ":"))
            sys.stdout.write(text + "\n")
            sys.stdout.flush()
        return 0
    out = findings_of(argv[0])
    sys.stdout.write(json.dumps(out, separators=(",", ":"), allow_nan=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
