"""``tb-iotrace attach PID``."""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tb_iotrace.base.processes import pid_alive
from tb_iotrace.cli._base import Command, UserError
from tb_iotrace.cli.attach_inject import AttachRefused, check_way_in, children, entry_code, has_channel, inject, probe

ROOT = str(Path(__file__).resolve().parent.parent.parent)   # the folder tb_iotrace is imported from
READY_S = 30.0        # how long the process may take to run the injected code
LOAD_S = 180.0        # and then to load tb_iotrace and begin (a loaded machine, a large process to patch)
CHILD_READY_S = 15.0


def control_dir(pid: int) -> str:
    return os.path.join(tempfile.gettempdir(), f"tb_iotrace-attach-{pid}")


def claim(pid: int) -> str:
    """The control folder of an attach to ``pid``, made now; "already attached" when another
    tb-iotrace attach (alive) holds it."""
    ctrl = control_dir(pid)
    for _ in range(2):
        try:
            os.mkdir(ctrl, 0o700)
        except FileExistsError:
            try:
                holder = int(Path(ctrl, "cli.pid").read_text())
            except (OSError, ValueError):
                holder = 0
            if holder and pid_alive(holder):
                raise AttachRefused(f"process {pid} is already attached (by tb-iotrace attach, pid {holder}): "
                                    "wait for it to end")
            shutil.rmtree(ctrl, ignore_errors=True)     # a stale one (that attach was killed)
            continue
        Path(ctrl, "cli.pid").write_text(str(os.getpid()))
        return ctrl
    raise AttachRefused(f"cannot make the control folder {ctrl}")


def wait_status(ctrl: str, pid: int, states: tuple[str, ...], timeout: float) -> dict[str, Any] | None:
    path = os.path.join(ctrl, f"status.{pid}.json")
    until = time.monotonic() + timeout
    while time.monotonic() < until:
        try:
            with open(path, "rb") as fh:
                doc = json.load(fh)
            if doc.get("state") in states or doc.get("state") in ("refused", "error"):
                return doc
        except (OSError, ValueError):
            pass
        if not pid_alive(pid):
            return {"state": "gone"}
        time.sleep(0.05)
    return None


class Attach(Command):
    """Record a running Python process and its children for a while, with no restart.

    tb-iotrace attach PID [--for SECONDS] [--logdir DIR]

    PID's process (PyTorch, TensorFlow, JAX or plain Python) and its Python children (DataLoader
    workers, ...) record their I/O for SECONDS; where a framework is loaded, its profiler takes
    the window (a torch.profiler window at the training loop's DataLoader iterations or optimizer
    steps; TensorFlow's or JAX's profiler). The window is written under DIR like any other
    (DIR/pytorch/attach_*, DIR/plugins/profile, DIR/plugins/iotrace), its verdict printed at the
    end, and everything undone: the job goes on as before.

    How: Python 3.14's sys.remote_exec, else gdb (Py_AddPendingCall: the code runs on the
    process's main thread between two bytecodes). Needs the permission to ptrace the process
    (same user, or root/CAP_SYS_PTRACE; Yama's ptrace_scope) and the same Python version as this
    tb-iotrace. See docs/attach.md.

    Exit code: 0 when the window was written, 1 when refused (one line says why).
    """

    name = "attach"

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("pid", type=int, metavar="PID", help="the Python process to attach to")
        parser.add_argument("--for", dest="seconds", type=float, default=10.0, metavar="SECONDS",
                            help="how long to record (default 10)")
        parser.add_argument("--logdir", default="iotrace-logs", metavar="DIR",
                            help="where the window goes (default: ./iotrace-logs)")
        parser.add_argument("--no-children", action="store_true", help="the process only, not its children")
        parser.add_argument("--quiet", action="store_true", help="no verdict at the end")

    def run(self, args: argparse.Namespace) -> int:
        if not args.seconds > 0:
            raise UserError("--for must be > 0 seconds")
        logdir = os.path.abspath(args.logdir)
        try:
            target = probe(args.pid)
            how = check_way_in(target)
            os.makedirs(logdir, exist_ok=True)
            ctrl = claim(args.pid)
        except AttachRefused as exc:
            raise UserError(f"cannot attach to {args.pid}: {exc}") from None
        except OSError as exc:
            raise UserError(f"{args.logdir}: cannot create: {exc.strerror or exc}") from None
        self.channels: list[int] = []     # children reached through their channel folders
        try:
            return self._attach(args, target, how, ctrl, logdir)
        finally:
            shutil.rmtree(ctrl, ignore_errors=True)
            for pid in self.channels:
                shutil.rmtree(control_dir(pid), ignore_errors=True)

    def _attach(self, args: argparse.Namespace, target: Any, how: str, ctrl: str, logdir: str) -> int:
        if target.uid != os.geteuid():
            os.chown(ctrl, target.uid, -1)
        req = {"pid": args.pid, "for_s": args.seconds, "logdir": logdir, "cli_pid": os.getpid()}
        Path(ctrl, "request.json").write_text(json.dumps(req))
        code = entry_code(ctrl, "request.json", ROOT)
        Path(ctrl, "inject.py").write_text(code + "\n")
        try:
            inject(target, how, code, os.path.join(ctrl, "inject.py"), "request.json")
        except AttachRefused as exc:
            raise UserError(f"cannot attach to {args.pid}: {exc}") from None
        t0 = time.monotonic()
        st = wait_status(ctrl, args.pid, ("ready", "loading"), READY_S)
        if st is not None and st["state"] == "loading":
            st = wait_status(ctrl, args.pid, ("ready",), LOAD_S)
        if st is None or st["state"] != "ready":
            Path(ctrl, "cancel").write_text("")
            if st is None:
                raise UserError(f"cannot attach to {args.pid}: it did not run the injected code within {READY_S:g} s "
                                "(its main thread is blocked outside Python, or stopped); nothing was changed")
            raise UserError(f"cannot attach to {args.pid}: {st.get('why') or st['state']}")
        print(f"tb-iotrace: attached to {args.pid} ({st['mode']}{', ' + st['framework'] if st['framework'] else ''}, "
              f"Python {'.'.join(map(str, st['python']))}, via {how}, in {time.monotonic() - t0:.1f} s) "
              f"for {args.seconds:g} s", file=sys.stderr)
        kids = [] if args.no_children else children(args.pid)
        attached = self._children(kids, st, ctrl, how, logdir, args.seconds)
        deadline_ns = time.time_ns() + int(args.seconds * 1e9)      # every process records: go
        Path(ctrl, "go.tmp").write_text(json.dumps({"deadline_ns": deadline_ns}))
        os.replace(os.path.join(ctrl, "go.tmp"), os.path.join(ctrl, "go"))
        st["deadline_ns"] = deadline_ns
        if kids:
            print(f"tb-iotrace: {len(attached)} of {len(kids)} Python child process(es) recording: "
                  f"{' '.join(map(str, attached))}", file=sys.stderr)
        wait = (int(st["deadline_ns"]) - time.time_ns()) / 1e9 + 90.0
        done = wait_status(ctrl, args.pid, ("done",), max(wait, 1.0))
        outputs: list[str] = []
        for pid in attached:       # children's own records (no framework window)
            cst = wait_status(ctrl, pid, ("done",), 10.0)
            if cst is not None and cst.get("state") == "done":
                outputs.extend(cst.get("outputs") or [])
        if done is None or done.get("state") != "done":
            why = "it exited" if done and done.get("state") == "gone" else (done or {}).get("why", "no answer")
            print(f"tb-iotrace: process {args.pid} did not finish the window ({why})", file=sys.stderr)
            return 1
        outputs = list(done.get("outputs") or []) + outputs
        for note in done.get("notes") or []:
            print(f"tb-iotrace: note: {note}", file=sys.stderr)
        if not outputs:
            print("tb-iotrace: nothing was written", file=sys.stderr)
            return 1
        print(f"tb-iotrace: detached from {args.pid}; wrote {', '.join(outputs)}", file=sys.stderr)
        if not args.quiet:
            self._verdict(outputs)
        return 0

    def _children(self, kids: list[int], st: dict[str, Any], ctrl: str, how: str, logdir: str,
                  seconds: float) -> list[int]:
        if not kids:
            return []
        req = {"pid": -1, "for_s": seconds, "logdir": logdir, "mode": st["mode"], "cli_pid": os.getpid()}
        Path(ctrl, "children.json").write_text(json.dumps(req))
        code = entry_code(ctrl, "children.json", ROOT)
        injected = []

        def one(pid: int) -> None:
            try:
                child = probe(pid)
                # a child of tb-iotrace run has its own channel; another needs ptrace
                way = "channel" if has_channel(pid) else ("gdb" if how == "channel" else how)
                inject(child, way, code, os.path.join(ctrl, "inject.py"), "children.json")
                if way == "channel":
                    self.channels.append(pid)
                injected.append(pid)
            except AttachRefused as exc:
                print(f"tb-iotrace: child {pid} not recorded: {exc}", file=sys.stderr)
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=8) as pool:      # each gdb stops its process: all at once
            list(pool.map(one, kids))
        ok = []
        for pid in injected:
            cst = wait_status(ctrl, pid, ("ready", "loading"), CHILD_READY_S)
            if cst is not None and cst.get("state") == "loading":
                cst = wait_status(ctrl, pid, ("ready",), LOAD_S)
            if cst is not None and cst.get("state") == "ready":
                ok.append(pid)
            else:
                print(f"tb-iotrace: child {pid} not recorded: "
                      f"{(cst or {}).get('why', 'it did not run the injected code in time')}", file=sys.stderr)
        return ok

    def _verdict(self, outputs: list[str]) -> None:
        """The report of what was written (its text, as ``tb-iotrace report`` prints it)."""
        from tb_iotrace.cli.report import Report

        from tb_iotrace.model.source_kinds import CAPTURE, KINETO, RECORD, kind_by_name

        seen = set()
        for out in outputs:
            kind = kind_by_name(out)
            if kind == KINETO:    # its folder: the trace's processes, as the tab lists them
                path = os.path.dirname(out)
            elif kind in (CAPTURE, RECORD):
                path = out
            else:                 # the framework's other files of a capture (trace.json.gz, ...)
                continue
            if path in seen:
                continue
            seen.add(path)
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                parser = argparse.ArgumentParser(prog="tb-iotrace report")
                Report.add_arguments(parser)
                try:
                    Report().run(parser.parse_args([path, "--no-progress", "--jobs", "1"]))
                except (SystemExit, UserError) as exc:
                    print(f"tb-iotrace: no report of {path}: {exc}", file=sys.stderr)
            text = buf.getvalue()
            # the main host's title and verdict (a worker's host of a PyTorch window has none)
            lines = [ln for ln in text.splitlines() if ln.startswith(("Verdict:", "  the wait:", "  advice:"))
                     or " / " in ln and "[" in ln and "/pid" not in ln]
            print("\n".join(lines) if lines else text)
