"""tb_iotrace.store.xplane.io_fields: the one rule that turns decoded I/O events into calls
(what a left-out stat stands for, format /1 and /2), shared by every reader."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from tb_iotrace.store.xplane.io_fields import (ABSENT, STAT_ABSENT, UNKNOWN_CALL, event_kind, factorize, fill_bytes,
                                               resolve_io_columns)
from tb_iotrace.store.xplane.schema import EVENT_STATS


def test_event_kind_of_format_2_and_of_a_bare_name() -> None:
    assert event_kind(["pread64", "/d/a", 5, 4096, 4096], "pread64 /d/a (fd 5)", {}) == ("pread64", "/d/a", 5, 4096, 4096)
    assert event_kind(None, "read", {}) == ("read", "", -1, ABSENT, ABSENT)
    assert event_kind(None, "re\\xffad", {"re\\xffad": "re\udcffad"}) == ("re\udcffad", "", -1, ABSENT, ABSENT)


def test_fill_bytes_from_the_kind_else_returned_zero_and_requested_as_returned() -> None:
    req = np.array([ABSENT, 10, ABSENT, ABSENT], np.int64)
    ret = np.array([ABSENT, ABSENT, 7, ABSENT], np.int64)
    kreq = np.array([100, 100, ABSENT, ABSENT], np.int64)
    kret = np.array([90, 90, ABSENT, ABSENT], np.int64)
    r, t = fill_bytes(req, ret, kreq, kret)
    assert r.tolist() == [100, 10, 7, 0] and t.tolist() == [90, 90, 7, 0]
    r, t = fill_bytes(np.array([ABSENT, 5]), np.array([3, ABSENT]), None, None)
    assert r.tolist() == [3, 5] and t.tolist() == [3, 0]


@pytest.mark.parametrize("ids", [[5, 3, 5, 9, 3], [0], [-2, 7, -2], [60_000_000, 1, 60_000_000], []])
def test_factorize_is_np_unique(ids: list[int]) -> None:
    a = np.array(ids, np.int64)
    uniq, code = factorize(a)
    want_u, want_c = np.unique(a, return_inverse=True)
    assert uniq.tolist() == want_u.tolist() and code.tolist() == want_c.reshape(-1).tolist()


def stats(**given: list[int]) -> dict[str, np.ndarray]:
    n = len(next(iter(given.values())))
    return {name: np.array(given.get(name, [STAT_ABSENT[name]] * n), np.int64) for name in EVENT_STATS}


def test_resolve_format_2_kinds_with_the_events_own_values() -> None:
    info = {"event_kinds": {"pread64 /d/a (fd 5)": ["pread64", "/d/a", 5, 4096, 4096]}, "exact_paths": {}}
    md_ids, md_names = np.array([1, 2]), ["pread64 /d/a (fd 5)", "close (fd 5)"]
    st = stats(offset=[0, 4096, -1, -1], bytes_returned=[ABSENT, 100, ABSENT, ABSENT], fd=[-1, -1, 7, -1],
               errno=[0, 0, 0, 9])
    cols = resolve_io_columns(np.array([1, 1, 2, 3]), st.__getitem__, md_ids, md_names, {}, info)
    assert cols.op_text().tolist() == ["pread64", "pread64", "close (fd 5)", UNKNOWN_CALL]
    assert cols.path_text().tolist() == ["/d/a", "/d/a", "", ""]
    assert cols.returned.tolist() == [4096, 100, 0, 0] and cols.requested.tolist() == [4096, 4096, 0, 0]
    assert cols.fd.tolist() == [5, 5, 7, -1] and cols.offset.tolist() == [0, 4096, -1, -1]
    assert cols.errno.tolist() == [0, 0, 0, 9]


def test_resolve_path_refs_name_the_path_and_ref_zero_leaves_the_kinds() -> None:
    stat_md = {4: SimpleNamespace(name="/d/x"), 6: SimpleNamespace(name="esc"), 8: SimpleNamespace(name="")}
    info = {"exact_paths": {"esc": "/d/\udcff"}}
    st = stats(path=[4, 0, 6, 8, 99], bytes_returned=[8, 8, 8, 8, 8])
    cols = resolve_io_columns(np.array([1] * 5), st.__getitem__, np.array([1]), ["read"], stat_md, info)
    assert cols.path_text().tolist() == ["/d/x", "", "/d/\udcff", "", ""]
    assert cols.op_text().tolist() == ["read"] * 5
    assert cols.requested.tolist() == [8] * 5                              # format /1: requested == returned
