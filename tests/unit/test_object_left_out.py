"""Object requests past the per-process cap are counted, stored beside the columns and reported."""
from __future__ import annotations

from tb_iotrace.analysis.object_report import objects_doc
from tb_iotrace.cli.report_text.storage_tables import render_objects
from tb_iotrace.base import objreqs
from tb_iotrace.store.objcolumns import checked, concat, left_out, rows, to_columns


def test_cap_counts_the_requests_it_does_not_keep(monkeypatch) -> None:
    objreqs._forget()
    monkeypatch.setattr(objreqs, "MAX_REQUESTS", 3)
    got = [objreqs.start("s3", f"s3://b/k{i}", "b", f"k{i}", "GET", None, "urllib3") for i in range(5)]
    for r in got:
        objreqs.finish(r, 10)
    assert sum(r is not None for r in got) == 3
    assert objreqs.dropped() == 2
    cols = to_columns(objreqs.between(0, 2**63 - 1), objreqs.dropped())
    objreqs._forget()
    back = checked(cols)
    assert left_out(back) == 2 and len(rows(back)) == 3
    doc = objects_doc(rows(back), left_out(back))
    assert doc is not None and doc["requests"] == 3 and doc["requests_left_out"] == 2
    assert "2 more requests were made but not recorded" in render_objects(doc)


def test_left_out_alone_is_kept_and_summed() -> None:
    alone = checked(to_columns([], 4))
    assert alone is not None and left_out(alone) == 4 and rows(alone) == []
    assert left_out(concat([alone, checked(to_columns([], 3))])) == 7
    assert checked(to_columns([])) is None
    assert "left_out" not in to_columns([])
    assert left_out({"left_out": True}) == 0 and left_out({"left_out": -1}) == 0
    assert objects_doc([], 0) is None
