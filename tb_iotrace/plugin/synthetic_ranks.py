"""Many ranks of one data-parallel job, made from one real rank's PyTorch trace, for tests and
benchmarks of the job verdict (tb_iotrace.analysis.job_verdict).

The source is a real DDP rank's trace (``tests/data/ddp_rank0.pt.trace.json.gz``: rank 0 of four
gloo ranks, waiting about 400 ms a step in ``gloo:all_reduce`` for a slow rank 2). Each copy
gets its rank (``distributedInfo.rank`` and tb_iotrace's own ``rank``); the slow rank's copy has
its waits exchanged: its ``gloo:all_reduce`` events are renamed to the DataLoader's ``__next__``
and its ``__next__`` events to ``gloo:all_reduce``, so that it waits for its input as long as
the others wait for it, at the same step numbers.
"""
from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

COLLECTIVE = "gloo:all_reduce"
NEXT = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"

__all__ = ["make_ranks"]


def make_ranks(source: str | os.PathLike[str], out: str | os.PathLike[str], ranks: int,
               slow_rank: int | None = None) -> list[Path]:
    """Write ``ranks`` traces (``rank<k>.<n>.pt.trace.json``) into the folder ``out``; the
    paths, in rank order."""
    with gzip.open(source, "rt") as fh:
        base = json.load(fh)
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for k in range(ranks):
        doc = dict(base)
        doc["distributedInfo"] = {**(base.get("distributedInfo") or {}), "rank": k, "world_size": ranks}
        if isinstance(base.get("tb_iotrace"), dict):
            doc["tb_iotrace"] = {**base["tb_iotrace"], "rank": k}
        if k == slow_rank:
            swap = {COLLECTIVE: NEXT, NEXT: COLLECTIVE}
            doc["traceEvents"] = [{**e, "name": swap[e["name"]]} if e.get("name") in swap else e
                                  for e in base["traceEvents"]]
        p = folder / f"rank{k}.{1795840111947519391 + k}.pt.trace.json"
        p.write_text(json.dumps(doc))
        paths.append(p)
    return paths
