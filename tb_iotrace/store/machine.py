"""The machine a capture was made on: how many CPU cores the traced process could use, and its
mount table (which file system holds which path). Recorded with every capture, so that an
analysis made elsewhere (another machine, TensorBoard on a laptop) names the file systems and
sizes its advice (``num_workers``) by the machine that ran the job, not by its own.

The record (``machine``, format ``tb_iotrace.machine/1``)::

    {"format": "tb_iotrace.machine/1",
     "cpus": int,              # usable cores: the CPUs the process may run on
                               # (sched_getaffinity), capped by its cgroup's CPU quota rounded
                               # up when one is set
     "cpus_online": int,       # os.cpu_count(): the machine's online CPUs
     "cpu_quota": float|null,  # the cgroup CPU quota in cores (cpu.max / cfs_quota_us),
                               # null when there is none or it cannot be read
     "mounts": [[mount_point, fs_type, source], ...]}
                               # /proc/self/mountinfo's entries in its order (a later entry
                               # mounted over an earlier one at the same point)

Where it is: a TF/JAX capture's I/O plane stat (``tb_iotrace.io`` record, key ``machine``;
:mod:`tb_iotrace.store.xplane.encode`), a PyTorch trace's ``tb_iotrace`` record (key ``machine``;
:mod:`tb_iotrace.store.kineto`) and the XSpace :mod:`tb_iotrace.store.kineto_xspace` makes of it, and a
whole-run record's JSON (key ``machine``; :mod:`tb_iotrace.store.runrecord`).

:func:`host_facts` reads it from any of them. Older captures carry no ``machine`` record; a TF/JAX
capture made since the I/O record has ``mounts`` (mountinfo text) still gives its mount table
(``cpus`` then None).
"""
from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import Any

__all__ = ["FORMAT", "host_facts", "machine_facts", "mountinfo_entries", "usable_cpus"]

FORMAT = "tb_iotrace.machine/1"
MOUNTINFO = "/proc/self/mountinfo"


def _unescape(s: str) -> str:
    # mountinfo escapes space, tab, newline and backslash as \ooo
    out, i = [], 0
    while i < len(s):
        if s[i] == "\\" and i + 3 < len(s) and s[i + 1:i + 4].isdigit():
            out.append(chr(int(s[i + 1:i + 4], 8)))
            i += 4
        else:
            out.append(s[i])
            i += 1
    return "".join(out)


def mountinfo_entries(text: str) -> list[tuple[str, str, str]]:
    """``(mount_point, fs_type, source)`` of each line of /proc/<pid>/mountinfo text, in order
    (later lines mount over earlier ones); malformed lines are skipped."""
    out = []
    for line in text.splitlines():
        left, sep, right = line.partition(" - ")
        if not sep:
            continue
        fields = left.split()
        rest = right.split()
        if len(fields) < 5 or len(rest) < 2:
            continue
        out.append((_unescape(fields[4]), rest[0], _unescape(rest[1])))
    return out


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as fh:
            return fh.read()
    except OSError:
        return None


def cpu_quota() -> float | None:
    """This process's cgroup CPU quota in cores (v2 ``cpu.max``, v1 ``cpu.cfs_quota_us``), None
    when unlimited or unknown. The cgroup is read at its mount, as a container sees its own."""
    text = _read("/sys/fs/cgroup/cpu.max")
    if text is not None:
        quota, _, period = text.strip().partition(" ")
        if quota.isdigit() and period.isdigit() and int(period) > 0:
            return int(quota) / int(period)
        return None
    for d in ("/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"):
        q, p = _read(f"{d}/cpu.cfs_quota_us"), _read(f"{d}/cpu.cfs_period_us")
        if q is not None and p is not None:
            try:
                qi, pi = int(q), int(p)
            except ValueError:
                return None
            return qi / pi if qi > 0 and pi > 0 else None
    return None


def usable_cpus(quota: float | None = None) -> int:
    """The cores this process may use: its affinity mask, capped by ``quota`` (cores, rounded up)."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    if quota is not None and quota > 0:
        n = min(n, max(1, math.ceil(quota)))
    return n


def machine_facts(mountinfo: str | None = None) -> dict[str, Any]:
    """This machine's record (see the module doc); ``mountinfo``: /proc/self/mountinfo text
    already read (read here when None)."""
    text = _read(MOUNTINFO) if mountinfo is None else mountinfo
    quota = cpu_quota()
    return {"format": FORMAT, "cpus": usable_cpus(quota), "cpus_online": int(os.cpu_count() or 0),
            "cpu_quota": quota, "mounts": [list(m) for m in mountinfo_entries(text or "")]}


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None


def _facts(rec: Any) -> dict[str, Any] | None:
    """A recorded ``machine`` as ``{"cpus": int|None, "mounts": [{"mount_point", "fs_type",
    "source"}]}`` (None when it is not one)."""
    if not isinstance(rec, Mapping):
        return None
    mounts = []
    for m in rec.get("mounts") or []:
        if isinstance(m, (list, tuple)) and len(m) == 3 and all(isinstance(x, str) for x in m):
            mounts.append({"mount_point": m[0], "fs_type": m[1], "source": m[2]})
    cpus = _int(rec.get("cpus"))
    if cpus is None and not mounts:
        return None
    return {"cpus": cpus, "mounts": mounts}


def _from_io_record(info: Mapping[str, Any]) -> dict[str, Any] | None:
    got = _facts(info.get("machine"))
    if got is not None:
        return got
    text = info.get("mounts")
    if isinstance(text, str) and text:   # a capture from before the machine record
        return {"cpus": None, "mounts": [{"mount_point": p, "fs_type": t, "source": s}
                                         for p, t, s in mountinfo_entries(text)]}
    return None


def host_facts(source: Any) -> dict[str, Any] | None:
    """The recorded machine of a capture: ``{"cpus": int | None, "mounts": [{"mount_point",
    "fs_type", "source"}, ...]}``, mounts in mountinfo order (the last entry of a mount point is
    the visible one); None when the capture recorded none (older captures: analyse with this
    machine's then, and say so).

    ``source``: an XSpace (a TF/JAX capture, or a PyTorch trace through
    :func:`tb_iotrace.store.kineto_xspace.to_xspace`), a PyTorch trace (the dict
    :func:`tb_iotrace.store.kineto.read_trace` returns), an :class:`~tb_iotrace.store.xplane.IoTrace`, a
    whole-run record (:class:`~tb_iotrace.store.runrecord.RunRecord` or its JSON document) or the
    ``tb_iotrace.io`` record itself."""
    if isinstance(source, Mapping):
        if isinstance(source.get("traceEvents"), list):     # a Kineto trace
            rec = source.get("tb_iotrace")
            return _facts(rec.get("machine")) if isinstance(rec, Mapping) else None
        return _from_io_record(source)   # a run record's document or an I/O record
    if hasattr(source, "planes"):        # an XSpace
        from tb_iotrace.store.xplane import read_io_info

        info = read_io_info(source)
        return _from_io_record(info) if isinstance(info, Mapping) else None
    doc = getattr(source, "doc", None)   # a RunRecord
    if isinstance(doc, Mapping):
        return _from_io_record(doc)
    if hasattr(source, "start_ns") and hasattr(source, "threads"):   # an IoTrace
        return _from_io_record({"machine": getattr(source, "machine", None),
                                "mounts": getattr(source, "mounts", "")})
    return None
