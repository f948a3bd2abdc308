"""tb_iotrace.store.record_files: where a run's records lie (``<run>/plugins/iotrace``) and which
entries of that folder are records: ``*.json`` files directly in it, sorted; no table
(``.files.npz``), no dot file (a writer's temporary), nothing in a subfolder, no folder."""
from __future__ import annotations

from pathlib import Path

from tb_iotrace.store.record_files import RECORD_DIR, find_records, record_dir


def test_record_dir_is_under_the_run() -> None:
    assert record_dir("/logs/run1") == Path("/logs/run1/plugins/iotrace")
    assert record_dir(Path("rel")) == Path("rel") / RECORD_DIR


def test_find_records_keeps_only_record_files(tmp_path: Path) -> None:
    d = record_dir(tmp_path)
    d.mkdir(parents=True)
    for name in ("h.2.json", "h.1.json", ".h.3.json", "h.1.files.npz", "h.1.npz", "h.1.json.tmp", "notes.txt"):
        (d / name).write_text("{}")
    (d / "sub").mkdir()
    (d / "sub" / "h.9.json").write_text("{}")
    assert [p.name for p in find_records(d)] == ["h.1.json", "h.2.json"]


def test_find_records_of_a_missing_folder_or_a_file_is_empty(tmp_path: Path) -> None:
    assert find_records(tmp_path / "nope") == []
    f = tmp_path / "a.json"
    f.write_text("{}")
    assert find_records(f) == []


def test_a_folder_named_like_a_record_is_not_a_record(tmp_path: Path) -> None:
    d = record_dir(tmp_path)
    (d / "odd.json").mkdir(parents=True)
    (d / "h.1.json").write_text("{}")
    assert find_records(d) == [d / "h.1.json"]
