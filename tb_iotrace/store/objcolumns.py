"""Object-storage requests as stored: equal-length columns under the key ``"objects"`` of every
format that carries them (a capture's I/O record, a PyTorch trace's process records and the
converted trace's I/O record, a whole-run record). The columns are
:data:`tb_iotrace.base.objreqs.COLUMNS` (one request per row; docs/objects.md says what each
holds). Nothing secret is in them: names are bucket and key, or a URL without its query.

Beside the columns, ``"left_out"`` (only when not 0): the requests the process made while it
recorded but did not keep, past its cap (:data:`tb_iotrace.base.objreqs.MAX_REQUESTS`).
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tb_iotrace.base.objreqs import COLUMNS

__all__ = ["COLUMNS", "KEY", "LEFT_OUT", "ObjectColumnsError", "checked", "concat", "left_out", "rows",
           "to_columns"]

KEY = "objects"
LEFT_OUT = "left_out"
TEXT = frozenset({"object", "service", "bucket", "key", "op", "error", "client"})
FLAGS = frozenset({"complete"})


class ObjectColumnsError(ValueError):
    """Stored object requests that are not the columns this version writes."""


def to_columns(reqs: Iterable[dict[str, Any]], left_out: int = 0) -> dict[str, Any]:
    """Requests (dicts of :data:`COLUMNS`) as columns, with ``left_out`` when not 0."""
    got = list(reqs)
    out: dict[str, Any] = {c: [r.get(c) for r in got] for c in COLUMNS}
    if left_out > 0:      # (a count: what left_out() reads back; none below 0)
        out[LEFT_OUT] = int(left_out)
    return out


def left_out(doc: Any) -> int:
    """The requests stored columns say were left out past the cap (0 when none or unreadable)."""
    n = doc.get(LEFT_OUT) if isinstance(doc, dict) else None
    return n if isinstance(n, int) and not isinstance(n, bool) and n > 0 else 0


def _value(col: str, v: Any) -> Any:
    if col in TEXT:
        if not isinstance(v, str):
            raise ObjectColumnsError(f"column {col!r} holds a {type(v).__name__}, not text")
        return v
    if col in FLAGS:
        return bool(v)
    if isinstance(v, bool) or not isinstance(v, int):
        raise ObjectColumnsError(f"column {col!r} holds a {type(v).__name__}, not an integer")
    return v


def checked(doc: Any) -> dict[str, Any] | None:
    """Stored columns, checked (every column, equal lengths, types), ``left_out`` kept; None
    when absent or empty; :class:`ObjectColumnsError` (one line) when malformed."""
    if doc is None:
        return None
    if not isinstance(doc, dict):
        raise ObjectColumnsError(f"'{KEY}' is a {type(doc).__name__}, not columns")
    missing = [c for c in COLUMNS if not isinstance(doc.get(c), list)]
    if missing:
        raise ObjectColumnsError(f"'{KEY}' lacks the column(s) {', '.join(missing)}")
    n = len(doc[COLUMNS[0]])
    if any(len(doc[c]) != n for c in COLUMNS):
        raise ObjectColumnsError(f"'{KEY}' columns of unequal length")
    lost = left_out(doc)
    if not n and not lost:
        return None
    out: dict[str, Any] = {c: [_value(c, v) for v in doc[c]] for c in COLUMNS}
    if lost:
        out[LEFT_OUT] = lost
    return out


def concat(parts: Iterable[dict[str, Any] | None]) -> dict[str, Any] | None:
    """Several sources' columns as one, their ``left_out`` summed (None when all are empty)."""
    got = [p for p in parts if p]
    if not got:
        return None
    out: dict[str, Any] = {c: [v for p in got for v in p[c]] for c in COLUMNS}
    lost = sum(left_out(p) for p in got)
    if lost:
        out[LEFT_OUT] = lost
    return out


def rows(cols: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Columns back as one dict per request."""
    if not cols:
        return []
    return [dict(zip(COLUMNS, vals)) for vals in zip(*(cols[c] for c in COLUMNS))]
