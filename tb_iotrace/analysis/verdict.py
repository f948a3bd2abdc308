"""The verdict of a capture: is the job waiting for its input, on what, and the one change
with the biggest expected effect (docs/diagnosis.md).

Its fields are written once, in docs/diagnosis.md ("2. The verdict"); docs/formats.md places it
in the report's JSON.

``wait_breakdown`` divides the input wait (inside the steps) into disjoint parts, each a share
of the wait; the measured ones and ``unmeasured_share`` sum to 1. At each instant of the wait,
first match wins:

- ``file_io``: a data-file read or metadata call in flight, on any thread (the loader is what
  reads while the step waits: DataLoader workers, the main process inside ``__next__``, tf.data
  threads);
- ``object_io``: storage that is not a file in flight: an object request (S3, GCS, HTTP, any
  process: :mod:`tb_iotrace.analysis.object_io`), or a socket call of a storage endpoint on any
  thread (a client's TCP connection, :mod:`tb_iotrace.model.endpoints`; a call on a non-blocking
  socket that found nothing covers its wait until the next call on it);
- ``copy``: a host-to-device copy in flight (a device plane's ``MemcpyH2D``/``Memcpy HtoD``);
- ``decode``: the loader busy with no read or copy under it: a DataLoader worker inside a fetch
  (``tb_iotrace::fetch`` spans), the main process itself loading (``num_workers=0``), tf.data at
  work (its threads' events, and the ``Iterator::`` events of its synchronous stages on any
  thread: an asynchronous stage's event on its consumer's side is a wait);
- ``starved``: none of these: the loader idle or not running (workers starting, an empty
  prefetch buffer with nothing in flight, the batch's hand-over);
- ``other``: reserved for what the classes above cannot name; 0 where the loader's activity
  is measured.

``decode`` and ``starved`` need the loader's activity: without fetch spans (traces from before
they were recorded) or tf.data iterator events they are ``None``, listed in ``unmeasured``,
and the rest of the wait is ``unmeasured_share``.
"""
from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from tb_iotrace.model.stepwait import GRAIN_WAIT_NAMES, covered, input_wait, merge
from tb_iotrace.store.xplane import HOST_PLANE, LINE_PREFIX, columns
from tb_iotrace.analysis.context import Context
from tb_iotrace.analysis.object_io import object_advice, storage_intervals
from tb_iotrace.analysis.pytorch import TorchRun, worker_starts, worker_stops
from tb_iotrace.analysis.thresholds import Thresholds
from tb_iotrace.analysis.loader_capacity import MIN_GAIN, cores_cut, measure, tf_data_work_ps
from tb_iotrace.analysis.tf_gil import GIL_CHANGE, GIL_MODEL, py_function_time
from tb_iotrace.analysis.tf_iterator_python import PY_CHANGE, PY_MODEL, python_time
from tb_iotrace.analysis.worker_advice import HALF_WORK, NO_MORE, UNMEASURED, workers_change

FETCH_EVENT = "tb_iotrace::fetch"           # a DataLoader worker fetching one batch
TF_ITERATOR = "Iterator::"
TF_DATA_THREAD = "tf_data"                  # tf.data's own threads (tf_data_private_threadpool/...)
# a tf.data stage that hands elements over through a buffer: its event on the consumer's side waits
ASYNC_STAGE = re.compile(r"^(Root|Model|Prefetch|Parallel\w*|MapAndBatch|LegacyParallel\w*)$")
_INDEX = re.compile(r"\[\d+\]")
H2D_RE = re.compile(r"memcpy\s*(h2d|htod)", re.I)
KEYS = ("file_io", "object_io", "decode", "starved", "copy", "other")
# grain at work: its prefetch threads fetching an element (``Prefetch._getitem``), and its
# stages' own TraceAnnotations (``SourceMapDataset.__getitem__``, ``MapDatasetIterator.__next__``,
# ``ArrayRecordDataSource.__getitem__``); its prefetch iterators' ``__next__`` is the wait
GRAIN_WORK = re.compile(r"^(Prefetch\._getitem|\w*(Dataset|DatasetIterator|DataSource)\.(__getitem__|__getitems__|__next__))$")
GRAIN_THREADS = re.compile(r"ReadOptions\(num_threads=(\d+)")


def _empty() -> tuple[np.ndarray, np.ndarray]:
    return np.zeros(0, np.int64), np.zeros(0, np.int64)


def _union(*ivs: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    return merge(np.concatenate([iv[0] for iv in ivs] or [np.zeros(0, np.int64)]),
                 np.concatenate([iv[1] for iv in ivs] or [np.zeros(0, np.int64)]))


def _inside(window: tuple[np.ndarray, np.ndarray], iv: tuple[np.ndarray, np.ndarray]) -> int:
    """Length of ``iv`` (merged) inside the disjoint intervals ``window``."""
    return int(covered(iv, window[0], window[1]).sum()) if len(window[0]) else 0


def _clip_to(iv: tuple[np.ndarray, np.ndarray], lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The part of the disjoint intervals ``iv`` inside the disjoint windows [lo, hi)."""
    s, e = iv
    out_s, out_e = [], []
    for a, b in zip(lo.tolist(), hi.tolist()):
        i, j = np.searchsorted(e, a, side="right"), np.searchsorted(s, b, side="left")
        if j > i:
            out_s.append(np.maximum(s[i:j], a))
            out_e.append(np.minimum(e[i:j], b))
    return merge(np.concatenate(out_s) if out_s else np.zeros(0, np.int64),
                 np.concatenate(out_e) if out_e else np.zeros(0, np.int64))


def _tf_busy(names: np.ndarray, line_name: str) -> np.ndarray:
    """Which events of a host line are tf.data at work: on its own threads (``tf_data*`` lines:
    function runs such as ``EagerPyFunc``, and the iterators' events), and on any line the
    ``Iterator::`` events of a synchronous stage (``...::BatchV2``, ``...::FlatMap[0]::TFRecord``).
    An asynchronous stage's event (``Root``, ``Prefetch``, ``Parallel*``, ``MapAndBatch``) on
    its consumer's side is the consumer waiting for that stage's buffer, not work."""
    it = np.char.startswith(names, TF_ITERATOR)
    busy = np.zeros(len(names), bool)
    if line_name.startswith(TF_DATA_THREAD):
        busy |= ~it
    if it.any():
        kinds, inverse = np.unique(names, return_inverse=True)
        sync = np.array([k.startswith(TF_ITERATOR) and ASYNC_STAGE.match(_INDEX.sub("", k.rsplit("::", 1)[-1])) is None
                         for k in kinds.tolist()])
        busy |= sync[inverse.reshape(-1)]
    return busy


class HostEvents:
    """What the host plane says of the loader: DataLoader fetch spans, tf.data at work
    (:func:`_tf_busy`), grain at work (:data:`GRAIN_WORK`), merged (ps); whether the capture
    has grain's input waits, and the read threads its prefetch iterator names (None: not said)."""

    def __init__(self) -> None:
        self.fetch, self.tf_work, self.grain_work = _empty(), _empty(), _empty()
        self.grain = False
        self.grain_threads: int | None = None


def _grain_threads(host: Any, line: Any, rows: np.ndarray) -> int | None:
    """``num_threads`` of the ReadOptions in the ``_ipl_stage_name`` stat of the first of the
    events ``rows`` of ``line`` (grain's prefetch iterator's own description) that has one."""
    meta = {k: v.name for k, v in host.stat_metadata.items()}
    for i in rows[:8].tolist():
        for st in line.events[i].stats:
            if meta.get(st.metadata_id) != "_ipl_stage_name":
                continue
            text = st.str_value or (meta.get(st.ref_value, "") if st.ref_value else "")
            m = GRAIN_THREADS.search(text)
            if m:
                return int(m.group(1))
    return None


def _host_events(space: Any) -> HostEvents:
    """The loader's activity on the host plane (:class:`HostEvents`)."""
    out = HostEvents()
    host = None
    for p in getattr(space, "planes", []):
        if p.name == HOST_PLANE:
            host = p
            break
    if host is None:
        return out
    pc = columns(host)
    fs, fe, ts, te, gs, ge = [], [], [], [], [], []
    for k, ln in enumerate(pc.lines):
        if ln.name.startswith(LINE_PREFIX) or not len(ln):
            continue
        names = pc.event_names(ln).astype(str)
        fetch = names == FETCH_EVENT
        if fetch.any():
            fs.append(ln.start_ps[fetch])
            fe.append(ln.end_ps[fetch])
        tf = _tf_busy(names, ln.name)
        if tf.any():
            ts.append(ln.start_ps[tf])
            te.append(ln.end_ps[tf])
        kinds, inverse = np.unique(names, return_inverse=True)
        kinds_l = kinds.tolist()
        work = np.array([GRAIN_WORK.match(x) is not None and x not in GRAIN_WAIT_NAMES
                         for x in kinds_l] or [False])[inverse.reshape(-1)]
        if work.any():
            gs.append(ln.start_ps[work])
            ge.append(ln.end_ps[work])
        waits = np.array([x in GRAIN_WAIT_NAMES for x in kinds_l] or [False])[inverse.reshape(-1)]
        if waits.any():
            out.grain = True
            if out.grain_threads is None:
                out.grain_threads = _grain_threads(host, host.lines[k], np.flatnonzero(waits))
    cat = lambda xs: np.concatenate(xs) if xs else np.zeros(0, np.int64)  # noqa: E731
    out.fetch, out.tf_work, out.grain_work = merge(cat(fs), cat(fe)), merge(cat(ts), cat(te)), merge(cat(gs), cat(ge))
    return out


def _copies(space: Any) -> tuple[tuple[np.ndarray, np.ndarray], bool]:
    """(host-to-device copies on the device planes, merged, ps; whether there is a device)."""
    ss, es, device = [], [], False
    for p in getattr(space, "planes", []):
        if not p.name.startswith("/device:"):
            continue
        device = True
        pc = columns(p)
        for ln in pc.lines:
            if not len(ln):
                continue
            names = pc.event_names(ln).astype(str)
            if "MemcpyH2D" in ln.name:
                hit = np.ones(len(names), bool)
            else:          # per distinct name: a GPU line has many events, few names
                kinds, inverse = np.unique(names, return_inverse=True)
                hit = np.array([bool(H2D_RE.search(k)) for k in kinds.tolist()] or [False])[inverse.reshape(-1)]
            if hit.any():
                ss.append(ln.start_ps[hit])
                es.append(ln.end_ps[hit])
    return (merge(np.concatenate(ss), np.concatenate(es)) if ss else _empty()), device


def _loader(run: TorchRun | None) -> dict[str, Any] | None:
    return run.loader() if run is not None else None


def verdict(ctx: Context, steps: list[dict[str, Any]], space: Any) -> dict[str, Any]:
    """The verdict of one capture (see the module docstring)."""
    att = ctx.att
    notes: list[str] = []
    if att is None:
        return _unknown("no host timeline (a whole-run record, or no TensorFlow/JAX/PyTorch capture): "
                        "nothing says when the job waited for input")
    st = np.array([s["start_ps"] for s in steps], np.int64)
    en = np.array([s["end_ps"] for s in steps], np.int64)
    iw = input_wait(ctx.wait_iv, st, en)
    if iw.basis == "none":
        return _unknown("no input-wait events in this capture (tf.data IteratorGetNext, PyTorch DataLoader "
                        "__next__): its loader is not one tb_iotrace recognises, so its wait is not measured",
                        basis="none")
    window = _clip_to(ctx.wait_iv, st, en) if len(st) else ctx.wait_iv
    total = _inside(window, window)
    run = ctx.torch
    io_rows = np.concatenate([ctx.read_rows, ctx.meta_rows])
    io = merge(ctx.s_ps[io_rows], ctx.e_ps[io_rows])
    # file I/O first, then object requests and storage socket calls
    storage = _union(io, _union(storage_intervals(ctx), ctx.socket_iv()))
    copy_iv, device = _copies(space)
    hev = _host_events(space)
    fetch, tf_work = hev.fetch, hev.tf_work
    d = _loader(run)
    n = int(d.get("num_workers") or 0) if d is not None else None
    busy, how = None, ""
    if run is not None:
        if len(fetch[0]):
            busy, how = fetch, "DataLoader fetch spans"
        elif n == 0 or (n is None and not run.worker_pids):
            busy, how = window, "the main process loads inside __next__ (no workers)"
    elif hev.grain and len(hev.grain_work[0]):
        busy, how = hev.grain_work, "grain's stages at work (its read threads' Prefetch._getitem, its datasets' events)"
    elif len(tf_work[0]):
        busy, how = tf_work, "tf.data's threads and its synchronous stages' iterator events"
    starved_known = _empty()
    if run is not None:
        spans = [(s["start_ps"], s["start_ps"] + round(s["cost_s"] * 1e12)) for s in worker_starts(run, ctx.wait_iv)]
        spans += [(s["start_ps"], s["start_ps"] + round(s["cost_s"] * 1e12)) for s in worker_stops(run)]
        if spans:
            starved_known = merge(np.array([a for a, _ in spans]), np.array([b for _, b in spans]))
    a_io, a_st = _inside(window, io), _inside(window, storage)
    io_copy = _union(storage, copy_iv)
    a_ioc = _inside(window, io_copy)
    share: dict[str, float | None] = dict.fromkeys(KEYS, 0.0)
    frac = (lambda x: x / total) if total else (lambda x: 0.0)  # noqa: E731
    share["file_io"], share["object_io"], share["copy"] = frac(a_io), frac(a_st - a_io), frac(a_ioc - a_st)
    unmeasured: list[str] = []
    rest = 0.0
    reason = ""
    if busy is not None:
        a_busy = _inside(window, _union(io_copy, busy))
        share["decode"], share["starved"] = frac(a_busy - a_ioc), frac(total - a_busy)
        notes.append(f"loader activity from {how}")
    else:
        unmeasured = ["decode", "starved"]
        share["decode"] = share["starved"] = None
        rest = max(0.0, 1.0 - share["file_io"] - share["object_io"] - share["copy"])
        a_known = _inside(window, _union(io_copy, starved_known)) - a_ioc
        reason = ("the loader's busy time is not in this capture (no DataLoader fetch spans: a trace from "
                  "before tb_iotrace recorded them; no tf.data iterator events on its threads), so the wait "
                  "outside reads and copies cannot be split into decode and starved")
        if a_known > 0:
            reason += f"; at least {100 * frac(a_known):.0f}% of the wait was workers starting or stopping (starved)"
    if run is not None and run.steps_note:
        notes.append(run.steps_note)
    if not device:
        notes.append("no device in the capture: nothing to copy to it (copy is 0)")
    elif run is not None:
        notes.append("the pin_memory thread is not in Kineto's trace: a wait on it counts as starved")
    cause = _cause(share, rest)
    out: dict[str, Any] = {
        "input_wait_share": iw.share, "basis": iw.basis, "bound": _bound(ctx.th, iw.share),
        "wait_breakdown": share, "unmeasured": unmeasured, "unmeasured_share": rest, "reason": reason,
        "cause": cause, "steps": iw.count if iw.basis == "steps" else 0,
        "input_wait_ms_per_step": (iw.wait / iw.count / 1e9) if iw.basis == "steps" and iw.count else None,
    }
    if hev.grain and run is None:
        notes.append("grain pipeline: its input waits are its prefetch iterator's __next__")
    step_ps = iw.time / iw.count if iw.count else 0.0
    tf = run is None and not hev.grain and total > 0
    py = py_function_time(space, window) / total if tf else 0.0
    it_py = python_time(space, window) / total if tf else 0.0      # the TF iterator's own Python
    out.update(_advice(ctx, iw.share, share, rest, cause, run, d, device, hev if hev.grain else None, step_ps, space,
                       py, it_py))
    if cause == "object_io" and out["bound"] in ("input", "partly input"):
        out.update(object_advice(ctx, iw.share, share["object_io"] or 0.0) or {})
    out["notes"] = notes
    return out


def _unknown(reason: str, basis: str = "none") -> dict[str, Any]:
    return {"input_wait_share": None, "basis": basis, "bound": "unknown",
            "wait_breakdown": dict.fromkeys(KEYS), "unmeasured": list(KEYS), "unmeasured_share": 1.0,
            "reason": reason, "cause": None, "steps": 0, "input_wait_ms_per_step": None,
            "change": "", "expected_step_time_change": 0.0, "model": "",
            "advice": "No verdict: " + reason + ".", "notes": []}


def _bound(th: Thresholds, share: float) -> str:
    """xprof's classification: highly input-bound from 20% of step time ("input"), moderately
    from 5% ("partly input")."""
    if share >= th.input_wait_share:
        return "input"
    return "partly input" if share >= th.input_wait_moderate_share else "not input"


def _cause(share: dict[str, float | None], rest: float) -> str | None:
    got = {k: v for k, v in share.items() if v is not None}
    if rest > 0:
        got["decode or starved"] = rest
    if not got or max(got.values()) <= 0:
        return None
    return max(got, key=lambda k: got[k])


def _effect(cut: float) -> str:
    return f"expected step time -{100 * cut:.0f}%"


def _advice(ctx: Context, s: float, share: dict[str, float | None], rest: float,
            cause: str | None, run: TorchRun | None, d: dict[str, Any] | None, device: bool,
            grain: HostEvents | None = None, step_ps: float = 0.0, space: Any = None,
            py_share: float = 0.0, iter_py_share: float = 0.0) -> dict[str, Any]:
    """The change with the biggest expected effect, and that effect by a stated model: a change
    removes at most the part of the wait it addresses, so step time falls by at most
    ``input_wait_share x that part``; more DataLoader workers scale the loader's throughput with
    their number, bounded by the loader's measured work and the usable cores
    (:mod:`.loader_capacity`); a tf.data map whose work is a py_function gets no parallel-map
    gain (:mod:`.tf_gil`)."""
    pin = run is not None and device and d is not None and not d.get("pin_memory")
    if s < ctx.th.input_wait_moderate_share:
        change = "none for the input pipeline"
        txt = (f"Not input-bound: the step waits for input {100 * s:.1f}% of its time (xprof: input-bound from "
               f"{100 * ctx.th.input_wait_moderate_share:.0f}%); the step's own work (model compute, device kernels) sets the pace")
        if pin:
            txt += "; pin_memory=True would let the host-to-device copies overlap the step"
        model = "removing the whole input wait would shorten the step by at most its share"
        return {"change": change, "expected_step_time_change": -s, "model": model,
                "advice": f"{txt} ({_effect(s)} at most, if the wait were removed entirely)."}
    part = {k: (v or 0.0) for k, v in share.items()}
    key = "decode" if cause in (None, "decode or starved", "other") else cause
    addressed = {"file_io": part["file_io"], "object_io": part["object_io"], "decode": part["decode"] + rest,
                 "starved": part["starved"], "copy": part["copy"]}[key]
    model = (f"a change removes at most the part of the wait it addresses ({100 * addressed:.0f}% of the wait): "
             f"step time falls by at most input_wait_share ({100 * s:.0f}%) x that part")
    if run is not None or grain is not None:
        change, workers_cut, workers_model = (_torch_change(ctx, s, key, run, d, part, step_ps, space) if run is not None
                                              else _grain_change(ctx, s, key, grain.grain_threads))
        if workers_cut is not None:    # more workers: the reads and the decode both spread over them
            addressed = part["file_io"] + part["object_io"] + part["decode"] + rest
            cut = min(s * addressed, workers_cut)
            model = workers_model or model
        else:
            cut = s * addressed
        if run is not None and pin and key != "copy":
            change += "; also pin_memory=True (a GPU run)"
    elif iter_py_share >= 0.5 and key in ("decode", "starved"):   # the iterator packing, not the loader
        change, cut = PY_CHANGE, s * iter_py_share
        model = PY_MODEL.format(s=100 * s, part=100 * iter_py_share)
    elif key == "decode" and py_share > 0 and py_share >= 0.5 * addressed:   # a GIL-bound map: no parallel gain
        change, cut = GIL_CHANGE, s * addressed
        model = GIL_MODEL.format(s=100 * s, part=100 * addressed)
    else:
        change, cut = _tf_change(key), s * addressed
        bound = _tf_cores(ctx, s, step_ps, space) if key == "decode" else None   # reads need no core
        if bound is not None and bound < cut:      # tf.data and the step already share the cores
            cut = bound
            model = (f"{model}; and no more than the usable cores allow: a step's CPU work (tf.data's threads' busy "
                     f"time and the step's own) over the cores bounds the step time: -{100 * bound:.0f}% at most")
            if bound < MIN_GAIN:
                change = (f"no more parallelism for tf.data: its threads and the step already use the usable cores; "
                          f"cut the work per element (cheaper decode, decode on the GPU, preprocess offline) or "
                          f"run on more cores")
    how = HALF_WORK if change.startswith(NO_MORE) else f"(the wait share removed, up to {100 * s:.0f}%)"
    if change.startswith(UNMEASURED):
        how = "(nothing measured to predict it from)"
    return {"change": change, "expected_step_time_change": -cut, "model": model,
            "advice": f"{change}: {_effect(cut)} {how}."}


def _torch_change(ctx: Context, s: float, key: str, run: TorchRun, d: dict[str, Any] | None,
                  part: dict[str, float], step_ps: float, space: Any) -> tuple[str, float | None, str | None]:
    """(change, step-time cut by the workers model or None when the change is not more workers,
    that model)."""
    n = int(d.get("num_workers") or 0) if d is not None else None
    cpus = run.cpus
    if key == "copy":
        if d is not None and not d.get("pin_memory"):
            return "pin_memory=True (and .to(device, non_blocking=True))", None, None
        return "copy the next batch to the device ahead of the step (a CUDA-stream prefetcher)", None, None
    if key == "starved" and n:
        restarts = [x for x in worker_starts(run, ctx.wait_iv) if not x["persistent_workers"]]
        if restarts and d is not None and not d.get("persistent_workers"):
            return "persistent_workers=True", None, None
        p = d.get("prefetch_factor") if d is not None else None
        if isinstance(p, int):
            return f"prefetch_factor={p} -> {2 * p}", None, None
        return "a larger prefetch_factor", None, None
    # decode, file I/O, or not separable: more workers, bounded by the loader's measured work
    if n is None:
        return "more DataLoader workers (num_workers)", 1.0, None
    work = measure(ctx, space, step_ps=step_ps, wait_share=s, workers=n, cpus=cpus,
                   main_io_share=part.get("file_io", 0.0), main_cpu_share=run.main_cpu_share,
                   workers_busy_ns=run.workers_busy_ns)
    return workers_change(work, key, d)


def _tf_cores(ctx: Context, s: float, step_ps: float, space: Any) -> float | None:
    """The most a tf.data change can cut the step time by on the recorded cores
    (:func:`.loader_capacity.cores_cut`), from tf.data's threads' busy time per step."""
    machine = getattr(ctx.trace, "machine", None)
    cpus = machine.get("cpus") if isinstance(machine, dict) else None
    att = ctx.att
    if not isinstance(cpus, int) or att is None or not att.steps or step_ps <= 0:
        return None
    lo = np.array([x.start_ps for x in att.steps], np.int64)
    hi = np.array([x.end_ps for x in att.steps], np.int64)
    rows = np.concatenate([ctx.read_rows, ctx.meta_rows])
    reads = int(covered(merge(ctx.s_ps[rows], ctx.e_ps[rows]), lo, hi).sum()) if len(rows) else 0
    work = max(0, tf_data_work_ps(space, lo, hi) - reads)     # a thread waiting on a read takes no core
    return cores_cut(step_ps, s, work / len(lo), cpus)


def _tf_change(key: str) -> str:
    return {"file_io": "read in parallel: interleave(..., num_parallel_calls=tf.data.AUTOTUNE) over file shards, "
                       "prefetch(tf.data.AUTOTUNE)",
            "decode": "map(..., num_parallel_calls=tf.data.AUTOTUNE) and prefetch(tf.data.AUTOTUNE)",
            "starved": "prefetch(tf.data.AUTOTUNE) at the end of the pipeline",
            "copy": "prefetch to the device (tf.data.experimental.prefetch_to_device)",
            "object_io": "fetch objects in parallel: interleave(..., num_parallel_calls=tf.data.AUTOTUNE) over "
                         "shards in storage, prefetch(tf.data.AUTOTUNE); larger shards if each request stays long",
            }.get(key, "map(..., num_parallel_calls=tf.data.AUTOTUNE) and prefetch(tf.data.AUTOTUNE)")


def _grain_change(ctx: Context, s: float, key: str, threads: int | None) -> tuple[str, float | None, str | None]:
    """grain's change for the largest part, as (change, step-time cut by the workers model or
    None, that model): worker processes for the decode or the reads (grain's read threads share
    the GIL: a map in Python does not scale with them; from its ``num_threads``, or 1, to the
    usable cores less one for the step, at least one more), a deeper buffer when starved, a
    device prefetch for copies."""
    machine = getattr(ctx.trace, "machine", None)
    cpus = machine.get("cpus") if isinstance(machine, dict) else None
    cap = max(1, cpus - 1) if isinstance(cpus, int) and cpus > 0 else None
    if key == "starved":
        return "grain: a deeper buffer: a larger ReadOptions(prefetch_buffer_size=...), or .mp_prefetch(...)", None, None
    if key == "copy":
        return "put the next batch on the device ahead of the step (jax.device_put of batch n+1 during step n)", None, None
    n = threads or 1
    want = math.ceil(1.5 * n / max(1 - s, 0.05))
    want = max(n + 1, min(want, cap) if cap else want)
    t_after = max(1 - s, n / want)
    text = (f".mp_prefetch(grain.MultiprocessingOptions(num_workers={want})) (grain.DataLoader(worker_count={want})): "
            f"the {'reads' if key in ('file_io', 'object_io') else 'decode'} in {want} worker processes beside "
            f"ReadOptions(num_threads={threads if threads else '?'}), whose threads share the GIL")
    if key == "file_io":
        text += "; faster storage if the reads stay long"
    if cap and want >= cap:
        text += f" (the {cpus} usable cores are the limit)"
    model = (f"worker processes scale grain's throughput with their number: {n} -> {want} deliver {want / n:.1f}x "
             f"the elements, so the step time becomes max(1 - wait share, {n}/{want}) of now = {100 * t_after:.0f}%")
    return text, 1 - t_after, model
