"""tb_iotrace.store.xplane.schema: the names of the I/O data in an XSpace. The formats read
(the one written among them), event kind names unique per (call, path, fd), ``event_kinds``
and ``parse_kind`` typed and strict, and ``thread_line_id`` a signed int64 of the pthread id
taken modulo 2**64, as TensorFlow's ``std::hash<std::thread::id>`` is."""
from __future__ import annotations

from typing import Any

import pytest

from tb_iotrace.store.xplane import schema as S


def test_formats_and_names() -> None:
    assert S.FORMAT in S.READ_FORMATS and S.READ_FORMATS == ("tb_iotrace.io/1", "tb_iotrace.io/2")
    assert S.EVENT_STATS == ("path", "offset", "bytes_requested", "bytes_returned", "fd", "errno")
    assert len(set(S.EVENT_STATS)) == len(S.EVENT_STATS)
    assert all(s.endswith("SSTABLE") and s.startswith(".") for s in S.CACHE_SUFFIXES)
    assert S.XPLANE_SUFFIX == ".xplane.pb" and S.LINE_PREFIX == "I/O "


@pytest.mark.parametrize("args,name", [
    (("pread64", "/data/x.bin", 5), "pread64 /data/x.bin (fd 5)"),
    (("open", "/data/x.bin", -1), "open /data/x.bin"),
    (("close", "", 5), "close (fd 5)"),
    (("sync", "", -1), "sync"),
    (("read", "", 0), "read (fd 0)"),
    (("write", "/a b (fd 3)", 4), "write /a b (fd 3) (fd 4)"),
])
def test_kind_name(args: tuple[str, str, int], name: str) -> None:
    assert S.kind_name(*args) == name


def test_kind_names_differ_per_call_path_and_fd() -> None:
    kinds = [(op, p, fd) for op in ("read", "pread64") for p in ("", "/a", "/b") for fd in (-1, 0, 7)]
    assert len({S.kind_name(*k) for k in kinds}) == len(kinds)


def test_event_kinds_are_typed() -> None:
    info = {"event_kinds": {"pread64 /d/a (fd 5)": ["pread64", "/d/a", "5", 4096.0, 100],
                            7: ("close", "", 5, 0, 0)}}
    assert S.event_kinds(info) == {"pread64 /d/a (fd 5)": ("pread64", "/d/a", 5, 4096, 100),
                                   "7": ("close", "", 5, 0, 0)}
    for empty in ({}, {"event_kinds": None}, {"event_kinds": {}}, {"format": "tb_iotrace.io/1"}):
        assert S.event_kinds(empty) == {}


@pytest.mark.parametrize("bad,error", [
    (["read", "/a", 3, 10], IndexError), (["read", "/a", "x", 10, 10], ValueError),
    (["read", "/a", None, 10, 10], TypeError), (["read", "/a", 3, 10, "1.5"], ValueError)])
def test_parse_kind_refuses_malformed_entries(bad: list[Any], error: type[Exception]) -> None:
    with pytest.raises(error):
        S.parse_kind(bad)


def test_thread_line_id_is_a_signed_int64_of_the_id_mod_2_64() -> None:
    ids = [0, 1, 2, 140279877782400, 2**63 - 1, 2**63, 2**64 - 1]
    got = [S.thread_line_id(i) for i in ids]
    assert all(-(2**63) <= g < 2**63 for g in got)
    assert len(set(got)) == len(got)
    assert got[3] == 6145426817083010591               # TF 2.21's id of that thread (test_xplane)
    assert S.thread_line_id(140279877782400 + 2**64) == got[3]
    assert S.thread_line_id(-1) == got[-1]              # -1 is 2**64 - 1 as an unsigned pthread_t
    assert any(g < 0 for g in (S.thread_line_id(i) for i in range(64)))  # the sign bit is kept, not masked off
