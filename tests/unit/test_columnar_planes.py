"""tb_iotrace.model.columnar.planes: a plane's event metadata read back from its file (all, or
some ids), and the names and labels a plane's events are shown by."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tb_iotrace.model.columnar.planes import LineInfo, PlaneData, read_event_metadata
from tb_iotrace.model.columnar.walk import field_spans, fields
from tb_iotrace.store.xplane._proto import XPlane
from tb_iotrace.store.xplane.read_xspace import XPlaneError


def plane() -> XPlane:
    p = XPlane(id=2, name="/host:CPU")
    for k, (name, disp) in {3: ("pread64", ""), 7: ("IteratorGetNext", "Iterator::GetNext"), 12: ("x", "")}.items():
        p.event_metadata[k].name = name
        p.event_metadata[k].display_name = disp
        p.event_metadata[k].id = k
    return p


def md_file(tmp_path: Path) -> tuple:
    """The plane written to a file, and where its event metadata entries are (ids ascending)."""
    data = plane().SerializeToString()
    path = tmp_path / "plane.pb"
    path.write_bytes(b"junk" + data)                                  # the plane's bytes at offset 4
    entries = []
    for number, _, _, a, b in field_spans(data, 0, len(data)):
        if number == 4:
            key = next(data[x:y] for n, _, x, y in fields(data, a, b) if n == 1)
            entries.append((key[0], a + 4, b + 4))
    entries.sort()
    return (str(path), np.array([e[0] for e in entries], np.int64), np.array([e[1] for e in entries], np.int64),
            np.array([e[2] for e in entries], np.int64))


def test_read_back_all_or_some_ids(tmp_path: Path) -> None:
    md = md_file(tmp_path)
    assert md[1].tolist() == [3, 7, 12]
    got = read_event_metadata(md)
    assert {k: v.name for k, v in got.items()} == {3: "pread64", 7: "IteratorGetNext", 12: "x"}
    some = read_event_metadata(md, [12, 7, 7, 99])                   # 99 is not there
    assert sorted(some) == [7, 12] and some[7].display_name == "Iterator::GetNext"
    assert sorted(read_event_metadata(md, [3, 5])) == [3]                 # 5 is not there: not its neighbour
    assert dict(read_event_metadata(md, [])) == {}


def test_a_file_changed_since_it_was_decoded_is_one_error(tmp_path: Path) -> None:
    path, keys, starts, ends = md_file(tmp_path)
    Path(path).write_bytes(b"\xff" * 200)
    with pytest.raises(XPlaneError, match="event metadata unreadable"):
        read_event_metadata((path, keys, starts, ends))


def data(meta: XPlane, md: tuple | None = None) -> PlaneData:
    z = np.zeros(0, np.int64)
    return PlaneData(0, 2, "/host:CPU", meta, [], z, z, z, z, z.astype(np.int32), md_file=md)


def test_names_and_labels_from_meta_or_the_file(tmp_path: Path) -> None:
    eager = data(plane())
    ids, names, labels = eager.metadata_table()
    assert ids.tolist() == [3, 7, 12] and names == ["pread64", "IteratorGetNext", "x"]
    assert labels == ["pread64", "Iterator::GetNext", "x"]                # the display name where there is one
    assert eager.event_names() == {3: "pread64", 7: "Iterator::GetNext", 12: "x"}
    assert eager.full_meta() is eager.meta

    bare = XPlane(id=2, name="/host:CPU")                                  # decoded lazily: no metadata in meta
    lazy = data(bare, md_file(tmp_path))
    lazy.md_table = (np.array([3, 7, 12]), ["pread64", "IteratorGetNext", "x"], None)   # as the native scan leaves it
    ids, names = lazy.metadata_names()
    assert names == ["pread64", "IteratorGetNext", "x"] and lazy.md_table[2] is None    # labels not read for names
    assert lazy.metadata_table()[2] == ["pread64", "Iterator::GetNext", "x"]
    full = lazy.full_meta()
    assert full is not bare and len(bare.event_metadata) == 0 and sorted(full.event_metadata) == [3, 7, 12]
    assert lazy.event_names()[7] == "Iterator::GetNext" and lazy.num_events == 0


def test_a_line_is_labelled_by_its_display_name_else_its_name() -> None:
    assert LineInfo(0, 1, 0, "python", "", 0, 0, 0).label == "python"
    assert LineInfo(0, 1, 0, "python", "main thread", 0, 0, 0).label == "main thread"
