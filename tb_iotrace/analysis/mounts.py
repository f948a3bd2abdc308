"""Mount table: which file system (mount point, type, source) a path lives on."""
from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Mount:
    mount_point: str
    fs_type: str
    source: str

    def to_dict(self) -> dict[str, str]:
        return {"mount_point": self.mount_point, "fs_type": self.fs_type, "source": self.source}


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


def parse_mountinfo(text: str) -> list[Mount]:
    """Parse /proc/<pid>/mountinfo text; later lines win (they mount over earlier ones)."""
    mounts: list[Mount] = []
    for line in text.splitlines():
        left, sep, right = line.partition(" - ")
        if not sep:
            continue
        fields = left.split()
        rest = right.split()
        if len(fields) < 5 or len(rest) < 2:
            continue
        mounts.append(Mount(_unescape(fields[4]), rest[0], _unescape(rest[1])))
    return mounts


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
