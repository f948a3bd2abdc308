"""Finding profile runs and whole-run records in a logdir (the one scanner the CLI and the
plugin share) and validating names from requests.

Layouts:

- profiles (as xprof reads them): ``<logdir>/[<tb run>/]plugins/profile/<session>/<host>.xplane.pb``.
  A *run* is ``<tb run>/<session>`` (just ``<session>`` at the top level), a *host* the file
  name without ``.xplane.pb``;
- whole-run records (``tb-iotrace run``): ``<logdir>/[<dir>/]plugins/iotrace/<host>.<pid>[.execN].json``.
  The folder is the run ``<dir>/iotrace`` (just ``iotrace`` at the top level; the name
  ``tb-iotrace report`` uses), each record a host ``<host>.<pid>[.execN]``. Should a profile
  session be named ``iotrace`` too, the records' run is ``<dir>/iotrace (records)``;
- PyTorch (Kineto) traces, where ``tensorboard_trace_handler(dir)`` and
  ``tb_iotrace.torch.trace_handler(dir)`` put them: ``<logdir>/[<dir>/]<worker>.<ts>.pt.trace.json[.gz]``
  (older torch: ``<worker>.<step>.<ts>``). The folder is the run ``<dir>`` (the logdir's own
  name at the top level), each trace file a host: its worker name (the file name without the
  numeric fields), or the whole stem where one worker wrote several traces. Only names are
  looked at here: a corrupt trace is listed, and its error shows when it is opened.

Security: a run or host given by a request is only ever used after it matched, as a
string, one found by the scan; the scan never follows a directory symlink and drops any
file whose real path is outside the logdir's real path. Names with ``..`` segments, a
leading ``/``, backslashes or NUL are refused before any lookup (400).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from tb_iotrace.store.runrecord import RECORD_RUN, RECORD_SUFFIX, is_record_file
from tb_iotrace.store.xplane.schema import XPLANE_SUFFIX

PROFILE_DIR = os.path.join("plugins", "profile")
MAX_DEPTH = 8  # directory levels below the logdir searched for plugins/profile
MAX_DIRS = 20000  # directories visited by one scan


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
    kind: str = "profile"  # or "record": whole-run records of `tb-iotrace run`; "kineto": PyTorch traces


def is_read_name(name: str) -> bool:
    """A file name the scan and the readers may open (captures, run records and their tables,
    PyTorch traces): what is fetched of a remote logdir (everything else stays remote)."""
    return not name.startswith(".") and name.endswith((XPLANE_SUFFIX, RECORD_SUFFIX, ".npz", ".json.gz"))


def inside(root_real: str, path: str) -> bool:
    real = os.path.realpath(path)
    return real == root_real or real.startswith(root_real.rstrip(os.sep) + os.sep)


def scan(logdir: str, max_dirs: int = MAX_DIRS, stop_at_first: bool = False,
         records: bool = False, kineto: bool = False) -> tuple[list[RunInfo], bool]:
    """Profile runs under ``logdir`` (with ``records``, whole-run record folders too; with
    ``kineto``, folders of PyTorch traces), sorted by name, and whether the scan was cut short."""
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
        if kineto:
            got = _kineto_run(logdir, root_real, d, entries)
            if got is not None:
                runs.append(got)
                if stop_at_first:
                    return runs, False
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
    names = {r.run for r in runs if r.kind != "kineto"}
    for r in runs:
        if r.kind == "kineto" and r.run in names:
            r.run += " (PyTorch)"
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
            if not f.is_file() or not inside(root_real, f.path) or not is_record_file(f.path):
                continue
            info.mtime = max(info.mtime, f.stat().st_mtime)
        except OSError:
            continue
        info.hosts[host] = f.path
        if stop_at_first:
            break
    return info if info.hosts else None


KINETO_SUFFIXES = (".pt.trace.json", ".pt.trace.json.gz")
_NUMERIC_TAIL = re.compile(r"(\.\d+){1,2}$")


def is_kineto_name(name: str) -> bool:
    """A PyTorch (Kineto) trace file name: ``*.pt.trace.json`` or ``*.pt.trace.json.gz``."""
    return name.endswith(KINETO_SUFFIXES) and not name.startswith(".")


def kineto_stem(name: str) -> str:
    """The file name without ``.pt.trace.json[.gz]``."""
    for sfx in KINETO_SUFFIXES[::-1]:
        if name.endswith(sfx):
            return name[: -len(sfx)]
    return name


def kineto_worker(name: str) -> str:
    """The worker name of a trace file ``<worker>.<ts>.pt.trace.json[.gz]`` (or
    ``<worker>.<step>.<ts>``): the stem without its trailing numeric fields."""
    stem = kineto_stem(name)
    return _NUMERIC_TAIL.sub("", stem) or stem


def _kineto_run(logdir: str, root_real: str, d: str, entries: list[os.DirEntry]) -> RunInfo | None:
    """The run of the PyTorch traces directly in folder ``d`` (None when it has none)."""
    found: list[tuple[str, str]] = []
    mtime = 0.0
    for f in entries:
        if not is_kineto_name(f.name):
            continue
        try:
            if not f.is_file() or not inside(root_real, f.path):
                continue
            mtime = max(mtime, f.stat().st_mtime)
        except OSError:
            continue
        found.append((f.name, f.path))
    if not found:
        return None
    rel = os.path.relpath(d, logdir)
    if rel in (".", ""):
        run = os.path.basename(os.path.realpath(logdir).rstrip(os.sep)) or "pytorch"
    else:
        run = rel.replace(os.sep, "/")
    workers = [kineto_worker(n) for n, _ in found]
    info = RunInfo(run=run, directory=d, kind="kineto", mtime=mtime)
    hosts = [worker if workers.count(worker) == 1 else kineto_stem(name) for (name, _), worker in zip(found, workers)]
    for (name, path), host in zip(found, hosts):
        if hosts.count(host) > 1:
            host = name    # one name, two files (a trace kept plain and gzipped): each its file's name
        if host and "/" not in host:
            info.hosts[host] = path
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
                if not f.is_file() or not inside(root_real, f.path):
                    continue
                info.mtime = max(info.mtime, f.stat().st_mtime)
            except OSError:
                continue
            info.hosts[host] = f.path
        if info.hosts:
            out.append(info)
    return out


def run_name(rel_parent: str, name: str) -> str:
    """The run name of ``name`` (a session or the record folder) under ``rel_parent``."""
    return name if rel_parent in (".", "") else f"{rel_parent.replace(os.sep, '/')}/{name}"


__all__ = ["BadName", "KINETO_SUFFIXES", "MAX_DEPTH", "RECORD_RUN", "RunInfo", "XPLANE_SUFFIX", "check_name",
           "inside", "is_kineto_name", "kineto_stem", "kineto_worker",
           "run_name", "scan"]


def capture_host(path: str) -> str:
    """A capture's host as its file name gives it (``<host>.xplane.pb``, ``<host>.json[.gz]``)."""
    name = os.path.basename(path)
    for suffix in (".xplane.pb", ".json.gz", ".json"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def profile_captures(logdir: str, since_ns: int) -> list[str]:
    """The ``.xplane.pb`` files of ``logdir``'s ``plugins/profile/<session>/`` folders written
    since ``since_ns`` (wall clock): what a profile stopped then has just written."""
    out: list[str] = []
    base = os.path.join(logdir, "plugins", "profile")
    try:
        sessions = list(os.scandir(base))
    except OSError:
        return out
    for s in sessions:
        try:
            if not s.is_dir(follow_symlinks=False) or s.stat().st_mtime_ns < since_ns:
                continue
            for f in os.scandir(s.path):
                if f.name.endswith(".xplane.pb") and f.is_file(follow_symlinks=False) \
                        and f.stat().st_mtime_ns >= since_ns:
                    out.append(f.path)
        except OSError:
            continue
    return sorted(out)

