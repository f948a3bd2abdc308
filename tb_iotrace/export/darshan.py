"""Text in the layout of ``darshan-parser`` (Darshan 3.x), and a parser for it.

Header comments (``# darshan log version``, ``# exe``, ``# start_time``, ``# nprocs``,
``# run time``, ``# mount entry``...), then per module a banner and one tab-separated line per
counter::

    #<module>\t<rank>\t<record id>\t<counter>\t<value>\t<file name>\t<mount pt>\t<fs type>
    POSIX\t0\t16019910728809678723\tPOSIX_OPENS\t1\t/data/a.tfrecord\t/\text4

Integer counters print as integers, float counters (``<MODULE>_F_*``) with 6 decimals, as
darshan-parser does. Ranks: the processes of a run are numbered 0..N-1 in (host, pid) order
(the ``# rank map`` comment lines give the mapping). Mount points and file system types come
from ``/proc/mounts`` of the exporting machine (longest prefix), ``UNKNOWN`` otherwise.
Object-storage requests are POSIX records named by the object's URL
(:mod:`tb_iotrace.export.darshan_objects`; times from the process start, or from a capture's
first request). Scripts written for darshan-parser output (``awk``/``grep`` on columns 1-8) read it unchanged;
:func:`parse` reads it back. Record ids are Darshan's (:mod:`tb_iotrace.base.recordid`).
"""
from __future__ import annotations

import io
import os
import time
from collections.abc import Mapping, Sequence
from typing import Any, BinaryIO, TextIO

from tb_iotrace.base.atomic import atomic_write

from tb_iotrace.store.filetable import FileDicts
from tb_iotrace.base.recordid import darshan_ids, renamed_from
from tb_iotrace.export import darshan_objects

MODULE_ORDER = ("POSIX", "STDIO")
VERSION = "3.41"


def mounts() -> list[tuple[str, str]]:
    out = []
    try:
        with open("/proc/mounts", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                parts = line.split()
                if len(parts) >= 3:
                    out.append((parts[1].replace("\\040", " "), parts[2]))
    except OSError:
        pass
    out.sort(key=lambda m: len(m[0]), reverse=True)
    return out


def _mount_of(path: str, table: list[tuple[str, str]]) -> tuple[str, str]:
    for mp, fs in table:
        if path == mp or path.startswith(mp.rstrip("/") + "/"):
            return mp, fs
    return "UNKNOWN", "UNKNOWN"


def _clean(s: str) -> str:
    return s.replace("\t", "\\t").replace("\n", "\\n")


def write(sources: list[Any], fh: TextIO) -> int:
    """Write the sources' per-file records; return the number of counter lines."""
    table = mounts()
    starts, ends, exes = [], [], []
    for s in sources:
        life = s.life_ns()
        if life is not None:
            starts.append(life[0])
            ends.append(life[1])
            exes.append(s.exe())
    start = min((x for x in starts if x), default=0) // 10**9
    end = max(ends, default=0) // 10**9
    fh.write(f"# darshan log version: {VERSION}\n# compression method: NONE\n")
    fh.write(f"# exe: {_clean(exes[0]) if exes else 'tb_iotrace export'}\n# uid: {os.getuid()}\n# jobid: 0\n")
    fh.write(f"# start_time: {start}\n# start_time_asci: {time.ctime(start)}\n")
    fh.write(f"# end_time: {end}\n# end_time_asci: {time.ctime(end)}\n")
    fh.write(f"# nprocs: {len(sources)}\n# run time: {max(end - start, 0) + 1}\n")
    fh.write("# metadata: lib_ver = tb_iotrace\n# metadata: h = romio_no_indep_rw=true;cb_nodes=4\n")
    fh.write("\n# rank map (tb_iotrace: one rank per exported process/host)\n")
    for rank, s in enumerate(sources):
        fh.write(f"# rank {rank}: {_clean(s.run)} {_clean(s.host)}\n")
    fh.write("\n# mounted file systems (mount point and fs type)\n# -------------------------------------------------------\n")
    for mp, fs in sorted(table):
        fh.write(f"# mount entry:\t{_clean(mp)}\t{fs}\n")
    fh.write("\n# description of columns:\n"
             "#   <module>: module responsible for this I/O record.\n"
             "#   <rank>: MPI rank.  -1 indicates that the file is shared\n"
             "#      across all processes and statistics are aggregated.\n"
             "#   <record id>: hash of the record's file path\n"
             "#   <counter name> and <counter value>: statistical counters.\n"
             "#      A value of -1 indicates that Darshan could not monitor\n"
             "#      that counter, and its value should be ignored.\n"
             "#   <file name>: full file path for the record.\n"
             "#   <mount pt>: mount point that the file resides on.\n"
             "#   <fs type>: type of file system that the file resides on.\n")
    n = 0
    per_source = []
    for rank, s in enumerate(sources):
        files = s.files()
        reqs = s.objects()
        if reqs:       # objects as POSIX records named by URL (export.darshan_objects)
            life = s.life_ns()
            zero = life[0] if life else min(int(r["start_ns"]) for r in reqs)
            files = [*files, *darshan_objects.posix_records(reqs, zero)]
        ids, remap = darshan_ids(files)
        per_source.append((rank, files, ids, remap))
    for module in MODULE_ORDER:
        if not any(_has(files, module) for _, files, _, _ in per_source):
            continue
        # one record at a time: a whole-run record's files are built as they are read
        recs = ((rank, f, rid, remap) for rank, files, ids, remap in per_source for f, rid in zip(files, ids)
                if f["module"] == module)
        fh.write(f"\n# *******************************************************\n# {module} module data\n"
                 f"# *******************************************************\n\n")
        fh.write(f"# description of {module} counters: see the Darshan documentation (darshan-util)\n\n")
        fh.write("#<module>\t<rank>\t<record id>\t<counter>\t<value>\t<file name>\t<mount pt>\t<fs type>\n")
        for rank, f, rid, remap in recs:
            path = _clean(f["path"])
            mp, fs = _mount_of(f["path"], table)
            tail = f"\t{path}\t{_clean(mp)}\t{fs}\n"
            counters = {k: renamed_from(v, remap) if k == "POSIX_RENAMED_FROM" else int(v)
                        for k, v in f["counters"].items()}
            lines = [f"{module}\t{rank}\t{rid}\t{k}\t{v}{tail}" for k, v in counters.items()]
            lines += [f"{module}\t{rank}\t{rid}\t{k}\t{float(v):.6f}{tail}" for k, v in f["fcounters"].items()]
            fh.write("".join(lines))
            n += len(lines)
    return n


def write_file(sources: list[Any], out: str) -> int:
    """:func:`write` to the file ``out``, replaced only once complete (a failure half-way
    leaves the previous file as it was); return the number of counter lines."""
    lines = 0

    def put(raw: BinaryIO) -> None:
        nonlocal lines
        text = io.TextIOWrapper(raw, encoding="utf-8", errors="surrogateescape", newline="\n")
        lines = write(sources, text)
        text.flush()
        text.detach()

    atomic_write(out, put)
    return lines


def _has(files: Sequence[Mapping[str, Any]], module: str) -> bool:
    if isinstance(files, FileDicts):   # a whole-run record's columns: no record built to know
        return bool(files.table.counts().get(module))
    return any(f["module"] == module for f in files)


def parse(text: str) -> list[dict[str, Any]]:
    """Read darshan-parser text back: ``[{"module", "rank", "record_id", "path", "mount",
    "fs", "counters", "fcounters"}]`` in file order."""
    recs: dict[tuple[str, int, int], dict[str, Any]] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        parts = line.split("\t")
        if len(parts) != 8:
            raise ValueError(f"not a darshan-parser counter line: {line[:120]!r}")
        module, rank, rid, name, value, path, mp, fs = parts
        key = (module, int(rank), int(rid))
        rec = recs.get(key)
        if rec is None:
            rec = recs[key] = {"module": module, "rank": int(rank), "record_id": int(rid),
                               "path": path.replace("\\n", "\n").replace("\\t", "\t"), "mount": mp, "fs": fs,
                               "counters": {}, "fcounters": {}}
        if name.startswith(f"{module}_F_"):
            rec["fcounters"][name] = float(value)
        else:
            rec["counters"][name] = int(value)
    return list(recs.values())
