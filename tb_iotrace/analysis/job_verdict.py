"""The job verdict: the ranks of one run (one logdir run, one step numbering) joined into one
answer: is the job waiting for one rank's input, which rank, how much of the others' steps
that costs, and the change that would help (docs/diagnosis.md, "Many ranks").

Works on the report's host documents (their ``verdict``, ``steps`` with ``step_num``,
``input_wait_ps`` and ``collective_wait_ps``, ``process.rank``, ``summary``), so the CLI's
report, the tab and the fleet dataset build the same verdict.

- **ranks**: the documents with a rank (``process.rank``: a PyTorch trace's
  ``distributedInfo``, RANK/Slurm/MPI at capture) other than DataLoader workers (their bytes
  count to their rank); without any rank, every capture with a verdict is one rank (a TF/JAX
  multi-host capture: one ``<host>.xplane.pb`` per worker), named by its host, provided one of
  them holds collectives (else they are taken for unrelated processes: no job verdict);
- **steps matched by number**: the step numbers every rank has (a rank profiled twice
  contributes both windows' steps); the job's step time of step n is the longest rank's;
- the job's **input wait** of step n is the largest rank's input wait of that step (the
  slowest rank's input sets the step time: the others wait for it in the collective); its
  share of the job's step time gives the job's bound by the same thresholds as a capture's;
- the **straggler**: the rank with the largest input wait, when it exceeds the others' median
  by :data:`STRAGGLER_FACTOR` and the excess costs the job at least the moderate input-bound
  share of its step time. Its cost (``input-straggler``'s impact): the excess, summed over
  the matched steps, over the job's step time. Every other rank's ``waiting_share``: the part
  of its step spent in collectives while the straggler was still loading (per step, the
  smaller of its collective wait and the straggler's excess);
- **imbalanced shards**: a rank whose bytes (or files) read per step differ from the ranks'
  median by more than :data:`IMBALANCE_FACTOR` (either way), when every rank read some;
- without matched steps (whole-run records, or windows over different steps): only the
  totals per rank can be compared (imbalance); which rank holds the others cannot be said.
"""
from __future__ import annotations

import os
import statistics
from typing import Any

from tb_iotrace.model.endpoints import is_endpoint
from tb_iotrace.analysis.thresholds import DEFAULT, Thresholds

STRAGGLER_FACTOR = 2.0      # the straggler's input wait: at least this many times the others' median
IMBALANCE_FACTOR = 1.5      # a shard's bytes or files per step: more than this x (or under 1/this) the median
STRAGGLER_TITLE = "One rank's input holds the whole job"
IMBALANCE_TITLE = "The ranks' shards are not the same size"

__all__ = ["IMBALANCE_FACTOR", "STRAGGLER_FACTOR", "annotate", "data_dirs", "data_read", "findings", "job_verdict"]


def _rank_of(h: dict[str, Any]) -> int | None:
    r = (h.get("process") or {}).get("rank")
    return r if isinstance(r, int) and not isinstance(r, bool) else None


def _is_worker(h: dict[str, Any]) -> bool:
    return (h.get("process") or {}).get("role") == "worker"


def _ranks(hosts: list[dict[str, Any]]) -> dict[Any, list[dict[str, Any]]]:
    """Rank key -> its documents (its main process's first, then its workers')."""
    ranked = [h for h in hosts if _rank_of(h) is not None]
    out: dict[Any, list[dict[str, Any]]] = {}
    if ranked:
        for h in sorted(ranked, key=_is_worker):
            out.setdefault(_rank_of(h), []).append(h)
        return {k: v for k, v in sorted(out.items()) if not all(_is_worker(h) for h in v)}
    if not any((h.get("verdict") or {}).get("collectives") for h in hosts):
        return {}      # no rank and no collective: unrelated processes as far as anyone can tell
    for h in hosts:
        if h.get("verdict") is not None and not _is_worker(h):
            out[str(h.get("host"))] = [h]
    return out


def _label(key: Any) -> str:
    return f"rank {key}" if isinstance(key, int) else str(key)


def data_dirs(h: dict[str, Any]) -> dict[str, int]:
    """The bytes the document's data files read, per folder: from its ``files``, else its
    stored ``data_dirs`` (tb_iotrace.analysis.job_facts)."""
    listed = h.get("files")
    if not isinstance(listed, list):
        got = h.get("data_dirs")
        return {str(k): int(v) for k, v in got.items()} if isinstance(got, dict) else {}
    by: dict[str, int] = {}
    for f in listed:
        if isinstance(f, dict) and not f.get("code") and not is_endpoint(f.get("path")):
            b = int((f.get("counters") or {}).get("POSIX_BYTES_READ", 0) or 0)
            d = os.path.dirname(str(f.get("path", "")))
            by[d] = by.get(d, 0) + b
    return by


def _data_dir(docs: list[dict[str, Any]]) -> str:
    """The folder most of the rank's data bytes came from ('' when unknown)."""
    by: dict[str, int] = {}
    for h in docs:
        for d, b in data_dirs(h).items():
            by[d] = by.get(d, 0) + b
    return max(by, key=lambda k: by[k]) if by and max(by.values()) > 0 else ""


def data_read(h: dict[str, Any]) -> tuple[int, int]:
    """The bytes read from data files and their number: code loading and network endpoints
    (the ranks' own gloo/NCCL traffic is a client's TCP connection too) left out; a summary's
    totals when the host's files are not listed."""
    listed = h.get("files")
    if not isinstance(listed, list):
        s = h.get("summary") or {}
        return int(s.get("bytes_read") or 0), int(s.get("files") or 0)
    b = n = 0
    for f in listed:
        if not isinstance(f, dict) or f.get("code") or is_endpoint(f.get("path")):
            continue
        c = f.get("counters") or {}
        got = int(c.get("POSIX_BYTES_READ", 0) or 0) + int(c.get("STDIO_BYTES_READ", 0) or 0)
        b += got
        n += got > 0
    return b, n


def _per_rank(key: Any, docs: list[dict[str, Any]]) -> dict[str, Any]:
    steps: dict[int, dict[str, Any]] = {}
    for h in docs:
        if _is_worker(h):
            continue
        for s in h.get("steps") or []:
            n = s.get("step_num")
            if n is not None and h.get("has_step_markers", True) and n not in steps:
                steps[int(n)] = s
    main = docs[0]
    rb = files = 0
    for h in docs:
        b, n = data_read(h)
        rb, files = rb + b, files + n
    v = main.get("verdict") or {}
    return {"rank": key if isinstance(key, int) else None, "label": _label(key), "host": str(main.get("host", "")),
            "hosts": [str(h.get("host", "")) for h in docs], "steps_by_num": steps,
            "bytes_read": rb, "files": files, "cause": v.get("cause"), "change": v.get("change") or "",
            "own_bound": v.get("bound"), "data_dir": _data_dir(docs)}


def _imbalance(rows: list[dict[str, Any]], per_step: bool) -> dict[str, Any] | None:
    """The rank whose bytes (else files) per step (per_step False: in all) differ most from the
    median, when by more than IMBALANCE_FACTOR."""
    if len(rows) < 2:
        return None
    for what in ("bytes", "files"):
        vals = {r["label"]: r[f"{what}_per_step"] if per_step else r[("bytes_read" if what == "bytes" else "files")]
                for r in rows}
        good = {k: v for k, v in vals.items() if v is not None}
        med = statistics.median(good.values()) if good else 0
        if not good or med <= 0 or min(good.values()) <= 0:   # a rank reading nothing is no shard to compare
            continue
        k = max(good, key=lambda x: max(good[x] / med, med / good[x] if good[x] else float("inf")))
        ratio = good[k] / med
        if ratio > IMBALANCE_FACTOR or ratio < 1 / IMBALANCE_FACTOR:
            r = next(x for x in rows if x["label"] == k)
            return {"rank": r["rank"], "label": k, "host": r["host"], "what": what, "per_step": per_step,
                    "value": good[k], "median": med, "ratio": ratio, "margin": IMBALANCE_FACTOR}
    return None


def job_verdict(hosts: list[dict[str, Any]], th: Thresholds | None = None) -> dict[str, Any] | None:
    """The job verdict of one run's host documents (see the module docstring); None with fewer
    than two ranks."""
    th = th or DEFAULT
    groups = _ranks(hosts)
    if len(groups) < 2:
        return None
    rows = [_per_rank(k, docs) for k, docs in groups.items()]
    notes: list[str] = []
    common = set.intersection(*(set(r["steps_by_num"]) for r in rows))
    matched = sorted(common)
    for r in rows:
        n = len(r["steps_by_num"])
        r["bytes_per_step"] = r["bytes_read"] / n if n else None
        r["files_per_step"] = r["files"] / n if n else None
    out: dict[str, Any] = {"ranks": len(rows), "matched_steps": len(matched),
                           "step_numbers": [matched[0], matched[-1]] if matched else None,
                           "straggler": None, "imbalance": None, "others": [], "notes": notes}
    if not matched:
        has_steps = any(r["steps_by_num"] for r in rows)
        why = ("the ranks' profiles cover different steps (no step number common to all)" if has_steps else
               "no steps in these records (whole-run records, or captures without step markers)")
        out.update({"basis": "totals", "input_wait_share": None, "bound": "unknown", "change": "",
                    "cost_share": 0.0})
        out["imbalance"] = _imbalance(rows, per_step=False)
        out["advice"] = (f"{len(rows)} ranks; {why}: which rank holds the others cannot be said (that needs each "
                         "rank's input and collective wait step by step); their bytes and files read in all can be "
                         "compared" + (f": {_imbalance_text(out['imbalance'])}." if out["imbalance"] else
                                       f": they are within {IMBALANCE_FACTOR}x of each other."))
        out["per_rank"] = [_public(r, []) for r in rows]
        return out
    job_t = [max(r["steps_by_num"][n]["duration_ps"] for r in rows) for n in matched]
    waits = {r["label"]: [int(r["steps_by_num"][n].get("input_wait_ps") or 0) for n in matched] for r in rows}
    colls = {r["label"]: [int(r["steps_by_num"][n].get("collective_wait_ps") or 0) for n in matched] for r in rows}
    total = sum(job_t) or 1
    job_wait = sum(max(waits[r["label"]][i] for r in rows) for i in range(len(matched)))
    share = job_wait / total
    bound = "input" if share >= th.input_wait_share else ("partly input" if share >= th.input_wait_moderate_share
                                                          else "not input")
    slow = max(rows, key=lambda r: sum(waits[r["label"]]))
    others = [r for r in rows if r is not slow]
    excess = [max(0, waits[slow["label"]][i] - int(statistics.median(waits[o["label"]][i] for o in others)))
              for i in range(len(matched))]
    cost = sum(excess) / total
    med_other = statistics.median(sum(waits[o["label"]]) for o in others)
    is_straggler = cost >= th.input_wait_moderate_share and sum(waits[slow["label"]]) >= STRAGGLER_FACTOR * med_other
    out["imbalance"] = _imbalance(rows, per_step=True)
    out.update({"basis": "steps", "input_wait_share": share, "bound": bound, "cost_share": cost if is_straggler else 0.0,
                "step_ms": statistics.median(job_t) / 1e9})
    if is_straggler:
        for o in others:
            t = sum(o["steps_by_num"][n]["duration_ps"] for n in matched) or 1
            wf = sum(min(c, e) for c, e in zip(colls[o["label"]], excess))
            out["others"].append({"rank": o["rank"], "label": o["label"], "host": o["host"],
                                  "collective_wait_share": sum(colls[o["label"]]) / t, "waiting_share": wf / t,
                                  "collective_wait_ms_per_step": sum(colls[o["label"]]) / len(matched) / 1e9})
        heavy = out["imbalance"] is not None and out["imbalance"]["label"] == slow["label"] and out["imbalance"]["ratio"] > 1
        change = (f"rebalance the data sharding ({_imbalance_text(out['imbalance'])}): split the "
                  "data so every rank gets the same bytes per step (shard by size, not by sample count)" if heavy else
                  f"{slow['label']}'s loader: {slow['change'] or 'speed up its input pipeline'}")
        if slow["cause"] == "file_io" and not heavy:
            change += f"; check {slow['label']}'s node and file system ({slow['data_dir'] or 'its data'}): the others read alike faster"
        out["straggler"] = {"rank": slow["rank"], "label": slow["label"], "host": slow["host"], "hosts": slow["hosts"],
                            "input_wait_share": sum(waits[slow["label"]]) / (sum(slow["steps_by_num"][n]["duration_ps"] for n in matched) or 1),
                            "input_wait_ms_per_step": sum(waits[slow["label"]]) / len(matched) / 1e9,
                            "excess_ms_per_step": sum(excess) / len(matched) / 1e9, "cost_share": cost,
                            "cause": slow["cause"], "data_dir": slow["data_dir"], "imbalanced": heavy}
        out["change"] = change
        coll = [o["collective_wait_share"] for o in out["others"]]
        out["advice"] = (f"Input-bound on {slow['label']} ({slow['host']}): its input wait "
                         f"({out['straggler']['input_wait_ms_per_step']:.1f} ms per step, cause {slow['cause'] or 'unknown'}) "
                         f"sets the job's step time; the other {len(others)} ranks spend "
                         f"{100 * min(coll):.0f}-{100 * max(coll):.0f}% of their step in collectives waiting for it. "
                         f"Change: {change} (expected job step time -{100 * cost:.0f}%).")
    elif bound != "not input":
        out["change"] = slow["change"]
        out["advice"] = (f"{'Input-bound' if bound == 'input' else 'Partly input-bound'} on every rank alike: the ranks' "
                         f"input waits are within {STRAGGLER_FACTOR}x of each other ({100 * share:.0f}% of the job's step); "
                         f"each rank's own verdict's change applies to all: {slow['change'] or 'their loaders'}.")
    else:
        out["change"] = "none for the input pipeline"
        out["advice"] = (f"Not input-bound: over {len(matched)} steps matched across {len(rows)} ranks, the slowest rank's "
                         f"input wait is {100 * share:.1f}% of the job's step time; no rank holds the others.")
    out["per_rank"] = [_public(r, matched, waits, colls) for r in rows]
    return out


def _public(r: dict[str, Any], matched: list[int], waits: dict[str, list[int]] | None = None,
            colls: dict[str, list[int]] | None = None) -> dict[str, Any]:
    t = sum(r["steps_by_num"][n]["duration_ps"] for n in matched)
    w = sum((waits or {}).get(r["label"], []))
    c = sum((colls or {}).get(r["label"], []))
    return {"rank": r["rank"], "label": r["label"], "host": r["host"], "hosts": r["hosts"],
            "steps": len(r["steps_by_num"]), "step_ms": t / len(matched) / 1e9 if matched else None,
            "input_wait_share": w / t if t else None, "collective_wait_share": c / t if t else None,
            "bytes_read": r["bytes_read"], "files": r["files"], "bytes_per_step": r["bytes_per_step"],
            "files_per_step": r["files_per_step"], "own_bound": r["own_bound"]}


def _imbalance_text(im: dict[str, Any] | None) -> str:
    if im is None:
        return ""
    unit = "bytes" if im["what"] == "bytes" else "files"
    per = " per step" if im["per_step"] else " in all"
    val = f"{im['value'] / 2**20:.2f} MiB" if unit == "bytes" else f"{im['value']:.1f} files"
    med = f"{im['median'] / 2**20:.2f} MiB" if unit == "bytes" else f"{im['median']:.1f} files"
    return f"{im['label']} reads {val}{per}, {im['ratio']:.2f}x the ranks' median {med} (margin {im['margin']}x)"


def _sentence(text: str) -> str:
    return (text[:1].upper() + text[1:] + ".") if text else ""


def _finding(fid: str, title: str, stmt: str, sug: str, evidence: dict[str, Any], share: float | None,
             ms: float | None, basis: str) -> dict[str, Any]:
    sev = "critical" if (share or 0) >= 0.25 else "warning"
    return {"id": fid, "severity": sev, "title": title, "statement": stmt, "suggestion": sug, "evidence": evidence,
            "files": [], "ops": [], "impact": {"step_share": share, "ms_per_step": ms, "basis": basis}}


def findings(jv: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """host -> the job verdict's findings on it: ``input-straggler`` on the straggler (impact:
    the job's step time it costs), ``imbalanced-shards`` on the rank whose shard differs."""
    out: dict[str, list[dict[str, Any]]] = {}
    st = jv.get("straggler")
    if st is not None:
        o = jv.get("others") or []
        waiting = [x["waiting_share"] for x in o]
        stmt = (f"{st['label']} ({st['host']}) waits {st['input_wait_ms_per_step']:.1f} ms per step for its input, "
                f"{st['excess_ms_per_step']:.1f} ms more than the other ranks; every step ends in a collective that "
                f"finishes when the last rank joins, so the other {len(o)} ranks wait for it there "
                f"({100 * min(waiting, default=0):.0f}-{100 * max(waiting, default=0):.0f}% of their step). "
                f"The job's step time is set by this rank's input.")
        out.setdefault(st["host"], []).append(_finding(
            "input-straggler", STRAGGLER_TITLE, stmt, _sentence(str(jv.get("change", ""))),
            {**st, "others": o, "matched_steps": jv.get("matched_steps")},
            st["cost_share"], st["excess_ms_per_step"], "job steps"))
    im = jv.get("imbalance")
    if im is not None:
        cost = st["cost_share"] if st is not None and st["label"] == im["label"] else None
        stmt = (f"{_imbalance_text(im)}: the ranks' shards differ by more than the margin; in a synchronous job every "
                "rank waits for the one with the most to read.")
        sug = ("Shard the data by bytes rather than by sample count (or bucket samples by size), so every rank reads "
               "the same amount per step.")
        out.setdefault(im["host"], []).append(_finding(
            "imbalanced-shards", IMBALANCE_TITLE, stmt, sug, dict(im), cost,
            st["excess_ms_per_step"] if cost is not None else None, "job steps" if cost is not None else "none"))
    return out


def annotate(run: dict[str, Any]) -> None:
    """Set the run's ``job_verdict`` (in place), add its findings to their hosts, and tell
    every other rank's own verdict that it waits for the straggler (``waits_for``)."""
    jv = job_verdict(run.get("hosts") or [])
    run["job_verdict"] = jv
    if jv is None:
        return
    hosts = {str(h.get("host")): h for h in run["hosts"]}
    for host, found in findings(jv).items():
        h = hosts.get(host)
        if h is not None:
            h["findings"] = sorted([*(h.get("findings") or []), *found],
                                   key=lambda f: -((f.get("impact") or {}).get("step_share") or 0.0))
    st = jv.get("straggler")
    if st is None:
        return
    for o in jv.get("others") or []:
        v = (hosts.get(o["host"]) or {}).get("verdict")
        if not isinstance(v, dict) or v.get("bound") == "input":
            continue
        own = v.get("input_wait_share")
        v["waits_for"] = {"rank": st["rank"], "label": st["label"], "host": st["host"],
                          "waiting_share": o["waiting_share"], "collective_wait_share": o["collective_wait_share"]}
        v["change"] = jv.get("change", "")
        v["expected_step_time_change"] = -st["cost_share"]
        v["advice"] = (f"Waits for {st['label']}: {100 * o['waiting_share']:.0f}% of this rank's step is spent in "
                       f"collectives waiting for {st['label']} ({st['host']}), whose input wait sets the job's step time"
                       + (f"; this rank's own input wait is {100 * own:.1f}%" if own is not None else "")
                       + f". Change, on {st['label']}: {jv.get('change', '')} (expected step time -{100 * st['cost_share']:.0f}%, "
                       "job verdict).")
