"""The job verdict from stored job facts (:mod:`tb_iotrace.store.jobfacts`): a host document
reduced to what :func:`tb_iotrace.analysis.job_verdict.job_verdict` reads of it
(:func:`facts_of`), kept per capture version, and a host document made back from them
(:func:`doc_of`) that gives the same job verdict, so that ``tb-iotrace report --hosts`` and the
tab's "All hosts" answer it after a restart without decoding any capture (:func:`stored_verdict`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from tb_iotrace.analysis.job_verdict import data_dirs, data_read, job_verdict
from tb_iotrace.store import jobfacts, summaries

__all__ = ["Stored", "doc_of", "facts_of", "keep", "stored_verdict"]


def _count(v: Any, truncate: bool = False) -> int | None:
    """``v`` as a count; a fraction is truncated when ``truncate`` (as the job verdict reads
    waits), else not a count (a step number or duration is read as it is)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
        return None
    return int(v) if truncate or float(v).is_integer() else None


def _verdict(v: Any) -> dict[str, Any] | None:
    if not isinstance(v, dict):
        return None
    share = v.get("input_wait_share")
    ok = isinstance(share, (int, float)) and not isinstance(share, bool) and math.isfinite(share) and 0 <= share <= 1
    return {"bound": v.get("bound"), "cause": v.get("cause"), "change": v.get("change"),
            "collectives": bool(v.get("collectives")), "input_wait_share": float(share) if ok else None}


def facts_of(doc: dict[str, Any]) -> dict[str, Any] | None:
    """The job facts of one host document (the report's, or the tab's made from its findings
    answer); None when a step's numbers are not counts (then nothing is kept)."""
    proc = doc.get("process") if isinstance(doc.get("process"), dict) else {}
    rank = proc.get("rank")
    role = proc.get("role")
    cols: dict[str, list[int]] = {c: [] for c in jobfacts.STEP_COLUMNS}
    for s in doc.get("steps") or []:
        if not isinstance(s, dict) or s.get("step_num") is None:
            continue      # the job verdict matches steps by number: one without is never read
        got = [_count(s.get("step_num")), _count(s.get("duration_ps")), _count(s.get("input_wait_ps") or 0, True),
               _count(s.get("collective_wait_ps") or 0, True)]
        if any(x is None for x in got):
            return None
        for c, x in zip(jobfacts.STEP_COLUMNS, got):
            cols[c].append(int(x))  # type: ignore[arg-type]
    b, n = data_read(doc)
    dirs = sorted(((d, v) for d, v in data_dirs(doc).items() if v > 0), key=lambda kv: (-kv[1], kv[0]))
    facts = {"rank": rank if isinstance(rank, int) and not isinstance(rank, bool) and rank >= 0 else None,
             "role": role if role in jobfacts.ROLES else None, "verdict": _verdict(doc.get("verdict")),
             "has_step_markers": bool(doc.get("has_step_markers", True)), "steps": cols,
             "bytes_read": int(b), "files": int(n), "data_dirs": dict(dirs[:jobfacts.MAX_DIRS])}
    return None if jobfacts.check(facts) else facts


def doc_of(host: str, facts: dict[str, Any]) -> dict[str, Any]:
    """A host document the job verdict reads as it reads the one the facts were made of."""
    steps = facts["steps"]
    rank, role = facts["rank"], facts["role"]
    return {"host": host, "process": {"rank": rank, "role": role} if rank is not None or role is not None else None,
            "verdict": dict(facts["verdict"]) if facts["verdict"] is not None else None,
            "steps": [dict(zip(jobfacts.STEP_COLUMNS, row)) for row in zip(*(steps[c] for c in jobfacts.STEP_COLUMNS))],
            "has_step_markers": facts["has_step_markers"], "findings": [], "files": None,
            "summary": {"bytes_read": facts["bytes_read"], "files": facts["files"]}, "data_dirs": dict(facts["data_dirs"])}


def keep(path: str, part: str, doc: dict[str, Any], before: summaries.Identity | None) -> None:
    """Keep the job facts of ``doc`` (the host document of ``path``'s ``part``) as those of its
    version ``before``; nothing when that is unknown, the facts are not valid, or no place
    can be written (never raises: the facts are a shortcut)."""
    if before is None:
        return
    try:
        facts = facts_of(doc)
        if facts is not None:
            jobfacts.save(path, facts, part, before=before)
    except Exception:  # noqa: BLE001
        pass


@dataclass
class Stored:
    """The job verdict made from stored facts (``verdict``; None when fewer than two ranks),
    or why it could not be (``missing``: the first host without valid facts, then no verdict);
    ``notes``: one line per damaged document read (ignored, to be made again); ``redo``: the
    files whose document was damaged or of another version (to be written again)."""

    verdict: dict[str, Any] | None = None
    missing: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    redo: list[str] = field(default_factory=list)


def stored_verdict(items: list[tuple[str, str, str, summaries.Identity | None]]) -> Stored:
    """The job verdict of a run's hosts ((host, path, part, identity) each) from their stored
    job facts alone; when a host has none valid for its file's current version, no verdict
    (``missing`` names it, the hosts after it are not read: the caller waits for the analysis)."""
    out = Stored()
    docs = []
    for host, path, part, ident in items:
        got = jobfacts.Loaded(None, "missing") if ident is None else _load(path, part, ident)
        if got.state in ("damaged", "stale"):
            out.redo.append(path)
        if got.state == "damaged":
            out.notes.append(f"The stored job facts of {host} are damaged ({got.reason}): ignored, made again "
                             "from its capture.")
        if got.facts is None:
            out.missing.append(host)
            break
        else:
            docs.append(doc_of(host, got.facts))
    if not out.missing:
        out.verdict = job_verdict(docs)
    return out


def _load(path: str, part: str, ident: summaries.Identity) -> jobfacts.Loaded:
    try:
        return jobfacts.load(path, part, ident)
    except Exception as exc:  # noqa: BLE001 - never a failed answer
        return jobfacts.Loaded(None, "damaged", f"{type(exc).__name__}: {exc}")
