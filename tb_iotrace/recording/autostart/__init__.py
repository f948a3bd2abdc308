"""Whole-run capture for ``tb-iotrace run``, started by ``sitecustomize.py`` in this folder.

``tb-iotrace run`` sets ``TB_IOTRACE_RUN_DIR`` and puts this folder first on ``PYTHONPATH``,
so every Python process of the run (the script, ``multiprocessing`` spawn/forkserver
workers, subprocess Pythons) calls :func:`start` at startup:

- ``tb_iotrace.enable()`` and one native session recording the whole process life
  (``tb_iotrace.recording.session.begin_session``). TensorFlow profile windows and user captures are
  independent sessions beside it (at most 4 at once per process: this one uses 1, plus 1
  more while periodic flushing is on).
- The record (:mod:`tb_iotrace.store.runrecord`) is written at exit, whichever way the process
  ends: normal exit and uncaught exceptions (``atexit``), ``os._exit`` (wrapped: the
  ``multiprocessing`` fork workers end that way), signals whose handler was the default
  (SIGTERM, SIGHUP: the handler only hands the signal to the run's thread, which writes the
  record, then ends the process with the signal's default action; the handler itself takes
  no lock, since the code it interrupted may hold the one ending a session needs).
- ``os.exec*`` (wrapped): the image before the exec writes ``<host>.<pid>.exec<N>.json``; the
  new image, if Python, records itself as usual.
- Forked children (``os.register_at_fork``): the shim drops the parent's sessions in the
  child, so the child starts its own session, empty, and writes its own record (its first,
  empty, partial one only after ``FORKED_FIRST_RECORD_S`` of life).
- Periodic flush every ``TB_IOTRACE_FLUSH_S`` seconds (default 5, ``0`` = off), and at least
  ``FLUSH_COST_FACTOR`` times as long as the last flush took (a run that touched a million files
  rewrites a ~100 MB record per flush: it spends at most 1/20 of its time on them), on the run's
  thread (``tb_iotrace-run``, which also serves the signals): a second
  session is rotated and its windows are summed into a record marked ``"partial": true``,
  which the final record replaces. A process killed with SIGKILL keeps the last flush
  (counts and the per-call trace up to it; sequential/stride counters approximate).

- A control channel for ``tb-iotrace attach`` (:mod:`tb_iotrace.recording.attach_listen`; off with
  ``TB_IOTRACE_ATTACH_CHANNEL=0``).
- Profile windows every ``TB_IOTRACE_PROFILE_EVERY`` seconds (``--profile-every``), each
  ``TB_IOTRACE_PROFILE_FOR`` seconds long, in a process that runs TensorFlow or JAX
  (:mod:`tb_iotrace.recording.periodic`), or that runs PyTorch (torch.profiler windows at its
  step boundaries: :mod:`tb_iotrace.recording.pytorch.parent.auto_window`); in a process that
  imports both, on the framework whose training loop runs (:mod:`tb_iotrace.recording.window_choice`).

The record folder (and the windows' staging folder) is added to the path exclusions, so writing
records is never traced.
"""
from __future__ import annotations

import atexit
import gc
import os
import queue
import signal
import sys
import threading
import time
from typing import Any

from tb_iotrace.base.seconds import parse_seconds

SIGNALS = ("SIGTERM", "SIGHUP")
FLUSH_COST_FACTOR = 20
# A forked child writes its first (empty, partial) record after this many seconds of life, not at
# once: at once, the run's thread built and wrote it while the worker began its first batch, and
# the two took turns on the GIL (bench/worker_lifetime.py: +2 ms of CPU and ~7 ms of wall time on
# every forked worker's start, under load). A worker that lives less writes only its final record.
FORKED_FIRST_RECORD_S = 1.0


def flush_wait(flush_s: float, last_cost_s: float) -> float:
    """Seconds until the next periodic flush: the interval asked for, stretched so that flushes
    take at most 1/FLUSH_COST_FACTOR of the run's time."""
    return max(flush_s, FLUSH_COST_FACTOR * last_cost_s)

def idle_window(recording: Any) -> bool:
    """Whether a flushed window recorded nothing: no call, no file, no untracked access."""
    return (not len(recording.events) and not any(recording.table.counts().values()) and not recording.untracked
            and not int(getattr(recording, "dropped", 0) or 0))


_state: "_Run | None" = None
_real_exit = os._exit
_sigterm_exits_0 = False   # set in a PyTorch DataLoader worker (worker_signals)


def _worker_sigterm_exits_0() -> None:
    """In a DataLoader worker, as torch's worker loop starts: SIGTERM ends it with status 0
    (worker_signals), and a forked one freezes the heap it inherited (``gc.freeze()``, as
    CPython advises for forked workers). The run's own allocations in the parent move the
    collector's counters: every short-lived forked worker then ran a full collection of the
    parent's heap (~90 ms of CPU each on a torch parent, mostly copy-on-write faults) that the
    plain job's workers did not; frozen, a collection visits only what the worker made."""
    global _sigterm_exits_0
    _sigterm_exits_0 = True
    if _state is not None and _state.forked:
        import gc

        gc.freeze()


class _Run:
    def __init__(self, run_dir: str, flush_s: float) -> None:
        self.run_dir = run_dir
        self.flush_s = flush_s
        self.lock = threading.RLock()  # os._exit or exec may be called inside finish() (atexit)
        self.pid = os.getpid()
        self.forked = False          # started in a forked child (_after_fork_in_child)
        self.sess: Any = None
        self.flush_sess: Any = None
        self.acc: Any = None  # the flushed windows' files (tb_iotrace.store.filetable.Accumulator)
        self.acc_untracked: dict[str, Any] = {}
        self.acc_series: Any = None  # the flushed windows' time series, on the run's grid
        self.trace_parts: list[tuple[str, int]] = []   # the flushed windows' calls: (file, rows)
        self.flush_cost = 0.0        # seconds the last flush took
        self.unwritten = False       # the last partial record's write failed: the next flush writes
        # the number the next write of the record takes, named by the last partial one's JSON: a
        # process killed between renaming a write's table and its JSON leaves a readable record
        self.next_gen: int | None = None
        self.write_errors: dict[str, Any] = {}   # record writes that failed: {"count", "last"}
        self.start_ns = time.time_ns()
        self.done = False
        self.exc: str | None = None
        # signal numbers from _on_signal: SimpleQueue.put is reentrant, safe in a signal handler
        self.signals: queue.SimpleQueue[int] = queue.SimpleQueue()

    # ----------------------------------------------------------------- sessions
    def begin(self) -> None:
        from tb_iotrace.recording import session

        self.sess = session.begin_session()
        self.start_ns = time.time_ns()
        if self.flush_s > 0:
            try:
                self.flush_sess = session.begin_session()
            except Exception:
                self.flush_sess = None  # no slot left: the first flush starts it
        # the run's thread writes the first (empty, partial) record (a record exists even if the
        # process is killed before its first flush), and a DataLoader worker's start does not wait
        # for it; in a forked child, after FORKED_FIRST_RECORD_S
        threading.Thread(target=self._serve, name="tb_iotrace-run", daemon=True).start()

    def _serve(self) -> None:
        """The run's thread: periodic flushes, and the record of a signal, written here
        rather than in the handler (which may have interrupted a holder of a lock
        finish() needs: the main thread goes on and releases it, this thread waits)."""
        first_due = self.flush_s > 0     # the first (empty, partial) record is still to write
        if first_due and not self.forked:
            self._write_first()
            first_due = False
        while True:
            if first_due:
                timeout: float | None = min(FORKED_FIRST_RECORD_S, self.flush_s)
            else:
                timeout = flush_wait(self.flush_s, self.flush_cost) if self.flush_s > 0 and not self.done else None
            try:
                signum = self.signals.get(timeout=timeout)
            except queue.Empty:
                if first_due:
                    self._write_first()
                    first_due = False
                    continue
                t0 = time.monotonic()
                try:
                    self.flush()
                except Exception:
                    pass
                self.flush_cost = time.monotonic() - t0
                continue
            try:
                self.finish("signal", signum=signum)
            except BaseException:
                pass
            if signum == signal.SIGTERM and _sigterm_exits_0:
                _real_exit(0)   # a DataLoader worker: as torch's own handler ends it (worker_signals)
            _die_of(signum)

    def _write_first(self) -> None:
        with self.lock:
            if not self.done:    # never over the final record of a process that ended already
                self._write_partial()

    def flush(self) -> None:
        from tb_iotrace.recording import session

        with self.lock:
            if self.done or os.getpid() != self.pid:
                return
            try:
                new = session.begin_session()
            except Exception:
                new = None  # every slot busy (TensorFlow windows): keep the previous flush
            old, self.flush_sess = self.flush_sess, new if new is not None else self.flush_sess
            if old is not None and new is not None:
                recording = session.Recording()
                session.end_session(old, recording)
                if idle_window(recording) and not self.unwritten:
                    return   # nothing new since the last flush: its record stands, no write
                from tb_iotrace.store.filetable import Accumulator
                from tb_iotrace.store.runrecord import merge_untracked

                if self.acc is None:
                    self.acc = Accumulator()
                self.acc.add(recording.table)
                if recording.untracked:
                    merge_untracked(self.acc_untracked, recording.untracked.to_dict())
                if recording.timeseries is not None:
                    from tb_iotrace.store.timeseries import accumulate

                    self.acc_series = accumulate(self.acc_series, recording.timeseries, self.start_ns)
                if len(recording.events):   # the calls too, each window once: a killed process keeps them
                    from tb_iotrace.store.runrecord import write_trace_part

                    try:
                        self.trace_parts.append(write_trace_part(self.run_dir, len(self.trace_parts) + 1, recording))
                    except OSError as exc:
                        self._failed_write(exc)
                self._write_partial()

    def _failed_write(self, exc: OSError) -> None:
        """Note a record write that failed (a full disk): the previous record stays whole, and
        the next one written says how many failed and why."""
        self.write_errors["count"] = int(self.write_errors.get("count", 0)) + 1
        self.write_errors["last"] = exc.strerror or str(exc)

    def _write_partial(self) -> None:
        from tb_iotrace.store.filetable import FileTable
        from tb_iotrace.store.runrecord import new_generation, write_record

        self.unwritten = True
        gen = self.next_gen if self.next_gen is not None else new_generation()
        nxt = new_generation()
        try:
            write_record(self.run_dir, None, partial=True, exit={"how": "flush"},
                         files=self.acc.table() if self.acc is not None else FileTable(),
                         start_ns=self.start_ns, end_ns=time.time_ns(), trace_parts=self.trace_parts,
                         untracked=self.acc_untracked or None, timeseries=self.acc_series,
                         write_errors=self.write_errors or None, generation=gen, next_generation=nxt)
            self.unwritten = False
            self.next_gen = nxt
        except OSError as exc:   # the flushed windows stay in self.acc: the next flush has them
            self.next_gen = gen  # (the JSON on disk still names this number as the next)
            self._failed_write(exc)

    def finish(self, how: str, code: int | None = None, signum: int | None = None, suffix: str = "") -> None:
        """End the session and write the final record, with the cyclic collector off: the record's
        allocations could start a full collection of the heap a forked child inherited (a torch
        parent's: ~75 ms of CPU, for a record that takes 5), and the process ends right after
        (exit, ``os._exit``, a signal, exec) anyway."""
        was = gc.isenabled()
        gc.disable()
        try:
            self._finish(how, code, signum, suffix)
        finally:
            if was:
                gc.enable()

    def _finish(self, how: str, code: int | None, signum: int | None, suffix: str) -> None:
        from tb_iotrace.recording import session
        from tb_iotrace.store.runrecord import write_record

        with self.lock:
            if self.done or os.getpid() != self.pid or self.sess is None:
                return
            self.done = True
            recording = session.Recording()
            session.end_session(self.sess, recording)
            if self.flush_sess is not None:   # its window is in the final record: not read, only ended
                session.end_session(self.flush_sess, None)    # (a worker's exit waits on every ms)
                self.flush_sess = None
            if how == "exit" and self.exc:
                how = "exception"
            exit = {"how": how, "code": code, "signal": signum, "exception": self.exc}
            if not recording.closed:  # the script called tb_iotrace.disable(), which ended every session
                exit["note"] = "capture ended early by tb_iotrace.disable(): nothing recorded"
            gen = self.next_gen if not suffix else None    # (a suffixed record has no partial one)
            try:
                write_record(self.run_dir, recording, partial=False, exit=exit, suffix=suffix,
                             write_errors=self.write_errors or None, generation=gen)
            except OSError as exc:
                # a full disk: keep the final counters without the trace (the bulk of a record)
                self._failed_write(exc)
                if not len(recording.events):
                    raise
                self.write_errors["trace_left_out"] = True
                write_record(self.run_dir, recording, partial=False, exit=exit, suffix=suffix, with_trace=False,
                             write_errors=self.write_errors, generation=gen)
            self._drop_trace_parts()   # the final record has the whole trace
            if suffix:  # this image's periodic flushes went to the plain name: the new image's now
                from tb_iotrace.store.runrecord import record_paths, table_path

                plain = record_paths(self.run_dir)[0]
                for p in (plain, table_path(plain)):
                    try:
                        os.unlink(p)
                    except OSError:
                        pass


    def _drop_trace_parts(self) -> None:
        from tb_iotrace.store.runrecord import record_paths

        folder = record_paths(self.run_dir)[0].parent
        for name, _ in self.trace_parts:
            try:
                os.unlink(folder / name)
            except OSError:
                pass
        self.trace_parts = []


# --------------------------------------------------------------------------- exit paths


def _at_exit() -> None:
    if _state is not None:
        try:
            _state.finish("exit")
        except Exception as exc:
            sys.stderr.write(f"tb-iotrace: record not written (the last periodic flush, if any, stays "
                             f"as the record, marked partial): {exc}\n")


def _os_exit(code: int) -> None:
    if _state is not None:
        try:
            _state.finish("os._exit", code=code)
        except BaseException:
            pass
    _real_exit(code)


def _exec_wrapper(real: Any) -> Any:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        global _state
        st = _state
        if st is not None and not st.done and os.getpid() == st.pid:
            n = int(os.environ.get("TB_IOTRACE_EXEC_N", "0")) + 1
            os.environ["TB_IOTRACE_EXEC_N"] = str(n)
            try:
                st.finish("exec", suffix=f".exec{n}")
            except Exception:
                pass
            # the new image starts capture itself (if it is Python); if exec fails, start again
            try:
                return real(*args, **kwargs)
            except BaseException:
                _state = _Run(st.run_dir, st.flush_s)
                try:
                    _state.begin()
                except Exception:
                    _state = None
                raise
        return real(*args, **kwargs)
    wrapper.__wrapped__ = real  # type: ignore[attr-defined]
    return wrapper


def _on_signal(signum: int, frame: Any) -> None:
    """Hand the signal to the run's thread and return: no lock, no I/O here."""
    st = _state
    if st is not None and os.getpid() == st.pid:
        st.signals.put(signum)
    else:
        _die_of(signum)


def _die_of(signum: int) -> None:
    """End the process with ``signum``'s default action, from any thread (``signal.signal``
    works on the main thread only, hence libc's ``signal`` elsewhere)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signum, signal.SIG_DFL)
    else:
        import ctypes

        libc_signal = ctypes.CDLL(None).signal
        libc_signal.restype = ctypes.c_void_p
        libc_signal.argtypes = [ctypes.c_int, ctypes.c_void_p]
        libc_signal(signum, None)  # SIG_DFL
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signum])
    os.kill(os.getpid(), signum)
    time.sleep(5)  # the signal may be blocked in every other thread: it ends us on unblock
    _real_exit(128 + signum)


def _excepthook(prev: Any) -> Any:
    def hook(tp: Any, value: Any, tb: Any) -> None:
        if _state is not None:
            _state.exc = getattr(tp, "__name__", str(tp))
        prev(tp, value, tb)
    return hook


def _after_fork_in_child() -> None:
    if _state is None:
        return
    was = gc.isenabled()
    gc.disable()    # (as in _Run.finish: no collection of the inherited heap for our allocations)
    try:
        _start_in_child()
    finally:
        if was:
            gc.enable()


def _start_in_child() -> None:
    global _state
    old = _state
    from tb_iotrace.recording import session

    for s in (old.sess, old.flush_sess):
        if s is not None:
            session.forget(s)  # the shim dropped the parent's sessions in the child
    _state = _Run(old.run_dir, old.flush_s)
    _state.forked = True
    try:
        _state.begin()
    except Exception as exc:
        sys.stderr.write(f"tb-iotrace: capture not started in forked pid {os.getpid()}: {exc}\n")
        _state = None


def _exclude_record_dir(run_dir: str) -> None:
    from tb_iotrace.store.runrecord import record_dir

    _exclude(str(record_dir(run_dir)))  # the folder itself too (mkdir, stat)


def _exclude_attach_channel() -> None:
    """The attach listener's poll of its channel (a stat every 0.25 s) is ours, not the job's."""
    from tb_iotrace.recording.attach_listen import channel_prefix

    _exclude(channel_prefix())


def _exclude_windows(run_dir: str) -> None:
    """The profile windows' staging folders, and the folder they are published to (the log
    dir's ``plugins/profile``), are not the job's I/O."""
    from tb_iotrace.recording import periodic
    from tb_iotrace.recording.window_writer import staging_root

    _exclude(str(staging_root()))
    _exclude(os.path.join(os.environ.get(periodic.ENV_LOGDIR) or run_dir, "plugins", "profile"))


def _exclude(rec: str) -> None:
    """Add the folder ``rec`` to the path exclusions (before the first enable())."""
    from tb_iotrace.recording import shim_settings

    cur = os.environ.get("TBIO_EXCLUDE")
    # TBIO_EXCLUDE replaces the shim's defaults: keep them, add the record folder
    parts = [p for p in cur.split(os.pathsep) if p] if cur else shim_settings.excludes()
    if rec not in parts:
        os.environ["TBIO_EXCLUDE"] = os.pathsep.join(parts + [rec])


def start() -> None:
    """Enable capture for the whole life of this process (idempotent)."""
    global _state
    if _state is not None:
        return
    run_dir = os.path.abspath(os.environ["TB_IOTRACE_RUN_DIR"])
    try:   # finite, within a month: a timer of inf or 1e308 seconds overflows on its thread
        flush_s = parse_seconds(os.environ.get("TB_IOTRACE_FLUSH_S", "5"), "TB_IOTRACE_FLUSH_S")
    except ValueError as exc:
        sys.stderr.write(f"tb-iotrace: {exc}; flushing every 5 s\n")
        flush_s = 5.0
    _exclude_record_dir(run_dir)
    listen = os.environ.get("TB_IOTRACE_ATTACH_CHANNEL", "1") != "0"
    if listen:
        _exclude_attach_channel()
    from tb_iotrace.recording import api, periodic

    windows = bool(os.environ.get(periodic.ENV_EVERY, "").strip())
    if windows:
        _exclude_windows(run_dir)
        from tb_iotrace.recording.pytorch.parent.auto_window import own_paths

        for prefix in own_paths(os.environ.get(periodic.ENV_LOGDIR) or run_dir):
            _exclude(prefix)
    api.enable()
    st = _Run(run_dir, flush_s)
    st.begin()
    _state = st
    if windows:
        try:
            pw = periodic.from_env(run_dir)
        except Exception as exc:
            sys.stderr.write(f"tb-iotrace: no profile windows in pid {os.getpid()}: {exc}\n")
        else:   # the same windows on torch.profiler once torch is imported, when its loop runs
            if pw is not None:
                from tb_iotrace.recording.pytorch.parent.auto_window import arm_after_import

                arm_after_import(pw)
    atexit.register(_at_exit)
    os._exit = _os_exit
    # os.execl/execle/execlp/execlpe/execvp/execvpe all end in os.execv or os.execve
    os.execv = _exec_wrapper(os.execv)
    os.execve = _exec_wrapper(os.execve)
    sys.excepthook = _excepthook(sys.excepthook)
    if threading.current_thread() is threading.main_thread():
        for name in SIGNALS:
            sig = getattr(signal, name, None)
            if sig is not None and signal.getsignal(sig) == signal.SIG_DFL:
                signal.signal(sig, _on_signal)
    os.register_at_fork(after_in_child=_after_fork_in_child)
    if signal.getsignal(signal.SIGTERM) is _on_signal:
        from tb_iotrace.recording.autostart import worker_signals

        worker_signals.install(_on_signal, _worker_sigterm_exits_0)   # torch's workers would _exit(0) on SIGTERM, unrecorded
    from tb_iotrace.recording import library_checkpoints

    library_checkpoints.install()     # safetensors/orbax/tf.train.Checkpoint calls for the record
    if listen:
        from tb_iotrace.recording import attach_listen

        attach_listen.listen()        # tb-iotrace attach gets in with no ptrace
