"""What the findings read: one capture's I/O calls classified (data files, reads, writes,
metadata), per file, per thread, with the host timeline's input waits (``Context``), and
the per-step, per-stage and per-file-system tables built from it.

Only *data files* count: the process loading its code (Python imports, ``.so``,
``site-packages``, the directories the import system scans, ``~/.keras/keras.json``: the
rule is :mod:`tb_iotrace.base.codepaths`) is left out, as Darshan leaves out /usr and /lib.
"""
from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from typing import Any

import numpy as np

from tb_iotrace.analysis.attribution import STEP_EVENT_NAMES, Attribution, innermost, op_kind
from tb_iotrace.base.codepaths import code_paths, is_code_path
from tb_iotrace.model.endpoints import is_endpoint, socket_intervals
from tb_iotrace.store.xplane import HOST_PLANE, LINE_PREFIX, IoTrace, columns, find_plane, profile_start_ns, thread_line_id
from tb_iotrace.analysis.intervals import clip, merge, overlap
from tb_iotrace.analysis.mounts import Mount, MountTable
from tb_iotrace.analysis.pytorch import TorchRun, torch_run
from tb_iotrace.analysis.thresholds import Thresholds

SYNC_OPS = ("fsync", "fdatasync")
OPEN_OPS = ("open", "open64", "openat", "openat64", "__open_2", "__open64_2", "__openat_2",
            "__openat64_2", "creat", "creat64", "fopen", "fopen64", "fdopen", "freopen", "freopen64")
_INDEX = re.compile(r"\[\d+\]")


def is_library_path(path: str) -> bool:
    """The path rule of :mod:`tb_iotrace.base.codepaths` on its own (no directories, no sys.path)."""
    return is_code_path(path)


def stage_name(event: str) -> str:
    """``Iterator::Root::...::FlatMap[12]::TFRecord`` -> ``Iterator::Root::...::FlatMap::TFRecord``."""
    return _INDEX.sub("", event)


_FILE_TYPES = ((stat.S_ISREG, "regular"), (stat.S_ISFIFO, "fifo"), (stat.S_ISSOCK, "socket"),
               (stat.S_ISCHR, "char-device"), (stat.S_ISBLK, "block-device"), (stat.S_ISDIR, "directory"))


def file_type(path: str, record: dict[str, Any] | None = None) -> str | None:
    """What kind of file ``path`` is: the capture's word when its record carries one
    (``"file_type"``), else what the path is where the analysis runs (right when it runs where
    the job ran, as for the mount table), else None (unknown: treated as a regular file)."""
    got = (record or {}).get("file_type")
    if isinstance(got, str) and got:
        return got
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    return next((name for test, name in _FILE_TYPES if test(mode)), "other")


def _factorize(values: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """(code per row, distinct values in first-seen order)."""
    seen: dict[str, int] = {}
    codes = np.fromiter((seen.setdefault(v, len(seen)) for v in values.tolist()), np.int64, len(values))
    return codes, list(seen)


@dataclass
class FileStats:
    path: str
    fs: Mount
    opens: int = 0
    reads: int = 0
    writes: int = 0
    meta_calls: int = 0
    stats: int = 0
    seeks: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    seq_reads: int = 0
    max_byte_read: int = -1
    read_time: float = 0.0
    write_time: float = 0.0
    meta_time: float = 0.0
    zero_reads: int = 0          # from the trace
    # from the trace: reads that began inside the file's previous read, after its start (a
    # reader's read-ahead window read again as it moves forward: ArrayRecord's reader reads from
    # each record to the next 32 KiB boundary), and the bytes of those reads the previous one had
    ahead_reads: int = 0
    ahead_bytes: int = 0
    file_type: str | None = None  # "regular", "fifo", "socket", "char-device", ...; None: unknown

    @property
    def regular(self) -> bool:
        """Not known to be anything but a regular file (a pipe, socket or device has no size:
        its bytes are a stream, never "the file read again")."""
        return self.file_type in (None, "regular")

    @property
    def size_seen(self) -> int:
        """Bytes of the file the window touched (highest byte read + 1)."""
        return self.max_byte_read + 1 if self.max_byte_read >= 0 else 0

    @property
    def io_time(self) -> float:
        return self.read_time + self.write_time + self.meta_time

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "mount_point": self.fs.mount_point, "fs_type": self.fs.fs_type,
                "opens": self.opens, "reads": self.reads, "writes": self.writes,
                "meta_calls": self.meta_calls, "bytes_read": self.bytes_read,
                "bytes_written": self.bytes_written, "seq_reads": self.seq_reads,
                "size_seen": self.size_seen, "zero_reads": self.zero_reads,
                "read_time_s": self.read_time, "write_time_s": self.write_time,
                "meta_time_s": self.meta_time, "file_type": self.file_type}


class Context:
    """Everything the finding rules look at (built once per analysis)."""

    def __init__(self, trace: IoTrace, att: Attribution | None, space: Any, mounts: MountTable,
                 th: Thresholds, python: dict[str, Any] | None = None,
                 checkpoint_calls: list[dict[str, Any]] | None = None):
        self.trace, self.att, self.th, self.mounts = trace, att, th, mounts
        # a whole-run record's noted checkpoint library calls (tb_iotrace.base.ckptcalls); a
        # capture's come with its trace (trace.checkpoint_calls)
        self.checkpoint_calls: list[dict[str, Any]] = list(checkpoint_calls or [])
        # the checkpoint phases once found (tb_iotrace.analysis.checkpoints.detection), what the
        # checkpoint findings see; None until then
        self.checkpoint_phases: list[dict[str, Any]] | None = None
        # where the capture's ps clock starts (epoch ns; None: no profile start in the capture)
        self.profile_start_ns: int | None = profile_start_ns(space) if space is not None else None
        n = len(trace)
        # per distinct op / path, then spread to rows (a capture has few of each, many rows)
        op_code, ops = _factorize(trace.op)
        self.path_code, self.paths = _factorize(trace.path)
        op_kinds = np.array(["write" if o in SYNC_OPS else op_kind(o) for o in ops] or [""], dtype=object)
        self.kind = op_kinds[op_code] if n else np.zeros(0, object)
        self.is_sync = np.isin(np.asarray(ops or [""], dtype=object), SYNC_OPS)[op_code] if n else np.zeros(0, bool)
        self.code = code_paths([*self.paths, *(str(r["path"]) for r in trace.counters)], python)
        # network endpoints (tcp://...) are storage, not data files: their calls are socket_rows
        path_data = np.array([p not in self.code and not is_endpoint(p) for p in self.paths] or [False], bool)
        self.data = path_data[self.path_code] if n else np.zeros(0, bool)
        path_net = np.array([is_endpoint(p) for p in self.paths] or [False], bool)
        self.socket_rows = np.flatnonzero(path_net[self.path_code]) if n else np.zeros(0, np.int64)
        self.path_mount = [mounts.lookup(p) for p in self.paths]
        self.ok = trace.errno == 0
        self.dur_s = (trace.end_ns - trace.start_ns) / 1e9
        if att is not None:
            self.s_ps, self.e_ps = att.start_ps, att.end_ps
        else:
            self.s_ps = (trace.start_ns - (int(trace.start_ns.min()) if n else 0)) * 1000
            self.e_ps = (trace.end_ns - (int(trace.start_ns.min()) if n else 0)) * 1000
        self.read_rows = np.flatnonzero(self.data & self.ok & (self.kind == "read"))
        self.write_rows = np.flatnonzero(self.data & self.ok & (self.kind == "write"))
        self.meta_rows = np.flatnonzero(self.data & self.ok & (self.kind == "meta"))
        self.files = self._files()
        self.torch: TorchRun | None = torch_run(space)    # None: not a PyTorch (Kineto) capture
        self._host(space)

    def socket_iv(self) -> tuple[np.ndarray, np.ndarray]:
        """The storage socket calls of the capture (ps, merged), by the model's one rule for them
        (:func:`tb_iotrace.model.endpoints.socket_intervals`)."""
        tr, rows = self.trace, self.socket_rows
        per = socket_intervals({"start_ns": self.s_ps[rows], "end_ns": self.e_ps[rows], "path": tr.path[rows],
                                "tid": tr.tid[rows], "fd": tr.fd[rows], "errno": tr.errno[rows]}) if len(rows) else {}
        if not per:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        return merge(np.concatenate([s for s, _ in per.values()]), np.concatenate([e for _, e in per.values()]))

    # ------------------------------------------------------------------ files
    def _per_file(self, rows: np.ndarray) -> list[tuple[int, int]]:
        """(path code, rows) for each file with rows."""
        counts = np.bincount(self.path_code[rows], minlength=len(self.paths))
        return [(int(c), int(counts[c])) for c in np.flatnonzero(counts)]

    def rows_of_files(self, rows: np.ndarray, paths: list[str]) -> np.ndarray:
        """The ``rows`` whose file is one of ``paths``."""
        index = {p: i for i, p in enumerate(self.paths)}
        wanted = np.zeros(len(self.paths) + 1, bool)
        wanted[[index[p] for p in paths if p in index]] = True
        return rows[wanted[self.path_code[rows]]]

    def _files(self) -> dict[str, FileStats]:
        out: dict[str, FileStats] = {}
        for rec in self.trace.counters:
            path = str(rec["path"])
            if path in self.code or is_endpoint(path):
                continue
            m, c, fc = rec["module"], rec["counters"], rec["fcounters"]
            f = out.get(path)
            if f is None:
                f = out[path] = FileStats(path, self.mounts.lookup(path))
            if rec.get("file_type"):
                f.file_type = str(rec["file_type"])
            f.opens += int(c.get(f"{m}_OPENS", 0)) + int(c.get(f"{m}_FDOPENS", 0))
            f.reads += int(c.get(f"{m}_READS", 0))
            f.writes += int(c.get(f"{m}_WRITES", 0))
            f.stats += int(c.get(f"{m}_STATS", 0))
            f.seeks += int(c.get(f"{m}_SEEKS", 0))
            f.bytes_read += int(c.get(f"{m}_BYTES_READ", 0))
            f.bytes_written += int(c.get(f"{m}_BYTES_WRITTEN", 0))
            if m == "POSIX":
                f.seq_reads += int(c.get("POSIX_SEQ_READS", 0))
            f.max_byte_read = max(f.max_byte_read, int(c.get(f"{m}_MAX_BYTE_READ", -1)))
            f.read_time += float(fc.get(f"{m}_F_READ_TIME", 0.0))
            f.write_time += float(fc.get(f"{m}_F_WRITE_TIME", 0.0))
            f.meta_time += float(fc.get(f"{m}_F_META_TIME", 0.0))
        tr = self.trace
        if len(tr):
            for code, n in self._per_file(self.meta_rows):
                if self.paths[code] in out:
                    out[self.paths[code]].meta_calls += n
        if not self.trace.counters and len(tr):     # no counters: rebuild the basics from the trace
            rows = np.concatenate([self.read_rows, self.write_rows, self.meta_rows])
            last: dict[str, int] = {}          # Darshan's last_byte_read, reset on open
            for i in rows[np.argsort(tr.start_ns[rows], kind="stable")].tolist():
                path = str(tr.path[i])
                f = out.get(path)
                if f is None:
                    f = out[path] = FileStats(path, self.mounts.lookup(path))
                k = self.kind[i]
                if k == "read":
                    f.reads += 1
                    f.bytes_read += max(int(tr.returned[i]), 0)
                    f.read_time += float(self.dur_s[i])
                    if tr.offset[i] >= 0:
                        o, moved = int(tr.offset[i]), max(int(tr.returned[i]), 0)
                        f.seq_reads += int(o > last.get(path, 0))
                        last[path] = o + moved - 1
                        f.max_byte_read = max(f.max_byte_read, o + moved - 1)
                elif k == "write":
                    f.writes += int(not self.is_sync[i])
                    f.bytes_written += max(int(tr.returned[i]), 0) if not self.is_sync[i] else 0
                    f.write_time += float(self.dur_s[i])
                else:
                    f.meta_calls += 1
                    if str(tr.op[i]) in OPEN_OPS:
                        f.opens += 1
                        last[path] = 0
                    f.meta_time += float(self.dur_s[i])
        if len(tr):
            # after the files are known, with counters or from the trace alone
            zero = self.read_rows[tr.returned[self.read_rows] == 0]
            for code, n in self._per_file(zero):
                if self.paths[code] in out:
                    out[self.paths[code]].zero_reads += n
            self._read_ahead(out)
        return out

    def _read_ahead(self, out: dict[str, FileStats]) -> None:
        """Per file, the reads that began inside its previous read, after that read's start (the
        same window read again is not moving forwards)
        (:attr:`FileStats.ahead_reads`), and the bytes they share with it (``ahead_bytes``)."""
        tr = self.trace
        rows = self.read_rows[(tr.offset[self.read_rows] >= 0) & (tr.returned[self.read_rows] > 0)]
        if len(rows) < 2:
            return
        code = self.path_code[rows]
        rows = rows[np.lexsort((tr.start_ns[rows], code))]
        code = self.path_code[rows]
        off = tr.offset[rows].astype(np.int64)
        end = off + tr.returned[rows].astype(np.int64)
        same = code[1:] == code[:-1]
        ahead = same & (off[1:] > off[:-1]) & (off[1:] < end[:-1])
        if not ahead.any():
            return
        shared = np.where(ahead, np.minimum(end[1:], end[:-1]) - off[1:], 0)
        for c in np.unique(code[1:][ahead]).tolist():
            f = out.get(self.paths[c])
            if f is not None:
                sel = ahead & (code[1:] == c)
                f.ahead_reads += int(sel.sum())
                f.ahead_bytes += int(shared[sel].sum())

    # ------------------------------------------------------------------ host timeline
    def _host(self, space: Any) -> None:
        """Input-wait intervals, step lines (the training thread) and stage of each I/O row."""
        n = len(self.trace)
        self.wait_iv = (np.zeros(0, np.int64), np.zeros(0, np.int64))
        self.step_line_ids: set[int] = set()
        self.stage = np.full(n, "", dtype=object)
        self.train_rows = np.zeros(n, bool)
        host = find_plane(space, HOST_PLANE) if space is not None else None
        if host is None or self.att is None:
            return
        pc = columns(host)
        for ln in pc.lines:
            if ln.name.startswith(LINE_PREFIX) or not len(ln):
                continue
            if np.isin(pc.event_names(ln), STEP_EVENT_NAMES).any():
                self.step_line_ids.add(int(ln.id))
        self.wait_iv = self.att.wait_iv      # tb_iotrace.model.stepwait's rule, as the report and the tab
        # stage: the innermost enclosing tf.data iterator event on the row's own host line
        att = self.att
        for li in np.unique(att.host_line[att.host_line >= 0]).tolist():
            ln = pc.lines[li]
            rows = np.flatnonzero(att.host_line == li)
            names = pc.event_names(ln)
            it = np.fromiter((str(x).startswith("Iterator::") for x in names), bool, len(names))
            if it.any():
                nm, _ = innermost(ln.start_ps[it], ln.end_ps[it], names[it], names[it], self.s_ps[rows])
                self.stage[rows] = [stage_name(str(x)) for x in nm]
        # rows on the training thread: the thread's own line (matched by TF's thread hash) holds steps
        for tid, info in self.trace.threads.items():
            if thread_line_id(info.pthread_id) in self.step_line_ids:
                self.train_rows |= self.trace.tid == tid


def steps_table(ctx: Context) -> list[dict[str, Any]]:
    att = ctx.att
    if att is None or not att.steps:
        return []
    io_rows = np.concatenate([ctx.read_rows, ctx.meta_rows])
    io_iv = merge(ctx.s_ps[io_rows], ctx.e_ps[io_rows])
    out = []
    for s in att.steps:
        d = s.to_dict()
        wait = clip(ctx.wait_iv, s.start_ps, s.end_ps)
        covered = overlap(wait, io_iv)
        d["io_during_wait_ps"] = covered
        d["other_wait_ps"] = max(s.wait_ps - covered, 0)     # decode / preprocessing / scheduling
        d["io_share_of_wait"] = covered / s.wait_ps if s.wait_ps > 0 else 0.0
        out.append(d)
    return out


def stages_table(ctx: Context) -> list[dict[str, Any]]:
    # per-row temporaries kept few and small: this runs on millions of rows
    tr = ctx.trace
    nr, nw = len(ctx.read_rows), len(ctx.write_rows)
    rows = np.concatenate([ctx.read_rows, ctx.write_rows, ctx.meta_rows])
    if not len(rows):
        return []
    stage = ctx.stage[rows]
    is_tf = stage != ""
    if ctx.att is not None:
        key = ctx.att.enclosing[rows]
        key[key == ""] = "(no host event)"
    else:
        key = np.full(len(rows), "(no host event)", dtype=object)
    key[is_tf] = stage[is_tf]
    del stage
    code, keys = _factorize(key)
    del key
    k = len(keys)
    count = lambda w=None, c=code: np.bincount(c, weights=w, minlength=k)  # noqa: E731
    calls = count()
    reads = np.bincount(code[:nr], minlength=k)
    writes = np.bincount(code[nr:nr + nw], minlength=k)
    metas = np.bincount(code[nr + nw:], minlength=k)
    b_read = count(np.clip(tr.returned[ctx.read_rows], 0, None), code[:nr])
    w_rows = ctx.write_rows
    data_w = ~ctx.is_sync[w_rows]
    b_written = count(np.where(data_w, np.clip(tr.returned[w_rows], 0, None), 0), code[nr:nr + nw])
    t_io = count(ctx.dur_s[rows])
    n_paths = len(ctx.paths) + 1
    if k * n_paths <= 1 << 24:         # distinct (stage, file) pairs: a dense table
        seen = np.zeros(k * n_paths, bool)
        seen[code * n_paths + ctx.path_code[rows]] = True
        pairs = np.flatnonzero(seen)
    else:
        pairs = np.unique(code * n_paths + ctx.path_code[rows])
    files: list[list[int]] = [[] for _ in range(k)]
    for pc in pairs.tolist():
        files[pc // n_paths].append(pc % n_paths)
    tf_key = np.zeros(k, bool)
    tf_key[code[is_tf]] = True
    out = []
    for g in np.argsort(-t_io, kind="stable").tolist():
        names = sorted(ctx.paths[i] for i in files[g])
        out.append({"stage": keys[g], "kind": "tf.data" if tf_key[g] else "op", "calls": int(calls[g]),
                    "reads": int(reads[g]), "writes": int(writes[g]), "meta_calls": int(metas[g]),
                    "bytes_read": int(b_read[g]), "bytes_written": int(b_written[g]),
                    "io_time_s": float(t_io[g]), "num_files": len(names), "files": names[:20]})
    return out


def fs_table(ctx: Context) -> list[dict[str, Any]]:
    tr, th = ctx.trace, ctx.th
    points: dict[str, int] = {}
    mount_of_path = np.array([points.setdefault(m.mount_point, len(points)) for m in ctx.path_mount] or [0])
    first = {}
    for m in ctx.path_mount:
        first.setdefault(m.mount_point, m)
    out = []
    for mp, mi in points.items():
        def sel(rows: np.ndarray) -> np.ndarray:
            return rows[mount_of_path[ctx.path_code[rows]] == mi]
        r, w, m = sel(ctx.read_rows), sel(ctx.write_rows), sel(ctx.meta_rows)
        if not (len(r) or len(w) or len(m)):
            continue
        moved_r = np.clip(tr.returned[r], 0, None)
        large = moved_r >= th.small_read_bytes
        w_data = w[~ctx.is_sync[w]]
        g: dict[str, Any] = first[mp].to_dict()
        rt, lt, wt = float(ctx.dur_s[r].sum()), float(ctx.dur_s[r][large].sum()), float(ctx.dur_s[w].sum())
        g.update({
            "num_files": int(len(np.unique(ctx.path_code[np.concatenate([r, w, m])]))),
            "reads": int(len(r)), "bytes_read": int(moved_r.sum()), "read_time_s": rt,
            "large_reads": int(large.sum()), "large_bytes": int(moved_r[large].sum()), "large_read_time_s": lt,
            "writes": int(len(w_data)), "bytes_written": int(np.clip(tr.returned[w_data], 0, None).sum()),
            "write_time_s": wt, "meta_calls": int(len(m)),
        })
        g["read_bandwidth"] = g["bytes_read"] / rt if rt > 0 else None
        g["large_read_bandwidth"] = g["large_bytes"] / lt if lt > 0 else None
        g["read_latency_median_s"] = float(np.median(ctx.dur_s[r])) if len(r) else None
        g["meta_latency_median_s"] = float(np.median(ctx.dur_s[m])) if len(m) else None
        g["write_bandwidth"] = g["bytes_written"] / wt if wt > 0 else None
        out.append(g)
    out.sort(key=lambda g: -(g["bytes_read"] + g["bytes_written"]))
    return out
