"""The one rule for input wait: which host events mean "the step waits for its input", how
they add up, and what the share is taken of. The report (:mod:`tb_iotrace.analysis.attribution`), the
I/O tab (``/steps``, ``/hosts``), the exports and the findings all use it, so one capture
gives one input wait everywhere.

The rule:

- an **input wait** is a host event whose name starts with one of :data:`INPUT_WAIT_PREFIXES`:
  tf.data's ``IteratorGetNext*`` (the step asking its iterator for the next element),
  ``MultiDeviceIteratorGetNextFromShard``, PyTorch's DataLoader iterator ``__next__`` as
  Kineto names it (``enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__``), and
  ``tb_iotrace::next`` (tb_iotrace's TraceMe around a tf.data iterator's ``__next__`` in an eager
  loop: the iterator's Python around the op, :mod:`tb_iotrace.recording.tf_iterator`), TF's
  eager dispatch of the op (``EagerLocalExecute: IteratorGetNext``), and
  grain's prefetch iterators' ``__next__`` (:data:`GRAIN_WAIT_NAMES`: grain's "prefetch" stage,
  traced on the consumer's thread; grain's other stages at work, ``Prefetch._getitem``,
  ``<Dataset>.__getitem__``, are the loader working, not a wait). At any
  depth, on any host line. tf.data's own ``Iterator::`` events are the *loader working*, on its
  threads, not the step waiting: they are not a wait;
- the wait is the **union** of those events over all host lines (two threads waiting at once
  count once: the job waits once);
- the **steps** are the training loop's own step markers on the host (TF/Keras ``train``/``Profiled
  batch`` TraceMes with a step number, JAX ``StepTraceAnnotation``, PyTorch ``ProfilerStep#N``):
  of the marker kinds found, the one seen most often, its markers that do not overlap an
  earlier one (:func:`select_steps`: a Keras ``Profiled batch`` and a ``train`` TraceMe around
  the same batch are one step, not two); only when the host has none, the ``Steps`` line of the
  first device plane that has one (:data:`DEVICE_STEPS_LINE`, what xprof draws for GPU captures);
- with step markers, the **input-wait share** is the wait inside the steps over the steps'
  summed duration (basis ``"steps"``); without them, the wait over the span from the first
  wait's start to the last wait's end (basis ``"input waits"``); with no wait at all, 0
  (basis ``"none"``).

Times are plain integers in any one unit (the callers use ps or ns); nothing here reads a file.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

INPUT_WAIT_PREFIXES = ("IteratorGetNext", "IteratorGetNextOp", "IteratorGetNextAsOptional",
                       "MultiDeviceIteratorGetNextFromShard", "enumerate(DataLoader)#", "tb_iotrace::next",
                       "EagerLocalExecute: IteratorGetNext")

# grain (its ``trace_input_pipeline_next(IPL_CAT_PREFETCH)`` TraceAnnotations): the consumer
# asking the iterator that hands elements over from grain's read threads. Limit: a thread
# prefetch stacked on another prefetch calls the inner one's __next__ on grain's own thread,
# which counts as a wait too (the union then over-counts while the step computes).
GRAIN_WAIT_NAMES = frozenset({"PrefetchDatasetIterator.__next__", "ThreadPrefetchDatasetIterator.__next__"})

# A device plane's line of steps (TF GPU captures), used when the host has no step markers.
DEVICE_STEPS_LINE = "Steps"
# The stats that number a step marker (tf.profiler Trace's step_num, Kineto's iter_num).
STEP_STATS = ("step_num", "iter_num")

__all__ = ["DEVICE_STEPS_LINE", "GRAIN_WAIT_NAMES", "INPUT_WAIT_PREFIXES", "InputWait", "STEP_STATS", "covered", "input_wait", "is_input_wait", "merge",
           "select_steps", "step_kind"]

# Markers numbered in their name are one kind whatever the number: PyTorch's ProfilerStep#<n>,
# Keras-on-JAX's "Profiled batch <n>".
_NUMBERED = re.compile(r"^(ProfilerStep#|Profiled batch )\d+$")


def step_kind(name: str) -> str:
    """The kind of a step marker: its name, the number dropped from a numbered one."""
    m = _NUMBERED.match(name)
    return m.group(1).rstrip() if m else name


def select_steps(rows: list[tuple[int, int, str, Any]]) -> list[tuple[int, int, str, Any]]:
    """The steps among the step-marker candidates ``rows`` ((start, end, name, extra), any
    order): the kind (:func:`step_kind`) seen most often (at a tie the greater name), its
    markers sorted by start, each that starts before the previous one ended left out."""
    if not rows:
        return []
    count: dict[str, int] = {}
    for r in rows:
        k = step_kind(r[2])
        count[k] = count.get(k, 0) + 1
    kind = max(count.items(), key=lambda kv: (kv[1], kv[0]))[0]
    out: list[tuple[int, int, str, Any]] = []
    for r in sorted((r for r in rows if step_kind(r[2]) == kind), key=lambda r: (r[0], r[1])):
        if not out or r[0] >= out[-1][1]:
            out.append(r)
    return out


def is_input_wait(name: str) -> bool:
    """Whether a host event of this name is the step waiting for its input."""
    return name.startswith(INPUT_WAIT_PREFIXES) or name in GRAIN_WAIT_NAMES


def merge(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Union of intervals [s, e) as sorted disjoint intervals (int64)."""
    s = np.asarray(starts, dtype=np.int64)
    e = np.asarray(ends, dtype=np.int64)
    keep = e > s
    s, e = s[keep], e[keep]
    if not len(s):
        return s, e
    order = np.argsort(s, kind="stable")
    s, e = s[order], e[order]
    run_end = np.maximum.accumulate(e)
    new = np.ones(len(s), bool)
    new[1:] = s[1:] > run_end[:-1]
    heads = np.flatnonzero(new)
    return s[heads], np.maximum.reduceat(e, heads)


def covered(iv: tuple[np.ndarray, np.ndarray], lo: Any, hi: Any) -> np.ndarray:
    """Length of the disjoint sorted intervals ``iv`` inside each window [lo_k, hi_k)."""
    lo = np.atleast_1d(np.asarray(lo, dtype=np.int64))
    hi = np.atleast_1d(np.asarray(hi, dtype=np.int64))
    s, e = iv
    if not len(s):
        return np.zeros(len(lo), dtype=np.int64)
    cum = np.concatenate([[0], np.cumsum(e - s)])

    def before(t: np.ndarray) -> np.ndarray:      # interval time before t
        i = np.searchsorted(s, t, side="right")   # intervals starting at or before t
        j = np.maximum(i - 1, 0)
        part = np.where(i > 0, np.minimum(t, e[j]) - s[j], 0)
        return np.where(i > 0, cum[j] + np.maximum(part, 0), 0)

    return np.maximum(before(hi) - before(lo), 0)


@dataclass(frozen=True)
class InputWait:
    """A capture's input wait by the one rule: ``wait`` inside ``time`` (same unit as given),
    ``share`` = wait / time, ``basis`` "steps" | "input waits" | "none", ``count`` the steps
    (basis steps) or the waits counted."""

    wait: int
    time: int
    share: float
    basis: str
    count: int
    per_step: tuple[int, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"wait": self.wait, "time": self.time, "share": self.share, "basis": self.basis,
                "count": self.count}


def input_wait(wait_iv: tuple[np.ndarray, np.ndarray], step_starts: Any = (), step_ends: Any = ()) -> InputWait:
    """The input wait of a capture: ``wait_iv`` the merged input-wait intervals (:func:`merge`),
    ``step_starts``/``step_ends`` its steps (empty: no step markers)."""
    ss = np.asarray(step_starts, dtype=np.int64)
    se = np.asarray(step_ends, dtype=np.int64)
    if len(ss):
        per = covered(wait_iv, ss, se)
        time = int(np.maximum(se - ss, 0).sum())
        wait = int(per.sum())
        return InputWait(wait, time, wait / time if time > 0 else 0.0, "steps", len(ss),
                         tuple(int(x) for x in per.tolist()))
    ws, we = wait_iv
    if not len(ws):
        return InputWait(0, 0, 0.0, "none", 0)
    time = int(we[-1] - ws[0])
    wait = int((we - ws).sum())
    return InputWait(wait, time, wait / time if time > 0 else 0.0, "input waits", len(ws))
