"""Replace files atomically, so a reader (TensorBoard, ``tb-iotrace report``) never sees
half of one and a failed write leaves the old file as it was.

:func:`atomic_write` replaces one file; :class:`Staged` replaces several together (a record's
JSON, file table and trace; an export's two tables): every one is written in full under a
temporary name first, and only then are they renamed over the old ones, in the order they
were staged. A failure while writing (a full disk, a bad input half-way) renames nothing."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from types import TracebackType
from typing import BinaryIO, Callable


class Staged:
    """Files written under temporary names, renamed over their targets by :meth:`commit`.

    A temporary file is ``.<name>.<random>.tmp`` beside its target (hidden: the logdir scanners
    skip dot files). The new file keeps the mode of the file it replaces, else 0644 (mkstemp's
    0600 would hide it from a TensorBoard running as another user). Used as a context manager
    it commits when the block ends normally and removes every temporary file otherwise."""

    def __init__(self, *, fsync: bool = False) -> None:
        self.fsync = fsync
        self._pending: list[tuple[str, Path, int]] = []

    def temp(self, path: str | os.PathLike[str]) -> str:
        """A new empty temporary file beside ``path``, to write in any way; renamed over
        ``path`` at commit."""
        fd, tmp = self._create(path)
        os.close(fd)
        return tmp

    def write(self, path: str | os.PathLike[str], write: Callable[[BinaryIO], object]) -> None:
        """Call ``write(fh)`` on a temporary file for ``path`` (``fsync``: flushed to disk),
        through the descriptor that created it (no second open, its mode set there)."""
        fd, _ = self._create(path, chmod=True)
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            if self.fsync:
                fh.flush()
                os.fsync(fh.fileno())

    def _create(self, path: str | os.PathLike[str], chmod: bool = False) -> tuple[int, str]:
        """The temporary file for ``path``, open for writing; ``chmod``: its final mode set now,
        on the descriptor (else at commit)."""
        target = Path(path)
        try:
            mode = target.stat().st_mode & 0o7777
        except OSError:
            mode = 0o644
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        self._pending.append((tmp, target, mode))
        if chmod:
            try:
                os.fchmod(fd, mode)
            except BaseException:
                os.close(fd)
                raise
            self._pending[-1] = (tmp, target, -1)
        return fd, tmp

    def commit(self) -> None:
        """Rename every temporary file over its target, in the order they were staged."""
        try:
            for tmp, _, mode in self._pending:
                if mode >= 0:   # -1: set when it was created
                    os.chmod(tmp, mode)
            while self._pending:
                tmp, target, _ = self._pending[0]
                os.replace(tmp, target)
                self._pending.pop(0)
        except BaseException:
            self.discard()
            raise

    def discard(self) -> None:
        """Remove the temporary files not renamed yet."""
        for tmp, _, _ in self._pending:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        self._pending.clear()

    def __enter__(self) -> "Staged":
        return self

    def __exit__(self, tp: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:
        if tp is None:
            self.commit()
        else:
            self.discard()


def atomic_write(path: str | os.PathLike[str], write: Callable[[BinaryIO], object], *, fsync: bool = False) -> None:
    """Call ``write(fh)`` on a temporary file beside ``path``, then rename it over ``path``
    (see :class:`Staged`; the temporary file is removed if anything fails). ``fsync``: flush
    it to disk before the rename (a capture someone waited for)."""
    with Staged(fsync=fsync) as st:
        st.write(path, write)
