"""Which framework releases tb_iotrace hooks (pure facts; used by the capture glue and by the
surfaces that explain a capture without I/O)."""
from __future__ import annotations

import re

__all__ = ["JAXLIB_TABLE_SIZES", "jaxlib_range", "jaxlib_table_size", "release"]

# jaxlib versions (inclusive range) -> size in bytes of the PLUGIN_Profiler_Api table it
# checks for (docs/jax.md): the size comparison in PluginTracer's constructor compares with 80
# (10 members) in every wheel read (0.4.19, 0.4.20, 0.4.30, 0.4.38, 0.5.0, 0.5.3, 0.6.0, 0.6.1,
# 0.7.0, 0.7.2, 0.8.0, 0.8.3, 0.9.0, 0.9.2, 0.10.0, 0.10.1, 0.10.2); 0.4.18 has no plugin tracer.
# Upstream's header has since grown to 13 members (104 bytes), a size native/pjrt.c does not
# implement. Extend the range only after reading a new release the same way.
JAXLIB_TABLE_SIZES: tuple[tuple[tuple[int, ...], tuple[int, ...], int], ...] = (
    ((0, 4, 19), (0, 10, 2), 80),
)


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


def jaxlib_table_size(version: str,
                      table: tuple[tuple[tuple[int, ...], tuple[int, ...], int], ...] = JAXLIB_TABLE_SIZES
                      ) -> int | None:
    """The profiler table size jaxlib ``version`` checks for, None when not known."""
    v = release(version)[:3]
    for lo, hi, size in table:
        if lo <= v <= hi:
            return size
    return None


def jaxlib_range(table: tuple[tuple[tuple[int, ...], tuple[int, ...], int], ...] = JAXLIB_TABLE_SIZES) -> str:
    """The hooked jaxlib releases, for messages ("0.4.19 to 0.10.2")."""
    return ", ".join(f"{'.'.join(map(str, lo))} to {'.'.join(map(str, hi))}" for lo, hi, _ in table) or "none"
