"""PyTorch (Kineto) traces as I/O tab captures.

A trace ``<worker>.<ts>.pt.trace.json[.gz]`` is converted to an XSpace shaped like a TensorFlow
capture (:mod:`tb_iotrace.kineto_xspace`: aten ops per thread, GPU streams, ``ProfilerStep#N``
steps, the I/O lines of the main process and of its DataLoader workers), written once per
version of the file (size and mtime) to this process's private folder of converted captures,
and loaded from there like any ``.xplane.pb`` (:func:`.model.load_capture`): the timeline,
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

from .._atomic import atomic_write
from ..kineto import KinetoTraceError
from ..kineto_xspace import KINETO_KEY, read_xspace
from ..xplane import XPlaneError
from .model import Capture, load_capture

_lock = threading.Lock()
_folder: str | None = None


def _converted_folder() -> str:
    global _folder
    with _lock:
        if _folder is None or not os.path.isdir(_folder):
            _folder = tempfile.mkdtemp(prefix="tb_iotrace-kineto-")
            atexit.register(shutil.rmtree, _folder, True)
        return _folder


def converted_path(path: str) -> str:
    """Where the converted capture of the trace ``path`` (as it is now) is kept."""
    st = os.stat(path)
    key = hashlib.sha1(os.path.realpath(path).encode("utf-8", "surrogateescape")).hexdigest()[:20]
    return os.path.join(_converted_folder(), f"{key}.{st.st_size}.{st.st_mtime_ns}.xplane.pb")


def load_kineto(path: str, host: str) -> Capture:
    """One PyTorch trace as a :class:`Capture` (XPlaneError when it is not a readable one)."""
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
    cap = load_capture(out, host)
    notes = ((cap.io_info or {}).get(KINETO_KEY) or {}).get("notes") or []
    cap.warnings.extend(f"The trace handler noted: {n}" for n in notes)
    return cap


__all__ = ["converted_path", "load_kineto"]
