"""What one request looks at (:class:`View`): one host, or every host of a run on a common
clock, and the helpers every endpoint shares. Times are ns on the view's clock (see
:mod:`tb_iotrace.model.tab.columns`)."""
from __future__ import annotations

import math
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable

from tb_iotrace.model.tab.columns import TabCapture, Lane
from tb_iotrace.plugin.capture_objects import extent_with_objects
from tb_iotrace.plugin.object_lanes import object_lanes


MEMO_KEPT = 16  # answers kept per view


class NotFound(KeyError):
    pass


@dataclass
class Part:
    capture: TabCapture
    prefix: str  # lane key prefix ("" for a single host)
    offset: int  # ns added to this capture's times to reach the view's clock
    host: str


@dataclass
class View:
    """What one request looks at: one host, or every host of a run on a common clock."""

    run: str
    parts: list[Part]
    # hosts of the run left out because their file cannot be read: (host, file name, reason)
    unreadable: list[tuple[str, str, str]] = field(default_factory=list)
    _memo: OrderedDict[tuple[Any, ...], Any] = field(default_factory=OrderedDict, repr=False)
    _memo_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _lane_tables: dict[str, "LaneTable"] = field(default_factory=dict, repr=False)

    def memo(self, key: tuple[Any, ...], compute: Callable[[], Any]) -> Any:
        """``compute()``'s answer, kept on the view for the same ``key`` (the least recently
        used of more than :data:`MEMO_KEPT` dropped). The view is cached while its captures
        are (:meth:`.cache.LogdirIndex.view`), so an "All hosts" answer that sums every host
        (``/files``, ``/hosts``, ``/steps``) is computed once per run, not per request. The
        answer is shared: callers must not change it."""
        with self._memo_lock:
            if key in self._memo:
                self._memo.move_to_end(key)
                return self._memo[key]
        value = compute()
        with self._memo_lock:
            self._memo[key] = value
            while len(self._memo) > MEMO_KEPT:
                self._memo.popitem(last=False)
        return value

    @property
    def single(self) -> TabCapture:
        return self.parts[0].capture

    def extent(self) -> tuple[int, int]:
        spans = [extent_with_objects(p.capture) for p in self.parts]
        lo = min(s[0] + p.offset for s, p in zip(spans, self.parts))
        hi = max(s[1] + p.offset for s, p in zip(spans, self.parts))
        return lo, hi

    def lanes(self, io_by: str) -> list[tuple[Part, Lane]]:
        """Every lane of the view in the order answers index them (host, device, I/O)."""
        return self.lane_table(io_by).lanes

    def lane_table(self, io_by: str) -> "LaneTable":
        """The view's lanes for ``io_by``, their keys' positions and their descriptions, built
        once per view: an "All hosts" view of 64 hosts has ~2,600 lanes, and describing them
        took ~20 ms of every /timeline request."""
        with self._memo_lock:
            got = self._lane_tables.get(io_by)
        if got is not None:
            return got
        pairs = []
        for group in ("host", "device", "io"):
            for p in self.parts:
                for ln in p.capture.timeline_lanes(io_by):
                    if ln.group == group:
                        pairs.append((p, ln))
        pairs.extend((p, ln) for p in self.parts for ln in object_lanes(p.capture))   # after the files'
        multi = len(self.parts) > 1
        described = [lane_json(p, ln, multi) for p, ln in pairs]
        table = LaneTable(pairs, {d["key"]: i for i, d in enumerate(described)}, described)
        with self._memo_lock:
            return self._lane_tables.setdefault(io_by, table)

    def find_lane(self, key: str) -> tuple[Part, Lane]:
        for p in self.parts:
            if p.prefix and not key.startswith(p.prefix):
                continue
            ln = p.capture.lane(key[len(p.prefix):])
            if ln is None:
                ln = next((o for o in object_lanes(p.capture) if o.key == key[len(p.prefix):]), None)
            if ln is not None:
                return p, ln
        raise NotFound(f"no lane {key!r}")


@dataclass(frozen=True)
class LaneTable:
    """A view's lanes for one ``io_by``: ``lanes`` in answer order, ``index`` (view lane key
    -> position) and ``described`` (what /capture sends of each lane; shared, not to be
    changed)."""

    lanes: list[tuple[Part, Lane]]
    index: dict[str, int]
    described: list[dict[str, Any]]


def make_view(run: str, captures: list[tuple[str, TabCapture]],
              unreadable: list[tuple[str, str, str]] | None = None) -> View:
    """A view of the given (host, capture) pairs; several hosts are aligned on their
    ``profile_start_time`` when every capture has one, else on their own starts.
    ``unreadable``: the run's hosts left out, (host, file name, reason) each."""
    unreadable = list(unreadable or [])
    if len(captures) == 1 and not unreadable:
        host, cap = captures[0]
        return View(run, [Part(cap, "", 0, host)])
    starts = [c.profile_start_ns for _, c in captures]
    base = min(starts) if all(s is not None for s in starts) else None
    parts = []
    for i, (host, cap) in enumerate(captures):
        off = (cap.profile_start_ns - base) if base is not None else 0
        parts.append(Part(cap, f"h{i}/", int(off), host))
    return View(run, parts, unreadable)


def unreadable_json(view: View) -> list[dict[str, str]]:
    """The view's hosts left out, as answers list them."""
    return [{"host": h, "file": f, "error": f"cannot read this capture: {r}"} for h, f, r in view.unreadable]


def lane_json(part: Part, lane: Lane, multi: bool) -> dict[str, Any]:
    d = lane.describe()
    d["key"] = part.prefix + lane.key
    if multi:
        d["host"] = part.host
        d["name"] = f"[{part.host}] {d['name']}"
        if d.get("host_lane"):
            d["host_lane"] = part.prefix + d["host_lane"]
    elif "host_lane" in d and d["host_lane"] is None:
        d.pop("host_lane")
    return d


def fmt_float(x: float) -> float:
    return float(x) if math.isfinite(x) else 0.0


def io_by_choice(value: str | None) -> str:
    return "file" if value == "file" else "thread"


def view_steps(view: View) -> tuple[list[dict[str, Any]], str]:
    """The steps of the view (of its first host that has any) on the view's clock, and their source."""
    for p in view.parts:
        if p.capture.steps:
            return ([{"index": s["index"], "name": s["name"], "start": s["start"] + p.offset,
                      "end": s["end"] + p.offset} for s in p.capture.steps],
                    p.capture.steps_source + (f" on {p.host}" if len(view.parts) > 1 else ""))
    return [], ""


TIME_LIMIT = float(2**62)   # ns either side of a capture's clock: past it, float sums lose every unit


def time_window(t0: float, t1: float) -> tuple[float, float]:
    """A request's window [t0, t1] as the endpoints compute with it: finite (ValueError else),
    within +-TIME_LIMIT, and never empty: a reversed or empty one becomes the next representable
    time after t0 (1 ns where ns are exact; at epoch-ns sizes a float step is 256 ns)."""
    if not (math.isfinite(t0) and math.isfinite(t1)):
        raise ValueError("start and end must be finite numbers")
    t0 = min(max(t0, -TIME_LIMIT), TIME_LIMIT)
    t1 = min(max(t1, -TIME_LIMIT), TIME_LIMIT)
    if t1 <= t0:
        t1 = max(t0 + 1.0, math.nextafter(t0, math.inf))
    return t0, t1
