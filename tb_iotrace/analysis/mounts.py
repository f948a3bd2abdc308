"""Mount table: which file system (mount point, type, source) a path lives on, by the mount
table of the machine that made the capture (:func:`table_for`)."""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from tb_iotrace.store.machine import host_facts, mountinfo_entries


@dataclass(frozen=True)
class Mount:
    mount_point: str
    fs_type: str
    source: str

    def to_dict(self) -> dict[str, str]:
        return {"mount_point": self.mount_point, "fs_type": self.fs_type, "source": self.source}


def parse_mountinfo(text: str) -> list[Mount]:
    """Parse /proc/<pid>/mountinfo text; later lines win (they mount over earlier ones)."""
    return [Mount(*m) for m in mountinfo_entries(text)]


def read_mountinfo(path: str = "/proc/self/mountinfo") -> list[Mount]:
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            return parse_mountinfo(f.read())
    except OSError:
        return []


class MountTable:
    def __init__(self, mounts: list[Mount]):
        # the last mount of a mount point is the visible one
        self._by_point: dict[str, Mount] = {}
        for m in mounts:
            self._by_point[m.mount_point.rstrip("/") or "/"] = m
        self._cache: dict[str, Mount] = {}

    def __len__(self) -> int:
        return len(self._by_point)

    def lookup(self, path: str) -> Mount:
        """The mount holding ``path`` (longest mount-point prefix); unknown when none."""
        hit = self._cache.get(path)
        if hit is not None:
            return hit
        p = os.path.normpath(path) if path.startswith("/") else "/"
        best = None
        cur = p
        while True:
            m = self._by_point.get(cur)
            if m is not None:
                best = m
                break
            if cur == "/":
                break
            cur = os.path.dirname(cur)
        hit = best if best is not None else Mount("?", "unknown", "")
        self._cache[path] = hit
        return hit


def recorded_mounts(capture: Any) -> list[Mount] | None:
    """The mount table the capture recorded (``capture``: anything
    :func:`tb_iotrace.store.machine.host_facts` reads: an IoTrace, an XSpace, a Kineto trace, a run
    record); None when it recorded none."""
    facts = host_facts(capture)
    if facts is None or not facts["mounts"]:
        return None
    return [Mount(m["mount_point"], m["fs_type"], m["source"]) for m in facts["mounts"]]


def table_for(capture: Any, mountinfo: str | None = None) -> tuple[MountTable, str | None]:
    """The mount table to name ``capture``'s file systems by, and a note when it is not the
    capture's own: the recorded one when there is one, else ``mountinfo`` (text) when given,
    else this (the analysing) machine's, said in the note."""
    got = recorded_mounts(capture)
    if got is not None:
        return MountTable(got), None
    if mountinfo is not None:
        return MountTable(parse_mountinfo(mountinfo)), None
    return MountTable(read_mountinfo()), ("file systems from this machine's /proc/self/mountinfo at analysis "
                                          "time (the capture has no mount table)")
