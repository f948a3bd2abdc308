"""A PyTorch (Kineto) trace decoded into the tab's :class:`~tb_iotrace.model.tab.columns.TabCapture`.

A trace ``<worker>.<ts>.pt.trace.json[.gz]`` is converted to an XSpace shaped like a TensorFlow
capture (:mod:`tb_iotrace.store.kineto_xspace`: aten ops per thread, GPU streams, ``ProfilerStep#N``
steps, the I/O lines of the main process and of its DataLoader workers), written once per
version of the file (size and mtime) to this process's private folder of converted captures
(``tb_iotrace-kineto-<pid>-*`` in the temporary directory: removed at exit, and by the next
process to start converting when this one was killed),
and loaded from there like any ``.xplane.pb`` (:func:`tb_iotrace.model.tab.of_xplane.decode_xplane`): the timeline,
the files table, the event details and the findings' child process all read that file. The
logdir is never written to. A file that is not a Kineto trace raises ``XPlaneError`` with the
reason (the tab shows it for that capture; the other runs are untouched).
"""
from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import tempfile
import threading

from tb_iotrace.base.processes import pid_alive
from tb_iotrace.base.atomic import atomic_write
from tb_iotrace.store.kineto import KinetoTraceError
from tb_iotrace.store.kineto_xspace import KINETO_KEY, read_xspace
from tb_iotrace.store.xplane import XPlaneError
from tb_iotrace.model.tab.of_xplane import decode_xplane
from tb_iotrace.model.tab.columns import TabCapture

_lock = threading.Lock()
_folder: str | None = None


FOLDER_PREFIX = "tb_iotrace-kineto-"


def remove_stale_folders(tmp: str | None = None) -> list[str]:
    """Remove the converted-capture folders (``tb_iotrace-kineto-<pid>-*``) that processes
    of this user left behind when they died without their exit handlers (killed, crashed):
    the ones whose pid is no longer running. Returns the folders removed."""
    tmp = tmp or tempfile.gettempdir()
    removed = []
    try:
        names = os.listdir(tmp)
    except OSError:
        return removed
    for name in names:
        if not name.startswith(FOLDER_PREFIX):
            continue
        pid_text = name[len(FOLDER_PREFIX):].split("-", 1)[0]
        if not pid_text.isdigit() or int(pid_text) == os.getpid():
            continue
        path = os.path.join(tmp, name)
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if st.st_uid != os.getuid() or not os.path.isdir(path) or os.path.islink(path) or pid_alive(int(pid_text)):
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed


def _converted_folder() -> str:
    """This process's folder of converted captures, ``tb_iotrace-kineto-<pid>-*`` in the
    temporary directory, removed at exit; the first use also removes those of dead
    processes (a TensorBoard that was killed or crashed)."""
    global _folder
    with _lock:
        if _folder is None or not os.path.isdir(_folder):
            remove_stale_folders()
            _folder = tempfile.mkdtemp(prefix=f"{FOLDER_PREFIX}{os.getpid()}-")
            atexit.register(shutil.rmtree, _folder, True)
        return _folder


def converted_path(path: str) -> str:
    """Where the converted capture of the trace ``path`` (as it is now) is kept."""
    st = os.stat(path)
    key = hashlib.sha1(os.path.realpath(path).encode("utf-8", "surrogateescape")).hexdigest()[:20]
    return os.path.join(_converted_folder(), f"{key}.{st.st_size}.{st.st_mtime_ns}.xplane.pb")


def converted(path: str) -> str:
    """The converted capture of the trace ``path`` as it is now (:func:`converted_path`), made
    when this process has none yet: the file the tab's findings of the trace analyse
    (XPlaneError when it is not a readable trace)."""
    try:
        out = converted_path(path)
    except OSError as exc:
        raise XPlaneError(path, f"cannot read: {exc.strerror or exc}") from None
    if not os.path.isfile(out):
        try:
            space = read_xspace(path)
        except KinetoTraceError as exc:
            text = str(exc)
            raise XPlaneError(path, text[len(path) + 2:] if text.startswith(path + ": ") else text) from None
        body = space.SerializeToString()
        del space
        stem = os.path.basename(out).split(".", 1)[0]
        for old in os.listdir(os.path.dirname(out)):   # an older version of the same trace
            if old.startswith(stem + ".") and old != os.path.basename(out):
                try:
                    os.unlink(os.path.join(os.path.dirname(out), old))
                except OSError:
                    pass
        atomic_write(out, lambda fh: fh.write(body))
        del body
    return out


def decode_kineto(path: str, host: str) -> TabCapture:
    """One PyTorch trace as a :class:`TabCapture` (XPlaneError when it is not a readable one)."""
    out = converted(path)
    cap = decode_xplane(out, host)
    notes = ((cap.io_info or {}).get(KINETO_KEY) or {}).get("notes") or []
    cap.warnings.extend(f"The trace handler noted: {n}" for n in notes)
    return cap


__all__ = ["FOLDER_PREFIX", "converted", "converted_path", "decode_kineto", "remove_stale_folders"]
