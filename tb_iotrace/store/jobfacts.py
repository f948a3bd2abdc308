"""Per-capture job facts kept on disk: exactly what the job verdict across a run's ranks
(:mod:`tb_iotrace.analysis.job_verdict`) reads of one host, so that after a TensorBoard restart,
or in a second ``tb-iotrace report --hosts``, the job verdict is made without decoding any
capture (a few KB per rank instead of its analysis).

Kept as the summaries are (:mod:`tb_iotrace.store.summaries`): the same places (beside the
capture under its run's ``plugins/iotrace/summaries/``, else the local cache), the same
identity of the capture's version (size, mtime, inode, change time and a hash of its ends),
the same atomic write; the file name ends in :data:`SUFFIX`. The document:
``{"format", "path", "part", "identities", "facts"}`` where ``facts`` is

- ``rank`` (int or null), ``role`` ("main", "worker" or null): the process's place in the job;
- ``verdict``: null or ``{"bound", "cause", "change", "collectives", "input_wait_share"}`` (the
  host's own verdict, ``collectives`` a bool: whether it holds collectives at all);
- ``has_step_markers`` (bool) and ``steps``: columns ``step_num``, ``duration_ps``,
  ``input_wait_ps``, ``collective_wait_ps`` (ints, as many of each);
- ``bytes_read``, ``files``: the data read (code loading and network endpoints left out) and
  the number of data files read; ``data_dirs``: the folders most of it came from
  (folder -> bytes, the :data:`MAX_DIRS` largest).

A document is trusted only when all of it checks out (format, name, part, an identity the
capture has now, every field of its type and range). :func:`load` tells apart a document of
another version of the capture (``stale``: the caller makes it again and replaces it) from a
damaged one (``damaged``, with the reason: ignored, made again, and the caller says so in one
line). Nothing here raises on a bad or unwritable document.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Mapping

from tb_iotrace.store import summaries

FORMAT = "tb_iotrace.jobfacts/1"
SUFFIX = ".jobfacts.json"
MAX_BYTES = 8 << 20        # ~100,000 steps; a larger window keeps no facts (decoded as before)
MAX_DIRS = 16
STEP_COLUMNS = ("step_num", "duration_ps", "input_wait_ps", "collective_wait_ps")
ROLES = ("main", "worker")
VERDICT_TEXT = ("bound", "cause", "change")
MAX_TEXT = 4096

__all__ = ["FORMAT", "MAX_BYTES", "SUFFIX", "Loaded", "check", "load", "make_doc", "save"]


class Loaded:
    """What :func:`load` found: ``facts`` (None unless valid and of the capture's current
    version) and ``state``: "ok", "missing", "stale" (of another version) or "damaged"
    (``reason`` says what is wrong)."""

    __slots__ = ("facts", "state", "reason")

    def __init__(self, facts: dict[str, Any] | None, state: str, reason: str = "") -> None:
        self.facts, self.state, self.reason = facts, state, reason


def _int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _text(v: Any, nullable: bool = True) -> bool:
    return (v is None and nullable) or (isinstance(v, str) and len(v) <= MAX_TEXT)


def _verdict_problem(v: Any) -> str:
    if v is None:
        return ""
    if not isinstance(v, dict) or set(v) != {*VERDICT_TEXT, "collectives", "input_wait_share"}:
        return "verdict: not the expected fields"
    if not all(_text(v[k]) for k in VERDICT_TEXT) or not isinstance(v["collectives"], bool):
        return "verdict: a field of the wrong type"
    s = v["input_wait_share"]
    if s is not None and (not isinstance(s, (int, float)) or isinstance(s, bool) or not math.isfinite(s)
                          or not 0 <= s <= 1):
        return "verdict: input_wait_share out of range"
    return ""


def check(facts: Any) -> str:
    """"" when ``facts`` are valid job facts, else what is wrong with them (one phrase)."""
    keys = {"rank", "role", "verdict", "has_step_markers", "steps", "bytes_read", "files", "data_dirs"}
    if not isinstance(facts, dict) or set(facts) != keys:
        return "not the expected fields"
    if not (facts["rank"] is None or _int(facts["rank"])):
        return "rank: not a rank"
    if facts["role"] is not None and facts["role"] not in ROLES:
        return "role: unknown"
    why = _verdict_problem(facts["verdict"])
    if why:
        return why
    if not isinstance(facts["has_step_markers"], bool):
        return "has_step_markers: not a bool"
    steps = facts["steps"]
    if not isinstance(steps, dict) or set(steps) != set(STEP_COLUMNS):
        return "steps: not the expected columns"
    cols = [steps[c] for c in STEP_COLUMNS]
    if not all(isinstance(c, list) for c in cols):
        return "steps: a column that is not a list"
    if len({len(c) for c in cols}) != 1:
        return "steps: columns of different lengths"
    if not all(_int(x) for c in cols for x in c):
        return "steps: a value that is not a count"
    if not _int(facts["bytes_read"]) or not _int(facts["files"]):
        return "bytes_read/files: not counts"
    dirs = facts["data_dirs"]
    if (not isinstance(dirs, dict) or len(dirs) > MAX_DIRS
            or not all(_text(k, False) and _int(v) for k, v in dirs.items())):
        return "data_dirs: not folder -> bytes"
    return ""


def load(path: str, part: str = "", ident: summaries.Identity | None = None) -> Loaded:
    """The stored job facts of ``path`` (``part`` of it) for its current version (``ident``:
    its :func:`tb_iotrace.store.summaries.identity` when the caller has it)."""
    locs = summaries.locations(path, part, SUFFIX)
    if not locs:
        return Loaded(None, "missing")
    ident = summaries.identity(path) if ident is None else ident
    if ident is None:
        return Loaded(None, "missing")
    state, reason = "missing", ""
    for file, name in locs:
        if not file.exists() and not file.is_symlink():
            continue
        doc = summaries.read_doc(file, MAX_BYTES)
        if not isinstance(doc, dict):
            state, reason = "damaged", f"{file.name}: not a readable JSON object of at most {MAX_BYTES >> 20} MiB"
            continue
        idents = doc.get("identities")
        if doc.get("format") != FORMAT or doc.get("path") != name or doc.get("part") != part \
                or not isinstance(idents, list):
            state, reason = "damaged", f"{file.name}: not the job facts of this capture"
            continue
        if ident not in idents:
            if state == "missing":
                state = "stale"
            continue
        why = check(doc.get("facts"))
        if why:
            state, reason = "damaged", f"{file.name}: {why}"
            continue
        return Loaded(doc["facts"], "ok")
    return Loaded(None, state, reason)


def save(path: str, facts: Mapping[str, Any], part: str = "", before: summaries.Identity | None = None) -> Path | None:
    """Keep ``facts`` as those of ``path``'s version ``before`` (its identity taken before it
    was decoded; default: now) at the first place that can be written; None when none can,
    or the facts are invalid or too large."""
    if check(dict(facts)):
        return None
    first = summaries.identity(path) if before is None else before
    if first is None:
        return None
    return summaries.write_doc(path, part, SUFFIX, MAX_BYTES, lambda name: make_doc(name, part, [first], facts))


def make_doc(name: str, part: str, identities: list[summaries.Identity], facts: Mapping[str, Any]) -> dict[str, Any]:
    """The job facts document of the capture named ``name``, of its versions ``identities``."""
    return {"format": FORMAT, "path": name, "part": part, "identities": list(identities), "facts": dict(facts)}
