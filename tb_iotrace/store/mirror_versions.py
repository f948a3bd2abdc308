"""Which version of a remote object a file of a URL logdir's local mirror is
(:mod:`tb_iotrace.store.remote`): every file of a mirror kept with a manifest has its object's
entry there (URL, path in the store, size, version): a file of a kind fetched when opened while
it is a placeholder and once it is fetched, a record's JSON (fetched at once) as soon as it is
there, each as long as it is that very cached copy. A summary of such a file
(:mod:`tb_iotrace.store.summaries`) is then of the object's version whether the reader has
fetched it or not, as its writer, which knows only the object, keeps it
(:mod:`tb_iotrace.store.remote_summaries`)."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tb_iotrace.store import remote

__all__ = ["lazy_entry", "mirror_entry"]


def lazy_entry(path: str | os.PathLike[str], root: Path | None = None) -> dict[str, Any] | None:
    """The manifest entry (url, path, size, version) of a mirror's file that is still a
    placeholder (not fetched yet), else None: what identifies its version without fetching it."""
    p = Path(path)
    try:
        if p.stat().st_size != 0:
            return None
        got = _listed(p, root)
    except (OSError, ValueError, AttributeError):
        return None
    return got if isinstance(got, dict) else None


def _listed(p: Path, root: Path | None) -> Any:
    """What the manifest of the mirror holding ``p`` lists for it (None outside every mirror);
    OSError/ValueError as reading it raises."""
    trees = ((root or remote.cache_root()) / "trees").resolve()
    if not str(p.resolve()).startswith(str(trees) + os.sep):
        return None
    top = p.parent
    while top != top.parent and top.resolve() != trees and not (top / remote.MANIFEST).is_file():
        top = top.parent
    return _manifest(top / remote.MANIFEST).get(p.relative_to(top).as_posix())


_manifests: dict[str, tuple[tuple[int, int, int], dict[str, Any]]] = {}   # file -> (its stat, content)


def _manifest(file: Path) -> dict[str, Any]:
    """A mirror's manifest, parsed once per version of the file (a /hosts of many captures
    asks it once per capture); ValueError/OSError as reading it raises."""
    st = file.stat()
    key = (st.st_ino, st.st_size, st.st_mtime_ns)
    hit = _manifests.get(str(file))
    if hit is not None and hit[0] == key:
        return hit[1]
    got = json.loads(file.read_text())
    if not isinstance(got, dict):
        raise ValueError("not a manifest")
    if len(_manifests) >= 64:
        _manifests.clear()
    _manifests[str(file)] = (key, got)
    return got


def mirror_entry(path: str | os.PathLike[str], root: Path | None = None) -> dict[str, Any] | None:
    """The manifest entry (url, path, size, version) of a mirror's file: while it
    is a placeholder (:func:`lazy_entry`), or once it is the very cached copy of that version of
    the object (a hard link to it); else None (another file, or its copy evicted meanwhile)."""
    got = lazy_entry(path, root)
    if got is not None:
        return got
    p = Path(path)
    try:
        got = _listed(p, root)
        if not isinstance(got, dict):
            return None
        obj = remote.object_path(str(got["url"]), {"size": got["size"], "_version": got["version"]}, root or remote.cache_root())
        return got if p.stat().st_size == int(got["size"]) and os.path.samefile(obj, p) else None
    except (OSError, ValueError, AttributeError, KeyError, TypeError):
        return None
