"""Finding profile runs and whole-run records in a logdir, validating names from requests,
caching loaded captures.

Layouts:

- profiles (as xprof reads them): ``<logdir>/[<tb run>/]plugins/profile/<session>/<host>.xplane.pb``.
  A *run* is ``<tb run>/<session>`` (just ``<session>`` at the top level), a *host* the file
  name without ``.xplane.pb``;
- whole-run records (``tb-iotrace run``): ``<logdir>/[<dir>/]plugins/iotrace/<host>.<pid>[.execN].json``.
  The folder is the run ``<dir>/iotrace`` (just ``iotrace`` at the top level; the name
  ``tb-iotrace report`` uses), each record a host ``<host>.<pid>[.execN]``. Should a profile
  session be named ``iotrace`` too, the records' run is ``<dir>/iotrace (records)``.

Security: a run or host given by a request is only ever used after it matched, as a
string, one found by the scan; the scan never follows a directory symlink and drops any
file whose real path is outside the logdir's real path. Names with ``..`` segments, a
leading ``/``, backslashes or NUL are refused before any lookup (400).

Loading: a capture is decoded when first asked for and kept (up to ``max_captures``) while
its size and mtime stay the same. Two moments start it early, on a background thread: when
TensorBoard lists its plugins (``prefetch_latest``: the newest run, unless
``TBIO_PLUGIN_PREFETCH=0``), and when the tab's entry module is served (``warm_default``:
the capture the tab shows first).
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Callable

from ..runrecord import is_record_file
from ..xplane import XPlaneError
from .model import Capture, load_capture
from .records import RECORD_SUFFIX, cache_key, load_record, total_size

XPLANE_SUFFIX = ".xplane.pb"
PROFILE_DIR = os.path.join("plugins", "profile")
RECORD_RUN = "iotrace"  # as tb_iotrace.cli._sources.RECORD_RUN
MAX_DEPTH = 8  # directory levels below the logdir searched for plugins/profile
MAX_DIRS = 20000  # directories visited by one scan
ACTIVE_MAX_DIRS = 2000  # directories visited by is_active
ACTIVE_TTL_S = 30.0
RUNS_TTL_S = 5.0
PREFETCH_MAX_BYTES = 256 << 20  # newest run only, up to this much xplane in total


class BadName(ValueError):
    """A run or host name that could escape the logdir (HTTP 400)."""


def check_name(value: str, what: str, allow_slash: bool) -> str:
    if not isinstance(value, str) or value == "":
        raise BadName(f"missing {what}")
    if len(value) > 1024 or "\x00" in value or "\\" in value:
        raise BadName(f"invalid {what}")
    if value.startswith("/") or os.path.isabs(value):
        raise BadName(f"invalid {what}: absolute paths are not allowed")
    parts = value.split("/")
    if any(p in ("", ".", "..") for p in parts):
        raise BadName(f"invalid {what}: '.', '..' and empty segments are not allowed")
    if not allow_slash and len(parts) > 1:
        raise BadName(f"invalid {what}")
    return value


@dataclass
class RunInfo:
    run: str
    directory: str
    hosts: dict[str, str] = field(default_factory=dict)  # host -> file path
    mtime: float = 0.0
    kind: str = "profile"  # or "record": whole-run records of `tb-iotrace run`


def _inside(root_real: str, path: str) -> bool:
    real = os.path.realpath(path)
    return real == root_real or real.startswith(root_real.rstrip(os.sep) + os.sep)


def scan(logdir: str, max_dirs: int = MAX_DIRS, stop_at_first: bool = False,
         records: bool = False) -> tuple[list[RunInfo], bool]:
    """Profile runs under ``logdir`` (with ``records``, whole-run record folders too), sorted
    by name, and whether the scan was cut short. (``tb-iotrace report`` finds record folders
    itself: it asks for profile runs only.)"""
    runs: list[RunInfo] = []
    if not logdir or not os.path.isdir(logdir):
        return runs, False
    root_real = os.path.realpath(logdir)
    visited = 0
    truncated = False
    stack = [(logdir, 0)]
    while stack:
        d, depth = stack.pop()
        visited += 1
        if visited > max_dirs:
            truncated = True
            break
        try:
            with os.scandir(d) as it:
                entries = sorted((e for e in it), key=lambda e: e.name)
        except OSError:
            continue
        sub = []
        for e in entries:
            try:
                if not e.is_dir(follow_symlinks=False):
                    continue
            except OSError:
                continue
            if e.name == "plugins":
                prof = os.path.join(e.path, "profile")
                if os.path.isdir(prof) and not os.path.islink(prof):
                    runs.extend(_sessions(logdir, root_real, prof))
                    if stop_at_first and runs:
                        return runs, False
                rec = os.path.join(e.path, RECORD_RUN)
                if records and os.path.isdir(rec) and not os.path.islink(rec):
                    got = _records(logdir, root_real, rec, stop_at_first)
                    if got is not None:
                        runs.append(got)
                        if stop_at_first:
                            return runs, False
                continue
            if depth + 1 <= MAX_DEPTH:
                sub.append((e.path, depth + 1))
        stack.extend(reversed(sub))
    names = {r.run for r in runs if r.kind == "profile"}
    for r in runs:
        if r.kind == "record" and r.run in names:
            r.run += " (records)"
    runs.sort(key=lambda r: r.run)
    return runs, truncated


def _records(logdir: str, root_real: str, folder: str, stop_at_first: bool = False) -> RunInfo | None:
    """The run of one ``plugins/iotrace`` folder (None when it holds no record). Only
    regular files inside the logdir whose head says ``tb_iotrace.run/1`` count."""
    rel_parent = os.path.relpath(os.path.dirname(os.path.dirname(folder)), logdir)
    run = RECORD_RUN if rel_parent in (".", "") else f"{rel_parent.replace(os.sep, '/')}/{RECORD_RUN}"
    info = RunInfo(run=run, directory=folder, kind="record")
    try:
        files = sorted(os.scandir(folder), key=lambda f: f.name)
    except OSError:
        return None
    for f in files:
        if not f.name.endswith(RECORD_SUFFIX) or f.name.startswith("."):
            continue
        host = f.name[: -len(RECORD_SUFFIX)]
        if not host or "/" in host:
            continue
        try:
            if not f.is_file() or not _inside(root_real, f.path) or not is_record_file(f.path):
                continue
            info.mtime = max(info.mtime, f.stat().st_mtime)
        except OSError:
            continue
        info.hosts[host] = f.path
        if stop_at_first:
            break
    return info if info.hosts else None


def _sessions(logdir: str, root_real: str, prof: str) -> list[RunInfo]:
    out = []
    rel_parent = os.path.relpath(os.path.dirname(os.path.dirname(prof)), logdir)
    try:
        entries = sorted(os.scandir(prof), key=lambda e: e.name)
    except OSError:
        return out
    for e in entries:
        try:
            if e.is_symlink() or not e.is_dir(follow_symlinks=False):
                continue
        except OSError:
            continue
        run = e.name if rel_parent in (".", "") else f"{rel_parent.replace(os.sep, '/')}/{e.name}"
        info = RunInfo(run=run, directory=e.path)
        try:
            files = sorted(os.scandir(e.path), key=lambda f: f.name)
        except OSError:
            continue
        for f in files:
            if not f.name.endswith(XPLANE_SUFFIX) or f.name.startswith("."):
                continue
            host = f.name[: -len(XPLANE_SUFFIX)]
            if not host or "/" in host:
                continue
            try:
                if not f.is_file() or not _inside(root_real, f.path):
                    continue
                info.mtime = max(info.mtime, f.stat().st_mtime)
            except OSError:
                continue
            info.hosts[host] = f.path
        if info.hosts:
            out.append(info)
    return out


def is_record_path(path: str) -> bool:
    return path.endswith(RECORD_SUFFIX)


def file_key(path: str) -> tuple[int, ...]:
    """What must stay the same for a loaded capture to stay valid: size and mtime of the
    file (of a record: of its JSON and of its trace)."""
    if is_record_path(path):
        return cache_key(path)
    st = os.stat(path)
    return st.st_size, st.st_mtime_ns


def load_any(path: str, host: str) -> Capture:
    """A profile capture (``.xplane.pb``) or a whole-run record (``.json``), loaded."""
    return load_record(path, host) if is_record_path(path) else load_capture(path, host)


class LogdirIndex:
    """Cached view of a logdir's runs and a cache of loaded captures."""

    def __init__(self, logdir: str, max_captures: int = 4,
                 loader: Callable[[str, str], Capture] | None = None):
        self.logdir = logdir or ""
        self._lock = threading.Lock()
        self._runs: list[RunInfo] = []
        self._runs_at = -1e9
        self._truncated = False
        self._active: bool | None = None
        self._active_at = -1e9
        self._captures: OrderedDict[str, tuple[tuple[int, ...], Capture | XPlaneError]] = OrderedDict()
        self._loading: dict[str, threading.Lock] = {}
        self.max_captures = max_captures
        self.loader = loader or load_any
        self._prefetched = False
        self._warming = False

    # -- runs
    def is_active(self) -> bool:
        now = time.monotonic()
        with self._lock:
            if self._active is not None and now - self._active_at < ACTIVE_TTL_S:
                return self._active
        found, _ = scan(self.logdir, max_dirs=ACTIVE_MAX_DIRS, stop_at_first=True, records=True)
        with self._lock:
            self._active = bool(found)
            self._active_at = now
        return bool(found)

    def runs(self, refresh: bool = False) -> list[RunInfo]:
        now = time.monotonic()
        with self._lock:
            # refresh (asked for, or an unknown name looked up) at most once a second
            if now - self._runs_at < (1.0 if refresh else RUNS_TTL_S):
                return self._runs
        runs, truncated = scan(self.logdir, records=True)
        with self._lock:
            self._runs, self._runs_at, self._truncated = runs, now, truncated
            if runs:
                self._active, self._active_at = True, now
        return runs

    @property
    def truncated(self) -> bool:
        return self._truncated

    def find(self, run: str, host: str | None = None) -> tuple[RunInfo, str | None]:
        """The run (and host file) named by a request; KeyError when unknown."""
        check_name(run, "run", allow_slash=True)
        if host is not None:
            check_name(host, "host", allow_slash=False)
        for refresh in (False, True):
            for r in self.runs(refresh=refresh):
                if r.run == run:
                    if host is None:
                        return r, None
                    if host in r.hosts:
                        return r, r.hosts[host]
                    break
        raise KeyError(f"no {'host ' + repr(host) + ' in ' if host is not None else ''}run {run!r}")

    # -- prefetch
    def prefetch_latest(self, max_bytes: int = PREFETCH_MAX_BYTES) -> threading.Thread | None:
        """Load the newest run's captures on a background thread (once), so the tab opens
        warm: TensorBoard asks every plugin ``is_active()`` when its page loads, well
        before anyone clicks the tab. Skipped for captures above ``max_bytes`` in total
        and when TBIO_PLUGIN_PREFETCH=0."""
        if os.environ.get("TBIO_PLUGIN_PREFETCH", "1") == "0":
            return None
        with self._lock:
            if self._prefetched:
                return None
            self._prefetched = True

        def work():
            try:
                runs = self.runs()
                if not runs:
                    return
                newest = max(runs, key=lambda r: (r.mtime, r.run))
                files = sorted(newest.hosts.items())[:self.max_captures]
                if sum(total_size(p) if is_record_path(p) else os.path.getsize(p) for _, p in files) > max_bytes:
                    return
                for host, path in files:
                    try:
                        self.capture(path, host)
                    except Exception:  # reported when the tab asks for it
                        pass
            except Exception:
                pass

        t = threading.Thread(target=work, name="tb_iotrace-prefetch", daemon=True)
        t.start()
        return t

    def default_capture(self) -> tuple[str, str, str] | None:
        """(run, host, path) the tab shows first: the last run by name, its first host
        (the frontend's choice when nothing is picked yet)."""
        runs = self.runs()
        if not runs or not runs[-1].hosts:
            return None
        run = runs[-1]
        host = sorted(run.hosts)[0]
        return run.run, host, run.hosts[host]

    def warm_default(self) -> threading.Thread | None:
        """Start decoding the capture the tab shows first, on a background thread, when
        the tab's frontend is requested: the browser then spends its module loading and
        /runs round trip while the server decodes. No-op when it is cached or loading."""
        with self._lock:
            if self._warming:
                return None
            self._warming = True

        def work():
            try:
                got = self.default_capture()
                if got is not None:
                    self.capture(got[2], got[1])
            except Exception:  # reported when the tab asks for it
                pass
            finally:
                with self._lock:
                    self._warming = False

        t = threading.Thread(target=work, name="tb_iotrace-warm", daemon=True)
        t.start()
        return t

    # -- captures
    def capture(self, path: str, host: str) -> Capture:
        """The loaded capture for a file found by the scan (cached by size and mtime);
        raises XPlaneError for unreadable or corrupt files."""
        root_real = os.path.realpath(self.logdir)
        if not _inside(root_real, path):
            raise KeyError("capture is outside the logdir")
        try:
            key = file_key(path)
        except OSError as exc:
            raise XPlaneError(path, f"cannot read: {exc.strerror or exc}") from None
        with self._lock:
            hit = self._captures.get(path)
            if hit is not None and hit[0] == key:
                self._captures.move_to_end(path)
                if isinstance(hit[1], Exception):
                    raise hit[1]
                return hit[1]
            lock = self._loading.setdefault(path, threading.Lock())
        with lock:
            with self._lock:
                hit = self._captures.get(path)
                if hit is not None and hit[0] == key:
                    if isinstance(hit[1], Exception):
                        raise hit[1]
                    return hit[1]
                self._captures.pop(path, None)
            try:
                value: Capture | XPlaneError = self.loader(path, host)
            except XPlaneError as exc:
                value = exc
            # TypeError/AttributeError: a field of the wrong type in a record's or an I/O
            # record's JSON; cached like any corrupt file, so it is not decoded again per request
            except (ValueError, IndexError, KeyError, OverflowError, TypeError, AttributeError) as exc:
                value = XPlaneError(path, f"cannot decode: {exc}")
            with self._lock:
                self._captures[path] = (key, value)
                while len(self._captures) > self.max_captures:
                    self._captures.popitem(last=False)
        if isinstance(value, Exception):
            raise value
        return value


__all__ = ["BadName", "LogdirIndex", "RunInfo", "check_name", "file_key", "load_any", "scan"]
