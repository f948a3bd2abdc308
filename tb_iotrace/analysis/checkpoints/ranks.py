"""A run's checkpoint saves across its ranks (processes): one table per save with every
rank's bytes, bandwidth and finish time, and the ``checkpoint-straggler`` finding: one rank
finishes long after the others, and why (docs/checkpoints.md).

Works on the report's host documents (each with its ``checkpoints`` from
:mod:`tb_iotrace.analysis.checkpoints.detection` and :mod:`tb_iotrace.analysis.checkpoints.facts`, its
``process.rank`` when its launcher set one, and its ``training`` time), so the CLI's report
and the tab build the same tables.

A save of the run: the saves of different hosts that overlap in time (each host at most once);
a host's save that overlaps none of the others' is a save of its own. A rank **straggles** in a
save of two ranks or more when it finishes (its bulk data on disk: ``finish_ns``) at least
:data:`STRAGGLER_MIN_NS` and at least :data:`STRAGGLER_FACTOR` times the others' median save
time after the others' median finish (a save's time: its write and sync calls', not its span,
which for a rank that came early holds its wait in the save's collective for the late one).
Its cost: the lag, as far as its own save blocked its training loop (a synchronous save: the
other ranks wait for it at the save's closing barrier; an async save in the background costs
nothing, no finding).
"""
from __future__ import annotations

import statistics
from typing import Any

MiB = 1 << 20
STRAGGLER_MIN_NS = 100_000_000     # a lag shorter than this is noise on a loaded machine
STRAGGLER_FACTOR = 1.0             # ... and at least the others' median save time
BYTES_FACTOR = 1.5                 # "it wrote more": this many times the others' median
BANDWIDTH_FACTOR = 0.5             # "it wrote slower": under this share of the others' median
TITLE = "One rank finishes its checkpoint saves long after the others"

__all__ = ["TITLE", "save_table", "straggler_finding"]


def _label(h: dict[str, Any]) -> tuple[int | None, str]:
    rank = (h.get("process") or {}).get("rank")
    return (rank if isinstance(rank, int) else None), str(h.get("host", ""))


def _row(h: dict[str, Any], p: dict[str, Any]) -> dict[str, Any]:
    rank, host = _label(h)
    busy = float(p.get("io_time_s", 0.0)) + float(p.get("fsync_time_s", 0.0))
    return {"host": host, "rank": rank, "start_ns": int(p["start_ns"]),
            "finish_ns": int(p.get("finish_ns", p["end_ns"])), "end_ns": int(p["end_ns"]),
            "bytes": int(p["bytes"]), "files": int(p["files"]), "io_time_s": float(p.get("io_time_s", 0.0)),
            "fsync_time_s": float(p.get("fsync_time_s", 0.0)),
            "bandwidth_mib_s": p["bytes"] / MiB / busy if busy > 0 else 0.0,
            "blocking_ns": int(p.get("blocking_ns", 0)), "background_ns": int(p.get("background_ns", 0)),
            "fs_type": str(p.get("fs_type", "")), "mount_point": str(p.get("mount_point", "")),
            "path": str(p.get("path", "")), "source": str(p.get("source", ""))}


def _writing_ns(r: dict[str, Any]) -> int:
    """How long a rank's save spent writing: its calls' time (bounded by its span). Not its
    whole span: a rank that reached the save early waits in the save's collective for the
    late one, and that wait would hide the late rank's lag."""
    busy = int((r["io_time_s"] + r["fsync_time_s"]) * 1e9)
    return min(busy, r["finish_ns"] - r["start_ns"])


def _straggle(save: dict[str, Any]) -> None:
    """Mark the save's straggler (in place): ``straggler`` (host or None), ``lag_ns``."""
    ranks = save["ranks"]
    save["straggler"], save["lag_ns"] = None, 0
    if len(ranks) < 2:
        return
    last = max(ranks, key=lambda r: r["finish_ns"])
    others = [r for r in ranks if r is not last]
    lag = last["finish_ns"] - int(statistics.median(r["finish_ns"] for r in others))
    took = statistics.median(_writing_ns(r) for r in others)
    save["lag_ns"] = max(lag, 0)
    if lag >= STRAGGLER_MIN_NS and lag >= STRAGGLER_FACTOR * took:
        save["straggler"] = last["host"]


def save_table(hosts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The run's saves in time order: ``{"start_ns", "end_ns", "ranks": [per host: "host",
    "rank", "start_ns", "finish_ns", "end_ns", "bytes", "files", "io_time_s", "fsync_time_s",
    "bandwidth_mib_s", "blocking_ns", "background_ns", "fs_type", "mount_point", "path",
    "source"], "straggler": host | None, "lag_ns"}`` (ranks ordered by rank, then host)."""
    items = sorted(((p["start_ns"], p["end_ns"], i, p) for i, h in enumerate(hosts)
                    for p in (h.get("checkpoints") or []) if p.get("kind") == "save"), key=lambda t: (t[0], t[2]))
    groups: list[tuple[int, int, list[tuple[int, dict[str, Any]]]]] = []
    for start, end, i, p in items:
        if groups and start <= groups[-1][1] and i not in {j for j, _ in groups[-1][2]}:
            lo, hi, members = groups[-1]
            groups[-1] = (lo, max(hi, end), [*members, (i, p)])
        else:
            groups.append((start, end, [(i, p)]))
    out = []
    for lo, hi, members in groups:
        rows = sorted((_row(hosts[i], p) for i, p in members),
                      key=lambda r: (r["rank"] is None, r["rank"] if r["rank"] is not None else 0, r["host"]))
        save = {"start_ns": lo, "end_ns": hi, "ranks": rows}
        _straggle(save)
        out.append(save)
    return out


def _why(me: dict[str, Any], others: list[dict[str, Any]], lag_ns: int) -> tuple[list[str], dict[str, Any]]:
    """Why one rank was late in one save: its bytes, its bandwidth, its file system, a late start."""
    ob = statistics.median(r["bytes"] for r in others)
    obw = statistics.median(r["bandwidth_mib_s"] for r in others)
    ostart = statistics.median(r["start_ns"] for r in others)
    mounts = {r["mount_point"] for r in others}
    reasons = []
    if ob > 0 and me["bytes"] >= BYTES_FACTOR * ob:
        reasons.append(f"it wrote {me['bytes'] / MiB:.1f} MiB, {me['bytes'] / ob:.1f}x the others' {ob / MiB:.1f} MiB")
    if obw > 0 and me["bandwidth_mib_s"] <= BANDWIDTH_FACTOR * obw:
        reasons.append(f"its writes (and syncs) ran at {me['bandwidth_mib_s']:.0f} MiB/s against the others' "
                       f"{obw:.0f} MiB/s")
    if me["mount_point"] and me["mount_point"] not in mounts:
        reasons.append(f"it wrote to {me['mount_point']} ({me['fs_type']}), the others to "
                       f"{', '.join(sorted(m for m in mounts if m)) or 'elsewhere'}")
    late = me["start_ns"] - ostart
    if late >= lag_ns / 2:
        reasons.append(f"it started the save {late / 1e9:.2f} s after the others (it reached the save late: "
                       "its compute or input, not its I/O)")
    ev = {"bytes": me["bytes"], "others_bytes": ob, "bandwidth_mib_s": me["bandwidth_mib_s"],
          "others_bandwidth_mib_s": obw, "fs_type": me["fs_type"], "mount_point": me["mount_point"],
          "others_mount_points": sorted(m for m in mounts if m), "late_start_s": late / 1e9,
          "fsync_time_s": me["fsync_time_s"], "io_time_s": me["io_time_s"]}
    return reasons, ev


def straggler_finding(saves: list[dict[str, Any]], hosts: list[dict[str, Any]]) -> tuple[str, dict[str, Any]] | None:
    """(host, finding) for the rank whose straggling cost the run the most, None when no rank
    straggles at a cost. Its impact: the lag as far as its save blocked its loop, over that
    host's training time (``training`` of its document)."""
    cost: dict[str, int] = {}
    late: dict[str, list[dict[str, Any]]] = {}
    for s in saves:
        if s["straggler"] is None:
            continue
        me = next(r for r in s["ranks"] if r["host"] == s["straggler"])
        c = min(s["lag_ns"], me["blocking_ns"])
        cost[me["host"]] = cost.get(me["host"], 0) + c
        late.setdefault(me["host"], []).append(s)
    if not cost or not max(cost.values()):
        return None
    host = max(cost, key=lambda k: cost[k])
    mine = late[host]
    doc = next(h for h in hosts if h.get("host") == host)
    worst = max(mine, key=lambda s: s["lag_ns"])
    me = next(r for r in worst["ranks"] if r["host"] == host)
    others = [r for r in worst["ranks"] if r["host"] != host]
    reasons, ev = _why(me, others, worst["lag_ns"])
    tr = doc.get("training") or {}
    total, steps = int(tr.get("time_ns") or 0), tr.get("steps")
    share = min(cost[host] / total, 1.0) if total else 0.0
    who = f"rank {me['rank']} ({host})" if me["rank"] is not None else host
    lag_s = sum(s["lag_ns"] for s in mine) / 1e9
    stmt = (f"{who} finished {len(mine)} of {len(saves)} checkpoint saves long after the other ranks: "
            f"{lag_s:.2f} s late in all, {worst['lag_ns'] / 1e9:.2f} s at worst; "
            + ("; ".join(reasons) if reasons else "its bytes, bandwidth and file system match the others'")
            + ". A synchronous save ends for every rank when the last one finishes.")
    sug = []
    if any(r.startswith("it wrote ") and "MiB," in r for r in reasons):
        sug.append("balance the state across ranks (shard the optimizer state, let the planner spread "
                   "replicated tensors)")
    if any("MiB/s" in r or "wrote to" in r for r in reasons):
        sug.append("check that rank's node and disk (a throttled, shared or failing device, another tier), "
                   "write every rank to the same fast tier")
    sug.append("save asynchronously (torch.distributed.checkpoint.async_save, orbax's async checkpointer) "
               "so no rank waits for the slowest one's writes")
    evidence = {**ev, "rank": me["rank"], "host": host, "saves": len(mine), "of_saves": len(saves),
                "lag_s": lag_s, "worst_lag_s": worst["lag_ns"] / 1e9, "cost_s": cost[host] / 1e9,
                "reasons": reasons}
    finding = {"id": "checkpoint-straggler", "severity": "critical" if share >= 0.25 else "warning",
               "title": TITLE, "statement": stmt, "evidence": evidence, "files": [me["path"]] if me["path"] else [],
               "ops": [], "suggestion": "; ".join(sug).capitalize() + ".",
               "impact": {"step_share": share, "ms_per_step": cost[host] / 1e6 / steps if steps else None,
                          "basis": str(tr.get("basis") or "none")}}
    return host, finding
