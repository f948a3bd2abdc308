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
from tb_iotrace.model.endpoints import is_endpoint

# The package root this process imported tb_iotrace from: the child must use the same code.
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(tb_iotrace.__file__)))


def findings_of(path: str) -> dict[str, Any]:
    """What /findings shows for one capture: ``{findings, notes, message, verdict}``, and what
    /checkpoints shows: ``checkpoints`` (its saves and loads), ``training`` (the time their
    findings' shares are of) and ``rank`` (a whole-run record's, a PyTorch trace's, else None)."""
    from tb_iotrace.analysis import analyze

    partial = False
    rank = None
    if path.endswith(".json"):
        from tb_iotrace.store.runrecord import read_record
        from tb_iotrace.analysis.decoded.records import record_trace

        rec = read_record(path)
        partial = rec.partial
        rank = rec.doc.get("rank") if isinstance(rec.doc.get("rank"), int) else None
        calls = rec.doc.get("checkpoint_calls")
        a = analyze(None, trace=record_trace(path, rec), checkpoint_calls=calls if isinstance(calls, list) else None)
    else:
        a = analyze(path)
    if a is None:
        from tb_iotrace.store.xplane import load_xspace
        from tb_iotrace.store.xplane.origin import missing_io_reason

        return {"findings": [], "message": missing_io_reason(load_xspace(path).planes)}
    d = a.to_dict()
    if rank is None and a.checkpoints and not path.endswith(".json"):
        rank = _capture_rank(path)
    notes = list(d.get("notes", []))
    if partial:
        notes.insert(0, "This record is partial (the process did not finish writing it): findings come "
                        + (f"from its counters up to the last periodic flush ({rec.trace_missing})." if rec.trace_missing
                           else "from its counters and calls up to the last periodic flush."))
    verdict = d.get("verdict") or None
    if rank is None and verdict and verdict.get("collectives") and not path.endswith(".json"):
        rank = _capture_rank(path)      # a rank of a distributed job: its job verdict needs it
    return {"findings": d["findings"], "notes": notes, "verdict": verdict,
            "message": "No findings for this capture." if not d["findings"] else "",
            "checkpoints": d.get("checkpoints") or [], "training": a.training or None, "rank": rank,
            # what the job verdict across the view's ranks needs (tb_iotrace.analysis.job_verdict)
            "steps": [{k: s.get(k) for k in ("step_num", "start_ps", "end_ps", "duration_ps", "input_wait_ps",
                                             "collective_wait_ps")} for s in d.get("steps") or []],
            "read": _data_read(d)}


def _data_read(d: dict[str, Any]) -> dict[str, Any]:
    """The bytes read from data files and their number (the analysis' files: code loading is not
    among them; network endpoints, the ranks' own gloo/NCCL connections among them, left out),
    and ``dirs``: the bytes per folder, the 16 largest (where a straggler's data comes from)."""
    got = [(str(f.get("path", "")), int(f.get("bytes_read") or 0)) for f in d.get("files") or []
           if not is_endpoint(f.get("path"))]
    dirs: dict[str, int] = {}
    for path, b in got:
        if b > 0:
            dirs[os.path.dirname(path)] = dirs.get(os.path.dirname(path), 0) + b
    top = sorted(dirs.items(), key=lambda kv: (-kv[1], kv[0]))[:16]
    return {"bytes_read": sum(b for _, b in got), "files": sum(1 for _, b in got if b > 0), "dirs": dict(top)}


def _capture_rank(path: str) -> int | None:
    """The rank of a PyTorch trace converted to a capture (its record's, tb_iotrace.store.
    kineto_xspace), None for other captures."""
    from tb_iotrace.store.kineto_xspace import KINETO_KEY
    from tb_iotrace.store.xplane import load_xspace, read_io_info

    got = ((read_io_info(load_xspace(path)) or {}).get(KINETO_KEY) or {}).get("rank")
    return got if isinstance(got, int) and not isinstance(got, bool) else None


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


def run_child_each(paths: list[str], timeout_s: float,
                   on_result: Callable[[str, dict[str, Any] | None, str | None], None]) -> None:
    """Run :func:`findings_of` for every path in one child process, calling
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
    if argv and argv[0] == "--each":
        for path in argv[1:]:
            try:
                line: dict[str, Any] = {"path": path, "out": findings_of(path)}
            except Exception as exc:  # one bad capture does not cost the others their answer
                line = {"path": path, "error": f"{type(exc).__name__}: {exc}"}
            sys.stdout.write(json.dumps(line, separators=(",", ":"), allow_nan=False) + "\n")
            sys.stdout.flush()
        return 0
    out = findings_of(argv[0])
    sys.stdout.write(json.dumps(out, separators=(",", ":"), allow_nan=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
