"""Per-capture summaries kept on disk: the host row of the "All hosts" table, of
``tb-iotrace report``'s per-host table and of the fleet dataset's ``hosts`` table
(:func:`tb_iotrace.analysis.file_totals.host_row` computes it), stored once per version of the capture so that
a TensorBoard restart or a second ``report`` reads ~500 bytes instead of decoding the capture.

Where: beside the capture, under its run's ``plugins/iotrace/summaries/`` (TensorBoard's
place for a plugin's data; the logdir scan never descends a ``plugins`` folder, and record
folders only list their own ``*.json`` files, so a summary is never taken for a capture or a
whole-run record). A capture ``<A>/plugins/profile/<session>/<host>.xplane.pb`` or a record
``<A>/plugins/iotrace/<host>.<pid>.json`` keeps its summary in ``<A>/plugins/iotrace/summaries/``
(a ``plugins/iotrace`` or ``summaries`` that is a link is not written through, nor anything made at
its target). Any other file (a PyTorch trace, a loose capture, a lone file given to ``report``)
is in no run's ``plugins/`` tree: nothing is written beside it, its summary is in the local cache
(but a PyTorch trace tb_iotrace uploaded to a URL logdir: its writer kept its summary in the bucket,
in the trace's folder's ``plugins/iotrace/summaries/``, read from the mirror as below).
So is the summary of a capture whose folder cannot be written (a read-only logdir) and of a
remote logdir's local mirror (whose ``plugins/iotrace/summaries/``, mirrored from the bucket,
where the capture's writer kept them: :mod:`tb_iotrace.store.remote_summaries`, is read first,
never written): ``$XDG_CACHE_HOME/tb_iotrace/summaries/`` (``~/.cache`` when
unset; ``$TB_IOTRACE_CACHE/summaries/`` when that is set, as for the remote cache). ``TBIO_SUMMARIES``: unset or ``1`` beside the capture (else the local cache), ``local``
the local cache only, ``0`` none kept or read.

A summary file is a small JSON object (``format`` :data:`FORMAT`, the capture's name relative to
the summaries folder's run, the part of it summarized, the identities of the version it
summarizes, the row). It is trusted only when all of it checks out: at most :data:`MAX_BYTES`,
the same format, name and part, an identity the capture has now (of each of its files: size, mtime,
inode, change time and a hash of its first and last 64 KiB, so a summary copied along with a
capture, or a capture rewritten with its mtime put back, does not match; of a remote capture
not fetched yet, the object's URL, etag/generation and size from the mirror's manifest; once
fetched, the same of the fetched file but its change time), and a row of
exactly :data:`FIELDS` with values of their types and ranges. Anything else is read as "no
summary" and the caller computes it again and replaces the file. Writes are atomic (a temporary
file renamed over the old one): concurrent writers each leave a whole file, the last one stays.
Nothing here raises on a bad or unwritable summary: :func:`load` returns None and :func:`save`
returns None.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import stat
from pathlib import Path
from typing import Any, Callable, Mapping

from tb_iotrace.store import remote
from tb_iotrace.store.logdir import KINETO_SUFFIXES
from tb_iotrace.store.mirror_versions import mirror_entry
from tb_iotrace.base.atomic import atomic_write
from tb_iotrace.store.runrecord import RECORD_SUFFIX, TABLE_SUFFIX

FORMAT = "tb_iotrace.summary/2"   # 2: identities with inode, change time and a hash of the ends
ENV = "TBIO_SUMMARIES"
MAX_BYTES = 16 << 10
DIGEST_BYTES = 64 << 10   # hashed at each end of a capture for its identity
FOLDER = ("plugins", "iotrace", "summaries")
SUFFIX = ".summary.json"
# the row's fields (the host's name is not stored: the run's scan names it) and their types
FIELDS: dict[str, type] = {"source": str, "bytes_read": int, "bytes_written": int, "read_time_s": float,
                           "io_calls": int, "files": int, "input_wait_ns": int, "input_wait_pct": float,
                           "span_ns": int, "wait_basis": str}
CHOICES = {"source": ("counters", "trace", "none"), "wait_basis": ("steps", "input waits", "none")}
Identity = list[list[Any]]


def mode() -> str:
    """``beside`` (the default), ``local`` or ``off`` (:data:`ENV`)."""
    raw = os.environ.get(ENV, "1").strip().lower()
    return "off" if raw in ("0", "off", "no") else "local" if raw == "local" else "beside"


def local_root() -> Path:
    """The local cache of summaries: ``$XDG_CACHE_HOME/tb_iotrace/summaries`` (beside the
    remote cache's folders under ``$TB_IOTRACE_CACHE`` when that is set)."""
    base = os.environ.get("TB_IOTRACE_CACHE")
    if base:
        return Path(base) / "summaries"
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(xdg) / "tb_iotrace" / "summaries"


def _digest(path: str, size: int) -> str | None:
    """A hash of the file's first and last :data:`DIGEST_BYTES` (the whole file when smaller):
    what a rewrite of the same size, its mtime put back, still changes."""
    h = hashlib.sha256()
    try:   # never blocking (a FIFO planted under a capture's name), never but a regular file
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        h.update(os.pread(fd, DIGEST_BYTES, 0))
        if size > DIGEST_BYTES:
            h.update(os.pread(fd, DIGEST_BYTES, max(DIGEST_BYTES, size - DIGEST_BYTES)))
    except OSError:
        return None
    finally:
        os.close(fd)
    return h.hexdigest()[:32]


def _stat(path: str, mirrored: bool = False) -> list[Any] | None:
    """Name, size and mtime of a file, its inode and change time (which no writer can put back:
    a file rewritten in place, or replaced, its mtime restored, has another), and the hash of
    its ends. A remote logdir's mirrored file leaves the change time out (the mirror's hard
    links change it; the object's version names its content)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    digest = _digest(path, int(st.st_size))
    if digest is None:
        return None
    return [os.path.basename(path), int(st.st_size), int(st.st_mtime_ns), int(st.st_ino),
            0 if mirrored else int(st.st_ctime_ns), digest]


def companions(path: str) -> list[str]:
    """A whole-run record's trace and file table beside its JSON (a flush rewrites any), by name:
    of a local path or a URL alike."""
    if not path.endswith(RECORD_SUFFIX) or path.endswith(".pt.trace.json"):
        return []
    stem = path[: -len(RECORD_SUFFIX)]
    return [stem + ".npz", stem + TABLE_SUFFIX]


def remote_ident(entry: Mapping[str, Any]) -> list[Any]:
    """The identity of one object's version (a mirror manifest's entry: url, version, size)."""
    return ["remote", str(entry.get("url")), str(entry.get("version")), int(entry.get("size") or 0)]


def identity(path: str) -> Identity | None:
    """What must stay the same for a summary of ``path`` to stay valid (None: unreadable):
    size and mtime of the file and of a record's trace and table; for a remote logdir's file
    not fetched yet or fetched as that very version
    (:func:`tb_iotrace.store.mirror_versions.mirror_entry`), the object's URL, version and size as the
    mirror's manifest has them (of a record, of its JSON and of each of its tables there)."""
    mirrored = _in_mirror(path)
    entry = mirror_entry(path) if mirrored else None     # listed, fetched or not: the object's version names it
    if entry is not None:
        got = [remote_ident(entry)]
        for c in companions(path):
            e = mirror_entry(c)
            if e is not None:
                got.append(remote_ident(e))
            elif os.path.lexists(c):    # a table not of a listed version: the files' own identity
                got = []
                break
        if got:
            return got
    own = _stat(path, mirrored)
    if own is None:
        return None
    return [own] + [s for s in (_stat(c, mirrored) for c in companions(path)) if s is not None]


def _beside(path: str) -> tuple[Path, str] | None:
    """The summaries folder for ``path`` and the capture's name relative to that folder's run,
    when ``path`` is in a run's ``plugins/`` tree (a profile capture, a whole-run record), or is
    a PyTorch trace in a remote logdir's mirror (its writer kept them in the bucket: read only,
    :func:`beside_url`); None for any other file (a local PyTorch trace, a loose capture): reading
    it writes nothing beside it."""
    p = Path(os.path.abspath(path))
    parts = p.parts
    if p.name.endswith(KINETO_SUFFIXES) and _in_mirror(path):     # kept by its writer, in the bucket
        return p.parent.joinpath(*FOLDER), p.name
    if len(parts) >= 5 and parts[-4:-2] == ("plugins", "profile"):
        return p.parents[3].joinpath(*FOLDER), "/".join(parts[-3:])
    if len(parts) >= 4 and parts[-3:-1] == ("plugins", "iotrace"):
        return p.parents[2].joinpath(*FOLDER), "/".join(parts[-2:])
    return None


def beside_url(url: str) -> tuple[str, str] | None:
    """Of a capture at ``url`` in a run's ``plugins/`` tree (a profile capture, a whole-run
    record's JSON), or a PyTorch trace (in its folder's ``plugins/iotrace/summaries/``, under its
    file name), the URL of its summaries folder in the bucket and the capture's name relative to
    that folder's run (as :func:`_beside` names them in the logdir's mirror); None for any other
    object."""
    head, sep, tail = url.partition("://")
    parts = tail.rstrip("/").split("/") if sep else []
    if len(parts) >= 5 and parts[-4:-2] == ["plugins", "profile"]:
        return f"{head}://" + "/".join(parts[:-4] + list(FOLDER)), "/".join(parts[-3:])
    if len(parts) >= 2 and parts[-1].endswith(KINETO_SUFFIXES):    # a PyTorch trace: in its folder's
        return f"{head}://" + "/".join(parts[:-1] + list(FOLDER)), parts[-1]
    if len(parts) >= 4 and parts[-3:-1] == ["plugins", "iotrace"] and parts[-1].endswith(RECORD_SUFFIX):
        return f"{head}://" + "/".join(parts[:-3] + list(FOLDER)), "/".join(parts[-2:])
    return None


def _in_mirror(path: str) -> bool:
    try:
        trees = os.path.realpath(remote.cache_root() / "trees")
        return os.path.realpath(path).startswith(trees + os.sep)
    except OSError:
        return False


def _name(key: str, part: str, suffix: str = SUFFIX) -> str:
    return hashlib.sha256(f"{key}\x00{part}".encode("utf-8", "surrogateescape")).hexdigest()[:40] + suffix


def doc_name(key: str, part: str, suffix: str = SUFFIX) -> str:
    """The file name of the document of the capture named ``key`` (``part`` of it)."""
    return _name(key, part, suffix)


def locations(path: str, part: str = "", suffix: str = SUFFIX) -> list[tuple[Path, str]]:
    """Where the summary of ``path`` (``part`` of it: "" for the whole capture) may be, in
    the order it is looked for and written: (file, the capture's name stored in it). Another
    ``suffix`` names another document kept the same way (tb_iotrace.store.jobfacts)."""
    how = mode()
    if how == "off":
        return []
    out = []
    # of a remote logdir's mirror: the one its writer kept in the bucket, mirrored (read only)
    got = _beside(path) if how == "beside" else None
    if got is not None:
        folder, rel = got
        out.append((folder / _name(rel, part, suffix), rel))
    real = os.path.realpath(path)
    out.append((local_root() / _name(real, part, suffix), real))
    return out


def _valid_row(row: Any) -> bool:
    if not isinstance(row, dict) or set(row) != set(FIELDS):
        return False
    for k, kind in FIELDS.items():
        v = row[k]
        if kind is int:
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                return False
        elif kind is float:
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) or v < 0:
                return False
        elif not isinstance(v, str) or v not in CHOICES[k]:
            return False
    return row["input_wait_pct"] <= 100.0


def _read(file: Path, limit: int = MAX_BYTES) -> Any:
    """The JSON of a summary file; None for anything but a regular file (never a link, FIFO or
    device: opened without following a link and without blocking) of at most ``limit`` bytes."""
    try:
        fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            return None
        raw = os.read(fd, limit + 1)
        return json.loads(raw) if len(raw) <= limit else None
    except (OSError, ValueError, RecursionError):
        return None
    finally:
        os.close(fd)


def read_doc(file: Path, limit: int) -> Any:
    """The JSON of a document kept as summaries are (:func:`write_doc`), None when it is not a
    regular file of at most ``limit`` bytes holding JSON."""
    return _read(file, limit)


def _own_folder(folder: Path) -> bool:
    """``folder`` (``<A>/plugins/iotrace/summaries``) is where it says: none of its last three
    parts is a link (a logdir's writer must not send our writes elsewhere)."""
    try:
        return os.path.realpath(folder) == os.path.join(os.path.realpath(folder.parents[2]), *FOLDER)
    except OSError:
        return False


def load(path: str, part: str = "", ident: Identity | None = None) -> dict[str, Any] | None:
    """The stored row of ``path`` (without ``host``) when a valid summary of its current
    version (``ident``: its :func:`identity` when the caller has it already) exists, else None."""
    locs = locations(path, part)
    if not locs:
        return None
    ident = identity(path) if ident is None else ident
    if ident is None:
        return None
    for file, name in locs:
        doc = _read(file)
        idents = doc.get("identities") if isinstance(doc, dict) else None
        if (isinstance(doc, dict) and doc.get("format") == FORMAT and doc.get("path") == name
                and doc.get("part") == part and isinstance(idents, list) and ident in idents
                and _valid_row(doc.get("row"))):
            row = dict(doc["row"])
            for k, kind in FIELDS.items():
                if kind is float:
                    row[k] = float(row[k])
            return row
    return None


def row_of(row: Mapping[str, Any]) -> dict[str, Any] | None:
    """The stored fields of a host row (None when it does not have them all, valid)."""
    got = {k: row.get(k) for k in FIELDS}
    return got if _valid_row(got) else None


def save(path: str, row: Mapping[str, Any], part: str = "", before: Identity | None = None) -> Path | None:
    """Keep ``row`` (a host row: :data:`FIELDS`, ``host`` dropped) as the summary of
    ``path``'s version ``before``: its identity taken before it was decoded (default: now),
    so that a capture rewritten meanwhile is not stored under its new identity. Of a remote
    capture not fetched before (identified by the manifest), its identity once fetched is kept
    too (both name the same object). The first location that can be written gets it; None
    when none can, or the row is invalid."""
    stored = row_of(row)
    first = identity(path) if before is None else before
    if stored is None or first is None:
        return None
    kept = [first]
    if first[0][:1] == ["remote"]:
        now = identity(path)
        if now is not None and now != first:
            kept.append(now)
    return write_doc(path, part, SUFFIX, MAX_BYTES, lambda name: make_doc(name, part, kept, stored))


def make_doc(name: str, part: str, identities: list[Identity], row: Mapping[str, Any]) -> dict[str, Any]:
    """The summary document of the capture named ``name`` (as :func:`locations` names it),
    of its versions ``identities``; ``row``: its stored fields (:func:`row_of`)."""
    return {"format": FORMAT, "path": name, "part": part, "identities": list(identities), "row": dict(row)}


def write_doc(path: str, part: str, suffix: str, limit: int, doc: Callable[[str], dict[str, Any]]) -> Path | None:
    """Write ``doc(the capture's name stored in it)`` as JSON (at most ``limit`` bytes) at the
    first of :func:`locations` (``suffix``) that can be written, atomically; None when none can.
    A linked ``plugins/iotrace`` or ``summaries`` folder gets nothing at its target."""
    for file, name in locations(path, part, suffix):
        if _in_mirror(str(file)):
            continue     # a remote logdir's mirror: made again from the bucket at each fetch
        data = json.dumps(doc(name), ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode()
        if len(data) > limit:
            return None
        try:   # checked before anything is made: a linked plugins/iotrace gets nothing at its target
            if file.parent.parts[-3:] == FOLDER and not _own_folder(file.parent):
                continue
            file.parent.mkdir(parents=True, exist_ok=True)
            if file.parent.parts[-3:] == FOLDER and not _own_folder(file.parent):
                continue       # (linked meanwhile)
            atomic_write(file, lambda fh: fh.write(data))
            return file
        except OSError:
            continue
    return None


__all__ = ["ENV", "FIELDS", "FORMAT", "MAX_BYTES", "beside_url", "doc_name", "identity", "load", "local_root",
           "locations", "make_doc", "mode", "read_doc", "row_of", "save", "write_doc"]
