"""The fleet dataset on disk: Parquet parts, Hive-style, and the manifest that lists them.

Layout::

    DATASET/
      files/run=<run>/host=<host>/part-<N>.parquet      (and hosts/, steps/, findings/, checkpoints/)
      _fleet/manifest.json     the sources built, each with its stamp and its parts
      _fleet/schema/<table>.parquet   no rows: every column of the table (the base
                               columns every part has, and those only some parts have)
      _fleet/lock              held while a build writes

``<run>`` and ``<host>`` are :func:`tb_iotrace.fleet.names.component` of the names (the rows
keep the real ones). ``N`` is the build's number for one source (a source's hosts share it),
so two sources that name the same run and host never overwrite each other's part.

A source (a capture file, a whole-run record, a Kineto trace, a Darshan log) is known by its
real path and stamped with the size and modification time of its file(s): building again
skips a source whose stamp is unchanged, and replaces the parts of one that changed. The
manifest is replaced atomically after the parts are written; queries read the parts it
lists, so a build that dies half-way leaves the dataset as it was (its stray parts are
removed by the next build).
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from tb_iotrace.base.atomic import atomic_write
from tb_iotrace.fleet.deps import FleetError, require
from tb_iotrace.fleet.names import component
from tb_iotrace.fleet.rows import TABLES, Layout, schema

FORMAT = "tb_iotrace.fleet/1"
META = "_fleet"
MANIFEST = f"{META}/manifest.json"
SCHEMA_DIR = f"{META}/schema"
PART_PREFIX = "part-"
PART_SUFFIX = ".parquet"
# A part holds one host: mostly a handful of rows under 100+ counter columns, so the footer
# is most of the file. Statistics and dictionaries only where they pay (the columns queries
# filter and group on), no Arrow schema copy (the Parquet types say it all): a 5-file host's
# files part is 17 KB instead of 41 KB.
INDEXED = ("run", "host", "module", "path", "record_id", "kind", "id", "name", "severity", "mount_point", "fs_type")

_PART = re.compile(r"^[A-Za-z_]+/run=[^/]+/host=[^/]+/" + re.escape(PART_PREFIX) + r"[0-9]+" + re.escape(PART_SUFFIX) + "$")
Stamp = list[list[Any]]     # [[path, size, mtime_ns], ...]


def stamp(paths: Sequence[str]) -> Stamp:
    """What tells a changed source from an unchanged one: size and mtime of its files."""
    out = []
    for p in paths:
        st = os.stat(p)
        out.append([os.path.basename(p), int(st.st_size), int(st.st_mtime_ns)])
    return out


def part_path(table: str, run: str, host: str, seq: int) -> str:
    """A part's path relative to the dataset root."""
    return f"{table}/run={component(run)}/host={component(host)}/{PART_PREFIX}{seq}{PART_SUFFIX}"


def write_parts(root: str | os.PathLike[str], seq: int, run: str, host: str, tables: Mapping[str, Any]) -> list[str]:
    """Write one host's tables as parts numbered ``seq``; return their relative paths."""
    pq = require("pyarrow.parquet")
    out = []
    for name, table in tables.items():
        rel = part_path(name, run, host, seq)
        path = Path(root) / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        write_table(table, tmp)
        os.replace(tmp, path)
        out.append(rel)
    return out


def write_table(table: Any, path: str | os.PathLike[str]) -> None:
    pq = require("pyarrow.parquet")
    indexed = [c for c in table.column_names if c in INDEXED]
    pq.write_table(table, path, compression="zstd", store_schema=False, write_statistics=indexed or False,
                   use_dictionary=indexed or False)


class Dataset:
    """A fleet dataset folder and its manifest (:meth:`open`; :meth:`commit` saves changes)."""

    def __init__(self, root: Path, manifest: dict[str, Any]) -> None:
        self.root = root
        self.manifest = manifest

    @classmethod
    def open(cls, root: str | os.PathLike[str], create: bool = False) -> Dataset:
        path = Path(root)
        mf = path / MANIFEST
        if not mf.exists():
            if not create:
                why = "no such folder" if not path.exists() else f"no {MANIFEST}: build it with `tb-iotrace fleet build`"
                raise FleetError(f"{root}: not a fleet dataset ({why})")
            if path.exists() and not path.is_dir():
                raise FleetError(f"{root}: exists and is not a folder")
            if path.is_dir() and any(p for p in path.iterdir() if p.name != META):
                raise FleetError(f"{root}: a folder that is not a fleet dataset and is not empty")
            return cls(path, {"format": FORMAT, "next": 0, "sources": {}})
        try:
            doc = json.loads(mf.read_text())
        except (OSError, ValueError) as exc:
            raise FleetError(f"{mf}: unreadable manifest ({exc})") from None
        if not isinstance(doc, dict) or doc.get("format") != FORMAT or not isinstance(doc.get("sources"), dict):
            raise FleetError(f"{mf}: not a {FORMAT} manifest")
        return cls(path, doc)

    # ------------------------------------------------------------------ sources
    @property
    def sources(self) -> dict[str, Any]:
        return self.manifest["sources"]  # type: ignore[no-any-return]

    def unchanged(self, key: str, st: Stamp) -> bool:
        entry = self.sources.get(key)
        return entry is not None and entry.get("stamp") == st

    def allocate(self) -> int:
        """A new part number."""
        seq = int(self.manifest.get("next", 0))
        self.manifest["next"] = seq + 1
        return seq

    def put(self, key: str, st: Stamp, kind: str, hosts: Sequence[tuple[str, str]], parts: Sequence[str]) -> list[str]:
        """Record a source's new parts; return the parts it had before (to delete after
        :meth:`commit`)."""
        old = self.sources.get(key, {}).get("parts", [])
        self.sources[key] = {"stamp": st, "kind": kind, "hosts": [list(h) for h in hosts], "parts": list(parts),
                             "built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        return [p for p in old if p not in set(parts)]

    # ------------------------------------------------------------------ reading
    def is_part(self, rel: object) -> bool:
        """Whether a path the manifest lists is a part of this dataset: ``<table>/run=../host=../
        part-N.parquet`` under the root, no link on the way. The manifest is a file in a shared
        folder or bucket: an absolute path, a ``..`` or a link in it must never be read,
        replaced or deleted."""
        if not isinstance(rel, str) or not _PART.match(rel) or rel.split("/", 1)[0] not in TABLES:
            return False
        if any(c in ("", ".", "..") for c in rel.split("/")):
            return False
        real_root = os.path.realpath(self.root)
        return os.path.realpath(self.root / rel) == os.path.join(real_root, *rel.split("/"))

    def parts(self, table: str, relative: bool = False) -> list[str]:
        """Paths of ``table``'s parts (absolute, or relative to the root), in build order;
        what :meth:`is_part` refuses is left out."""
        prefix = table + "/"
        got = [p for e in self.sources.values() for p in e.get("parts", [])
               if isinstance(p, str) and p.startswith(prefix) and self.is_part(p)]
        return got if relative else [str(self.root / p) for p in got]

    def schema_file(self, table: str) -> str | None:
        p = self.root / SCHEMA_DIR / f"{table}.parquet"
        return str(p) if p.exists() else None

    def hosts(self) -> int:
        return sum(len(e.get("hosts", [])) for e in self.sources.values())

    # ------------------------------------------------------------------ writing
    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Held while a build writes: a second build of the same dataset waits."""
        (self.root / META).mkdir(parents=True, exist_ok=True)
        with open(self.root / META / "lock", "w") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def commit(self, layout: Layout, new_parts: Sequence[str] = ()) -> None:
        """Write the tables' schema files (the base columns, the columns the table had, those
        of ``new_parts``) and replace the manifest. A table is marked uniform while every part
        has the schema file's columns exactly (the engines then need not match them by name)."""
        pq = require("pyarrow.parquet")
        sdir = self.root / SCHEMA_DIR
        sdir.mkdir(parents=True, exist_ok=True)
        new = set(new_parts)
        uniform = self.manifest.setdefault("uniform", {})
        for t in TABLES:
            path = sdir / f"{t}.parquet"
            old = None
            with contextlib.suppress(OSError, ValueError):
                old = pq.read_schema(path)
            added = [pq.read_schema(self.root / p) for p in new_parts if p.startswith(t + "/")]
            sc = union([schema(t, layout), *([old] if old is not None else []), *added])
            kept = any(p not in new for p in self.parts(t, relative=True))
            uniform[t] = all(a.equals(sc) for a in added) and (
                not kept or (bool(uniform.get(t, False)) and old is not None and old.equals(sc)))
            if old is not None and old.equals(sc):
                continue
            tmp = sdir / f".{t}.parquet.tmp"
            write_table(sc.empty_table(), tmp)
            os.replace(tmp, path)
        data = json.dumps(self.manifest, indent=1).encode()
        atomic_write(self.root / MANIFEST, lambda fh: fh.write(data))

    def uniform(self, table: str) -> bool:
        """Every part of ``table`` has the schema file's columns, in its order and types."""
        return bool(self.manifest.get("uniform", {}).get(table, False))

    def remove(self, parts: Sequence[str]) -> None:
        """Delete parts (and the folders they leave empty): only what :meth:`is_part` accepts."""
        for rel in parts:
            if not self.is_part(rel):
                continue
            with contextlib.suppress(FileNotFoundError):
                (self.root / rel).unlink()
            _prune(self.root, (self.root / rel).parent)

    def sweep(self) -> int:
        """Delete parts the manifest does not list (a build that died after writing them)
        and leftover temporary files; return how many."""
        listed = {p for e in self.sources.values() for p in e.get("parts", [])}
        n = 0
        for t in TABLES:
            top = self.root / t
            if not top.is_dir() or top.is_symlink():   # a link: not ours to sweep
                continue
            for dirpath, _, names in os.walk(top):     # (links to folders below are not followed)
                for name in names:
                    rel = os.path.relpath(os.path.join(dirpath, name), self.root)
                    stray = name.startswith(PART_PREFIX) and name.endswith(PART_SUFFIX) and rel not in listed
                    if stray or (name.startswith("." + PART_PREFIX) and name.endswith(".tmp")):
                        os.unlink(os.path.join(dirpath, name))
                        n += 1
        return n


def union(schemas: Sequence[Any]) -> Any:
    """Every column of ``schemas`` in order of appearance; a column's first type wins (a
    part's unknown key is typed by :func:`tb_iotrace.fleet.rows.kind_of`, which keeps one
    type per kind of value)."""
    pa = require("pyarrow")
    fields: dict[str, Any] = {}
    for sc in schemas:
        for f in sc:
            fields.setdefault(f.name, pa.field(f.name, f.type))
    return pa.schema(list(fields.values()))


def _prune(root: Path, folder: Path) -> None:
    """Remove ``folder`` and its parents up to the table folder while they are empty."""
    while folder != root and folder.parent != root:
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent
