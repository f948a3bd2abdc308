"""Join the I/O trace with TensorFlow's (or JAX's) host timeline: which op each file
access ran under, which step it belongs to, and per-step I/O.

All times here are picoseconds on the capture's own clock (since the profile
start, as xprof stores them): I/O rows are converted from absolute ns with the
``Task Environment`` profile start.

Thread matching: TensorFlow 2.21 and jaxlib (0.10) name host lines by
``std::hash`` of the thread's ``pthread_self()`` (line id), which the capture
records per thread; lines that do not match that way are matched by the
thread's comm name.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tb_iotrace.model.stepwait import INPUT_WAIT_PREFIXES, DEVICE_STEPS_LINE, STEP_STATS, covered, is_input_wait, merge, select_steps
from tb_iotrace.store.xplane import HOST_PLANE, LINE_PREFIX, IoTrace, columns, find_plane, profile_start_ns, read_io_data, thread_line_id

# Events that mark a training step on the host plane (Keras 3, tf.profiler Trace with step_num).
STEP_EVENT_NAMES = ("Profiled batch", "train", "TraceContext", "train_step")
# Keras 3 on JAX names its step events "Profiled batch <n>".
KERAS_BATCH_PREFIX = "Profiled batch "
# TraceMe stat of a step root: jax.profiler.StepTraceAnnotation and TF's Trace(..., _r=1) set it,
# whatever the step's name.
STEP_ROOT_STAT = "_r"
# Host events that mean "the step is waiting for its input": the one rule of tb_iotrace.model.stepwait
# (INPUT_WAIT_PREFIXES is re-exported from there).
DATA_OPS_READ = ("read", "pread", "readv", "preadv", "fread", "fgets", "fgetc", "getc", "fscanf",
                 "__read", "__pread", "__fread", "__fgets", "_IO_getc", "vfscanf", "__isoc99",
                 "recv", "__recv", "splice")
DATA_OPS_WRITE = ("write", "pwrite", "writev", "pwritev", "fwrite", "fputs", "fputc", "putc",
                  "fprintf", "vfprintf", "__fprintf", "__vfprintf", "_IO_putc", "send")


def op_kind(op: str) -> str:
    """'read', 'write' or 'meta' for a call name."""
    if op.startswith(("sendfile", "copy_file_range")):
        return "read"
    if any(op == p or op.startswith(p) for p in DATA_OPS_WRITE):
        return "write"
    if any(op == p or op.startswith(p) for p in DATA_OPS_READ):
        return "read"
    return "meta"


@dataclass
class Step:
    index: int
    name: str
    step_num: int | None
    start_ps: int
    end_ps: int
    wait_ps: int = 0             # time inside input-wait events (union)
    io_bytes: int = 0
    io_calls: int = 0
    io_time_ps: int = 0          # sum of I/O call durations attributed to the step

    @property
    def duration_ps(self) -> int:
        return self.end_ps - self.start_ps

    @property
    def input_wait_share(self) -> float:
        return self.wait_ps / self.duration_ps if self.duration_ps > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "name": self.name, "step_num": self.step_num,
                "start_ps": self.start_ps, "end_ps": self.end_ps, "duration_ps": self.duration_ps,
                "input_wait_ps": self.wait_ps, "input_wait_share": self.input_wait_share,
                "io_bytes": self.io_bytes, "io_calls": self.io_calls, "io_time_ps": self.io_time_ps}


@dataclass
class Attribution:
    """Per I/O row: the host line it ran on, its innermost enclosing host event and its step."""

    trace: IoTrace
    start_ps: np.ndarray               # I/O rows on the capture clock
    end_ps: np.ndarray
    host_line: np.ndarray              # index into host plane lines, -1 when unmatched
    enclosing: np.ndarray              # enclosing event name ("" when none), object array
    enclosing_display: np.ndarray
    step: np.ndarray                   # index into steps, -1 when outside every step
    steps: list[Step] = field(default_factory=list)
    has_step_markers: bool = False
    notes: list[str] = field(default_factory=list)
    line_names: dict[int, str] = field(default_factory=dict)   # tid -> host line name
    # the input waits of every host line, merged (tb_iotrace.model.stepwait's rule), capture ps
    wait_iv: tuple[np.ndarray, np.ndarray] = field(
        default_factory=lambda: (np.zeros(0, np.int64), np.zeros(0, np.int64)))
    origin_ns: int = 0                 # epoch ns of the capture clock's 0 (start_ps = (ns - origin_ns) * 1000)


def _line_for_thread(lines: list[Any], pthread_id: int, comm: str, comm_unique: bool) -> int:
    """The host line of a thread: by TF's pthread hash, else by comm name, but only when
    that name is unambiguous (every Python thread is called "python")."""
    want = thread_line_id(pthread_id)
    for i, ln in enumerate(lines):
        if ln.id == want or ln.name.endswith(f"/{want}"):
            return i
    if not comm_unique:
        return -1
    named = [i for i, ln in enumerate(lines)
             if not ln.name.startswith(LINE_PREFIX) and ln.name.split("/")[0] == comm]
    return named[0] if len(named) == 1 else -1


def innermost(start: np.ndarray, end: np.ndarray, names: np.ndarray, disp: np.ndarray,
               query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each query time, the innermost [start, end) interval containing it (properly nested
    intervals, as on one thread's line)."""
    order = np.lexsort((-end, start))
    bounds: list[int] = []
    owner: list[int] = []
    stack: list[int] = []
    for k in order.tolist():
        s = int(start[k])
        while stack and int(end[stack[-1]]) <= s:
            top = stack.pop()
            bounds.append(int(end[top]))
            owner.append(stack[-1] if stack else -1)
        stack.append(k)
        bounds.append(s)
        owner.append(k)
    while stack:
        top = stack.pop()
        bounds.append(int(end[top]))
        owner.append(stack[-1] if stack else -1)
    if not bounds:
        empty = np.full(len(query), "", dtype=object)
        return empty, empty.copy()
    b = np.asarray(bounds, dtype=np.int64)
    o = np.asarray(owner, dtype=np.int64)
    pos = np.searchsorted(b, query, side="right") - 1
    who = np.where(pos >= 0, o[np.clip(pos, 0, None)], -1)
    nm = np.where(who >= 0, names[np.clip(who, 0, None)], "")
    dn = np.where(who >= 0, disp[np.clip(who, 0, None)], "")
    return nm.astype(object), dn.astype(object)


def _step_candidates(pc: Any, ln: Any, names: np.ndarray) -> np.ndarray:
    """Indices of the line's events that may mark a step: known step names, Keras-on-JAX's
    "Profiled batch <n>", and events whose kind (first occurrence) carries the step-root stat."""
    known = np.isin(names, STEP_EVENT_NAMES)
    keras = np.char.startswith(names.astype(str), KERAS_BATCH_PREFIX) if len(names) else known
    ids = np.asarray(ln.metadata_id)
    kinds, first = np.unique(ids, return_index=True)
    roots = [int(k) for k, i in zip(kinds.tolist(), first.tolist())
             if not known[i] and not keras[i]
             and str(pc.event_stats(ln, int(i), with_metadata=False).get(STEP_ROOT_STAT, "")) == "1"]
    return np.flatnonzero(known | keras | np.isin(ids, roots))


def device_steps(space: Any) -> list[tuple[int, int, str, int | None]]:
    """(start ps, end ps, name, step number) of the ``Steps`` line of the first device plane
    that has one (TF GPU captures): the steps when the host has no step markers
    (:mod:`tb_iotrace.model.stepwait`)."""
    for plane in space.planes:
        if not plane.name.startswith("/device:"):
            continue
        for ln in plane.lines:
            if ln.name != DEVICE_STEPS_LINE or not len(ln.events):
                continue
            pc = columns(plane)
            for lc in pc.lines:
                if lc.name != DEVICE_STEPS_LINE or not len(lc):
                    continue
                names = pc.event_names(lc)
                return [(int(a), int(b), str(n), int(str(n)) if str(n).isdigit() else None)
                        for a, b, n in zip(lc.start_ps.tolist(), lc.end_ps.tolist(), names.tolist())]
    return []


def attribute(space: Any, trace: IoTrace | None = None) -> Attribution | None:
    """Attribute the I/O stored in ``space`` (None if it holds none)."""
    trace = trace if trace is not None else read_io_data(space)
    if trace is None:
        return None
    host = find_plane(space, HOST_PLANE)
    start0 = profile_start_ns(space)
    notes: list[str] = []
    if start0 is None:
        start0 = int(trace.start_ns.min()) if len(trace) else 0
        notes.append("capture has no profile start time; I/O aligned to its first event")
    s_ps = (trace.start_ns - start0) * 1000
    e_ps = (trace.end_ns - start0) * 1000
    n = len(trace)
    host_line = np.full(n, -1, dtype=np.int64)
    enclosing = np.full(n, "", dtype=object)
    enclosing_d = np.full(n, "", dtype=object)
    steps: list[Step] = []
    line_names: dict[int, str] = {}
    if host is None:
        notes.append("capture has no /host:CPU plane")
        return Attribution(trace, s_ps, e_ps, host_line, enclosing, enclosing_d, np.full(n, -1),
                           steps, False, notes, line_names, origin_ns=int(start0))
    pc = columns(host)
    lines = pc.lines
    # --- steps and input waits, from every host line
    wait_s: list[np.ndarray] = []
    wait_e: list[np.ndarray] = []
    step_rows: list[tuple[int, int, str, int | None]] = []
    for ln in lines:
        if ln.name.startswith(LINE_PREFIX) or not len(ln):
            continue
        names = pc.event_names(ln)
        is_wait = np.fromiter((is_input_wait(str(x)) for x in names), bool, len(names))
        if is_wait.any():
            wait_s.append(ln.start_ps[is_wait])
            wait_e.append(ln.end_ps[is_wait])
        for i in _step_candidates(pc, ln, names).tolist():
            st = pc.event_stats(ln, i)
            num = next((st[k] for k in STEP_STATS if k in st), None)
            name = str(names[i])
            if num is None and name.startswith(KERAS_BATCH_PREFIX) and name[len(KERAS_BATCH_PREFIX):].isdigit():
                num = int(name[len(KERAS_BATCH_PREFIX):])
            if name != "Profiled batch" and num is None:
                continue
            step_rows.append((int(ln.start_ps[i]), int(ln.end_ps[i]), name,
                              int(num) if num is not None else None))
    step_rows = select_steps(step_rows) or device_steps(space)     # tb_iotrace.model.stepwait's rule
    step_rows.sort()
    wait_iv = merge(np.concatenate(wait_s) if wait_s else np.zeros(0, np.int64),
                    np.concatenate(wait_e) if wait_e else np.zeros(0, np.int64))
    per_step = covered(wait_iv, [r[0] for r in step_rows], [r[1] for r in step_rows]) if step_rows else []
    for k, (a, b, nm, num) in enumerate(step_rows):
        steps.append(Step(k, nm, num, a, b, wait_ps=int(per_step[k])))
    has_steps = bool(steps)
    if not has_steps:
        notes.append("no step markers in this capture: per-step views use the whole window")
    # --- per-thread innermost enclosing host event
    tids = np.unique(trace.tid).tolist()
    comms = [trace.threads[int(t)].comm for t in tids if int(t) in trace.threads]
    for tid in tids:
        info = trace.threads.get(int(tid))
        rows = np.flatnonzero(trace.tid == tid)
        li = (_line_for_thread(lines, info.pthread_id, info.comm, comms.count(info.comm) == 1)
              if info else -1)
        if li < 0:
            continue
        ln = lines[li]
        line_names[int(tid)] = ln.name
        host_line[rows] = li
        nm, dn = innermost(ln.start_ps, ln.end_ps, pc.event_names(ln), pc.event_display_names(ln),
                            s_ps[rows])
        enclosing[rows] = nm
        enclosing_d[rows] = dn
    # --- steps of each row, per-step totals
    step_idx = np.full(n, -1, dtype=np.int64)
    if has_steps:
        st_start = np.array([s.start_ps for s in steps], dtype=np.int64)
        st_end = np.array([s.end_ps for s in steps], dtype=np.int64)
        pos = np.searchsorted(st_start, s_ps, side="right") - 1
        ok = (pos >= 0) & (s_ps < st_end[np.clip(pos, 0, None)])
        step_idx[ok] = pos[ok]
    kind_of: dict[Any, str] = {}       # per distinct call name: a capture has few, and millions of rows
    kinds = (np.array([kind_of[o] if o in kind_of else kind_of.setdefault(o, op_kind(str(o)))
                       for o in trace.op.tolist()], dtype=object) if n else np.zeros(0, object))
    moved = np.where((kinds != "meta") & (trace.returned > 0), trace.returned, 0)
    dur = e_ps - s_ps
    for s in steps:
        sel = step_idx == s.index
        s.io_calls = int(sel.sum())
        s.io_bytes = int(moved[sel].sum())
        s.io_time_ps = int(dur[sel].sum())
    return Attribution(trace, s_ps, e_ps, host_line, enclosing, enclosing_d, step_idx, steps,
                       has_steps, notes, line_names, wait_iv, origin_ns=int(start0))
