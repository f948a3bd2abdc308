"""tb_iotrace.fleet.dataset: the fleet dataset's manifest, its parts (only real parts under the
root are ever read or removed), stray parts swept, schemas united."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tb_iotrace.fleet.dataset import FORMAT, MANIFEST, Dataset, part_path, stamp, union, write_parts
from tb_iotrace.fleet.deps import FleetError

pa = pytest.importorskip("pyarrow")


def test_open_refuses_what_is_not_a_dataset(tmp_path: Path) -> None:
    with pytest.raises(FleetError, match="no such folder"):
        Dataset.open(tmp_path / "none")
    with pytest.raises(FleetError, match="build it with"):
        Dataset.open(tmp_path)
    (tmp_path / "f").write_text("x")
    with pytest.raises(FleetError, match="exists and is not a folder"):
        Dataset.open(tmp_path / "f", create=True)
    with pytest.raises(FleetError, match="is not empty"):
        Dataset.open(tmp_path, create=True)
    bad = tmp_path / "bad"
    (bad / "_fleet").mkdir(parents=True)
    (bad / MANIFEST).write_text("{not json")
    with pytest.raises(FleetError, match="unreadable manifest"):
        Dataset.open(bad)
    (bad / MANIFEST).write_text(json.dumps({"format": "other/1", "sources": {}}))
    with pytest.raises(FleetError, match=f"not a {FORMAT} manifest"):
        Dataset.open(bad)


def test_a_new_dataset_allocates_numbers_and_records_sources(tmp_path: Path) -> None:
    ds = Dataset.open(tmp_path / "new", create=True)
    assert [ds.allocate(), ds.allocate()] == [0, 1]
    st = [["a.xplane.pb", 10, 5]]
    assert ds.put("/src/a", st, "capture", [("r", "h")], ["files/run=r/host=h/part-0.parquet"]) == []
    assert ds.unchanged("/src/a", st) and not ds.unchanged("/src/a", [["a.xplane.pb", 11, 5]])
    assert not ds.unchanged("/src/b", st)
    old = ds.put("/src/a", st, "capture", [("r", "h")], ["files/run=r/host=h/part-1.parquet",
                                                        "files/run=r/host=h/part-0.parquet"])
    assert old == [] and ds.hosts() == 1
    assert ds.put("/src/a", st, "capture", [], []) == ["files/run=r/host=h/part-1.parquet",
                                                       "files/run=r/host=h/part-0.parquet"]


def test_stamp_is_name_size_and_mtime(tmp_path: Path) -> None:
    f = tmp_path / "x.json"
    f.write_text("12345")
    ((name, size, mtime),) = stamp([str(f)])
    assert (name, size, mtime) == ("x.json", 5, f.stat().st_mtime_ns)


@pytest.mark.parametrize("rel", ["/etc/passwd", "../files/run=r/host=h/part-0.parquet", "files/run=r/host=h/../part-0.parquet",
                                 "nosuchtable/run=r/host=h/part-0.parquet", "files/run=r/host=h/part-x.parquet",
                                 "files/run=r/host=h/evil.parquet", 7, None, "files/run=r/host=h/part-0.parquet/x"])
def test_is_part_refuses_what_is_not_a_part_under_the_root(tmp_path: Path, rel: object) -> None:
    assert not Dataset(tmp_path, {"sources": {}}).is_part(rel)


def test_is_part_refuses_a_link_on_the_way(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    (tmp_path / "outside" / "host=h").mkdir(parents=True)
    (tmp_path / "outside" / "host=h" / "part-0.parquet").write_text("not ours")
    (root / "files").mkdir(parents=True)
    os.symlink(tmp_path / "outside", root / "files" / "run=r")
    ds = Dataset(root, {"sources": {"s": {"parts": ["files/run=r/host=h/part-0.parquet"]}}})
    assert part_path("files", "r", "h", 0) == "files/run=r/host=h/part-0.parquet"
    assert not ds.is_part("files/run=r/host=h/part-0.parquet") and ds.parts("files") == []
    ds.remove(["files/run=r/host=h/part-0.parquet"])
    assert (tmp_path / "outside" / "host=h" / "part-0.parquet").exists()          # never removed


def test_parts_removed_and_strays_swept(tmp_path: Path) -> None:
    ds = Dataset.open(tmp_path / "ds", create=True)
    table = pa.table({"run": ["r"], "host": ["h"], "n": [1]})
    kept = write_parts(ds.root, 0, "r", "h", {"files": table})
    stray = write_parts(ds.root, 1, "r", "h2", {"files": table})
    (ds.root / "files" / "run=r" / "host=h" / ".part-9.parquet.tmp").write_text("half")
    ds.put("/src/a", [], "capture", [("r", "h")], kept)
    assert ds.parts("files", relative=True) == kept and ds.parts("files") == [str(ds.root / kept[0])]
    assert ds.sweep() == 2
    assert (ds.root / kept[0]).exists() and not (ds.root / stray[0]).exists()
    ds.remove(kept)
    assert not (ds.root / "files" / "run=r" / "host=h").exists()                 # its empty folder pruned
    assert (ds.root / "files" / "run=r").is_dir()                                # not one that holds another


def test_union_keeps_every_column_once_first_type_wins() -> None:
    a = pa.schema([("run", pa.string()), ("n", pa.int64())])
    b = pa.schema([("n", pa.float64()), ("extra", pa.bool_())])
    got = union([a, b])
    assert got.names == ["run", "n", "extra"] and got.field("n").type == pa.int64()
