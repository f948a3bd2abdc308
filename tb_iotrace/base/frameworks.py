"""Which framework releases tb_iotrace hooks (pure facts; used by the capture glue and by the
surfaces that explain a capture without I/O)."""
from __future__ import annotations

import re

__all__ = ["JAXLIB_CHECKS_READ", "JAXLIB_FIRST", "JAXLIB_GATED", "JAXLIB_NEWEST_READ", "jaxlib_hookable",
           "jaxlib_support", "release"]

# jaxlib has a plugin profiler (register_plugin_profiler) from 0.4.19 on; 0.4.18 has none.
JAXLIB_FIRST = (0, 4, 19)
# tb_iotrace reads how the loaded jaxlib checks its profiler table (recording/jaxlib_check.py)
# and registers whenever one of its tables passes. The newest release whose check was read:
# 0.4.19 to 0.10.2 compare exactly with 80 (wheels read on the development machine), 0.11.2
# takes "at least" a size (its message, read on a CUDA machine).
JAXLIB_NEWEST_READ = "0.11.2"
# The table checks seen in released jaxlibs: (form, first, last release, a size that passes). Used
# only for a library whose message form is read but whose comparison is not (a stripped build):
# 0.4.19 to 0.10.2 compare exactly with 80 in every wheel read; 0.11.2 took the 80-byte table.
JAXLIB_CHECKS_READ: tuple[tuple[str, tuple[int, ...], tuple[int, ...], int], ...] = (
    ("exact", (0, 4, 19), (0, 10, 2), 80),
    ("at_least", (0, 11, 2), (0, 11, 2), 80),
)
# Before it read the check, tb_iotrace hooked these releases only (by version number): a capture
# made then by a newer jaxlib has no I/O for that reason alone.
JAXLIB_GATED = ((0, 4, 19), (0, 10, 2))


def release(version: str) -> tuple[int, ...]:
    """Release numbers of a version string, up to its first suffix (0.10.2rc1 -> (0, 10, 2))."""
    parts: list[int] = []
    for piece in version.split("."):
        m = re.match(r"\d+", piece)
        if not m:
            break
        parts.append(int(m.group()))
        if m.end() != len(piece):
            break
    return tuple(parts)


def jaxlib_hookable(version: str) -> bool | None:
    """Whether jaxlib ``version`` has the plugin profiler tb_iotrace registers with (the size
    check is read from the library itself when it is loaded); None for a version string
    without release numbers."""
    v = release(version)[:3]
    if not v:
        return None
    return v >= JAXLIB_FIRST


def jaxlib_support() -> str:
    """The hooked jaxlib releases, for messages and docs."""
    first = ".".join(map(str, JAXLIB_FIRST))
    return f"jaxlib {first} and later, as of {JAXLIB_NEWEST_READ} (the newest release read)"
