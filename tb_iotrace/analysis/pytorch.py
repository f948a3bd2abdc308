"""What the findings know of a PyTorch run, and the advice they give in PyTorch's terms.

A Kineto trace written by ``tb_iotrace.torch.trace_handler`` reaches the analysis as an XSpace
(:mod:`tb_iotrace.store.kineto_xspace`) whose I/O record holds, under ``kineto``, the processes of
the window (``pid``, ``role`` main/worker, ``tids``) and under ``kineto.pytorch`` what the
recording noted of torch (its version, the usable cores, the DataLoaders the window iterated
with their settings, worker pids and the epochs begun in the window:
:mod:`tb_iotrace.recording.pytorch.parent.loaders`). The main process waiting for its next batch is
the DataLoader iterator's ``__next__`` (``enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__``,
``..._MultiProcessingDataLoaderIter.__next__``): an input wait (:mod:`tb_iotrace.analysis.attribution`);
``ProfilerStep#N`` are the steps.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tb_iotrace.store.xplane import profile_start_ns, read_io_info
from tb_iotrace.analysis.intervals import merge, overlap

__all__ = ["NEXT_EVENT", "SUGGESTIONS", "TorchRun", "cpu_share", "input_bound_advice", "io_during", "loader_text",
           "torch_loaded", "torch_run", "worker_starts", "worker_stops"]

NEXT_EVENT = "enumerate(DataLoader)#"    # the prefix of the iterator's __next__ events


@dataclass
class TorchRun:
    """A PyTorch capture as the findings need it."""

    version: str = ""
    cpus: int | None = None                 # cores the training process could use
    main_tids: set[int] = field(default_factory=set)
    worker_pids: dict[int, int] = field(default_factory=dict)   # tid -> worker pid
    loaders: list[dict[str, Any]] = field(default_factory=list)
    gpu: bool = False                       # the trace has GPU activity (a device plane)
    start_ns: int = 0                       # the capture's clock origin (profile start)
    steps_note: str = ""                    # what the steps are, when tb_iotrace took the window itself
    main_cpu_share: float | None = None     # the main process's CPU time over its window's wall time
    workers_busy_ns: int | None = None      # the workers' CPU time and run-queue delay over the window (the
                                            # time they wanted a core), None unless every worker recorded both

    def loader(self) -> dict[str, Any] | None:
        """The DataLoader the advice is about: of those iterated, the one with the most workers
        (the training loader, usually), else the first."""
        if not self.loaders:
            return None
        return max(self.loaders, key=lambda d: (len(d.get("worker_pids") or []), -int(d.get("id") or 0)))

    def rows_of_main(self, tid: np.ndarray) -> np.ndarray:
        """Per I/O row: made by the main process (not a DataLoader worker)."""
        if self.main_tids:
            return np.isin(tid, list(self.main_tids))
        return ~np.isin(tid, list(self.worker_pids))

    def to_ps(self, ns: int) -> int:
        """CLOCK_REALTIME ns to the capture's picoseconds."""
        return (int(ns) - self.start_ns) * 1000


def torch_run(space: Any) -> TorchRun | None:
    """The PyTorch facts of a capture, None when it is not a PyTorch (Kineto) capture."""
    if space is None:
        return None
    info = read_io_info(space)
    kin = info.get("kineto") if isinstance(info, dict) else None
    if not isinstance(kin, dict):
        return None
    run = TorchRun()
    worker_busy: list[int | None] = []
    for p in kin.get("processes") or []:
        if not isinstance(p, dict):
            continue
        tids = {int(t) for t in p.get("tids") or []}
        if p.get("role") == "worker":
            run.worker_pids.update({t: int(p.get("pid") or 0) for t in tids})
            cpu, delay = p.get("cpu_ns"), p.get("run_delay_ns")
            whole = isinstance(cpu, int) and isinstance(delay, int) and cpu >= 0 and delay >= 0
            worker_busy.append(cpu + delay if whole else None)
        else:
            run.main_tids |= tids
            if p.get("role") == "main":
                run.main_cpu_share = cpu_share(p)
    if worker_busy and None not in worker_busy:
        run.workers_busy_ns = sum(c for c in worker_busy if c is not None)
    facts = kin.get("pytorch")
    if isinstance(facts, dict):
        run.version = str(facts.get("version") or "")
        run.cpus = int(facts["cpus"]) if isinstance(facts.get("cpus"), int) else None
        run.loaders = [d for d in facts.get("dataloaders") or [] if isinstance(d, dict)]
    run.steps_note = str(kin.get("steps_note") or "")
    run.gpu = any(p.name.startswith("/device:GPU") for p in space.planes)
    run.start_ns = profile_start_ns(space) or 0
    return run


def cpu_share(proc: dict[str, Any]) -> float | None:
    """A process's CPU time over its window's wall time (cores it kept busy, on average), from
    its ``cpu_ns``; None when the record has none."""
    cpu, wall = proc.get("cpu_ns"), int(proc.get("end_ns") or 0) - int(proc.get("start_ns") or 0)
    if not isinstance(cpu, int) or cpu < 0 or wall <= 0:
        return None
    return cpu / wall


TORCH_DATA = "/torch/utils/data/"       # a process that loaded torch's DataLoader read its code here


def torch_loaded(paths: Any) -> bool:
    """Whether the process loaded torch's DataLoader (its code among the recorded ``paths``): a
    whole-run record of a PyTorch job, which carries no Kineto facts, still gets PyTorch's terms."""
    return any(TORCH_DATA in str(p) for p in paths)


def loader_text(d: dict[str, Any] | None) -> str:
    """``DataLoader(num_workers=2, prefetch_factor=2, persistent_workers=False, pin_memory=False)``."""
    if d is None:
        return "the DataLoader"
    keys = ("num_workers", "prefetch_factor", "persistent_workers", "pin_memory", "batch_size")
    return "DataLoader(" + ", ".join(f"{k}={d.get(k)}" for k in keys if k in d) + ")"


# The other findings' advice in PyTorch's terms (their causes are the files, not torch).
SUGGESTIONS = {
    "small-reads": ("Read in larger requests: in the Dataset read each file whole (f.read()) or in large "
                    "chunks (open(path, 'rb', buffering=1 << 20)), or pack samples into larger shards "
                    "(tar shards read sequentially by an IterableDataset, e.g. WebDataset)."),
    "eof-zero-reads": ("Each file costs one extra read at EOF; it matters when files are small: pack samples "
                       "into fewer, larger shards so the probe is paid once per shard."),
    "many-small-files": ("Pack per-sample files into shards of 100 MB or more (tar or one array file per "
                         "shard) read sequentially by an IterableDataset split across DataLoader workers "
                         "(torch.utils.data.get_worker_info())."),
    "metadata-heavy": ("Open each file once and keep it open (in each worker: open lazily in __getitem__ and "
                       "cache the handle), list files once in the Dataset's __init__ instead of os.path.exists/"
                       "stat per sample, read sequentially, and pack small files."),
    "random-access": ("Store samples in the order they are read, or read whole shards sequentially and shuffle "
                      "in memory (a shuffle buffer in an IterableDataset) instead of a random sampler over "
                      "offsets in large files."),
    "redundant-reads": ("Cache what is re-read: keep decoded samples in memory in the Dataset (with "
                        "persistent_workers=True the workers' caches survive epochs), or stage the files on a "
                        "faster tier."),
    "serial-reads": ("Read in parallel and ahead of the step: DataLoader(..., num_workers=N) so N worker "
                     "processes each read their own batches, persistent_workers=True, and a prefetch_factor "
                     "that keeps num_workers x prefetch_factor batches in flight."),
    "staging-candidates": None,       # the TF text is framework-neutral
    "blocking-writes": ("Move checkpoints and logs off the step: torch.save every N steps or from a "
                        "background thread (torch.distributed.checkpoint.async_save for sharded state), "
                        "and avoid fsync per step."),
    "small-writes": ("Buffer the output: open log files with a large buffer instead of line buffering, write "
                     "TensorBoard summaries through SummaryWriter (buffered, flush_secs), batch metrics per N "
                     "steps."),
    "slow-filesystem": ("Stage the hot files from this file system to local disk or memory before training, "
                        "and read it with more requests in flight (more DataLoader workers) to hide its "
                        "latency."),
}


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def io_during(wait_iv: tuple[np.ndarray, np.ndarray], s_ps: np.ndarray, e_ps: np.ndarray) -> int:
    """Picoseconds of the waits during which one of the calls [s_ps, e_ps) was in flight."""
    return overlap(wait_iv, merge(s_ps, e_ps)) if len(s_ps) else 0


def input_bound_advice(run: TorchRun, *, wait_ps: int, main_io_ps: int, worker_io_ps: int,
                       restart_wait_ps: int, bursty: bool, io_share_floor: float
                       ) -> tuple[str, str, dict[str, Any]]:
    """(statement's second sentence, suggestion, evidence) of an input-bound PyTorch run: the
    main process loading the data itself (``num_workers=0``), its workers started anew at an
    epoch's start (``restart_wait_ps``: the waits for an epoch's first batch, when the epoch
    started workers), or its workers not keeping up."""
    d = run.loader()
    n = int(d.get("num_workers") or 0) if d is not None else None
    ev: dict[str, Any] = {"framework": "PyTorch", "wait_event": "DataLoader __next__",
                          "main_process_io_during_wait_s": main_io_ps / 1e12,
                          "worker_io_during_wait_s": worker_io_ps / 1e12,
                          "wait_for_worker_restarts_s": restart_wait_ps / 1e12, "cpus": run.cpus,
                          "dataloaders": len(run.loaders)}
    if d is not None:
        ev.update({k: d.get(k) for k in ("num_workers", "prefetch_factor", "persistent_workers", "pin_memory",
                                          "batch_size", "start_method")})
    pin = (" and pin_memory=True (the batches go to the GPU: pinned pages let .to(device, non_blocking=True) "
           "copy while the next step runs)") if run.gpu and d is not None and not d.get("pin_memory") else ""
    cores = f" (this process may use {run.cpus} cores)" if run.cpus else ""
    main_share = main_io_ps / wait_ps if wait_ps else 0.0
    if n == 0 or (n is None and main_io_ps >= worker_io_ps and main_io_ps > 0):
        ev["cause"] = "main-process-loading"
        said = "num_workers=0" if n == 0 else "no DataLoader worker read"
        stmt = (f"The main process loads every batch itself ({said}): its own file I/O covered "
                f"{_pct(main_share)} of the wait.")
        sug = ("Load batches in DataLoader worker processes, ahead of the step: DataLoader(..., num_workers=N) "
               f"with N up to the free cores{cores}, raised while the wait falls; persistent_workers=True so "
               f"they start once, not every epoch{pin}.")
        return stmt, sug, ev
    worker_share = worker_io_ps / wait_ps if wait_ps else 0.0
    p = d.get("prefetch_factor") if d is not None else None
    if wait_ps and restart_wait_ps * 2 >= wait_ps:
        ev["cause"] = "worker-restarts"
        stmt = (f"{_pct(restart_wait_ps / wait_ps)} of the wait was the workers stopping at an epoch's end "
                f"and new ones starting for the next epoch's first batch ({loader_text(d)}).")
        sug = ("DataLoader(..., persistent_workers=True) starts the workers once, not at every epoch (see "
               f"worker-restarts){pin}.")
        return stmt, sug, ev
    now = f" (now {n}" + (f"; {run.cpus} cores usable)" if run.cpus else ")") if n else ""
    reading = worker_share >= io_share_floor
    what = (f"their reads covered {_pct(worker_share)} of the wait" if reading else
            f"their reads covered only {_pct(worker_share)} of the wait: the rest is their other work "
            "(decoding, transforms) or handing the batches over")
    stmt = f"Its {n if n is not None else 'DataLoader'} worker processes do not keep up ({loader_text(d)}): {what}."
    ev["cause"] = "workers-behind-bursts" if bursty else "workers-behind"
    more = (f"raise num_workers{now}" + (": each worker reads its own batches, so more of them keep "
            "more reads in flight; faster storage, larger files or a warm page cache shorten each read"
            if reading else ": cheaper per-sample work (decode/resize once, offline), batched transforms in "
            "collate_fn"))
    flight = f": {n} x {p} = {n * p} batches in flight" if isinstance(p, int) and n else ""
    if bursty:
        sug = (f"The wait comes in bursts (most steps do not wait): a larger prefetch_factor (now {p}{flight}) "
               f"lets the workers get further ahead; if that is not enough, {more}{pin}.")
    else:
        sug = (f"Most steps wait, so the workers are slower than the step on average: {more}. A larger "
               f"prefetch_factor (now {p}{flight}) only smooths bursts{pin}.")
    return stmt, sug, ev


def worker_starts(run: TorchRun, wait_iv: tuple[np.ndarray, np.ndarray]) -> list[dict[str, Any]]:
    """Each epoch begun in the window that started DataLoader workers: when (``__iter__``), its
    workers, and what it cost until the first batch came (the end of the first input wait
    after ``__iter__`` returned; the ``__iter__`` call alone when no wait follows)."""
    ws, we = wait_iv
    out = []
    for d in run.loaders:
        for e in d.get("epochs") or []:
            pids = e.get("workers_started") or []
            if not pids:
                continue
            s_ps, i_ps = run.to_ps(e["start_ns"]), run.to_ps(e["end_ns"])
            k = int(np.searchsorted(ws, i_ps, side="left"))
            first = int(we[k]) if k < len(ws) else i_ps
            out.append({"dataloader": d.get("id"), "persistent_workers": bool(d.get("persistent_workers")),
                        "start_method": d.get("start_method"), "workers": len(pids), "start_ps": s_ps,
                        "iter_s": (i_ps - s_ps) / 1e12, "cost_s": (first - s_ps) / 1e12,
                        "first_wait_ps": int(we[k] - ws[k]) if k < len(ws) else 0})
    return out


def worker_stops(run: TorchRun) -> list[dict[str, Any]]:
    """Each stop of DataLoader workers in the window (a non-persistent loader's, at the end of
    an epoch, inside the ``__next__`` that ends it): its loader and duration."""
    return [{"dataloader": d.get("id"), "persistent_workers": bool(d.get("persistent_workers")),
             "workers": len(e.get("workers") or []), "start_ps": run.to_ps(e["start_ns"]),
             "cost_s": (int(e["end_ns"]) - int(e["start_ns"])) / 1e9}
            for d in run.loaders for e in d.get("worker_stops") or []]
