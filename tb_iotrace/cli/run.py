"""``tb-iotrace run``."""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tb_iotrace.base.seconds import parse_seconds
from tb_iotrace.base.redact import redact_url
from tb_iotrace.store import remote
from tb_iotrace.store.record_files import find_records, record_dir
from tb_iotrace.cli._base import Command, UserError
from tb_iotrace.cli import _reaper

AUTOSTART_DIR = str(Path(__file__).resolve().parent.parent / "recording" / "autostart")
# Forwarded to the command. SIGINT is not: Ctrl-C reaches the whole foreground process group
# already (the command gets it once; the runner ignores it and waits for the command).
FORWARDED = ("SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2")


def child_env(logdir: str, flush_s: float | None = None, base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment that makes every Python process of the run record itself."""
    env = dict(os.environ if base is None else base)
    env["TB_IOTRACE_RUN_DIR"] = os.path.abspath(logdir)
    old = env.get("PYTHONPATH", "")
    parts = [p for p in old.split(os.pathsep) if p and os.path.abspath(p) != AUTOSTART_DIR]
    env["PYTHONPATH"] = os.pathsep.join([AUTOSTART_DIR] + parts)
    if flush_s is not None:
        env["TB_IOTRACE_FLUSH_S"] = str(flush_s)
    return env


def profile_windows(every: float | None, length: float | None) -> dict[str, str]:
    """The environment of ``--profile-every``/``--profile-for`` ({} without them)."""
    if every is None:
        if length is not None:
            raise UserError("--profile-for needs --profile-every")
        return {}
    length = 2.0 if length is None else length
    if not every > 0 or not length > 0:
        raise UserError("--profile-every and --profile-for must be > 0 seconds")
    if length >= every:
        raise UserError(f"--profile-for ({length:g} s) must be shorter than --profile-every ({every:g} s)")
    return {"TB_IOTRACE_PROFILE_EVERY": repr(every), "TB_IOTRACE_PROFILE_FOR": repr(length)}


def _seconds(allow_zero: bool):
    """An argparse type: finite seconds within [0 (or > 0), a month] (one usage error, in the
    runner, never a traceback from a timer in every child)."""
    def parse(raw: str) -> float:
        try:
            return parse_seconds(raw, "expected seconds", allow_zero)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    parse.__name__ = "seconds"
    return parse


class Run(Command):
    """Run a command with I/O capture on in every Python process it starts (no code change).

    tb-iotrace run [--logdir DIR] -- python train.py ARGS...

    The command's Python process and the Python processes it starts (multiprocessing
    spawn/fork/forkserver workers, subprocess Pythons) record every file access for their
    whole life and write one record each at exit to DIR/plugins/iotrace/<host>.<pid>.json
    (+ .npz trace), whichever way they end: normal exit, uncaught exception, os._exit,
    SIGTERM/SIGHUP (default handler). A process killed with SIGKILL leaves its last periodic
    flush (--flush seconds), which the report marks partial. TensorFlow profile captures the
    script makes (Keras profile_batch, tf.profiler start/stop, remote capture) carry their
    I/O as usual. A command that is a .py file runs with this Python.

    How: TB_IOTRACE_RUN_DIR=DIR and PYTHONPATH=<tb_iotrace/recording/autostart>:... whose
    sitecustomize.py starts the capture (and then runs any other sitecustomize).

    --profile-every S [--profile-for D]: every S seconds, each process that runs TensorFlow or
    JAX takes a profile window of D seconds (default 2) with its I/O, a run of its own under
    DIR/plugins/profile (tb-iotrace report lists a job's windows in time order).

    DIR may be a URL (s3://bucket/logs, gs://...; pip install tb_iotrace[cloud]): the records
    are written into a local staging folder and uploaded whole after each flush and at exit, so
    a killed job leaves its last flush in the bucket. Profile windows are made locally and
    uploaded whole by the process that took them. A storage failure is said on stderr (with
    the folder the records are kept in) and never changes the exit code.

    The job's processes that outlive the command (DataLoader workers of a job that ended with
    os._exit or a signal notice it within seconds, then write their records) are waited for, up to
    --wait-children seconds (default 15; Linux, where the runner is their subreaper); those still
    running then are named on stderr, and their records stay partial.

    Exit code: the command's (128+N when it died of signal N).
    """

    name = "run"

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--logdir", default="iotrace-logs", metavar="DIR",
                            help="where the records go (DIR/plugins/iotrace; a folder or a URL such as s3://bucket/logs; "
                                 "default: ./iotrace-logs)")
        parser.add_argument("--flush", type=_seconds(True), default=None, metavar="SECONDS",
                            help="periodic flush interval (default 5; 0: only at exit)")
        parser.add_argument("--profile-every", type=_seconds(False), default=None, metavar="SECONDS",
                            help="take a TensorFlow or JAX profile window (with its I/O) every SECONDS in each "
                                 "process that runs either, into DIR/plugins/profile")
        parser.add_argument("--profile-for", type=_seconds(False), default=None, metavar="SECONDS",
                            help="length of each --profile-every window (default 2)")
        parser.add_argument("--wait-children", type=float, default=15.0, metavar="SECONDS",
                            help="after the command ends, wait up to SECONDS for the processes it left running "
                                 "to write their records (default 15)")
        parser.add_argument("--quiet", action="store_true", help="no summary line at the end")
        parser.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- COMMAND ...")

    def run(self, args: argparse.Namespace) -> int:
        cmd = list(args.cmd)
        if cmd and cmd[0] == "--":
            cmd = cmd[1:]
        if not cmd:
            raise UserError("no command given (tb-iotrace run [--logdir DIR] -- COMMAND ...)")
        if args.flush is not None and args.flush < 0:
            raise UserError("--flush must be >= 0")
        if not args.wait_children >= 0:
            raise UserError("--wait-children must be >= 0")
        windows = profile_windows(args.profile_every, args.profile_for)
        if cmd[0].endswith(".py") and not os.access(cmd[0], os.X_OK):
            cmd = [sys.executable] + cmd
        uploader = None
        if remote.is_url(args.logdir):
            # the records are written into a local staging folder and uploaded whole at each
            # flush and at exit; a storage problem is said on stderr, never the job's exit code
            from tb_iotrace.cli._upload import RecordUploader

            try:
                uploader = RecordUploader(args.logdir, interval=5.0 if args.flush is None else args.flush)
            except remote.RemoteError as exc:   # no client for the scheme: nothing could be kept
                raise UserError(str(exc)) from None
            logdir = str(uploader.staging)
        else:
            logdir = os.path.abspath(remote.local_path(args.logdir))
        if os.path.exists(logdir) and not os.path.isdir(logdir):
            raise UserError(f"{args.logdir}: exists and is not a directory")
        try:
            os.makedirs(record_dir(logdir), exist_ok=True)
        except OSError as exc:
            raise UserError(f"{args.logdir}: cannot create: {exc.strerror or exc}") from None
        env = child_env(logdir, args.flush)
        if windows:
            env.update(windows, TB_IOTRACE_PROFILE_LOGDIR=args.logdir if uploader is not None else logdir)
        reaper = _reaper.become_subreaper()
        started_ns = time.time_ns() - 1_000_000_000     # (file times of a coarse clock)
        try:
            proc = subprocess.Popen(cmd, env=env)
        except OSError as exc:
            if uploader is not None:
                uploader.discard()
            if isinstance(exc, FileNotFoundError):
                raise UserError(f"{cmd[0]}: command not found") from None
            if isinstance(exc, PermissionError):
                raise UserError(f"{cmd[0]}: permission denied") from None
            raise UserError(f"{cmd[0]}: cannot run: {exc.strerror or exc}") from None
        if uploader is not None:
            uploader.start()

        def forward(signum: int, frame: object) -> None:
            try:
                proc.send_signal(signum)
            except ProcessLookupError:
                pass

        previous = {}
        for name in FORWARDED:
            sig = getattr(signal, name, None)
            if sig is not None:
                try:
                    previous[sig] = signal.signal(sig, forward)
                except (ValueError, OSError):
                    pass
        previous[signal.SIGINT] = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            while True:
                try:
                    rc = proc.wait()
                    break
                except KeyboardInterrupt:
                    continue
            left = _reaper.wait_for_children(args.wait_children) if reaper else []
            if left:
                print(f"tb-iotrace: {len(left)} process(es) of the job still running {args.wait_children:g} s after "
                      f"it ended (pid {', '.join(map(str, left))}): their records are partial, up to their last "
                      f"flush", file=sys.stderr)
        finally:
            if uploader is not None:
                uploader.finish()      # the last upload, with the signals still forwarded
            for sig, h in previous.items():
                signal.signal(sig, h)
        if uploader is None:      # the records whole now: their summaries made by a child left to run
            _summarize_records(logdir, started_ns)
        if uploader is not None:
            if not args.quiet and uploader.ok:
                print(f"tb-iotrace: {uploader.uploaded_records} process record(s) in "
                      f"{redact_url(remote.join(args.logdir, 'plugins', 'iotrace'))}; "
                      f"see: tb-iotrace report {redact_url(args.logdir)}",
                      file=sys.stderr)
        elif not args.quiet:
            n = len(find_records(record_dir(logdir)))
            print(f"tb-iotrace: {n} process record(s) in {record_dir(logdir)}; "
                  f"see: tb-iotrace report {logdir}", file=sys.stderr)
        return 128 - rc if rc < 0 else rc


def _summarize_records(logdir: str, since_ns: int) -> None:
    """Start one background child (tb_iotrace.recording.landing) that finds the records this run
    wrote and keeps their summaries and job facts, so that the tab's "All hosts" reads them at once."""
    from tb_iotrace.recording import landing

    landing.landed_run(logdir, since_ns)
