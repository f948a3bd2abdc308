"""The finding rules. Each returns a finding dict or None:

``{"id", "severity": "info"|"warning"|"critical", "title", "statement", "evidence": {...},
"files": [...], "ops": [...], "suggestion"}``

Thresholds come from thresholds.py; docs/findings.md gives the reasoning for each rule.
"""
from __future__ import annotations

from collections import Counter
from typing import Any, Callable

import numpy as np

from tb_iotrace.analysis import object_findings
from tb_iotrace.analysis.checkpoints import phase_findings
from tb_iotrace.analysis.context import Context, file_type, fs_table
from tb_iotrace.analysis.epochs import epochs
from tb_iotrace.analysis.impact import grade, impact_of
from tb_iotrace.analysis.intervals import in_flight, merge, overlap
from tb_iotrace.analysis.pytorch import NEXT_EVENT, SUGGESTIONS, TorchRun, input_bound_advice, io_during, loader_text, torch_loaded, worker_starts, worker_stops

TITLES = {
    "input-bound": "Steps wait for input",
    "worker-restarts": "DataLoader workers started anew each epoch",
    "small-reads": "Most reads are small",
    "eof-zero-reads": "One extra zero-length read per file",
    "many-small-files": "Many small files, one per sample",
    "metadata-heavy": "Metadata calls dominate I/O time",
    "random-access": "Random reads",
    "redundant-reads": "Files read more than once",
    "serial-reads": "File reads one at a time while steps wait",
    "staging-candidates": "Small files worth staging on a fast tier",
    "blocking-writes": "Writes block the training thread",
    "small-writes": "Many small writes",
    "slow-filesystem": "A slow file system",
}
ORDER = list(TITLES)
ROWS = "_rows"       # a finding's I/O rows while the rules run (never returned)


def _b(n: float) -> str:
    for unit, k in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(n) >= k:
            return f"{n / k:.1f} {unit}"
    return f"{int(n)} B"


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _ms(s: float) -> str:
    return f"{s * 1e3:.1f} ms"


def _finding(fid: str, severity: str, statement: str, evidence: dict[str, Any], suggestion: str,
             files: list[str] | None = None, ops: list[str] | None = None,
             rows: np.ndarray | None = None) -> dict[str, Any]:
    """A finding; ``rows``: the I/O rows it is about, whose blocking time is its impact
    (:mod:`.impact`; taken out before the finding is returned)."""
    out = {"id": fid, "severity": severity, "title": TITLES[fid], "statement": statement,
           "evidence": evidence, "files": list(files or [])[:20], "ops": list(ops or [])[:20],
           "suggestion": suggestion}
    if rows is not None:
        out[ROWS] = rows
    return out


def _sug(ctx: Context, fid: str, text: str) -> str:
    """A finding's suggestion, in PyTorch's terms on a PyTorch run (pytorch.SUGGESTIONS)."""
    torch = ctx.torch is not None or torch_loaded([*ctx.paths, *(r["path"] for r in ctx.trace.counters)])
    return (SUGGESTIONS.get(fid) or text) if torch else text


def _top(counter: Counter, n: int = 20) -> list[str]:
    return [k for k, _ in counter.most_common(n) if k]


def _stages_of(ctx: Context, rows: np.ndarray) -> list[str]:
    stage = ctx.stage[rows]
    if ctx.att is None:
        return _top(Counter(stage.tolist()))
    return _top(Counter(np.where(stage != "", stage, ctx.att.enclosing[rows]).tolist()))


def _distinct_files(ctx: Context, rows: np.ndarray) -> int:
    return int(len(np.unique(ctx.path_code[rows])))


def _wait_stats(ctx: Context, steps: list[dict[str, Any]]) -> tuple[int, int, int, int, str]:
    """(time, input wait, I/O during the wait, steps or waits counted, basis). Without step
    markers the span from the first to the last input wait stands in for the training loop."""
    if steps:
        total = sum(s["duration_ps"] for s in steps)
        wait = sum(s["input_wait_ps"] for s in steps)
        io = sum(s["io_during_wait_ps"] for s in steps)
        return total, wait, io, len(steps), "steps"
    ws, we = ctx.wait_iv
    if not len(ws):
        return 0, 0, 0, 0, "none"
    io_rows = np.concatenate([ctx.read_rows, ctx.meta_rows])
    io = overlap(ctx.wait_iv, merge(ctx.s_ps[io_rows], ctx.e_ps[io_rows]))
    return int(we[-1] - ws[0]), int((we - ws).sum()), io, len(ws), "input waits (no step markers)"


# ---------------------------------------------------------------------------- rules


def input_bound(ctx: Context, steps: list[dict[str, Any]]) -> dict[str, Any] | None:
    th = ctx.th
    total, wait, io, count, basis = _wait_stats(ctx, steps)
    if count < th.min_steps:
        return None
    share = wait / total if total else 0.0
    if share < th.input_wait_share:
        return None
    io_share = io / wait if wait else 0.0
    ev = {"steps": len(steps), "basis": basis, "waits_counted": count, "step_time_s": total / 1e12, "input_wait_s": wait / 1e12,
          "input_wait_share": share, "io_during_wait_s": io / 1e12, "io_share_of_wait": io_share,
          "other_wait_s": (wait - io) / 1e12,
          "steps_over_threshold": sum(1 for s in steps if s["input_wait_share"] >= th.input_wait_share)}
    if io_share >= th.serial_io_share_of_wait:
        what = "mostly file I/O" if io_share >= 0.5 else "partly file I/O, the rest decode/preprocessing"
        sug = ("Read in parallel and ahead of the step: interleave(..., num_parallel_calls=tf.data.AUTOTUNE) "
               "over file shards, prefetch(tf.data.AUTOTUNE), cache() if the data fits, or faster storage.")
    else:
        what = "mostly decode/preprocessing, not file I/O"
        sug = ("Parallelize and overlap the preprocessing: map(..., num_parallel_calls=tf.data.AUTOTUNE), "
               "vectorize per-batch work (batch before map), avoid py_function, cache() after expensive "
               "deterministic steps and end with prefetch(tf.data.AUTOTUNE).")
    over = f"over {len(steps)} steps" if steps else f"between the first and last of {count} input waits"
    where = "input" if ctx.torch is None else "the DataLoader's __next__"
    what = f" ({what})" if ctx.torch is None else " (in any process)"   # PyTorch: the cause follows
    stmt = (f"{'Steps' if steps else 'The training loop'} spent {_pct(share)} of {'their' if steps else 'its'} "
            f"time ({_ms(wait / 1e12)} of {_ms(total / 1e12)} {over}) waiting for {where}; file I/O covered "
            f"{_pct(io_share)} of that wait{what}.")
    net = overlap(ctx.wait_iv, ctx.socket_iv()) if len(ctx.socket_rows) else 0
    if net:       # storage over the network (tb_iotrace.model.endpoints), not the loader's own work
        ev["network_io_during_wait_s"] = net / 1e12
        stmt += f" Storage over the network (socket calls) covered {_pct(net / wait if wait else 0.0)} of it."
    rows = ctx.read_rows
    sev = "critical" if share >= th.input_wait_critical_share else "warning"
    ops = _stages_of(ctx, rows) or ["IteratorGetNext"]
    if ctx.torch is not None:
        more, sug, ops = _torch_input_bound(ctx, ctx.torch, steps, ev, wait)
        stmt = f"{stmt} {more}"
    return _finding("input-bound", sev, stmt, ev, sug, ops=ops)


def _torch_input_bound(ctx: Context, run: TorchRun, steps: list[dict[str, Any]], ev: dict[str, Any],
                       wait: int) -> tuple[str, str, list[str]]:
    """input-bound on a PyTorch run: who read during the wait (the main process or the
    DataLoader workers), what the workers' restarts cost; adds to ``ev``; (sentence,
    suggestion, ops)."""
    io_rows = np.concatenate([ctx.read_rows, ctx.meta_rows])
    main = run.rows_of_main(ctx.trace.tid[io_rows])
    mine, theirs = io_rows[main], io_rows[~main]
    bursty = bool(steps) and ev["steps_over_threshold"] * 2 <= len(steps)
    restart = sum(s["first_wait_ps"] for s in worker_starts(run, ctx.wait_iv) if not s["persistent_workers"])
    restart += round(1e12 * sum(s["cost_s"] for s in worker_stops(run) if not s["persistent_workers"]))
    more, sug, extra = input_bound_advice(
        run, wait_ps=wait, main_io_ps=io_during(ctx.wait_iv, ctx.s_ps[mine], ctx.e_ps[mine]),
        worker_io_ps=io_during(ctx.wait_iv, ctx.s_ps[theirs], ctx.e_ps[theirs]), restart_wait_ps=restart,
        bursty=bursty, io_share_floor=ctx.th.serial_io_share_of_wait)
    ret = np.clip(ctx.trace.returned[ctx.read_rows], 0, None)
    on_main = run.rows_of_main(ctx.trace.tid[ctx.read_rows])
    extra.update({"main_process_bytes_read": int(ret[on_main].sum()), "worker_bytes_read": int(ret[~on_main].sum())})
    ev.update(extra)
    d = run.loader()
    return more, sug, [f"{NEXT_EVENT}{(d or {}).get('iterator') or '_BaseDataLoaderIter'}.__next__"]


def worker_restarts(ctx: Context, steps: list[dict[str, Any]]) -> dict[str, Any] | None:
    """PyTorch: a DataLoader without persistent_workers starts its workers at every epoch; the
    time until the epoch's first batch is paid again each time."""
    run = ctx.torch
    if run is None:
        return None
    starts = [s for s in worker_starts(run, ctx.wait_iv) if not s["persistent_workers"]]
    stops = [s for s in worker_stops(run) if not s["persistent_workers"]]
    if not starts:
        return None
    start_cost = sum(s["cost_s"] for s in starts)
    stop_cost = sum(s["cost_s"] for s in stops)
    cost = start_cost + stop_cost
    if steps:
        total, basis = sum(s["duration_ps"] for s in steps) / 1e12, "steps"
    else:
        total, basis = float(ctx.e_ps.max() - ctx.s_ps.min()) / 1e12 if len(ctx.s_ps) else 0.0, "I/O span"
    share = cost / total if total > 0 else 0.0
    if share < ctx.th.worker_restart_share:
        return None
    d = next((x for x in run.loaders if x.get("id") == starts[0]["dataloader"]), None)
    method = starts[0]["start_method"]
    ev = {"framework": "PyTorch", "epoch_starts": len(starts), "workers_per_start": starts[0]["workers"],
          "cost_s": cost, "start_cost_s": start_cost, "per_start_s": [s["cost_s"] for s in starts],
          "worker_stops": len(stops), "stop_cost_s": stop_cost, "per_stop_s": [s["cost_s"] for s in stops],
          "iter_call_s": [s["iter_s"] for s in starts], "time_s": total, "basis": basis, "share": share,
          "start_method": method, "num_workers": d.get("num_workers") if d else None,
          "persistent_workers": False}
    stmt = (f"{loader_text(d)} started its {starts[0]['workers']} worker processes anew at "
            f"{len(starts)} epoch start(s) in this window: {_ms(start_cost)} from iter() to the first batch"
            + (f", and {_ms(stop_cost)} stopping them at {len(stops)} epoch end(s)" if stops else "")
            + f" ({_pct(share)} of {'step time' if steps else 'the window'}).")
    dear = (f" With the {method} start method every start also launches fresh interpreters that import "
            "torch and unpickle the Dataset." if method in ("spawn", "forkserver") else "")
    sug = ("DataLoader(..., persistent_workers=True) starts the workers once and keeps them, with what the "
           "Dataset holds in them (open files, caches), across epochs." + dear)
    return _finding("worker-restarts", "warning", stmt, ev, sug,
                    ops=[f"{NEXT_EVENT}{(d or {}).get('iterator') or '_MultiProcessingDataLoaderIter'}.__next__"])


def small_reads(ctx: Context, steps) -> dict[str, Any] | None:
    th, tr = ctx.th, ctx.trace
    rows = ctx.read_rows[tr.returned[ctx.read_rows] > 0]
    if not len(rows):
        return None
    small = rows[tr.returned[rows] < th.small_read_bytes]
    calls_share = len(small) / len(rows)
    t_all = float(ctx.dur_s[rows].sum())
    t_small = float(ctx.dur_s[small].sum())
    time_share = t_small / t_all if t_all > 0 else 0.0
    if len(small) < th.small_read_min_calls or calls_share < th.small_read_call_share \
            or time_share < th.small_read_time_share:
        return None
    med = float(np.median(tr.returned[small]))
    ev = {"reads": int(len(rows)), "small_reads": int(len(small)), "small_read_share": calls_share,
          "small_read_time_s": t_small, "read_time_s": t_all, "small_read_time_share": time_share,
          "median_small_read_bytes": med, "small_read_bytes_threshold": th.small_read_bytes}
    stmt = (f"{len(small)} of {len(rows)} reads ({_pct(calls_share)}) moved less than "
            f"{_b(th.small_read_bytes)} (median {_b(med)}) and took {_pct(time_share)} of read time "
            f"({_ms(t_small)}).")
    sug = ("Read in larger requests: TFRecordDataset(..., buffer_size=1 << 20 or more), larger records or "
           "shards, batch reads in custom readers; for per-sample files pack them into TFRecord shards.")
    return _finding("small-reads", "warning", stmt, ev, _sug(ctx, "small-reads", sug),
                    files=_top(Counter(tr.path[small].tolist())), ops=_stages_of(ctx, small), rows=small)


def eof_zero_reads(ctx: Context, steps) -> dict[str, Any] | None:
    th, tr = ctx.th, ctx.trace
    reads = ctx.read_rows
    zero = reads[tr.returned[reads] == 0]
    files_read = _distinct_files(ctx, reads)
    if len(zero) < th.eof_zero_min_calls or not files_read:
        return None
    per_file = len(zero) / files_read
    share = len(zero) / len(reads)
    if per_file < th.eof_zero_per_file or share < th.eof_zero_call_share:
        return None
    ev = {"zero_length_reads": int(len(zero)), "files_read": files_read, "zero_reads_per_file": per_file,
          "read_calls": int(len(reads)), "zero_read_share": share,
          "zero_read_time_s": float(ctx.dur_s[zero].sum())}
    stmt = (f"{len(zero)} of {len(reads)} read calls ({_pct(share)}) returned 0 bytes, "
            f"{per_file:.2f} per file over {files_read} files: the reader's end-of-file probe.")
    sug = ("Each file costs one extra read at EOF; it matters when files are small: pack samples into "
           "fewer, larger TFRecord shards so the probe is paid once per shard.")
    return _finding("eof-zero-reads", "info", stmt, ev, _sug(ctx, "eof-zero-reads", sug),
                    files=_top(Counter(tr.path[zero].tolist())), ops=_stages_of(ctx, zero), rows=zero)


def many_small_files(ctx: Context, steps) -> dict[str, Any] | None:
    th = ctx.th
    opened = [f for f in ctx.files.values() if f.opens > 0 and f.bytes_read > 0]
    if len(opened) < th.many_files_min:
        return None
    med = float(np.median([f.bytes_read for f in opened]))
    meta = sum(f.meta_time for f in opened)
    io = sum(f.io_time for f in opened)
    share = meta / io if io > 0 else 0.0
    if med > th.small_file_bytes or share < th.many_files_meta_share:
        return None
    opens = sum(f.opens for f in opened)
    ev = {"files": len(opened), "opens": opens, "median_bytes_per_file": med,
          "meta_time_s": meta, "io_time_s": io, "meta_time_share": share,
          "bytes_read": sum(f.bytes_read for f in opened)}
    stmt = (f"{len(opened)} files were opened and read with a median of {_b(med)} each; open/stat/seek/"
            f"close took {_pct(share)} of their I/O time ({_ms(meta)} of {_ms(io)}).")
    sug = ("Pack per-sample files into TFRecord shards of 100 MB or more (tf.io.TFRecordWriter) and read "
           "them with interleave(TFRecordDataset, num_parallel_calls=tf.data.AUTOTUNE).")
    small = sorted(opened, key=lambda f: f.bytes_read)
    rows = ctx.rows_of_files(np.concatenate([ctx.read_rows, ctx.meta_rows]), [f.path for f in small])
    return _finding("many-small-files", "warning", stmt, ev, _sug(ctx, "many-small-files", sug),
                    files=[f.path for f in small], rows=rows)


def metadata_heavy(ctx: Context, steps) -> dict[str, Any] | None:
    th, tr = ctx.th, ctx.trace
    meta_t = float(ctx.dur_s[ctx.meta_rows].sum())
    all_rows = np.concatenate([ctx.read_rows, ctx.write_rows, ctx.meta_rows])
    io_t = float(ctx.dur_s[all_rows].sum())
    share = meta_t / io_t if io_t > 0 else 0.0
    if len(ctx.meta_rows) < th.metadata_min_calls or share < th.metadata_time_share:
        return None
    ops = Counter(str(o) for o in tr.op[ctx.meta_rows])
    ev = {"meta_calls": int(len(ctx.meta_rows)), "io_calls": int(len(all_rows)), "meta_time_s": meta_t,
          "io_time_s": io_t, "meta_time_share": share, "by_call": dict(ops.most_common())}
    top = ", ".join(f"{k} {v}" for k, v in ops.most_common(3))
    stmt = (f"Metadata calls took {_pct(share)} of I/O time ({_ms(meta_t)} of {_ms(io_t)}) in "
            f"{len(ctx.meta_rows)} calls ({top}).")
    sug = ("Open each file once and keep it open, drop per-sample exists/stat checks (list files once with "
           "tf.data.Dataset.list_files), avoid seeks by reading sequentially, and pack small files.")
    return _finding("metadata-heavy", "warning", stmt, ev, _sug(ctx, "metadata-heavy", sug),
                    files=_top(Counter(tr.path[ctx.meta_rows].tolist())), ops=_stages_of(ctx, ctx.meta_rows),
                    rows=ctx.meta_rows)


def random_access(ctx: Context, steps) -> dict[str, Any] | None:
    th = ctx.th
    rnd, reads, files = 0, 0, []
    for f in ctx.files.values():
        if f.reads < 2:
            continue
        # a read that began inside the previous one, after its start, moved forwards (read-ahead)
        r = max(f.reads - f.seq_reads - f.opens - f.ahead_reads, 0)
        reads += f.reads
        rnd += r
        if r:
            files.append((r, f.path))
    share = rnd / reads if reads else 0.0
    if rnd < th.random_min_reads or share < th.random_read_share:
        return None
    ev = {"reads": reads, "random_reads": rnd, "random_share": share,
          "files": len(files)}
    stmt = (f"{rnd} of {reads} reads ({_pct(share)}) went backwards in their file (neither sequential nor "
            f"consecutive, not counting the first read after each open).")
    sug = ("Store samples in the order they are read (shuffle at write time, then shuffle a buffer of "
           "records with Dataset.shuffle), or read whole shards sequentially and shuffle in memory.")
    files.sort(reverse=True)
    rows = ctx.rows_of_files(ctx.read_rows, [p for _, p in files])
    return _finding("random-access", "warning", stmt, ev, _sug(ctx, "random-access", sug),
                    files=[p for _, p in files],
                    ops=_stages_of(ctx, rows), rows=rows)


def redundant_reads(ctx: Context, steps) -> dict[str, Any] | None:
    th = ctx.th
    hits = []
    per, how = epochs(ctx)       # a dataset read once per epoch is not read again
    for f in ctx.files.values():
        size = f.size_seen
        # a reader's read-ahead window read again as it moves forwards is not the file read again
        once = f.bytes_read - f.ahead_bytes
        if size > 0 and once >= th.redundant_ratio * size * per:
            if f.file_type is None:
                f.file_type = file_type(f.path)
            if f.regular:          # a pipe's or socket's bytes are a stream: each is read once
                hits.append((once - size * per, f))
    extra = sum(e for e, _ in hits)
    if not hits or extra < th.redundant_min_bytes:
        return None
    hits.sort(key=lambda h: -h[0])
    read = sum(f.bytes_read - f.ahead_bytes for _, f in hits)
    touched = sum(f.size_seen for _, f in hits)
    worst = hits[0][1]
    ev = {"files": len(hits), "bytes_read": read, "bytes_touched": touched, "redundant_bytes": extra,
          "epochs": per, "epochs_from": how,
          "read_ahead_bytes": sum(f.ahead_bytes for _, f in hits),   # not counted: see FileStats
          "ratio": read / touched, "max_ratio": (worst.bytes_read - worst.ahead_bytes) / worst.size_seen,
          "per_file": [{"path": f.path, "bytes_read": f.bytes_read - f.ahead_bytes, "size_seen": f.size_seen,
                        "ratio": (f.bytes_read - f.ahead_bytes) / f.size_seen} for _, f in hits[:20]]}
    stmt = (f"{len(hits)} files were read {read / touched:.1f}x over ({_b(read)} read for {_b(touched)} "
            f"of file data, {_b(extra)} read again" + (f" beyond once in each of {per} epochs" if per > 1 else "")
            + ").")
    sug = ("Cache what is re-read: Dataset.cache() (in memory, or cache(filename) on a fast local disk) "
           "before repeat(), or stage the files on a faster tier.")
    rows = ctx.rows_of_files(ctx.read_rows, [f.path for _, f in hits])
    return _finding("redundant-reads", "warning", stmt, ev, _sug(ctx, "redundant-reads", sug),
                    files=[f.path for _, f in hits],
                    ops=_stages_of(ctx, rows), rows=rows)


def serial_reads(ctx: Context, steps) -> dict[str, Any] | None:
    """Steps wait, reads cover the wait, and the reads ran one at a time while steps waited:
    judged by how many were in flight at once, not by thread (a reader that hops threads, e.g.
    a generator called from tf.data's thread pool, is still one reader)."""
    th, tr = ctx.th, ctx.trace
    total, wait, io, count, basis = _wait_stats(ctx, steps)
    if count < th.min_steps:
        return None
    share = wait / total if total else 0.0
    io_share = io / wait if wait else 0.0
    rows = ctx.read_rows
    if len(rows) < th.serial_min_reads or share < th.serial_wait_share or io_share < th.serial_io_share_of_wait:
        return None
    n, w = in_flight(ctx.s_ps[rows], ctx.e_ps[rows], ctx.wait_iv)
    busy = int(w[n >= 1].sum())                 # a read in flight while steps waited
    overlapped = int(w[n >= 2].sum())           # two or more at once
    if busy == 0 or overlapped > th.serial_overlap_share * busy:
        return None
    threads, per_thread = np.unique(tr.tid[rows], return_counts=True)
    ev = {"reads": int(len(rows)), "max_reads_in_flight": int(n[w > 0].max()),
          "overlapped_share": overlapped / busy, "read_during_wait_s": busy / 1e12,
          "reading_threads": int(len(threads)), "top_thread_read_share": float(per_thread.max() / len(rows)),
          "input_wait_share": share, "io_share_of_wait": io_share, "input_wait_s": wait / 1e12,
          "io_during_wait_s": io / 1e12, "read_time_s": float(ctx.dur_s[rows].sum()),
          "files": _distinct_files(ctx, rows), "basis": basis}
    on = "one thread" if len(threads) == 1 else f"{len(threads)} threads"
    stmt = (f"{len(rows)} reads of {ev['files']} files ran one at a time ({on}) while steps waited "
            f"{_pct(share)} of their time, {_pct(io_share)} of that wait covered by file I/O.")
    sug = ("Read files in parallel and ahead of the step: Dataset.from_tensor_slices(files).interleave("
           "TFRecordDataset, cycle_length=N, num_parallel_calls=tf.data.AUTOTUNE), map(..., "
           "num_parallel_calls=tf.data.AUTOTUNE) and prefetch(tf.data.AUTOTUNE).")
    return _finding("serial-reads", "warning", stmt, ev, _sug(ctx, "serial-reads", sug),
                    files=_top(Counter(tr.path[rows].tolist())), ops=_stages_of(ctx, rows), rows=rows)


def staging_candidates(ctx: Context, steps) -> dict[str, Any] | None:
    th = ctx.th
    files = [f for f in ctx.files.values() if f.opens > 0 and f.bytes_read > 0]
    small = [f for f in files if f.size_seen < th.staging_file_bytes]
    large = [f for f in files if f.size_seen >= th.staging_file_bytes]
    if len(small) < th.staging_min_files or not large:
        return None
    opens = sum(f.opens for f in files)
    s_opens = sum(f.opens for f in small)
    nbytes = sum(f.bytes_read for f in files)
    s_bytes = sum(f.bytes_read for f in small)
    o_share, b_share = s_opens / opens, s_bytes / nbytes if nbytes else 0.0
    if o_share < th.staging_open_share or b_share > th.staging_byte_share:
        return None
    s_time = sum(f.io_time for f in small)
    t_all = sum(f.io_time for f in files)
    ev = {"small_files": len(small), "large_files": len(large), "small_opens": s_opens, "opens": opens,
          "open_share": o_share, "small_bytes": s_bytes, "bytes_read": nbytes, "byte_share": b_share,
          "small_io_time_s": s_time, "io_time_share": s_time / t_all if t_all else 0.0,
          "size_threshold": th.staging_file_bytes}
    stmt = (f"{len(small)} files under {_b(th.staging_file_bytes)} were {_pct(o_share)} of opens but "
            f"{_pct(b_share)} of bytes ({_b(s_bytes)} of {_b(nbytes)}) and {_pct(ev['io_time_share'])} of "
            f"I/O time.")
    sug = (f"Stage the files under {_b(th.staging_file_bytes)} on a fast tier (local SSD, tmpfs, burst "
           "buffer) or pack them into one shard; tf-Darshan measured +19% bandwidth from doing so.")
    rows = ctx.rows_of_files(np.concatenate([ctx.read_rows, ctx.meta_rows]), [f.path for f in small])
    return _finding("staging-candidates", "info", stmt, ev, sug,
                    files=[f.path for f in sorted(small, key=lambda f: -f.opens)], rows=rows)


def blocking_writes(ctx: Context, steps) -> dict[str, Any] | None:
    th, tr = ctx.th, ctx.trace
    if not steps or ctx.att is None:
        return None
    rows = ctx.write_rows[ctx.train_rows[ctx.write_rows] & (ctx.att.step[ctx.write_rows] >= 0)]
    if not len(rows):
        return None
    total = sum(s["duration_ps"] for s in steps) / 1e12
    wt = float(ctx.dur_s[rows].sum())
    share = wt / total if total else 0.0
    if share < th.blocking_write_share:
        return None
    data = rows[~ctx.is_sync[rows]]
    ev = {"writes": int(len(data)), "syncs": int(ctx.is_sync[rows].sum()),
          "bytes_written": int(np.clip(tr.returned[data], 0, None).sum()), "write_time_s": wt,
          "step_time_s": total, "step_time_share": share,
          "steps_with_writes": int(len(np.unique(ctx.att.step[rows]))), "steps": len(steps)}
    stmt = (f"The training thread spent {_ms(wt)} ({_pct(share)} of step time) in {ev['writes']} writes "
            f"and {ev['syncs']} syncs ({_b(ev['bytes_written'])}) inside {ev['steps_with_writes']} of "
            f"{len(steps)} steps.")
    sug = ("Move checkpoints, summaries and logs off the step: write them every N steps, asynchronously "
           "(tf.train.CheckpointOptions(enable_async=True), a background thread), and avoid fsync per step.")
    return _finding("blocking-writes", "warning", stmt, ev, _sug(ctx, "blocking-writes", sug),
                    files=_top(Counter(tr.path[rows].tolist())),
                    ops=_top(Counter(str(x) for x in ctx.att.enclosing[rows])), rows=rows)


def small_writes(ctx: Context, steps) -> dict[str, Any] | None:
    th, tr = ctx.th, ctx.trace
    rows = ctx.write_rows[~ctx.is_sync[ctx.write_rows]]
    if not len(rows):
        return None
    small = rows[tr.returned[rows] < th.small_write_bytes]
    share = len(small) / len(rows)
    if len(small) < th.small_write_min_calls or share < th.small_write_call_share:
        return None
    ev = {"writes": int(len(rows)), "small_writes": int(len(small)), "small_write_share": share,
          "median_bytes": float(np.median(tr.returned[small])),
          "bytes_written": int(tr.returned[small].sum()), "write_time_s": float(ctx.dur_s[small].sum()),
          "by_call": dict(Counter(str(o) for o in tr.op[small]).most_common())}
    stmt = (f"{len(small)} of {len(rows)} writes ({_pct(share)}) moved less than {_b(th.small_write_bytes)} "
            f"(median {_b(ev['median_bytes'])}, {_ms(ev['write_time_s'])} in all).")
    sug = ("Buffer the output: open log files with a large buffer instead of line buffering/unbuffered, "
           "write summaries through tf.summary (buffered, flushed periodically), batch metrics per N steps.")
    return _finding("small-writes", "info", stmt, ev, _sug(ctx, "small-writes", sug),
                    files=_top(Counter(tr.path[small].tolist())),
                    ops=_stages_of(ctx, small), rows=small)


def slow_filesystem(ctx: Context, steps, fs_table: list[dict[str, Any]] | None = None) -> dict[str, Any] | None:
    th = ctx.th
    fs = fs_table if fs_table is not None else fs_table(ctx)
    bw = [g for g in fs if g["large_reads"] >= th.slow_fs_min_reads and g["large_read_bandwidth"]]
    lat = [g for g in fs if g["meta_calls"] >= th.slow_fs_min_meta and g["meta_latency_median_s"] is not None]
    reasons, slow = [], None
    ev: dict[str, Any] = {}
    if len(bw) >= 2:
        best = max(bw, key=lambda g: g["large_read_bandwidth"])
        worst = min(bw, key=lambda g: g["large_read_bandwidth"])
        ratio = best["large_read_bandwidth"] / worst["large_read_bandwidth"]
        if ratio >= th.slow_fs_bandwidth_ratio and worst["large_read_bandwidth"] < th.slow_fs_max_bandwidth:
            slow = worst
            ev.update({"slow_read_bandwidth": worst["large_read_bandwidth"],
                       "fast_read_bandwidth": best["large_read_bandwidth"], "bandwidth_ratio": ratio,
                       "fast_mount_point": best["mount_point"], "fast_fs_type": best["fs_type"]})
            reasons.append(f"reads {ratio:.0f}x slower ({_b(worst['large_read_bandwidth'])}/s vs "
                           f"{_b(best['large_read_bandwidth'])}/s on {best['mount_point']})")
    if len(lat) >= 2:
        fast = min(lat, key=lambda g: g["meta_latency_median_s"])
        worst = max(lat, key=lambda g: g["meta_latency_median_s"])
        ratio = worst["meta_latency_median_s"] / max(fast["meta_latency_median_s"], 1e-9)
        if ratio >= th.slow_fs_latency_ratio and worst["meta_latency_median_s"] >= th.slow_fs_min_latency_s \
                and (slow is None or slow is worst):
            slow = worst
            ev.update({"slow_meta_latency_s": worst["meta_latency_median_s"],
                       "fast_meta_latency_s": fast["meta_latency_median_s"], "latency_ratio": ratio})
            reasons.append(f"metadata calls {ratio:.0f}x slower ({_ms(worst['meta_latency_median_s'])} vs "
                           f"{_ms(fast['meta_latency_median_s'])} median on {fast['mount_point']})")
    if slow is None:
        return None
    ev.update({"mount_point": slow["mount_point"], "fs_type": slow["fs_type"], "source": slow["source"],
               "filesystems": len(fs)})
    stmt = f"{slow['mount_point']} ({slow['fs_type']}): " + " and ".join(reasons) + "."
    sug = ("Stage the hot files from this file system to local disk or memory before training "
           "(or cache(filename) on local disk), and read it with more parallel requests "
           "(interleave/num_parallel_calls) to hide its latency.")
    files = [f.path for f in ctx.files.values() if f.fs.mount_point == slow["mount_point"]]
    rows = ctx.rows_of_files(np.concatenate([ctx.read_rows, ctx.meta_rows]), files)
    return _finding("slow-filesystem", "warning", stmt, ev, _sug(ctx, "slow-filesystem", sug), files=files,
                    rows=rows)


RULES: dict[str, Callable[..., dict[str, Any] | None]] = {
    "input-bound": input_bound, "worker-restarts": worker_restarts, "small-reads": small_reads,
    "eof-zero-reads": eof_zero_reads,
    "many-small-files": many_small_files, "metadata-heavy": metadata_heavy,
    "random-access": random_access, "redundant-reads": redundant_reads, "serial-reads": serial_reads,
    "staging-candidates": staging_candidates, "blocking-writes": blocking_writes,
    "small-writes": small_writes, "slow-filesystem": slow_filesystem,
}
# the checkpoint findings (their own module: docs/checkpoints.md) after these
TITLES.update(phase_findings.TITLES)
RULES.update(phase_findings.RULES)
ORDER.extend(phase_findings.TITLES)
# the object-storage findings (their own module: docs/findings.md)
TITLES.update(object_findings.TITLES)
RULES.update(object_findings.RULES)
ORDER.extend(object_findings.TITLES)


def evaluate(ctx: Context, steps: list[dict[str, Any]],
             fs_table: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """The findings, each with its ``impact`` (the share of step time it costs, :mod:`.impact`),
    its severity following that impact, ordered by impact (largest first)."""
    out = []
    for fid in ORDER:
        rule = RULES[fid]
        f = rule(ctx, steps, fs_table) if rule is slow_filesystem else rule(ctx, steps)
        if f is not None:
            rows = f.pop(ROWS, None)
            f["impact"] = f.get("impact") or impact_of(ctx, steps, f, rows)   # checkpoints' own: of the run
            grade(ctx.th, f)
            out.append(f)
    out.sort(key=lambda f: -(f["impact"]["step_share"] or 0.0))
    return out
