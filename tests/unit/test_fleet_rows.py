"""tb_iotrace.fleet.rows: text with raw bytes kept as \\xNN, JSON text without NaN, the kind
of a key the module does not know (bools stay bools), the hosts row (summary keys beside the
document's, a colliding ``source`` renamed, own tables left out), files rows with their mount
(longest prefix) and counters the layout does not name, findings/checkpoints/objects rows from
odd entries, and a host's empty tables left out."""
from __future__ import annotations

import json

import pytest

from tb_iotrace.fleet.rows import (files_table, findings_table, checkpoints_table, host_table, host_tables,
                                   kind_of, objects_table, schema, steps_table, text, to_json)

LAYOUT = {"POSIX": (("POSIX_READS", "POSIX_BYTES_READ"), ("POSIX_F_READ_TIME",)),
          "STDIO": (("STDIO_READS",), ("STDIO_F_READ_TIME",))}
MOUNTS = ("22 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
          "30 22 0:5 / /data rw - nfs srv:/data rw\n"
          "31 30 0:6 / /data/fast rw - tmpfs tmpfs rw\n")
HOSTILE = "h\x1b[2J\n\x00"


def test_text_keeps_raw_bytes_as_escapes_and_valid_text_as_it_is() -> None:
    assert text("é\x1b\n") == "é\x1b\n"
    assert text("a\udcff\udc80b") == "a\\xff\\x80b"
    assert text(12) == "12" and text(None) == "None"


def test_to_json_nulls_non_finite_numbers_at_any_depth() -> None:
    assert to_json(None) is None
    got = json.loads(to_json({"a": [1.5, float("nan"), {"b": float("inf")}], "k\udcff": ("é",)}) or "")
    assert got == {"a": [1.5, None, {"b": None}], "k\\xff": ["é"]}
    assert "é" in (to_json(["é"]) or "")          # not \u00e9


@pytest.mark.parametrize("values, want", [
    ([None, None], None), ([True, None, False], "bool"), ([1, 2.5], "float64"), ([True, 1], "json"),
    (["a", None], "string"), ([{"x": 1}], "json"), ([1, "a"], "json"), ([[1]], "json")])
def test_kind_of_a_key_the_module_does_not_know(values: list, want: str | None) -> None:
    assert kind_of(values) == want


def test_hosts_row_puts_the_summary_beside_the_documents_keys() -> None:
    doc = {"host": HOSTILE, "kind": "xplane", "source": "/c.xplane.pb", "partial": 0, "nevents": 7,
           "files": [{"x": 1}], "steps": [{}, {}, {}], "findings": [{}], "checkpoints": [{}], "objects": {"a": 1},
           "summary": {"host": "ignored", "source": "counters", "bytes_read": 9, "files": 4, "read_time_s": 1},
           "verdict": {"why": [float("nan")]}, "all_none": None, "flag": True}
    (row,) = host_table("r\n1", doc).to_pylist()
    assert row["host"] == HOSTILE and row["run"] == "r\n1"
    assert (row["source"], row["summary_source"], row["files"], row["bytes_read"]) == ("/c.xplane.pb", "counters", 4, 9)
    assert row["read_time_s"] == 1.0 and isinstance(row["read_time_s"], float)
    assert row["partial"] is False and (row["n_steps"], row["n_findings"]) == (3, 1)
    assert json.loads(row["verdict"]) == {"why": [None]}
    assert row["flag"] is True and "all_none" not in row
    assert not {"steps", "findings", "checkpoints", "objects", "summary"} & set(row)


def test_files_rows_take_their_mount_and_counters_the_layout_lacks() -> None:
    files = [{"module": "POSIX", "path": "/data/fast/x", "record_id": 2 ** 64 - 1, "rank": 3, "code": True,
              "counters": {"POSIX_READS": 2, "POSIX_NEW": 5}, "fcounters": {"POSIX_F_READ_TIME": 0.5}},
             {"module": "STDIO", "path": "/data/y\udcff", "counters": {"STDIO_READS": 1},
              "fcounters": {"STDIO_F_NEW": 1}},
             {"module": "POSIX", "path": "/home/z", "counters": {}, "fcounters": {}}]
    t = files_table("r", HOSTILE, files, LAYOUT, MOUNTS)
    rows = t.to_pylist()
    assert [(r["mount_point"], r["fs_type"]) for r in rows] == [("/data/fast", "tmpfs"), ("/data", "nfs"), ("/", "ext4")]
    assert rows[0]["record_id"] == 2 ** 64 - 1 and rows[0]["rank"] == 3 and rows[0]["code"] is True
    assert rows[1]["path"] == "/data/y\\xff" and rows[1]["rank"] is None and rows[1]["code"] is False
    assert rows[0]["POSIX_NEW"] == 5 and rows[1]["POSIX_NEW"] is None and rows[1]["STDIO_F_NEW"] == 1.0
    assert str(t.schema.field("POSIX_NEW").type) == "int64" and str(t.schema.field("STDIO_F_NEW").type) == "double"
    assert rows[0]["STDIO_READS"] is None and rows[2]["POSIX_READS"] is None
    no_mounts = files_table("r", "h", files[:1], LAYOUT).to_pylist()[0]
    assert no_mounts["mount_point"] is None and no_mounts["fs_type"] is None


def test_schema_lists_every_layout_counter_with_its_type() -> None:
    s = schema("files", LAYOUT)
    names = s.names
    assert names[:9] == ["run", "host", "module", "path", "record_id", "rank", "code", "mount_point", "fs_type"]
    assert names[9:] == ["POSIX_READS", "POSIX_BYTES_READ", "POSIX_F_READ_TIME", "STDIO_READS", "STDIO_F_READ_TIME"]
    assert str(s.field("record_id").type) == "uint64" and str(s.field("POSIX_F_READ_TIME").type) == "double"
    assert "collective_wait_ps" in schema("steps", LAYOUT).names
    with pytest.raises(KeyError):
        schema("nope", LAYOUT)


def test_findings_rows_of_odd_entries_keep_their_place_and_owner() -> None:
    t = findings_table("r", "h", [{"id": "x", "run": "spoof", "host": "spoof", "files": ["/a"], "impact": 2},
                                  "a plain \x1b line"])
    rows = t.to_pylist()
    assert [(r["run"], r["host"], r["index"]) for r in rows] == [("r", "h", 0), ("r", "h", 1)]
    assert rows[0]["files"] == '["/a"]' and rows[0]["impact"] == 2.0 and rows[1]["impact"] is None
    assert rows[1]["statement"] == "a plain \x1b line" and rows[1]["id"] is None


def test_checkpoint_rows_keep_a_rank_only_when_it_is_a_number() -> None:
    phases = [{"kind": "save", "bytes": 10, "paths": ["/ck/a"]}, "junk", {"kind": "load", "index": 99}]
    rows = checkpoints_table("r", "h", phases, rank="0").to_pylist()
    assert [(r["kind"], r["index"], r["rank"]) for r in rows] == [("save", 0, None), ("load", 2, None)]
    assert rows[0]["paths"] == '["/ck/a"]'
    assert [r["rank"] for r in checkpoints_table("r", "h", phases[:1], rank=4).to_pylist()] == [4]


def test_object_rows_and_their_hostile_names() -> None:
    objs = {"objects": [{"object": "s3://b/k\n", "service": "s3", "bucket": "b", "key": "k\udcff",
                         "counters": {"OBJ_GETS": 3}, "fcounters": {}}, "junk"]}
    rows = objects_table("r", "h", objs).to_pylist()
    assert len(rows) == 1 and rows[0]["key"] == "k\\xff" and rows[0]["object"] == "s3://b/k\n"
    assert rows[0]["OBJ_GETS"] == 3 and rows[0]["OBJ_PUTS"] is None
    assert objects_table("r", "h", None).num_rows == 0


def test_host_tables_leave_out_tables_without_rows() -> None:
    doc = {"host": 7, "kind": "record", "files": [], "steps": [{"index": 0, "name": "s", "step_num": 1}],
           "findings": [], "summary": {"bytes_read": 0}, "process": {"rank": 2},
           "checkpoints": [{"kind": "save"}]}
    got = host_tables("r", doc, LAYOUT)
    assert set(got) == {"hosts", "steps", "checkpoints"}
    assert got["steps"].to_pylist()[0]["host"] == "7" and got["steps"].to_pylist()[0]["object_requests"] is None
    assert got["checkpoints"].to_pylist()[0]["rank"] == 2
    assert steps_table("r", "h", []).num_rows == 0
