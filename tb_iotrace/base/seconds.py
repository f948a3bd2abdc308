"""A number of seconds given by a user (a command-line option, an environment variable).

``float()`` takes ``nan``, ``inf`` and ``1e308``: a timer waiting that long overflows
(``threading.Event.wait`` raises OverflowError on its own thread, in every process of a run)
and ``nan`` compares false with everything. :func:`parse_seconds` accepts only a finite
number within ``[0, MAX_SECONDS]`` (``> 0`` when zero is not allowed).
"""
from __future__ import annotations

import math

MAX_SECONDS = 30 * 86400.0   # a month: longer than any flush or window period that makes sense


def parse_seconds(raw: object, what: str, allow_zero: bool = True) -> float:
    """``raw`` as seconds; ValueError (one line naming ``what``) for anything else."""
    try:
        value = float(str(raw).strip())
    except ValueError:
        raise ValueError(f"{what}: {str(raw)[:40]!r} is not a number of seconds") from None
    low = "0" if allow_zero else "more than 0"
    if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero) or value > MAX_SECONDS:
        raise ValueError(f"{what}: {str(raw)[:40]!r} is not a number of seconds from {low} "
                         f"to {MAX_SECONDS:.0f} (30 days)")
    return value


__all__ = ["MAX_SECONDS", "parse_seconds"]
