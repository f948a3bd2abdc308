"""Per-file Darshan counters as columns: what a capture's stop and a whole-run record hold.

A :class:`FileTable` keeps, per module (POSIX, STDIO), one row per file: the counters as an
``(n, len(names))`` int64 matrix, the float counters as a float64 matrix, Darshan's record id,
and an index into a :class:`PathTable` (every path's bytes back to back, as the process named
them: bytes that are not UTF-8 are kept exactly). Counter names are stored once per module,
not once per file, and nothing holds a Python object per file until someone asks for one
(:meth:`FileTable.dicts`, the JSON-like records older code reads).

Stored as an ``.npz`` (:meth:`FileTable.save`, :func:`load_table`), one array per column:
``paths.data`` (uint8), ``paths.end`` (int64, the end of each path in ``paths.data``), and per
module ``<M>.path`` (int64 index into the paths), ``<M>.record_id`` (uint64), ``<M>.names`` and
``<M>.fnames`` (str: every counter name of the module, in order), ``<M>.c.<NAME>`` (one int
counter, in the smallest integer type that holds its values exactly) and ``<M>.f.<NAME>`` (one
float counter, float64). A counter that is 0 in every row is not stored (most of Darshan's are,
in most runs). A path both modules name is stored once. In a table of DEFLATE_ROWS rows or more,
integer columns and paths are deflated (level 1), floats and record ids stored as they are (they
hardly deflate); a smaller table is stored whole (deflating it cost a worker's exit more than
the bytes it saved).
A loaded table keeps its matrices column-major, so the pages of the columns that were not
stored are never touched (no memory).
"""
from __future__ import annotations

import io
import os
import zipfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, BinaryIO, overload

import numpy as np

from tb_iotrace.base.limits import load_npz, max_trace_bytes
from tb_iotrace.store import npz_stored

MODULE_ORDER = ("POSIX", "STDIO")
# merge rules of consecutive windows (Darshan semantics, by counter name)
MAX_KEYS = ("MAX_BYTE_READ", "MAX_BYTE_WRITTEN", "MAX_READ_TIME_SIZE", "MAX_WRITE_TIME_SIZE")
DEFLATE_ROWS = 4096          # tables with fewer rows are stored, not deflated (FileTable.save)
IN_MEMORY_BYTES = 16 << 20   # file tables up to this size (uncompressed) are built in memory (zip_to)
LAST_KEYS = ("MODE", "FILE_ALIGNMENT", "MEM_ALIGNMENT", "ACCESS", "STRIDE", "FASTEST_RANK", "SLOWEST_RANK",
              "RENAMED_FROM")


class TableError(ValueError):
    """A stored file table that cannot be read."""


@dataclass
class PathTable:
    """Paths back to back: path ``i`` is ``data[end[i-1]:end[i]]``."""

    data: np.ndarray        # uint8
    end: np.ndarray         # int64

    def __len__(self) -> int:
        return int(self.end.shape[0])

    def get(self, i: int) -> bytes:
        a = int(self.end[i - 1]) if i > 0 else 0
        return self.data[a:int(self.end[i])].tobytes()

    def bytes_list(self, idx: np.ndarray | None = None) -> list[bytes]:
        """Paths as bytes, all or those at ``idx`` (one copy of the data, then slices)."""
        blob = self.data.tobytes()
        end = self.end.tolist()
        start = [0] + end[:-1]
        rows = range(len(end)) if idx is None else np.asarray(idx).tolist()
        return [blob[start[i]:end[i]] for i in rows]

    def strings(self, idx: np.ndarray | None = None) -> list[str]:
        """Paths as str (``os.fsdecode``: odd bytes as surrogates), all or those at ``idx``."""
        end = self.end.tolist()
        start = [0] + end[:-1]
        rows = range(len(end)) if idx is None else np.asarray(idx).tolist()
        if not len(self.data) or int(self.data.max()) < 0x80:   # ASCII: one decode, str slices
            text = self.data.tobytes().decode("ascii")
            return [text[start[i]:end[i]] for i in rows]
        blob = self.data.tobytes()
        return [os.fsdecode(blob[start[i]:end[i]]) for i in rows]

    @classmethod
    def of(cls, paths: Sequence[bytes]) -> "PathTable":
        blob = b"".join(paths)
        end = np.cumsum(np.fromiter((len(p) for p in paths), dtype=np.int64, count=len(paths)))
        return cls(np.frombuffer(blob, dtype=np.uint8).copy(), end.astype(np.int64))

    @classmethod
    def empty(cls) -> "PathTable":
        return cls(np.zeros(0, np.uint8), np.zeros(0, np.int64))


@dataclass
class ModuleRows:
    """One module's files: row ``i`` is the file at ``paths[path[i]]``."""

    module: str
    names: tuple[str, ...]
    fnames: tuple[str, ...]
    paths: PathTable
    path: np.ndarray        # int64 index into paths
    record_id: np.ndarray   # uint64
    counters: np.ndarray    # int64 (n, len(names))
    fcounters: np.ndarray   # float64 (n, len(fnames))
    id: np.ndarray | None = None    # the native file id of each row (a capture's, never stored)
    # per counter: False where it is known to be 0 in every row (None: not known); such columns
    # of a capture's or a loaded table's column-major matrices were never written (no memory)
    used: np.ndarray | None = None
    fused: np.ndarray | None = None
    _col: dict[str, int] = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return int(self.path.shape[0])

    def column(self, name: str) -> np.ndarray | None:
        """The column of counter ``name`` (int64 or float64 view), None when this module has none."""
        if not self._col:
            self._col.update({n: i for i, n in enumerate(self.names)})
            self._col.update({n: -1 - i for i, n in enumerate(self.fnames)})
        j = self._col.get(name)
        if j is None:
            return None
        return self.counters[:, j] if j >= 0 else self.fcounters[:, -1 - j]

    def path_bytes(self, i: int) -> bytes:
        return self.paths.get(int(self.path[i]))

    def path_strings(self) -> list[str]:
        return self.paths.strings(self.path)

    def record(self, i: int, path: str | None = None) -> dict[str, Any]:
        """Row ``i`` as the JSON-like record older readers take."""
        return {"path": os.fsdecode(self.path_bytes(i)) if path is None else path, "module": self.module,
                "record_id": int(self.record_id[i]),
                "counters": dict(zip(self.names, self.counters[i].tolist())),
                "fcounters": dict(zip(self.fnames, self.fcounters[i].tolist()))}

    def take(self, rows: np.ndarray) -> "ModuleRows":
        return ModuleRows(self.module, self.names, self.fnames, self.paths, self.path[rows], self.record_id[rows],
                          self.counters[rows], self.fcounters[rows], None if self.id is None else self.id[rows],
                          self.used, self.fused)


class FileTable:
    """Every file of a capture or record, module by module (see the module docstring)."""

    def __init__(self, modules: Sequence[ModuleRows] = ()) -> None:
        self.modules: dict[str, ModuleRows] = {m.module: m for m in modules}

    def __len__(self) -> int:
        return sum(len(m) for m in self.modules.values())

    def __bool__(self) -> bool:
        return len(self) > 0

    def module(self, name: str) -> ModuleRows | None:
        return self.modules.get(name)

    def counts(self) -> dict[str, int]:
        return {m: len(t) for m, t in self.modules.items()}

    def column(self, name: str) -> np.ndarray:
        """Counter ``name`` over every row (modules in order), as float64; NaN where a module has no such
        counter (what the per-host table sums with nansum)."""
        parts = []
        for t in self.modules.values():
            c = t.column(name)
            parts.append(np.full(len(t), np.nan) if c is None else c.astype(np.float64))
        return np.concatenate(parts) if parts else np.zeros(0)

    def module_names(self) -> list[str]:
        """The module of every row (modules in order; one shared str per module)."""
        out: list[str] = []
        for m, t in self.modules.items():
            out.extend([m] * len(t))
        return out

    def dicts(self) -> "FileDicts":
        """The rows as JSON-like records (``{"path", "module", "record_id", "counters", "fcounters"}``),
        each built when it is read."""
        return FileDicts(self)

    def save(self, fh: BinaryIO, comment: bytes = b"") -> None:
        """Write the table as an ``.npz`` (see the module docstring) to a binary file, with the
        zip comment ``comment``. A table of fewer than :data:`DEFLATE_ROWS` rows is stored
        without deflating (a DataLoader worker's record: deflating its few hundred rows cost
        more than the bytes it saved), laid out in memory and written at once
        (:mod:`tb_iotrace.store.npz_stored`)."""
        if sum(len(t) for t in self.modules.values()) < DEFLATE_ROWS:
            npz_stored.write(fh, list(self._members()), comment)
            return

        def put_all(z: zipfile.ZipFile) -> None:
            for name, a in self._members():     # one column at a time: a large table's copies
                _put(z, name, a)
            z.comment = comment

        size = sum(int(t.paths.data.nbytes) + 8 * len(t) * (2 + len(t.names) + len(t.fnames))
                   for t in self.modules.values())
        zip_to(fh, put_all, zipfile.ZIP_DEFLATED, size)

    def _members(self) -> Iterator[tuple[str, np.ndarray]]:
        """The stored arrays, by name (the module docstring's layout)."""
        paths, index = _shared_paths(self)
        yield "paths.data", paths.data
        yield "paths.end", paths.end
        for m, t in self.modules.items():
            yield f"{m}.path", index[m]
            yield f"{m}.record_id", t.record_id.astype(np.uint64, copy=False)
            yield f"{m}.names", np.array(t.names, dtype=str)
            yield f"{m}.fnames", np.array(t.fnames, dtype=str)
            if len(t):
                used = t.used if t.used is not None else t.counters.any(axis=0)
                for j in np.nonzero(used)[0].tolist():
                    col = t.counters[:, j]
                    if col.any():
                        yield f"{m}.c.{t.names[j]}", col.astype(_int_type(int(col.min()), int(col.max())))
                fused = t.fused if t.fused is not None else t.fcounters.any(axis=0)
                for j in np.nonzero(fused)[0].tolist():
                    col = t.fcounters[:, j]
                    if col.any():
                        yield f"{m}.f.{t.fnames[j]}", col.astype(np.float64, copy=False)

    @classmethod
    def from_dicts(cls, records: Sequence[Mapping[str, Any]]) -> "FileTable":
        """A table from JSON-like records (``tb_iotrace.run/1`` records, merged flushes). Counter names
        are the union of the records' names per module, in first-seen order; a missing one is 0."""
        by_mod: dict[str, list[Mapping[str, Any]]] = {}
        for r in records:
            if not isinstance(r, Mapping) or not isinstance(r.get("counters"), Mapping) \
                    or not isinstance(r.get("fcounters"), Mapping):
                raise TableError("a file record without its counters")
            by_mod.setdefault(str(r.get("module", "")), []).append(r)
        out = []
        for m in sorted(by_mod, key=lambda m: (m not in MODULE_ORDER, MODULE_ORDER.index(m)
                                                if m in MODULE_ORDER else 0, m)):
            rs = by_mod[m]
            names = list(dict.fromkeys(k for r in rs for k in r["counters"]))
            fnames = list(dict.fromkeys(k for r in rs for k in r["fcounters"]))
            try:
                c = np.array([[int(r["counters"].get(k, 0)) for k in names] for r in rs],
                             dtype=np.int64).reshape(len(rs), len(names))
                f = np.array([[float(r["fcounters"].get(k, 0.0)) for k in fnames] for r in rs],
                             dtype=np.float64).reshape(len(rs), len(fnames))
                rid = np.array([int(r.get("record_id") or 0) for r in rs], dtype=np.uint64)
            except (TypeError, ValueError, OverflowError) as exc:
                raise TableError(f"a file record's counters are not numbers ({exc})") from None
            paths = PathTable.of([os.fsencode(str(r.get("path", ""))) for r in rs])
            out.append(ModuleRows(m, tuple(names), tuple(fnames), paths, np.arange(len(rs), dtype=np.int64),
                                  rid, c, f))
        return cls(out)


class FileDicts(Sequence[dict[str, Any]]):
    """A table's rows as JSON-like records, built one at a time (a list of a million dicts is
    gigabytes; most readers walk them once)."""

    def __init__(self, table: FileTable) -> None:
        self.table = table
        self._parts = [t for t in table.modules.values() if len(t)]
        self._ends = np.cumsum([len(t) for t in self._parts]).tolist()

    def __len__(self) -> int:
        return self._ends[-1] if self._ends else 0

    @overload
    def __getitem__(self, i: int) -> dict[str, Any]: ...
    @overload
    def __getitem__(self, i: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(i)
        k = int(np.searchsorted(self._ends, i, side="right"))
        return self._parts[k].record(i - (self._ends[k - 1] if k else 0))

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for t in self._parts:
            paths = t.path_strings()
            for i in range(len(t)):
                yield t.record(i, paths[i])


def load_table(fh: BinaryIO, where: str = "file table") -> FileTable:
    """Read a table written by :meth:`FileTable.save` (TableError when it is not one)."""
    try:
        # bounded: declared sizes checked before anything is allocated
        cols = load_npz(fh, max_trace_bytes(), "the file table")
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
        raise TableError(f"{where}: cannot read ({exc})") from None
    try:
        paths = PathTable(cols["paths.data"].astype(np.uint8, copy=False), cols["paths.end"].astype(np.int64))
        if len(paths) and (paths.end[-1] != len(paths.data) or np.any(np.diff(paths.end) < 0) or paths.end[0] < 0):
            raise TableError(f"{where}: path offsets do not fit the path data")
        out = []
        for m in [k[: -len(".path")] for k in cols if k.endswith(".path")]:
            idx = cols[f"{m}.path"].astype(np.int64)
            n = len(idx)
            names = tuple(str(x) for x in cols[f"{m}.names"].tolist())
            fnames = tuple(str(x) for x in cols[f"{m}.fnames"].tolist())
            rid = cols[f"{m}.record_id"]
            c = np.zeros((n, len(names)), np.int64, order="F")
            f = np.zeros((n, len(fnames)), np.float64, order="F")
            used, fused = np.zeros(len(names), bool), np.zeros(len(fnames), bool)
            for mat, kind, nm, mark in ((c, "c", names, used), (f, "f", fnames, fused)):
                at = {k: j for j, k in enumerate(nm)}
                for key in [k for k in cols if k.startswith(f"{m}.{kind}.")]:
                    name = key[len(m) + 3:]
                    if name not in at:
                        raise TableError(f"{where}: column {key} is not one of the {m} counters")
                    col = cols.pop(key)
                    if col.shape != (n,) or col.dtype.kind not in ("iu" if kind == "c" else "f"):
                        raise TableError(f"{where}: column {key} has {col.shape[0] if col.ndim else 0} rows "
                                         f"of {col.dtype}, expected {n} of numbers")
                    mat[:, at[name]] = col
                    mark[at[name]] = True
            if rid.shape != (n,):
                raise TableError(f"{where}: {m} columns have different lengths")
            if n and (idx.min() < 0 or idx.max() >= len(paths)):
                raise TableError(f"{where}: a {m} row names a path that is not stored")
            out.append(ModuleRows(m, names, fnames, paths, idx, rid.astype(np.uint64, copy=False), c, f,
                                  used=used, fused=fused))
    except KeyError as exc:
        raise TableError(f"{where}: column {exc} missing") from None
    out.sort(key=lambda t: (t.module not in MODULE_ORDER, MODULE_ORDER.index(t.module)
                            if t.module in MODULE_ORDER else 0, t.module))
    return FileTable(out)


_INT_BOUNDS = tuple((t, int(np.iinfo(t).min), int(np.iinfo(t).max)) for t in (np.int8, np.int16, np.int32))


def _int_type(lo: int, hi: int) -> type:
    for t, tmin, tmax in _INT_BOUNDS:
        if tmin <= lo and hi <= tmax:
            return t
    return np.int64


def zip_to(fh: BinaryIO, members: Callable[[zipfile.ZipFile], None], compression: int, size: int) -> None:
    """Write a zip whose ``members(z)`` adds its members to ``fh``: built in memory and written
    in one call when its arrays hold at most ``size`` <= :data:`IN_MEMORY_BYTES` bytes (a file
    table's dozens of small members, each of which a zip written to a file seeks back over:
    a few system calls each), else straight to ``fh``."""
    if size > IN_MEMORY_BYTES:
        with zipfile.ZipFile(fh, "w", compression=compression, compresslevel=1, allowZip64=True) as z:
            members(z)
        return
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=compression, compresslevel=1, allowZip64=True) as z:
        members(z)
    fh.write(buf.getbuffer())


def _put(z: zipfile.ZipFile, name: str, a: np.ndarray) -> None:
    # floats and hashes hardly deflate (a few percent, at 60 MB/s): stored as they are
    z.compression = zipfile.ZIP_STORED if a.dtype.kind == "f" or a.dtype == np.uint64 else zipfile.ZIP_DEFLATED
    with z.open(name + ".npy", "w", force_zip64=True) as out:
        np.lib.format.write_array(out, np.ascontiguousarray(a), allow_pickle=False)


def _shared_paths(table: FileTable) -> tuple[PathTable, dict[str, np.ndarray]]:
    """One path table for every module (a path two modules name stored once: same record id and same
    bytes), and each module's row -> path index into it."""
    mods = [t for t in table.modules.values()]
    if len(mods) == 1 and np.array_equal(mods[0].path, np.arange(len(mods[0]))) \
            and len(mods[0].paths) == len(mods[0]):
        return mods[0].paths, {mods[0].module: mods[0].path}
    chunks: list[np.ndarray] = []
    lens: list[np.ndarray] = []
    index: dict[str, np.ndarray] = {}
    nrows = 0
    seen_rid = np.zeros(0, np.uint64)   # record ids of the paths stored so far, sorted
    seen_at = np.zeros(0, np.int64)
    for t in mods:
        start = np.concatenate(([0], t.paths.end[:-1])).astype(np.int64) if len(t.paths) else np.zeros(0, np.int64)
        a, b = start[t.path], t.paths.end[t.path]
        idx = np.full(len(t), -1, np.int64)
        if len(seen_rid) and len(t):   # a path stored already (usually: few, STDIO beside POSIX)
            pos = np.searchsorted(seen_rid, t.record_id)
            hit = np.nonzero((pos < len(seen_rid)) & (seen_rid[np.minimum(pos, len(seen_rid) - 1)] == t.record_id))[0]
            if len(hit):
                j = seen_at[pos[hit]]
                same = _same_bytes(np.concatenate(chunks), np.cumsum(np.concatenate(lens)), j, t.paths.data, a[hit],
                                   (b - a)[hit])
                idx[hit[same]] = j[same]
        new = np.nonzero(idx < 0)[0]
        idx[new] = nrows + np.arange(len(new))
        if len(new):
            ln = (b - a)[new]
            sel = np.repeat(a[new] - np.concatenate(([0], np.cumsum(ln)[:-1])), ln) + np.arange(int(ln.sum()))
            chunks.append(t.paths.data[sel] if len(sel) else np.zeros(0, np.uint8))
            lens.append(ln)
            rid = np.concatenate([seen_rid, t.record_id[new]])
            at = np.concatenate([seen_at, idx[new]])
            order = np.argsort(rid, kind="stable")
            seen_rid, seen_at = rid[order], at[order]
            nrows += len(new)
        index[t.module] = idx
    data = np.concatenate(chunks) if chunks else np.zeros(0, np.uint8)
    end = np.cumsum(np.concatenate(lens)).astype(np.int64) if lens else np.zeros(0, np.int64)
    return PathTable(data, end), index


def _same_bytes(data: np.ndarray, end: np.ndarray, rows: np.ndarray, other: np.ndarray, start: np.ndarray,
                length: np.ndarray) -> np.ndarray:
    """Per k: whether path ``rows[k]`` of (``data``, ``end``) is the bytes ``other[start[k]:start[k] +
    length[k]]``, in whole-array steps (a worker's STDIO beside POSIX rows: one pair per file)."""
    begin = end - np.diff(end, prepend=0)
    same = (end[rows] - begin[rows]) == length
    k = np.nonzero(same)[0]
    ln = length[k]
    total = int(ln.sum())
    if not total:
        return same
    first = np.cumsum(ln) - ln                   # where each row's bytes start among all compared
    step = np.arange(total) - np.repeat(first, ln)
    differ = data[np.repeat(begin[rows[k]], ln) + step] != other[np.repeat(start[k], ln) + step]
    counted = np.concatenate(([0], np.cumsum(differ)))
    same[k] = counted[first + ln] == counted[first]
    return same


# --------------------------------------------------------------------------- merging windows

class Accumulator:
    """Consecutive windows' tables summed file by file (keyed by module and path bytes), as a
    periodic flush needs: counts, bytes and times add up; maxima take the max; start
    timestamps the first, end timestamps the last; settings and common-value slots keep the
    latest window's value. Holds one dict entry per file (its key), columns otherwise; takes
    over the columns of the tables it is given (they must not be used after)."""

    def __init__(self) -> None:
        self._rows: dict[str, dict[bytes, int]] = {}
        self._paths: dict[str, list[bytes]] = {}
        self._tabs: dict[str, ModuleRows] = {}

    def add(self, table: FileTable) -> None:
        for m, t in table.modules.items():
            if not len(t):
                continue
            rows = self._rows.setdefault(m, {})
            paths = self._paths.setdefault(m, [])
            keys = t.paths.bytes_list(t.path)
            at = np.fromiter((rows.get(k, -1) for k in keys), dtype=np.int64, count=len(keys))
            cur = self._tabs.get(m)
            if cur is not None and (cur.names != t.names or cur.fnames != t.fnames):
                raise TableError(f"{m}: windows with different counter names cannot be merged")
            old = np.nonzero(at >= 0)[0]
            if cur is not None and len(old):
                both = cur.used is not None and t.used is not None and cur.fused is not None and t.fused is not None
                cur.used, cur.fused = (cur.used | t.used, cur.fused | t.fused) if both else (None, None)
                j = at[old]
                c0, c1 = cur.counters[j], t.counters[old]
                rule = _int_rules(t.names)
                cur.counters[j] = np.where(rule == 1, np.maximum(c0, c1), np.where(rule == 2, c1, c0 + c1))
                f0, f1 = cur.fcounters[j], t.fcounters[old]
                frule = _float_rules(t.fnames)
                first = np.where((f0 > 0) & (f1 > 0), np.minimum(f0, f1), np.where(f0 > 0, f0, np.maximum(f1, 0.0)))
                cur.fcounters[j] = np.where(frule == 1, np.maximum(f0, f1), np.where(frule == 3, first, f0 + f1))
            new = np.nonzero(at < 0)[0]
            if len(new):
                base = len(paths)
                for n, i in enumerate(new.tolist()):
                    rows[keys[i]] = base + n
                    paths.append(keys[i])
                # every row new (a first window): its columns as they are, no copy (the pages of a
                # capture's never-written columns stay untouched)
                add = t if len(new) == len(t) else t.take(new)
                if cur is None:
                    self._tabs[m] = ModuleRows(m, t.names, t.fnames, PathTable.empty(), np.zeros(0, np.int64),
                                               add.record_id, add.counters, add.fcounters, used=add.used,
                                               fused=add.fused)
                else:
                    cur.record_id = np.concatenate([cur.record_id, add.record_id])
                    cur.counters = np.concatenate([cur.counters, add.counters])
                    cur.fcounters = np.concatenate([cur.fcounters, add.fcounters])
                    both = cur.used is not None and add.used is not None and cur.fused is not None \
                        and add.fused is not None
                    cur.used, cur.fused = (cur.used | add.used, cur.fused | add.fused) if both else (None, None)

    def table(self) -> FileTable:
        out = []
        for m in sorted(self._tabs, key=lambda m: (m not in MODULE_ORDER, MODULE_ORDER.index(m)
                                                    if m in MODULE_ORDER else 0, m)):
            t = self._tabs[m]
            n = len(t.record_id)
            out.append(ModuleRows(m, t.names, t.fnames, PathTable.of(self._paths[m]), np.arange(n, dtype=np.int64),
                                  t.record_id, t.counters, t.fcounters, used=t.used, fused=t.fused))
        return FileTable(out)


def _int_rules(names: tuple[str, ...]) -> np.ndarray:
    """Per int counter: 0 add, 1 max, 2 keep the latest."""
    return np.array([1 if any(k.endswith(m) for m in MAX_KEYS) else 2 if any(m in k for m in LAST_KEYS) else 0
                     for k in names], dtype=np.int8)


def _float_rules(names: tuple[str, ...]) -> np.ndarray:
    """Per float counter: 0 add, 1 max (end timestamps, maxima), 3 the first positive (start timestamps)."""
    return np.array([3 if "START_TIMESTAMP" in k else 1 if ("END_TIMESTAMP" in k or "MAX_" in k) else 0
                     for k in names], dtype=np.int8)
