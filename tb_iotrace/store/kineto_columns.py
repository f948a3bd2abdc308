"""A Kineto trace's events sorted into compact columns, one event at a time.

:class:`Collector` takes the events of ``traceEvents`` (dicts as ``json`` reads them, or the
structs of :mod:`tb_iotrace.store.kineto_json`) and keeps, for the conversion of
:mod:`tb_iotrace.store.kineto_xspace`, only what it writes: per host thread (pid, tid) and per GPU
(device, stream) a :class:`Line` of start and duration (ns), event name (interned) and
arguments; the I/O calls (``tb_iotrace.io`` events) as :class:`IoColumns`; the thread names
of the metadata events; the earliest start and latest end. No event's dict outlives its
batch. Arguments are kept as they become stats: an int in int64 range as an int, a float
as a float, ``None`` left out, anything else as its stat text (a string itself, else its
JSON), interned, cut to :data:`MAX_STAT_TEXT`. About 40 bytes per event and 13 per argument.

Which events go where (unchanged from the dict-per-event conversion it replaces): only
complete events (``"ph": "X"``) with a string name and a finite ``ts`` within
:data:`MAX_US`; a ``dur`` that is not a finite number below it counts as 0.
"""
from __future__ import annotations

import json
import re
from array import array
from typing import Any

from tb_iotrace.store.kineto import CATEGORY

__all__ = ["ARG_FLOAT", "ARG_INT", "ARG_TEXT", "DEVICE_CATEGORIES", "MAX_STAT_TEXT", "MAX_US", "Collector", "IoColumns", "Line", "int_id", "num"]

DEVICE_CATEGORIES = frozenset({"kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation"})
MAX_STAT_TEXT = 1024
MAX_US = 1e15          # |ts| and dur bound (about 31 years in us): past it an event is dropped / has no length
INT64_MIN, INT64_END = -(1 << 63), 1 << 63
ARG_INT, ARG_FLOAT, ARG_TEXT = 0, 1, 2
_ID_RE = re.compile(r"\s*(?:stream\s+)?(-?\d+)\s*")
_EMPTY: dict[str, Any] = {}


def num(v: Any) -> float | None:
    """A JSON number as a finite float, else None (bools are not numbers here)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v) if v == v and abs(v) != float("inf") else None


def int_id(v: Any) -> int | None:
    """A pid/tid/device/stream as an int (Kineto writes ints; GPU traces may write ``"stream 7"``)."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, str):
        m = _ID_RE.fullmatch(v)
        return int(m.group(1)) if m else None
    return None


class Line:
    """The events of one host thread or GPU stream, in trace order: start and duration (ns),
    name id, where their argument values start in the collector's ``arg_val`` and the id of
    their arguments' shape (:attr:`Collector.shapes`)."""

    __slots__ = ("start", "dur", "name", "arg_at", "shape")

    def __init__(self) -> None:
        self.start = array("q")
        self.dur = array("q")
        self.name = array("i")
        self.arg_at = array("q")
        self.shape = array("i")


class IoColumns:
    """The I/O calls (``tb_iotrace.io`` events), in trace order, their arguments as the
    conversion reads them: an int-typed one or its default, ``path`` a string or ``""``.
    ``overflow``: the first int that int64 cannot hold (the conversion's error, raised only
    when the trace has a ``tb_iotrace`` record)."""

    FIELDS = (("offset", -1), ("bytes_requested", -1), ("fd", -1), ("errno", 0), ("bytes", -(1 << 62)))

    def __init__(self) -> None:
        self.start = array("q")
        self.dur = array("q")
        self.pid: list[int] = []
        self.tid: list[int] = []
        self.op: list[str] = []
        self.path: list[str] = []
        self.ints = {k: array("q") for k, _ in self.FIELDS}
        self.overflow: str | None = None

    def __len__(self) -> int:
        return len(self.op)

    def add(self, s: int, d: int, pid: int, tid: int, op: str, args: dict[str, Any], paths: dict[str, str]) -> None:
        self.start.append(s)
        self.dur.append(d)
        self.pid.append(pid)
        self.tid.append(tid)
        self.op.append(op)
        p = args.get("path")
        self.path.append(paths.setdefault(p, p) if type(p) is str else "")
        get = args.get
        for key, default in self.FIELDS:
            v = get(key, default)
            if type(v) is not int:
                v = default
            elif not INT64_MIN <= v < INT64_END:
                self.overflow = self.overflow or f"{key} {v} does not fit in 64 bits"
                v = default
            self.ints[key].append(v)


class Collector:
    """Takes the events (:meth:`add_events`), keeps them as columns (see the module doc)."""

    def __init__(self, base_ns: int) -> None:
        self.base = base_ns
        self.names: list[str] = []
        self._name_ids: dict[str, int] = {}
        self.texts: list[str] = []
        self._text_ids: dict[str, int] = {}
        # an event's arguments: the keys (those not null) and kinds of their values (None: all
        # ints), the shape; their values (an int, or an index into floats / texts) in arg_val
        self.shapes: list[tuple[tuple[str, ...], tuple[int, ...] | None]] = [((), None)]
        self._shape_ids: dict[Any, int] = {((), None): 0}
        self.arg_val = array("q")
        self.floats = array("d")
        self.host: dict[tuple[int, int], Line] = {}
        self.device: dict[int, dict[int, Line]] = {}
        self.io = IoColumns()
        self._paths: dict[str, str] = {}
        self.thread_names: dict[tuple[int, int], str] = {}
        self.lo: int | None = None
        self.hi: int | None = None
        self.complete = 0
        self.seen = 0

    # ------------------------------------------------------------------ intake
    def add_events(self, events: list[Any]) -> None:
        """One batch of ``traceEvents`` elements: dicts, or :class:`~tb_iotrace.store.kineto_json.Event`
        structs (anything else is skipped, as the conversion always did)."""
        self.seen += len(events)
        add = self._add
        for e in events:
            if type(e) is dict:
                add(e.get("ph"), e.get("name"), e.get("cat"), e.get("ts"), e.get("dur"), e.get("pid"),
                    e.get("tid"), e.get("args", _EMPTY))
            elif hasattr(e, "__struct_fields__"):
                add(e.ph, e.name, e.cat, e.ts, e.dur, e.pid, e.tid, e.args)

    def _add(self, ph: Any, name: Any, cat: Any, ts: Any, dur: Any, pid: Any, tid: Any, args: Any) -> None:
        if ph == "M":
            if name == "thread_name":
                p, t = int_id(pid), int_id(tid)
                a = args if isinstance(args, dict) else _EMPTY
                if p is not None and t is not None and isinstance(a.get("name"), str):
                    self.thread_names.setdefault((p, t), a["name"])
            return
        if ph != "X":
            return
        if type(ts) is not float or not -MAX_US < ts < MAX_US:   # Kineto writes floats
            ts = num(ts)
            if ts is None or not -MAX_US < ts < MAX_US:
                return
        if type(name) is not str:
            return
        if type(dur) is not float or not dur < MAX_US:
            dur = num(dur) or 0.0
            if not dur < MAX_US:
                dur = 0.0
        self.complete += 1
        s = self.base + round(ts * 1000)
        d = round(dur * 1000) if dur > 0 else 0
        if type(args) is not dict:
            args = _EMPTY
        if type(pid) is not int:
            pid = int_id(pid)
        if type(tid) is not int:
            tid = int_id(tid)
        if cat == CATEGORY:
            if pid is None or tid is None:
                return
            self.io.add(s, d, pid, tid, name, args, self._paths)
        elif cat in DEVICE_CATEGORIES:
            # absent or null: the event's pid/tid (a null is no value, as elsewhere in the trace)
            dev = int_id(pid if args.get("device") is None else args["device"])
            stream = int_id(tid if args.get("stream") is None else args["stream"])
            if dev is None or stream is None:
                return
            lines = self.device.get(dev)
            if lines is None:
                lines = self.device[dev] = {}
            line = lines.get(stream)
            if line is None:
                line = lines[stream] = Line()
            self._append(line, s, d, name, args)
        elif pid is not None and tid is not None:
            line = self.host.get((pid, tid))
            if line is None:
                line = self.host[(pid, tid)] = Line()
            self._append(line, s, d, name, args)
        else:
            return   # Kineto's own spans ("Spans", "Traces" pseudo-processes)
        if self.lo is None or s < self.lo:
            self.lo = s
        if self.hi is None or s + d > self.hi:
            self.hi = s + d

    def _append(self, line: Line, s: int, d: int, name: str, args: dict[str, Any]) -> None:
        nid = self._name_ids.get(name)
        if nid is None:
            nid = self._name_ids[name] = len(self.names)
            self.names.append(name)
        line.start.append(s)
        line.dur.append(d)
        line.name.append(nid)
        vals = self.arg_val
        at = len(vals)
        line.arg_at.append(at)
        if not args:
            line.shape.append(0)
            return
        try:
            vals.extend(args.values())    # the usual case: every value an int (or bool) within int64
            key: Any = (tuple(args), None)
        except (TypeError, OverflowError):
            del vals[at:]
            key = self._add_args(args)
        sid = self._shape_ids.get(key)
        if sid is None:
            sid = self._shape_ids[key] = len(self.shapes)
            self.shapes.append((tuple(map(str, key[0])), key[1]))
        line.shape.append(sid)

    def _add_args(self, args: dict[str, Any]) -> tuple[tuple[str, ...], tuple[int, ...]]:
        """Arguments not all ints: each value by kind; the shape's key."""
        vals = self.arg_val
        keys: list[str] = []
        kinds: list[int] = []
        for k, v in args.items():
            t = type(v)
            if t is int and INT64_MIN <= v < INT64_END:
                kinds.append(ARG_INT)
                vals.append(v)
            elif v is None:
                continue
            elif t is bool:
                kinds.append(ARG_INT)
                vals.append(int(v))
            elif t is float:
                kinds.append(ARG_FLOAT)
                vals.append(len(self.floats))
                self.floats.append(v)
            else:
                text = v if isinstance(v, str) else json.dumps(v, separators=(",", ":"))
                kinds.append(ARG_TEXT)
                vals.append(self._text_id(text[:MAX_STAT_TEXT]))
            keys.append(k)
        return tuple(keys), tuple(kinds)

    def _text_id(self, text: str) -> int:
        got = self._text_ids.get(text)
        if got is None:
            got = self._text_ids[text] = len(self.texts)
            self.texts.append(text)
        return got

    # ------------------------------------------------------------------ reading back
    def args_of(self, at: int, shape: int) -> list[tuple[str, int, Any]]:
        """An event's arguments (``arg_at``, ``shape`` of its line) as (key, kind, value): an
        int (ARG_INT), a float (ARG_FLOAT) or a text (ARG_TEXT), as its stat takes it."""
        keys, kinds = self.shapes[shape]
        vals = self.arg_val[at:at + len(keys)]
        if kinds is None:
            return [(k, ARG_INT, v) for k, v in zip(keys, vals)]
        return [(k, kind, v if kind == ARG_INT else self.floats[v] if kind == ARG_FLOAT else self.texts[v])
                for k, kind, v in zip(keys, kinds, vals)]
