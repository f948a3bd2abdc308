"""Summaries made as captures land: when tb_iotrace has finished writing a capture (a profile
window it published, a profile the job stopped, a PyTorch trace of its ``trace_handler``, the
records of ``tb-iotrace run``), a child process (``python -m tb_iotrace.analysis.landed``, at the
lowest CPU priority, in a session of its own) keeps the capture's summary and job facts beside it
(:mod:`tb_iotrace.store.summaries`), so that the first "All hosts" of the logdir reads them instead
of decoding every capture.

What the job pays: :func:`landed` appends to a list and, when no child is at work, starts a
thread that starts one; the thread starts the next child for all that landed meanwhile once the
last one ended (one child at a time per process). Nothing here raises into the job: a child that
cannot be started is one log line (once per process), a capture the child cannot read one line
on stderr (not for :func:`landed_run`'s child, which outlives the run); such captures are
decoded when the logdir is first opened, as before.
``TBIO_LANDED_SUMMARIES=0`` (or ``TBIO_SUMMARIES=0``) turns it off. A profile capture, a
PyTorch trace or a whole-run record uploaded to a URL logdir (:func:`landed_uploaded`) gets them
in the bucket beside it, of the object's version (a record's: of its JSON and tables) the child
asks the store for.
"""
from __future__ import annotations

import errno
import logging
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterable
from pathlib import Path

from tb_iotrace.store import remote, staging
from tb_iotrace.recording.forklock import ForkSafeLock

log = logging.getLogger("tb_iotrace")

ENV = "TBIO_LANDED_SUMMARIES"
CHILD = "tb_iotrace.analysis.landed"
CHILD_TIMEOUT_S = 1800.0     # a child still at work then is left to finish; the next one starts
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # the package's root

__all__ = ["ENV", "enabled", "keep_for_landing", "landed", "landed_profile", "landed_run", "landed_uploaded",
           "wait_idle"]

_lock = ForkSafeLock()     # a forked child gets it back free, whoever held it
_pending: list[tuple[str, str]] = []       # (host, path)
_scans: list[tuple[str, int]] = []         # (log dir, wall ns): a stopped profile's captures, found in the thread
_worker: threading.Thread | None = None
_uploading: list[subprocess.Popen[bytes]] = []   # children of uploaded captures, for wait_idle
_warned = False
_idle = threading.Event()
_idle.set()


def enabled() -> bool:
    """Whether landed captures get their summaries (:data:`ENV`, ``TBIO_SUMMARIES``)."""
    off = ("0", "off", "no", "false")
    return (os.environ.get(ENV, "1").strip().lower() not in off
            and os.environ.get("TBIO_SUMMARIES", "1").strip().lower() not in off)


def _command(paths: list[tuple[str, str]], scans: list[tuple[str, int]] | None = None,
             uploaded: list[tuple[str, str, str]] | None = None,
             records: list[tuple[str, int]] | None = None) -> list[str]:
    """The child's command: the captures named, the profile folders it finds captures in
    itself (``--scan LOGDIR SINCE_NS``): the job's process makes no file call of its own for
    them, so none is recorded as the job's I/O; the run folders whose records it finds itself
    (``--records RUN_DIR SINCE_NS``); and the captures uploaded to a URL
    (``--uploaded HOST LOCAL URL``)."""
    scan = [x for logdir, since in scans or [] for x in ("--scan", logdir, str(int(since)))]
    scan += [x for run_dir, since in records or [] for x in ("--records", run_dir, str(int(since)))]
    up = [x for host, local, url in uploaded or [] for x in ("--uploaded", host, local, url)]
    return [sys.executable, "-c", _PRELUDE, "--facts", *scan, *up, *[x for host, path in paths for x in (host, path)]]


# The child lowers its priority before it imports NumPy or the analysis (tb_iotrace.base.priority
# imports nothing else: the package's __init__ is lazy): it starts a
# session of its own, whose autogroup is nice 0 until the child sets it, and its imports (a
# second of CPU) at that priority measurably slowed a job's next profile window on a loaded
# machine (test_findings_on_real_pipelines[reads] under stress --cpu 2: 1 of 3 passed, 3 of 3
# with the children off).
# The child owns the local copies of uploaded captures (``--uploaded HOST LOCAL URL``): when its
# module cannot even be imported (the job's interpreter lacks one of tb_iotrace's dependencies),
# the prelude removes them, with one line on stderr.
_PRELUDE = f"""import os
import sys
try:
    from tb_iotrace.base.priority import lowest_priority
    lowest_priority()
    import runpy
    runpy.run_module({CHILD!r}, run_name='__main__', alter_sys=True)
except Exception as exc:
    a = sys.argv[1:]
    a = a[1:] if a[:1] == ['--facts'] else a
    while a[:1] in (['--scan'], ['--records']) and len(a) >= 3:
        a = a[3:]
    while a[:1] == ['--uploaded'] and len(a) >= 4:
        for rm, p in ((os.unlink, a[2]), (os.rmdir, os.path.dirname(a[2]))):
            try:
                rm(p)
            except OSError:
                pass
        a = a[4:]
    sys.stderr.write(f'tb_iotrace: no summaries kept ({{type(exc).__name__}}: {{str(exc)[:200]}})\\n')
    sys.exit(1)
"""


def _env() -> dict[str, str]:
    """The job's environment, but that the child imports this tb_iotrace and records nothing
    itself (``tb-iotrace run``'s autostart folder and variables left out)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("TB_IOTRACE_") or k in ("TB_IOTRACE_CACHE", "TB_IOTRACE_CACHE_BYTES")}
    # abspath, not realpath: no lstat of each folder, which the shim would record as the job's
    autostart = os.path.join(_ROOT, "tb_iotrace", "recording", "autostart")
    kept = [p for p in env.get("PYTHONPATH", "").split(os.pathsep)
            if p and os.path.abspath(p) not in (autostart, _ROOT)]
    env["PYTHONPATH"] = os.pathsep.join([_ROOT] + kept)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    return env


def _start(paths: list[tuple[str, str]], scans: list[tuple[str, int]] | None = None,
           uploaded: list[tuple[str, str, str]] | None = None,
           records: list[tuple[str, int]] | None = None) -> subprocess.Popen[bytes] | None:
    """The summary child, started in a session of its own. It may outlive its caller (the job,
    ``tb-iotrace run``), so it holds none of the caller's output: a reader of the caller's
    stderr (``| tee``, a CI log, ``subprocess.run``) would wait for the child's end, not the
    caller's. What it cannot summarize, the tab decodes when it opens the logdir."""
    global _warned
    try:
        return subprocess.Popen(_command(paths, scans, uploaded, records), env=_env(), stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True, close_fds=True)
    except Exception as exc:  # noqa: BLE001 - never into the job
        if not _warned:
            _warned = True
            log.warning("tb_iotrace: cannot summarize the captures it wrote (%s); the tab decodes them "
                        "when it opens them", exc)
        return None


def _work() -> None:
    global _worker
    while True:
        with _lock:
            scans = list(_scans)
            _scans.clear()
        with _lock:
            batch = list(_pending)
            _pending.clear()
            if not batch and not scans and not _scans:
                _worker = None
                _idle.set()
                return
        proc = _start(batch, scans) if batch or scans else None
        if proc is not None:
            try:
                proc.wait(timeout=CHILD_TIMEOUT_S)
            except Exception:  # noqa: BLE001 - a child past its time goes on alone
                pass


def _usable(path: str) -> bool:
    return bool(path) and "://" not in path and os.path.basename(sys.executable).startswith("python")


def landed(paths: Iterable[str]) -> None:
    """Summarize ``paths`` (captures just written whole, local) in the background; returns at
    once and never raises."""
    try:
        if not enabled():
            return
        from tb_iotrace.store.logdir import capture_host

        got = [(capture_host(p), os.path.abspath(p)) for p in map(str, paths) if _usable(p)]
        if got:
            _queue(got, [])
    except Exception as exc:  # noqa: BLE001
        log.warning("tb_iotrace: cannot summarize the captures it wrote (%s)", exc)


def landed_profile(logdir: str, since_ns: int) -> None:
    """Summarize in the background the captures a profile into ``logdir`` (a local folder),
    started at ``since_ns`` (wall clock) and just stopped, wrote (the thread finds them: the
    job's stop only appends to a list); never raises."""
    try:
        if enabled() and _usable(logdir):
            _queue([], [(os.path.abspath(logdir), int(since_ns))])
    except Exception as exc:  # noqa: BLE001
        log.warning("tb_iotrace: cannot summarize the captures it wrote (%s)", exc)


def _queue(files: list[tuple[str, str]], scans: list[tuple[str, int]]) -> None:
    global _worker
    with _lock:
        _pending.extend(files)
        _scans.extend(scans)
        if _worker is not None:
            return
        _idle.clear()
        _worker = threading.Thread(target=_work, name="tb_iotrace-landed", daemon=True)
        worker = _worker
    worker.start()


def _drop(uploaded: list[tuple[str, str, str]]) -> None:
    """Remove the local copies of uploaded captures no child will read."""
    for _, local, _ in uploaded:
        try:
            os.unlink(local)
        except OSError:
            pass


def landed_uploaded(items: Iterable[tuple[str, str]]) -> None:
    """Keep in the bucket the summaries of profile captures or PyTorch traces just uploaded
    whole: ``items``,
    (a local copy of the capture, which the child takes over and removes once read; its URL).
    One child started now and left to run, not queued behind others: the job may end at once
    (a last window), and a queued copy would be left in staging with no summary made (a Keras
    job's last two windows were). Returns at once and never raises (the copies are removed
    when no child starts)."""
    from tb_iotrace.store.logdir import capture_host

    got = [(capture_host(url), os.path.abspath(local), url) for local, url in items]
    try:
        if not enabled() or not _usable(got[0][1] if got else ""):
            _drop(got)
            return
        proc = _start([], [], got) if got else None
        if got and proc is None:
            _drop(got)
        if proc is not None:
            with _lock:
                _uploading[:] = [p for p in _uploading if p.poll() is None] + [proc]
    except Exception as exc:  # noqa: BLE001
        _drop(got)
        log.warning("tb_iotrace: cannot summarize the captures it wrote (%s)", exc)


def keep_for_landing(files: list[tuple[Path, str]]) -> list[tuple[str, str]]:
    """The uploaded captures (local file, URL) moved into a staging folder of their own, which
    the summary child of :func:`landed_uploaded` empties (a rename; a copy where the file is on
    another file system, as a PyTorch trace's spool in a tmpfs /tmp), a whole-run record's
    tables along with its JSON; what was moved (none when summaries are off or no child could
    read them). A record whose table could not be moved (a refusal, not a missing file) is left
    out, in the staging folder: summarized without that table, its summary's identity would
    match no reader's (the tab summarizes it when it opens the logdir)."""
    if not files or not enabled() or remote.scheme(files[0][1]) == "memory":
        return []        # (fsspec's memory://: this process's own, no child can read it)
    from tb_iotrace.store import summaries

    try:
        folder = staging.new("landed")
    except OSError:
        return []
    out = []
    for k, (f, url) in enumerate(files):
        dest = folder / f"{k}.{f.name}"
        try:
            _move(f, dest)
        except OSError:
            continue
        whole = True
        for table, to in zip(summaries.companions(str(f)), summaries.companions(str(dest))):
            try:
                _move(Path(table), Path(to))
            except FileNotFoundError:
                pass
            except OSError:
                whole = False
                break
        if whole:
            out.append((str(dest), url))
    return out


def _move(f: Path, dest: Path) -> None:
    try:
        os.replace(f, dest)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        shutil.move(str(f), str(dest))


def landed_run(run_dir: str, since_ns: int) -> None:
    """Summarize the whole-run records in ``run_dir`` written since ``since_ns`` (wall clock) in
    one child started now and left to run, which finds them itself: ``tb-iotrace run`` once the
    job is over, so that its exit waits for no listing and no import of NumPy (the child's
    ``--records RUN_DIR SINCE_NS``). The child does not hold the run's stderr: a reader of it (a
    pipe to ``tee``, a CI log, ``subprocess.run``) would wait for the child's end, not the run's;
    a record it cannot read is decoded when the tab opens the logdir. Never raises."""
    try:
        if enabled() and _usable(run_dir):
            _start([], records=[(os.path.abspath(run_dir), int(since_ns))])
    except Exception as exc:  # noqa: BLE001
        log.warning("tb_iotrace: cannot summarize the captures it wrote (%s)", exc)


def wait_idle(timeout_s: float) -> bool:
    """Whether every child this process started for landed captures has ended within
    ``timeout_s`` (tests and benchmarks)."""
    end = time.monotonic() + timeout_s
    if not _idle.wait(timeout_s):
        return False
    with _lock:
        kids = list(_uploading)
    for proc in kids:
        try:
            proc.wait(timeout=max(0.0, end - time.monotonic()))
        except subprocess.TimeoutExpired:
            return False
    return True
