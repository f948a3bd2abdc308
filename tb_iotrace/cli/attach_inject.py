"""Getting into a running Python process for ``tb-iotrace attach``: what the process is (Python?
which version? ours to trace?) and how code is run in it (Python 3.14's ``sys.remote_exec``, else
gdb calling ``Py_AddPendingCall(PyRun_SimpleString, code)``: the code runs on the process's main
thread at its next bytecode boundary, with the GIL held, as a signal handler's Python code would).

Every refusal is an :class:`AttachRefused` whose text is one line that says why and what to do.
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

from tb_iotrace.base.safenames import printable

__all__ = ["AttachRefused", "Target", "children", "inject", "probe"]

CAP_SYS_PTRACE = 19
GDB_TIMEOUT_S = 20          # one try; gdb takes under a second on an idle machine, 2 s beside stress
GDB_TRIES = 3
SETTLE_S = 5.0


class AttachRefused(Exception):
    """Why a process cannot be attached to (one line)."""


@dataclass
class Target:
    pid: int
    exe: str
    version: tuple[int, int] | None
    uid: int


def _read(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as fh:
        return fh.read()


def _status_field(pid: int | str, name: str) -> str:
    for line in _read(f"/proc/{pid}/status").splitlines():
        if line.startswith(name + ":"):
            return line.split(":", 1)[1].strip()
    return ""


def _has_cap(cap: int) -> bool:
    try:
        return bool(int(_status_field("self", "CapEff") or "0", 16) >> cap & 1)
    except (OSError, ValueError):
        return False


def _version_of(pid: int, exe: str, maps: str) -> tuple[int, int] | None:
    for text in (os.path.basename(exe), maps):
        m = re.search(r"(?:python|libpython)(\d)\.(\d+)", text)
        if m:
            return int(m.group(1)), int(m.group(2))
    try:       # a venv's or a renamed interpreter: ask the binary itself
        out = subprocess.run([f"/proc/{pid}/exe", "-c", "import sys; print(*sys.version_info[:2])"],
                             capture_output=True, text=True, timeout=20).stdout.split()
        return int(out[0]), int(out[1])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None


def probe(pid: int) -> Target:
    """What ``pid`` is, or :class:`AttachRefused` saying why it cannot be attached to."""
    if pid == os.getpid():
        raise AttachRefused("cannot attach to tb-iotrace itself")
    if not os.path.isdir(f"/proc/{pid}"):
        raise AttachRefused(f"no process {pid}")
    try:
        uid = int(_status_field(pid, "Uid").split()[1])   # effective uid
        name = printable(_status_field(pid, "Name"))    # any user names a process: shown escaped
    except (OSError, IndexError, ValueError):
        raise AttachRefused(f"no process {pid}") from None
    if _status_field(pid, "State").startswith(("Z", "X")):
        raise AttachRefused(f"process {pid} ({name}) has exited")
    me = os.geteuid()
    if uid != me and not _has_cap(CAP_SYS_PTRACE):
        raise AttachRefused(f"no permission: process {pid} belongs to uid {uid}, this is uid {me} without "
                            "CAP_SYS_PTRACE: run tb-iotrace attach as that user (or as root)")
    try:
        exe = os.readlink(f"/proc/{pid}/exe")
        maps = _read(f"/proc/{pid}/maps")
    except PermissionError:
        raise AttachRefused(f"no permission to inspect process {pid} ({name}): run tb-iotrace attach as its "
                            "user or as root") from None
    except OSError as exc:
        raise AttachRefused(f"process {pid} cannot be inspected: {exc.strerror or exc}") from None
    if not re.match(r"python", os.path.basename(exe)) and "libpython" not in maps:
        raise AttachRefused(f"process {pid} ({name}, {printable(exe)}) is not a Python process")
    return Target(pid=pid, exe=exe, version=_version_of(pid, exe, maps), uid=uid)


def ptrace_scope() -> int | None:
    try:
        return int(_read("/proc/sys/kernel/yama/ptrace_scope").strip())
    except (OSError, ValueError):
        return None          # no Yama: classic ptrace permissions


def has_channel(pid: int) -> bool:
    """``pid`` was started by ``tb-iotrace run`` (its environment says so) with the attach channel on."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            env = dict(kv.split(b"=", 1) for kv in fh.read().split(b"\0") if b"=" in kv)
    except OSError:
        return False
    return bool(env.get(b"TB_IOTRACE_RUN_DIR")) and env.get(b"TB_IOTRACE_ATTACH_CHANNEL", b"1") != b"0"


def check_way_in(t: Target) -> str:
    """How code gets into ``t``: "channel" (a process of ``tb-iotrace run``), "remote_exec" or
    "gdb"; :class:`AttachRefused` when none can."""
    if has_channel(t.pid):
        return "channel"
    here = sys.version_info[:2]
    if t.version is None:
        raise AttachRefused(f"process {t.pid}: its Python version could not be read ({t.exe})")
    if t.version != here:
        raise AttachRefused(f"process {t.pid} runs Python {t.version[0]}.{t.version[1]}, this tb-iotrace runs "
                            f"{here[0]}.{here[1]}: run tb-iotrace attach from that Python's environment "
                            "(its tb_iotrace is what gets loaded into the process)")
    if t.version >= (3, 14) and hasattr(sys, "remote_exec"):
        return "remote_exec"
    scope = ptrace_scope()
    root = _has_cap(CAP_SYS_PTRACE)
    if scope == 3:
        raise AttachRefused("ptrace is disabled on this machine (kernel.yama.ptrace_scope=3, until reboot): "
                            "start the job under tb-iotrace run --profile-every instead")
    if scope == 2 and not root:
        raise AttachRefused("ptrace needs CAP_SYS_PTRACE here (kernel.yama.ptrace_scope=2): run as root, or "
                            "sysctl kernel.yama.ptrace_scope=1")
    if scope == 1 and not root and not _is_descendant(t.pid):
        raise AttachRefused("ptrace of a process that is not a child of this one is refused "
                            "(kernel.yama.ptrace_scope=1): run as root (sudo), or sysctl kernel.yama.ptrace_scope=0")
    if shutil.which("gdb") is None:
        raise AttachRefused(f"Python {t.version[0]}.{t.version[1]} has no sys.remote_exec (3.14+): attach needs gdb "
                            "(apt-get install gdb), or start the job under tb-iotrace run")
    return "gdb"


def _is_descendant(pid: int) -> bool:
    me = os.getpid()
    while pid > 1:
        try:
            pid = int(_status_field(pid, "PPid") or "0")
        except (OSError, ValueError):
            return False
        if pid == me:
            return True
    return False


def children(pid: int) -> list[int]:
    """The Python processes below ``pid`` (children, theirs, ...), by /proc."""
    kids: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            ppid = int(_status_field(d, "PPid") or "0")
        except (OSError, ValueError):
            continue
        kids.setdefault(ppid, []).append(int(d))
    out, todo = [], list(kids.get(pid, []))
    while todo:
        p = todo.pop(0)
        todo.extend(kids.get(p, []))
        try:
            probe(p)
        except AttachRefused:
            continue
        out.append(p)
    return sorted(out)


def entry_code(ctrl: str, request: str, root: str) -> str:
    """The Python the process runs: tb_iotrace imported from ``root`` (our package on its path for
    the import only; a process that has another tb_iotrace loaded says so), the agent started.
    Nothing can raise out of it (a pending call that fails would raise SystemError into the job)
    and nothing is left in its ``__main__`` (it runs under ``exec`` with a dict of its own). The
    body is base64-encoded: nothing in it needs quoting in gdb's C string or in Python's."""
    import base64

    body = f"""import os, sys, json
ctrl, request, root = {ctrl!r}, {request!r}, {root!r}
try:
    # once per process: a second try of gdb may have queued the call again
    os.close(os.open(os.path.join(ctrl, 'entered.%d' % os.getpid()), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    first = True
except FileExistsError:
    first = False
except BaseException:
    first = True
if first:
  try:
      with open(os.path.join(ctrl, 'status.%d.json' % os.getpid()), 'w') as fh:
          fh.write(json.dumps({{'state': 'loading'}}))
      m = sys.modules.get('tb_iotrace')
      if m is not None and not os.path.realpath(getattr(m, '__file__', '') or '').startswith(os.path.realpath(root) + os.sep):
          raise RuntimeError('it has another tb_iotrace loaded (' + str(getattr(m, '__file__', '?')) + '): run tb-iotrace attach from that installation')
      added = root not in sys.path
      if added:
          sys.path.insert(0, root)
      try:
          import tb_iotrace.recording.attach_agent as agent
      finally:
          if added and root in sys.path:
              sys.path.remove(root)
      agent.start(ctrl, request)
  except BaseException as exc:
      try:
          with open(os.path.join(ctrl, 'status.%d.json' % os.getpid()), 'w') as fh:
              fh.write(json.dumps({{'state': 'error', 'why': type(exc).__name__ + ': ' + str(exc)}}))
      except BaseException:
          pass
"""
    enc = base64.b64encode(body.encode()).decode()
    return f"try:\n exec(__import__('base64').b64decode('{enc}'), {{}})\nexcept BaseException:\n pass\n"


def inject(t: Target, how: str, code: str, script: str, request: str = "") -> None:
    """Have ``t`` run ``code`` (``script``: the same, as a file, for ``sys.remote_exec``). Through
    the channel of ``tb-iotrace run``: the control folder (``script``'s) and ``request`` written to
    the process's channel file, which its listener takes."""
    if how == "channel":
        from tb_iotrace.recording.attach_listen import channel_path

        path = channel_path(t.pid)
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(f"{os.path.dirname(script)}\n{request}\n")
        os.replace(tmp, path)
        return
    if how == "remote_exec":
        try:
            sys.remote_exec(t.pid, script)  # type: ignore[attr-defined]
        except (OSError, RuntimeError) as exc:
            raise AttachRefused(f"sys.remote_exec into process {t.pid} failed: {exc}") from None
        return
    if '"' in code:
        raise AttachRefused('a path with a double quote cannot be passed to gdb; use plain paths')
    literal = code.replace("\\", "\\\\").replace("\n", "\\n")      # as a C string literal
    call = f'call (int)Py_AddPendingCall((int(*)(void*))PyRun_SimpleString, (void*)"{literal}")'
    # the process is stopped while gdb works: no debuginfod (no network) and no symbols of other
    # libraries than the interpreter's (torch's take gdb 15 s to read on a busy machine; <1 s so),
    # --readnever: the functions' ELF symbols only, not their debug info (half gdb's time)
    argv = ["gdb", "--readnever", "-p", str(t.pid), "-batch", "-nx", "-q", "-iex", "set debuginfod enabled off",
            "-iex", "set auto-solib-add off", "-ex", "set confirm off", "-ex", "set unwindonsignal on",
            "-ex", "sharedlibrary libpython", "-ex", call, "-ex", "detach"]
    out, seen = None, ""
    for _ in range(GDB_TRIES):
        settle(t.pid)
        out, seen = _run_gdb(argv, t.pid)
        if out is not None:
            break
    if out is None:
        raise AttachRefused(f"gdb did not finish within {GDB_TIMEOUT_S} s attaching to process {t.pid} "
                            f"({GDB_TRIES} tries; the process was resumed; last try: {seen})")
    if "Operation not permitted" in out:
        raise AttachRefused(f"ptrace of process {t.pid} not permitted (a container without CAP_SYS_PTRACE, "
                            "or a Yama ptrace_scope): run with --cap-add=SYS_PTRACE, as root, or start the job "
                            "under tb-iotrace run")
    m = re.search(r"^\$1 = (-?\d+)", out, re.M)
    if m is None:
        last = next((ln for ln in reversed(out.strip().splitlines()) if ln.strip()), "no output")
        raise AttachRefused(f"gdb could not call into process {t.pid}: {last.strip()}")
    if int(m.group(1)) != 0:
        raise AttachRefused(f"process {t.pid} refused the call (Py_AddPendingCall returned {m.group(1)}: its "
                            "queue of pending calls is full); try again")


def _threads(pid: int) -> dict[str, str]:
    out = {}
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                out[tid] = _read(f"/proc/{pid}/task/{tid}/comm").strip()
            except OSError:
                out[tid] = ""
    except OSError:
        pass
    return out


def settle(pid: int, limit_s: float = SETTLE_S) -> bool:
    """Wait (at most ``limit_s``) until ``pid``'s threads stand still: none of ours (a previous
    attach's, ending) and the same threads twice 0.2 s apart. gdb attaching while a thread
    exits can wait for that thread's stop forever."""
    until = time.monotonic() + limit_s
    before = _threads(pid)
    while time.monotonic() < until:
        time.sleep(0.2)
        now = _threads(pid)
        if now == before and not any(name.startswith("tb_iotrace") for name in now.values()):
            return True
        before = now
    return False


def _states(pid: int) -> str:
    """``pid``'s threads by scheduler state, e.g. "S 9, t 2" (t: stopped by a tracer)."""
    counts: dict[str, int] = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return "gone"
    for tid in tids:
        try:
            state = _read(f"/proc/{pid}/task/{tid}/stat").rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        counts[state] = counts.get(state, 0) + 1
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "none"


def _run_gdb(argv: list[str], pid: int) -> tuple[str | None, str]:
    """gdb's output, or None when it did not finish in time: then gdb is stopped (SIGINT first,
    which with ``unwindonsignal`` unwinds a call in progress, then killed) and the process is sent
    SIGCONT, since threads gdb stopped may stay stopped when their tracer dies. Second: where a
    try that did not finish stood (the process's threads' states then, gdb's last line)."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            text=True)
    try:
        out, _ = proc.communicate(timeout=GDB_TIMEOUT_S)
        return out, ""
    except subprocess.TimeoutExpired:
        pass
    states, said = _states(pid), ""
    for sig, wait in ((signal.SIGINT, 5.0), (signal.SIGKILL, 10.0)):
        try:
            proc.send_signal(sig)
            said = proc.communicate(timeout=wait)[0] or ""
            break
        except subprocess.TimeoutExpired:
            continue
        except OSError:
            break
    try:
        os.kill(pid, signal.SIGCONT)
    except OSError:
        pass
    last = next((ln.strip() for ln in reversed(said.splitlines()) if ln.strip()), "nothing")
    return None, f"its threads {states}, gdb's last line {last[:200]!r}"
