"""tb_iotrace.plugin.synthetic_ranks: ``make_ranks`` writes one trace per rank, named and ranked
as it says (file names, ``distributedInfo`` and tb_iotrace's own rank, world size), every rank a
copy of the source but the slow one, whose collective and DataLoader waits are exchanged one
for one; the source is never changed."""
from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tb_iotrace.plugin.synthetic_ranks import COLLECTIVE, NEXT, make_ranks

SRC = Path(__file__).resolve().parents[1] / "data" / "ddp_rank0.pt.trace.json.gz"


@pytest.fixture(scope="module")
def base() -> dict[str, Any]:
    with gzip.open(SRC, "rt") as fh:
        return json.load(fh)


def _names(doc: dict[str, Any]) -> Counter[str]:
    return Counter(e.get("name") for e in doc["traceEvents"])


def test_files_names_and_ranks(tmp_path: Path, base: dict[str, Any]) -> None:
    out = tmp_path / "new" / "deeper"
    paths = make_ranks(SRC, out, 3)
    assert [p.name for p in paths] == [f"rank{k}.{1795840111947519391 + k}.pt.trace.json" for k in range(3)]
    assert sorted(out.iterdir()) == sorted(paths)
    for k, p in enumerate(paths):
        doc = json.loads(p.read_text())
        assert doc["distributedInfo"]["rank"] == k and doc["distributedInfo"]["world_size"] == 3
        assert doc["distributedInfo"]["backend"] == base["distributedInfo"]["backend"]
        assert doc["tb_iotrace"]["rank"] == k
        assert doc["tb_iotrace"]["processes"] == base["tb_iotrace"]["processes"]
        assert doc["traceEvents"] == base["traceEvents"]        # no slow rank: all the same
    assert base["distributedInfo"]["rank"] == 0 and base["distributedInfo"]["world_size"] == 4


def test_the_slow_rank_has_its_waits_exchanged(tmp_path: Path, base: dict[str, Any]) -> None:
    paths = make_ranks(SRC, tmp_path, 4, slow_rank=2)
    before = _names(base)
    assert before[COLLECTIVE] > 0 and before[NEXT] > 0
    slow = json.loads(paths[2].read_text())
    after = _names(slow)
    assert after[COLLECTIVE] == before[NEXT] and after[NEXT] == before[COLLECTIVE]
    assert +(after - Counter({COLLECTIVE: after[COLLECTIVE], NEXT: after[NEXT]})) == \
        +(before - Counter({COLLECTIVE: before[COLLECTIVE], NEXT: before[NEXT]}))
    for a, b in zip(slow["traceEvents"], base["traceEvents"]):   # same times, only the name
        assert {k: v for k, v in a.items() if k != "name"} == {k: v for k, v in b.items() if k != "name"}
    for k in (0, 1, 3):
        assert json.loads(paths[k].read_text())["traceEvents"] == base["traceEvents"]


def test_no_ranks_and_a_slow_rank_out_of_range(tmp_path: Path, base: dict[str, Any]) -> None:
    assert make_ranks(SRC, tmp_path / "none", 0) == [] and (tmp_path / "none").is_dir()
    paths = make_ranks(SRC, tmp_path / "two", 2, slow_rank=5)
    assert all(json.loads(p.read_text())["traceEvents"] == base["traceEvents"] for p in paths)


def test_a_source_without_our_section_or_distributed_info(tmp_path: Path) -> None:
    src = tmp_path / "bare.pt.trace.json.gz"
    events = [{"name": COLLECTIVE, "ts": 1, "dur": 5}, {"name": NEXT, "ts": 7, "dur": 2}, {"ts": 9}]
    with gzip.open(src, "wt") as fh:
        json.dump({"traceEvents": events, "tb_iotrace": "not a dict"}, fh)
    a, b = make_ranks(src, tmp_path / "out", 2, slow_rank=1)
    da, db = json.loads(a.read_text()), json.loads(b.read_text())
    assert da["distributedInfo"] == {"rank": 0, "world_size": 2} and da["tb_iotrace"] == "not a dict"
    assert [e.get("name") for e in db["traceEvents"]] == [NEXT, COLLECTIVE, None]
    assert da["traceEvents"] == events


def test_the_source_is_only_read(tmp_path: Path) -> None:
    before = SRC.read_bytes()
    make_ranks(SRC, tmp_path, 2, slow_rank=0)
    assert SRC.read_bytes() == before
