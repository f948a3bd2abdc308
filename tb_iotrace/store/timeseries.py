"""The time series a recording keeps of its whole window in fixed memory (native/timeseries.h):
``nbins`` bins of ``bin_ns`` from ``start_ns`` (at most 256: they widen, pairs merging, as the
window grows), each with the bytes read and written (as the files' POSIX plus STDIO counters
count them), the traced calls (trace rows kept or dropped: independent of the trace cap) and
their summed duration. A call counts in the bin it began in. The bytes are also kept per
module (POSIX, STDIO: Darshan's HEATMAP has one record per module); series recorded before
that have no ``modules``.

JSON form (run records, ``tb-iotrace report --json``)::

    {"start_ns": int, "bin_ns": float, "bytes_read": [int], "bytes_written": [int],
     "calls": [int], "io_time_s": [float],
     "modules": {"POSIX": {"bytes_read": [int], "bytes_written": [int]},
                 "STDIO": {...}}}     # optional; per bin, the modules sum to the totals
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_ARRAYS = ("bytes_read", "bytes_written", "calls", "io_time_s")
MODULES = ("POSIX", "STDIO")   # the native bins' module order (tbio_file_info.module)

# module -> (bytes read, bytes written) per bin
ModuleBytes = dict[str, tuple[tuple[int, ...], tuple[int, ...]]]
SPARK = " ▁▂▃▄▅▆▇█"


class TimeSeriesError(ValueError):
    """A stored time series that is not one."""


@dataclass(frozen=True)
class TimeSeries:
    start_ns: int
    bin_ns: float
    bytes_read: tuple[int, ...]
    bytes_written: tuple[int, ...]
    calls: tuple[int, ...]
    io_time_s: tuple[float, ...]
    modules: ModuleBytes | None = None   # None: recorded before the bytes were kept per module

    def __len__(self) -> int:
        return len(self.calls)

    @property
    def end_ns(self) -> float:
        return self.start_ns + len(self) * self.bin_ns

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"start_ns": self.start_ns, "bin_ns": self.bin_ns, "bytes_read": list(self.bytes_read),
                             "bytes_written": list(self.bytes_written), "calls": list(self.calls),
                             "io_time_s": list(self.io_time_s)}
        if self.modules is not None:
            d["modules"] = {m: {"bytes_read": list(r), "bytes_written": list(w)} for m, (r, w) in self.modules.items()}
        return d

    @classmethod
    def from_dict(cls, d: Any) -> "TimeSeries":
        """Validate a stored series (a record from elsewhere may hold anything)."""
        if not isinstance(d, Mapping):
            raise TimeSeriesError("timeseries: not an object")
        try:
            start = int(d["start_ns"])
            width = float(d["bin_ns"])
            arrays = [list(d[k]) for k in _ARRAYS]
        except (KeyError, TypeError, ValueError) as exc:
            raise TimeSeriesError(f"timeseries: {exc.__class__.__name__}: {exc}") from None
        if not width > 0 or width == float("inf"):
            raise TimeSeriesError("timeseries: bin_ns must be a positive number")
        if len({len(a) for a in arrays}) != 1:
            raise TimeSeriesError("timeseries: its arrays differ in length")
        try:
            ints = [tuple(int(v) for v in a) for a in arrays[:3]]
            times = tuple(float(v) for v in arrays[3])
        except (TypeError, ValueError) as exc:
            raise TimeSeriesError(f"timeseries: a bin is not a number ({exc})") from None
        modules = _modules_from(d.get("modules"), ints[0], ints[1])
        return cls(start, width, ints[0], ints[1], ints[2], times, modules)


def _modules_from(d: Any, reads: tuple[int, ...], writes: tuple[int, ...]) -> ModuleBytes | None:
    """The per-module bytes of a stored series: known modules, one value per bin, summing
    bin by bin to the totals (else the split cannot be trusted)."""
    if d is None:
        return None
    if not isinstance(d, Mapping):
        raise TimeSeriesError("timeseries: modules is not an object")
    out: ModuleBytes = {}
    for name, v in d.items():
        if name not in MODULES:
            raise TimeSeriesError(f"timeseries: unknown module {name!r}")
        try:
            r, w = (tuple(int(x) for x in v[k]) for k in ("bytes_read", "bytes_written"))
        except (KeyError, TypeError, ValueError) as exc:
            raise TimeSeriesError(f"timeseries: module {name}: {exc.__class__.__name__}: {exc}") from None
        if len(r) != len(reads) or len(w) != len(reads):
            raise TimeSeriesError(f"timeseries: module {name}: its arrays differ in length from the bins")
        out[name] = (r, w)
    for k, total in enumerate((reads, writes)):
        if [sum(v[k][i] for v in out.values()) for i in range(len(total))] != list(total):
            raise TimeSeriesError("timeseries: the modules' bytes do not sum to the totals")
    return out


def sparkline(values: list[float] | tuple[float, ...], width: int = 64) -> str:
    """``values`` squeezed into at most ``width`` characters (each the max of its group)."""
    if not values:
        return ""
    groups = max(1, -(-len(values) // width))
    cols = [max(values[i:i + groups]) for i in range(0, len(values), groups)]
    top = max(cols)
    if top <= 0:
        return SPARK[0] * len(cols)
    return "".join(SPARK[0] if v <= 0 else SPARK[max(1, min(8, round(8 * v / top)))] for v in cols)


def accumulate(acc: TimeSeries | None, add: TimeSeries, start_ns: int, nbins: int = 256,
               base_ns: float = 1e6) -> TimeSeries:
    """``add`` (a later window's series) folded into ``acc``, a series of the same run from
    ``start_ns`` in at most ``nbins`` bins of ``base_ns * 2**k`` (k grows as needed, pairs
    merging, as the native bins do). Each of ``add``'s bins lands whole in the bin holding
    its start, so totals stay exact and a time is off by at most one of ``add``'s bins.
    What a periodic flush of a whole-run record keeps of the windows before it."""
    width = acc.bin_ns if acc is not None else base_ns
    end = max(add.end_ns, acc.end_ns if acc is not None else start_ns)
    while (end - start_ns) / width > nbins:
        width *= 2
    n = max(1, min(nbins, int(-(-(end - start_ns) // width))))
    srcs = [s for s in (acc, add) if s is not None]
    # the split by module survives only if every part of the run has it
    names = sorted({m for s in srcs for m in (s.modules or {})}) if all(s.modules is not None for s in srcs) else None
    ncols = 4 + 2 * len(names or ())
    cols: list[list[float]] = [[0] * n for _ in range(ncols - 1)] + [[0.0] * n]
    for src in srcs:
        zero = (0,) * len(src)
        per_mod = [a for m in names or () for a in (src.modules or {}).get(m, (zero, zero))]
        arrays = (src.bytes_read, src.bytes_written, src.calls, *per_mod, src.io_time_s)
        for i in range(len(src)):
            t = src.start_ns + i * src.bin_ns
            j = min(n - 1, max(0, int((t - start_ns) // width)))
            for col, arr in zip(cols, arrays):
                col[j] += arr[i]
    ints = [tuple(int(v) for v in c) for c in cols[:-1]]
    modules = {m: (ints[3 + 2 * k], ints[4 + 2 * k]) for k, m in enumerate(names)} if names is not None else None
    return TimeSeries(int(start_ns), float(width), ints[0], ints[1], ints[2], tuple(float(v) for v in cols[-1]),
                      modules)
