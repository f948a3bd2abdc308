"""tb_iotrace.model.endpoints: which names are endpoints, endpoint totals summed per name over
POSIX records only and ordered by bytes, socket calls as intervals per thread (an EAGAIN call
stretched to the next call on the same socket only), and a source's endpoints whether its files
are dicts or columns."""
from __future__ import annotations

import errno
from typing import Any

import numpy as np

from tb_iotrace.model.endpoints import (SIZE_BINS, endpoint_mask, endpoint_totals, is_endpoint,
                                        socket_intervals, source_endpoints, source_socket_intervals)
from tb_iotrace.store.filetable import FileTable


def rec(path: str, module: str = "POSIX", **c: float) -> dict[str, Any]:
    fc = {k: v for k, v in c.items() if k.startswith("POSIX_F_")}
    return {"path": path, "module": module, "counters": {k: v for k, v in c.items() if k not in fc}, "fcounters": fc}


def test_endpoint_names_and_mask() -> None:
    assert is_endpoint("tcp://s3:443") and not is_endpoint("/data/tcp://x") and not is_endpoint(None)
    assert not is_endpoint(b"tcp://x")
    paths = np.array(["tcp://a:1", "/f", None, "tcp://a:1", "tcp:/x"], dtype=object)
    assert endpoint_mask(paths).tolist() == [True, False, False, True, False]
    assert endpoint_mask(np.array([], dtype=object)).shape == (0,)


def test_totals_sum_records_of_one_name_and_skip_other_modules() -> None:
    files = [rec("tcp://a:1", POSIX_OPENS=1, POSIX_READS=2, POSIX_BYTES_READ=100, POSIX_F_READ_TIME=0.5,
                 POSIX_SIZE_READ_0_100=2),
             rec("tcp://a:1", POSIX_OPENS=2, POSIX_BYTES_READ=50, POSIX_BYTES_WRITTEN=9, POSIX_F_WRITE_TIME=0.25),
             rec("tcp://a:1", module="STDIO", STDIO_BYTES_READ=10**9),
             rec("/data/x", POSIX_BYTES_READ=10**9),
             rec("tcp://b:2", POSIX_BYTES_READ=150, POSIX_WRITES=3),
             rec("tcp://c:3", POSIX_BYTES_WRITTEN=1)]
    got = endpoint_totals(files)
    assert [e.name for e in got] == ["tcp://a:1", "tcp://b:2", "tcp://c:3"]   # bytes in, then out, then name
    a = got[0].to_dict()
    assert (a["connections"], a["calls_in"], a["bytes_in"], a["bytes_out"]) == (3, 2, 150, 9)
    assert (a["time_in_s"], a["time_out_s"]) == (0.5, 0.25)
    assert list(a["sizes_in"]) == list(SIZE_BINS) and a["sizes_in"]["0_100"] == 2
    assert got[1].calls_out == 3 and endpoint_totals([rec("/f"), {"module": "POSIX"}]) == []


def cols(rows: list[tuple[int, int, int, int, int, str]]) -> dict[str, np.ndarray]:
    """rows of (tid, fd, start, end, errno, path)."""
    a = np.array([r[:5] for r in rows], dtype=np.int64).reshape(-1, 5)
    return {"tid": a[:, 0], "fd": a[:, 1], "start_ns": a[:, 2], "end_ns": a[:, 3], "errno": a[:, 4],
            "path": np.array([r[5] for r in rows], dtype=object)}


def test_eagain_stretches_to_the_next_call_on_the_same_socket_only() -> None:
    ep, other = "tcp://s:1", "tcp://t:2"
    c = cols([(1, 5, 100, 110, errno.EAGAIN, ep),      # then poll: waits until the call at 300
              (1, 6, 150, 160, errno.EAGAIN, other),   # last call on fd 6: keeps its own end
              (1, 5, 300, 320, 0, ep),
              (1, 5, 400, 405, errno.ECONNRESET, ep),  # another failure keeps its time
              (1, 5, 500, 510, 0, ep),
              (1, 9, 120, 130, 0, "/not/a/socket"),
              (2, 5, 50, 60, errno.EAGAIN, ep)])       # another thread: not bridged to thread 1
    got = socket_intervals(c)
    assert set(got) == {1, 2}
    s, e = got[1]
    assert s.tolist() == [100, 150, 300, 400, 500]     # start order
    assert e.tolist() == [300, 160, 320, 405, 510]
    assert got[2][1].tolist() == [60]
    assert c["end_ns"].tolist()[0] == 110               # the caller's columns are left alone


def test_no_socket_calls_is_empty() -> None:
    assert socket_intervals(cols([(1, 3, 0, 5, 0, "/f")])) == {}


class FakeSource:
    def __init__(self, files: Any = None, table: FileTable | None = None, calls: Any = None) -> None:
        self._files, self._table, self._calls = files, table, calls

    def files_as_columns(self) -> bool:
        return self._table is not None

    def table(self) -> FileTable | None:
        return self._table

    def files(self) -> Any:
        return self._files

    def io_columns(self) -> Any:
        return self._calls


def test_source_endpoints_from_dicts_and_from_columns_agree() -> None:
    files = [rec("tcp://a:1", POSIX_OPENS=1, POSIX_BYTES_READ=7, POSIX_F_READ_TIME=0.5),
             rec("/d/f", POSIX_BYTES_READ=9), rec("tcp://b:2", POSIX_BYTES_WRITTEN=3)]
    by_dict = [e.to_dict() for e in source_endpoints(FakeSource(files=files))]
    by_cols = [e.to_dict() for e in source_endpoints(FakeSource(table=FileTable.from_dicts(files)))]
    assert by_dict == by_cols and [d["endpoint"] for d in by_dict] == ["tcp://a:1", "tcp://b:2"]
    assert by_dict[0]["bytes_in"] == 7 and by_dict[0]["time_in_s"] == 0.5


def test_source_without_calls_or_posix_table() -> None:
    assert source_socket_intervals(FakeSource()) == {}
    stdio_only = FileTable.from_dicts([rec("tcp://a:1", module="STDIO", STDIO_BYTES_READ=5)])
    assert source_endpoints(FakeSource(table=stdio_only)) == []
    c = cols([(4, 3, 10, 20, 0, "tcp://a:1")])
    assert source_socket_intervals(FakeSource(calls=(c, {}))).keys() == {4}
