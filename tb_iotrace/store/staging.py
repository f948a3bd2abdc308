"""Local staging folders of writes to a URL logdir, and their bound.

``tb-iotrace run --logdir URL`` writes its records into a staging folder and uploads them; a
profile window for a URL is taken into one too. A folder whose upload failed is kept (nothing
is lost), which used to mean one more folder per failed run, for ever. Each new folder now
prunes the old ones of its kind: the :data:`KEEP` newest (``TBIO_STAGING_KEEP``) and every
folder whose process is still running are kept, the others removed. A folder's name holds the
pid of the process that made it (``run-<pid>-...``, ``window-<pid>-...``). PyTorch traces that
could not be uploaded are kept as files in ``torch/``: the newest :data:`KEEP` of them.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from tb_iotrace.base.processes import pid_alive
from tb_iotrace.store import remote

KEEP = 8
ENV_KEEP = "TBIO_STAGING_KEEP"


def where() -> Path:
    """Where the staging folders are (beside the remote cache), made or not."""
    return remote.cache_root().parent / "staging"


def root() -> Path:
    """Where the staging folders are, the folder made."""
    got = where()
    got.mkdir(parents=True, exist_ok=True)
    return got


def keep() -> int:
    try:
        return max(0, int(os.environ.get(ENV_KEEP, KEEP)))
    except ValueError:
        return KEEP


def _pid_of(name: str) -> int:
    parts = name.split("-")
    return int(parts[1]) if len(parts) > 2 and parts[1].isdigit() else 0


def prune(kind: str, kept: int | None = None) -> list[Path]:
    """Remove the folders ``<kind>-*`` of processes that are gone, but the ``kept`` newest;
    returns those removed."""
    kept = keep() if kept is None else kept
    found = []
    for p in root().glob(f"{kind}-*"):
        try:
            if p.is_symlink() or not p.is_dir():
                continue
            found.append((p.stat().st_mtime_ns, p))
        except OSError:
            continue
    found.sort(reverse=True)
    old = [p for _, p in found[kept:] if not pid_alive(_pid_of(p.name))]
    for p in old:
        shutil.rmtree(p, ignore_errors=True)
    return old


def prune_files(folder: str, kept: int | None = None) -> list[Path]:
    """Of the files kept in ``<root>/<folder>`` (a PyTorch trace that could not be uploaded,
    each one whole and done with), remove all but the ``kept`` newest; returns those removed."""
    kept = keep() if kept is None else kept
    found = []
    for p in (root() / folder).glob("*"):
        try:
            if p.is_file() and not p.is_symlink():
                found.append((p.stat().st_mtime_ns, p))
        except OSError:
            continue
    found.sort(reverse=True)
    old = [p for _, p in found[kept:]]
    for p in old:
        try:
            p.unlink()
        except OSError:
            pass
    return old


def new(kind: str) -> Path:
    """A new staging folder ``<kind>-<pid>-*``, after pruning the old ones of ``kind``."""
    prune(kind)
    return Path(tempfile.mkdtemp(prefix=f"{kind}-{os.getpid()}-", dir=root()))


__all__ = ["ENV_KEEP", "KEEP", "new", "prune", "prune_files", "root", "where"]
