"""Replace a file atomically, so a reader (TensorBoard, ``tb-iotrace report``) never sees
half of it and a failed write leaves the old file as it was."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import BinaryIO, Callable


def atomic_write(path: str | os.PathLike[str], write: Callable[[BinaryIO], object], *, fsync: bool = False) -> None:
    """Call ``write(fh)`` on a temporary file beside ``path``, then rename it over ``path``.

    The temporary file is named ``.<name>.<random>.tmp`` (hidden: the logdir scanners skip
    dot files) and removed if anything fails. The new file keeps the mode of the file it
    replaces, else 0644 (mkstemp's 0600 would hide it from a TensorBoard running as another
    user). ``fsync``: flush it to disk before the rename (a capture someone waited for)."""
    path = Path(path)
    try:
        mode = path.stat().st_mode & 0o7777
    except OSError:
        mode = 0o644
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            if fsync:
                fh.flush()
                os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
