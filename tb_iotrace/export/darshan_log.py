"""Binary Darshan logs (log format 3.41, as Darshan 3.5.0 writes them), in pure Python.

What the Darshan tool chain opens: tested with PyDarshan 3.5.0 (libdarshan-util, which
``darshan-parser`` is built on; the parser itself is not packaged for Debian 12 or PyPI),
``python -m darshan summary``, Drishti 0.8 and DXT Explorer 0.4. Layout (``../shared/notes/darshan-log.md``; the header is
written uncompressed, every region after it is one zlib stream)::

    header (1328 B)  version "3.41", magic, comp type 0 (zlib), partial flags,
                     name region (offset, length), 64 module regions (offset, length),
                     64 module versions
    job region       struct darshan_job (uid, start/end s+ns, nprocs, jobid,
                     metadata "key=value\\n"...), the command line, one "\\n<fs>\\t<mount>"
                     per mount entry, a NUL
    name region      per record id: id (u64), the path, a NUL
    POSIX (1, v4)    per record: id, rank, 69 int64 counters, 17 double counters
    STDIO (9, v2)    per record: id, rank, 14 int64, 15 double
    DXT_POSIX (10, v1)  per file with POSIX reads/writes in the trace: id, rank,
                     shared flag, hostname[64], write count, read count, then the
                     write segments and the read segments (offset, length, start, end)
    HEATMAP (15, v1) per process and module (POSIX, STDIO) that moved bytes: id of
                     "heatmap:<MODULE>", rank, bin width (s), bin count, two pointer
                     slots, then the write bins and the read bins (bytes)

Conventions:

- Several processes (a run with several hosts, a ``plugins/iotrace`` folder with several
  processes) are the ranks of one log, 0..N-1 in (run, host) order, ``nprocs`` N, as
  ``darshan-merge`` would write them; a ``rankN=<run>/<host>`` metadata line names each.
  A log is one job: PATH must hold one run (pick it with ``--run``).
- Record ids are Darshan's (:mod:`tb_iotrace.base.recordid`); records imported from a Darshan log
  keep their ids and ranks. ``POSIX_RENAMED_FROM`` carries the same kind of id.
- Times are seconds from the job start: the earliest process start (a whole-run record's
  ``start_ns``, which is the zero of its counters; a capture's profile start, which TensorFlow
  takes in the same start call as the shim's zero of the counters), so a
  single process's counters are written as recorded and other ranks' timestamps are
  shifted by their start's distance from the job start.
- DXT segments are the trace's POSIX reads and writes that did not fail (zero-length EOF
  reads included, as Darshan's DXT does), in time order, length = bytes returned; STDIO
  calls have no DXT module in Darshan and are left out.
- Partial flags: DXT_POSIX's bit when the trace dropped calls (cap reached), POSIX's,
  STDIO's, HEATMAP's and DXT_POSIX's when a whole-run record is partial (the process was
  killed, or still running: its last periodic flush, whose trace DXT carries). The job's
  metadata names them: ``partial_ranks=1,3`` and ``partial_rank1=<until when it counts, why>``.
- Object-storage requests are POSIX records named by the object's URL (``s3://b/k``...),
  one per object and rank (:mod:`tb_iotrace.export.darshan_objects` says which counters).
- Names that are not valid UTF-8 are written with ``\\xNN`` escapes (PyDarshan decodes
  names strictly); their ids are the hash of the real bytes.
- Mount entries: the capture's mount table (a whole-run record has none: the exporting
  machine's), mounts holding the log's files first, longest first, as many as fit
  Darshan's 3015-byte command-line-and-mounts budget; entries with whitespace are skipped.
- HEATMAP from the whole-run records' time series, every rank on one grid from the job
  start (:mod:`tb_iotrace.export.darshan_heatmap`); processes without a series split by
  module (captures, records written before the split, Darshan imports) have no heatmap
  record, and a log with none has no HEATMAP region.
"""
from __future__ import annotations

import os
import struct
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from typing import Any, BinaryIO

import numpy as np

from tb_iotrace.base.atomic import atomic_write
from tb_iotrace.analysis.mounts import Mount, parse_mountinfo, read_mountinfo
from tb_iotrace.base.recordid import darshan_ids, path_bytes, record_id, renamed_from
from tb_iotrace.store.timeseries import TimeSeries
from tb_iotrace.store.xplane import profile_start_ns, profile_stop_ns, read_io_info
from tb_iotrace.export import darshan_heatmap as heatmap
from tb_iotrace.export import darshan_objects

FORMAT_VERSION = b"3.41"
LIB_VER = "3.5.0"          # the Darshan release whose log format and module versions this writes
MAGIC = 6567223
HEADER_SIZE = 1328
MAX_MODS = 64
EXE_AND_MOUNTS_MAX = 3015  # DARSHAN_EXE_LEN: the reader keeps no more
METADATA_MAX = 1024
HOSTNAME_LEN = 64

POSIX_ID, STDIO_ID, DXT_POSIX_ID = 1, 9, 10
MODULES = {"POSIX": (POSIX_ID, 4), "STDIO": (STDIO_ID, 2)}
DXT_POSIX_VER = 1

# Darshan's DXT_POSIX traces these POSIX calls (by our hook names, native/hooks.def).
DXT_READS = frozenset(("read", "__read_chk", "pread", "pread64", "__pread_chk", "__pread64_chk", "readv",
                       "preadv", "preadv64", "preadv2", "preadv64v2"))
DXT_WRITES = frozenset(("write", "pwrite", "pwrite64", "writev", "pwritev", "pwritev64", "pwritev2",
                        "pwritev64v2"))

_JOB = struct.Struct("<7q1024s")
_BASE = struct.Struct("<Qq")
_DXT_FILE = struct.Struct("<Qqq64sqq")
_SEGMENT = np.dtype([("offset", "<i8"), ("length", "<i8"), ("start", "<f8"), ("end", "<f8")])


# module -> (integer counter names, float counter names) in Darshan's record order; the CLI
# passes the shim's table (native/counters.def): the exporter itself never loads the shim.
Layout = Mapping[str, tuple[Sequence[str], Sequence[str]]]


class LogError(ValueError):
    """The sources cannot be written as a Darshan log (the message says why, in one line)."""


@dataclass
class Process:
    """One rank's share of the log."""

    label: str                 # "<run>/<host>"
    host: str                  # DXT hostname
    start_ns: int              # the zero of this process's counters
    end_ns: int
    exe: str
    jobid: int
    files: list[dict[str, Any]]
    partial: bool
    dropped: int
    mounts: list[Mount]
    trace: dict[str, np.ndarray] | None = None
    base_rank: int = 0
    nranks: int = 1
    imported: bool = False     # records of a Darshan log (import-darshan): they carry their rank
    series: TimeSeries | None = None   # a whole-run record's time series


# --------------------------------------------------------------------------- gathering


def _process(src: Any) -> Process:
    files = src.files()
    life = src.life_ns()
    if life is not None:            # a whole process's recording (tb-iotrace run)
        start, end = life
        exe = src.exe()
        host, jobid, mounts = src.machine_name(), int((src.process() or {}).get("pid") or 0), read_mountinfo()
    else:
        space, tr = src.space(), src.io_trace()
        info = read_io_info(space) or {}
        # the capture's clock: TensorFlow's profile start, else the one the I/O was written on
        start = profile_start_ns(space) or int(info.get("profile_start_ns") or 0)
        end = profile_stop_ns(space) or 0
        if not start and tr is not None and len(tr):
            start = int(tr.start_ns.min())
        if not end and tr is not None and len(tr):
            end = int(tr.end_ns.max())
        exe = f"tb_iotrace-capture {getattr(src, 'name', src.path)}"
        host, jobid = src.host, 0
        mounts = parse_mountinfo(tr.mounts) if tr is not None and tr.mounts else read_mountinfo()
    objects = darshan_objects.posix_records(src.objects(), start)
    if objects:
        files = [*files, *objects]
    got = src.io_columns()
    trace = got[0] if got is not None else None
    ts = src.timeseries()
    return Process(label=f"{src.run}/{src.host}", host=host, start_ns=start, end_ns=max(end, start), exe=exe,
                   jobid=jobid, files=files, partial=bool(src.partial()), dropped=int(src.dropped()),
                   mounts=mounts, trace=trace, series=TimeSeries.from_dict(ts) if ts else None)


def gather(sources: list[Any]) -> list[Process]:
    """The processes of the log, ranks assigned. Raises LogError for what cannot be a log."""
    runs = sorted({s.run for s in sources})
    if len(runs) > 1:
        raise LogError(f"{len(runs)} runs ({', '.join(runs[:4])}{', ...' if len(runs) > 4 else ''}): "
                       f"a Darshan log is one job, pick a run with --run")
    procs = [_process(s) for s in sources]
    if not any(p.files for p in procs):
        raise LogError("no I/O recorded (no POSIX or STDIO file records): nothing to export")
    rank = 0
    for p in procs:
        given = [int(f["rank"]) for f in p.files if isinstance(f, dict) and "rank" in f]
        p.base_rank, p.nranks, p.imported = rank, max(given, default=0) + 1, bool(given)
        rank += p.nranks
    return procs


# --------------------------------------------------------------------------- records


def _shift(name: str, value: float, by: float) -> float:
    return value + by if by and value and "TIMESTAMP" in name else value


def _pack_record(module: str, rid: int, rank: int, f: dict[str, Any], remap: dict[int, int], shift: float,
                 layout: Layout) -> bytes:
    ints, floats = layout[module]
    c, fc = f["counters"], f["fcounters"]
    if not isinstance(c, dict) or not isinstance(fc, dict):
        raise LogError("a file record's counters are not a name -> value table")
    cv = [int(c.get(k, 0)) for k in ints]
    if module == "POSIX":
        i = list(ints).index("POSIX_RENAMED_FROM")
        cv[i] = renamed_from(cv[i], remap)
    fv = [_shift(k, float(fc.get(k, 0.0)), shift) for k in floats]
    return _BASE.pack(rid, rank) + struct.pack(f"<{len(ints)}q{len(floats)}d", *cv, *fv)


def _dxt(p: Process, posix_ids: dict[str, int], job_start_ns: int) -> list[bytes]:
    """DXT_POSIX records of one process: per (rank, file), its writes then its reads, each in
    time order. A Darshan import's trace keeps each segment's rank as its thread id."""
    t = p.trace
    if t is None or not len(t["start_ns"]):
        return []
    op_names, op_code = np.unique(np.asarray(t["op"], dtype=object).astype(str), return_inverse=True)
    w_ops = np.array([o in DXT_WRITES for o in op_names.tolist()], bool)
    r_ops = np.array([o in DXT_READS for o in op_names.tolist()], bool)
    ok = np.asarray(t["returned"]) >= 0
    is_w = w_ops[op_code] & ok
    keep = np.flatnonzero((is_w | r_ops[op_code]) & ok)
    if not len(keep):
        return []
    names, code = np.unique(np.asarray(t["path"], dtype=object)[keep].astype(str), return_inverse=True)
    ranks = (np.asarray(t["tid"])[keep].astype(np.int64) if p.imported else np.zeros(len(keep), np.int64))
    start = np.asarray(t["start_ns"])[keep]
    order = np.lexsort((start, code, ranks))            # by rank, then file, then time
    keep, code, ranks = keep[order], code[order], ranks[order]
    cut = np.flatnonzero((np.diff(code) != 0) | (np.diff(ranks) != 0)) + 1
    host = path_bytes(p.host)[:HOSTNAME_LEN - 1]
    offset, returned = np.asarray(t["offset"]), np.asarray(t["returned"])
    t0, t1 = np.asarray(t["start_ns"]), np.asarray(t["end_ns"])
    out = []
    for lo, hi in zip(np.r_[0, cut].tolist(), np.r_[cut, len(keep)].tolist()):
        rid = posix_ids.get(str(names[code[lo]]))
        if rid is None:
            continue
        rows = keep[lo:hi]
        w = is_w[rows]
        segs = []
        for sel in (rows[w], rows[~w]):
            seg = np.empty(len(sel), _SEGMENT)
            seg["offset"], seg["length"] = offset[sel], returned[sel]
            seg["start"] = (t0[sel] - job_start_ns) / 1e9
            seg["end"] = (t1[sel] - job_start_ns) / 1e9
            segs.append(seg)
        out.append(_DXT_FILE.pack(rid, p.base_rank + int(ranks[lo]), 0, host, len(segs[0]), len(segs[1]))
                   + segs[0].tobytes() + segs[1].tobytes())
    return out


# --------------------------------------------------------------------------- job region


def _text(s: str) -> bytes:
    """UTF-8 bytes for the log; bytes that are not UTF-8 become ``\\xNN`` escapes."""
    return path_bytes(s).decode("utf-8", "backslashreplace").encode("utf-8")


def _mount_lines(procs: list[Process], room: int) -> bytes:
    seen: dict[str, str] = {}
    for p in procs:
        for m in p.mounts:
            seen[m.mount_point.rstrip("/") or "/"] = m.fs_type   # later mounts hide earlier ones
    table = [(mp, fs) for mp, fs in seen.items() if mp and fs and not any(ch.isspace() for ch in mp + fs)]
    paths = [str(f["path"]) for p in procs for f in p.files]

    def used(mp: str) -> bool:
        return any(x == mp or x.startswith(mp.rstrip("/") + "/") for x in paths)

    table.sort(key=lambda m: (not used(m[0]), -len(m[0]), m[0]))
    out = b""
    for mp, fs in table or [("/", "unknown")]:
        line = b"\n" + _text(fs) + b"\t" + _text(mp)
        if len(out) + len(line) > room:
            break
        out += line
    return out or b"\nunknown\t/"


def _version() -> str:
    try:
        return metadata.version("tb-iotrace")
    except metadata.PackageNotFoundError:
        return "unknown"


def _job_region(procs: list[Process], start_ns: int, end_ns: int, nprocs: int) -> bytes:
    meta = [f"lib_ver={LIB_VER}", f"producer=tb_iotrace {_version()}"]
    meta += partial_lines(procs, start_ns)      # before the rank names: never cut by the budget
    meta += [f"rank{p.base_rank}={p.label}" for p in procs]
    text = b""
    for line in meta:
        b = _text(line.replace("\n", " ")) + b"\n"
        if len(text) + len(b) >= METADATA_MAX:
            break
        text += b
    exe = _text(" ".join(procs[0].exe.split()) or "unknown")[:EXE_AND_MOUNTS_MAX // 2]
    mounts = _mount_lines(procs, EXE_AND_MOUNTS_MAX - len(exe))
    job = _JOB.pack(os.getuid(), start_ns // 10**9, start_ns % 10**9, end_ns // 10**9, end_ns % 10**9,
                    nprocs, procs[0].jobid, text)
    return job + exe + mounts + b"\0"


def partial_lines(procs: list[Process], start_ns: int) -> list[str]:
    """Metadata naming the partial ranks: ``partial_ranks=<r>,...`` and, per partial rank,
    ``partial_rank<r>=<why, and until when it counts>`` (empty when none is partial)."""
    part = [p for p in procs if p.partial]
    if not part:
        return []
    ranks = [r for p in part for r in range(p.base_rank, p.base_rank + p.nranks)]
    lines = ["partial_ranks=" + ",".join(map(str, ranks))]
    for p in part:
        until = (p.end_ns - start_ns) / 1e9
        trace = "with its calls up to then in DXT" if p.trace is not None and len(p.trace["start_ns"]) else \
            "no calls in DXT"
        lines.append(f"partial_rank{p.base_rank}=counts up to {until:.3f} s after the job start, its last "
                     f"periodic flush ({trace}): the process left no final record (killed, still running, "
                     f"or its last write failed)")
    return lines


# --------------------------------------------------------------------------- the log


def build(procs: list[Process], layout: Layout) -> bytes:
    """The whole log as bytes."""
    starts = [p.start_ns for p in procs if p.start_ns]
    job_start = min(starts, default=0)
    job_end = max([p.end_ns for p in procs] + [job_start])
    nprocs = sum(p.nranks for p in procs)
    names: dict[int, bytes] = {}
    mods: dict[int, list[bytes]] = {POSIX_ID: [], STDIO_ID: [], DXT_POSIX_ID: [], heatmap.HEATMAP_ID: []}
    g = heatmap.grid((job_end - job_start) / 1e9)
    partial = 0
    for p in procs:
        ids, remap = darshan_ids(p.files)
        shift = (p.start_ns - job_start) / 1e9 if p.start_ns else 0.0
        posix_ids: dict[str, int] = {}
        for f, rid in zip(p.files, ids):
            module = f.get("module")
            if module not in MODULES:
                continue
            given = int(f.get("rank", 0))          # a Darshan import's own rank; -1 = shared
            rank = -1 if given < 0 else p.base_rank + given
            mods[MODULES[module][0]].append(_pack_record(module, rid, rank, f, remap, shift, layout))
            names.setdefault(rid, _text(str(f["path"])))
            if module == "POSIX":
                posix_ids[str(f["path"])] = rid
        mods[DXT_POSIX_ID] += _dxt(p, posix_ids, job_start)
        if p.dropped:
            partial |= 1 << DXT_POSIX_ID
        if p.partial:
            partial |= (1 << POSIX_ID) | (1 << STDIO_ID) | (1 << heatmap.HEATMAP_ID) | (1 << DXT_POSIX_ID)
        for module in MODULES if p.series is not None else ():
            got = heatmap.module_bins(p.series, module, job_start, g)
            if got is not None:
                name = f"heatmap:{module}"
                mods[heatmap.HEATMAP_ID].append(heatmap.pack(record_id(name), p.base_rank, g, *got))
                names.setdefault(record_id(name), name.encode())
    versions = {POSIX_ID: MODULES["POSIX"][1], STDIO_ID: MODULES["STDIO"][1], DXT_POSIX_ID: DXT_POSIX_VER,
                heatmap.HEATMAP_ID: heatmap.HEATMAP_VER}

    body = bytearray()

    def region(raw: bytes) -> tuple[int, int]:
        z = zlib.compress(raw)
        off = HEADER_SIZE + len(body)
        body.extend(z)
        return off, len(z)

    region(_job_region(procs, job_start, job_end, nprocs))
    name_map = region(b"".join(struct.pack("<Q", rid) + n + b"\0" for rid, n in names.items()))
    mod_map = [(0, 0)] * MAX_MODS
    mod_ver = [0] * MAX_MODS
    for mid in sorted(mods):
        if mods[mid]:
            mod_map[mid] = region(b"".join(mods[mid]))
            mod_ver[mid] = versions[mid]
        else:
            partial &= ~(1 << mid)   # no flag for a module the log does not have
    header = (struct.pack("<8sqB7xQ", FORMAT_VERSION, MAGIC, 0, partial) + struct.pack("<2Q", *name_map)
              + b"".join(struct.pack("<2Q", *m) for m in mod_map) + struct.pack(f"<{MAX_MODS}I", *mod_ver))
    assert len(header) == HEADER_SIZE
    return header + bytes(body)


def write(sources: list[Any], out: str, layout: Layout) -> dict[str, int]:
    """Write the sources as one Darshan log at ``out`` (atomically: nothing is left on failure).
    Returns counts: ``ranks``, ``posix`` and ``stdio`` records, ``bytes``."""
    try:
        procs = gather(sources)
        data = build(procs, layout)
    except LogError:
        raise
    except (KeyError, TypeError, ValueError, struct.error, OverflowError) as exc:
        raise LogError(f"a record cannot be written ({type(exc).__name__}: {exc})") from None

    def put(fh: BinaryIO) -> None:
        fh.write(data)

    atomic_write(out, put)
    counts = {"ranks": sum(p.nranks for p in procs), "bytes": len(data),
              "partial_ranks": sum(p.nranks for p in procs if p.partial)}
    counts["posix"] = sum(1 for p in procs for f in p.files if f.get("module") == "POSIX")
    counts["stdio"] = sum(1 for p in procs for f in p.files if f.get("module") == "STDIO")
    counts["objects"] = sum(1 for p in procs for f in p.files if darshan_objects.is_object_name(str(f["path"])))
    return counts
