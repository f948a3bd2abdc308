"""tb_iotrace.analysis.tf_iterator_python on test_verdict_capacity's plain TF loop (12 waits of
8 ms in tb_iotrace::next, the IteratorGetNext op the first 1 ms of each): the iterator's own
Python is the wait outside the op, counted within the window given only."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from tb_iotrace.analysis.tf_iterator_python import python_time
from tb_iotrace.store.xplane import XSpace

MS = 10**9      # ps


def _space(tmp_path: Path) -> XSpace:
    from test_verdict_capacity import _tf_loop_capture

    sp = XSpace()
    sp.ParseFromString(Path(_tf_loop_capture(tmp_path)).read_bytes())
    return sp


def test_the_wait_outside_the_op_within_the_window(tmp_path):
    sp = _space(tmp_path)
    starts = np.array([10 * k * MS for k in range(12)], np.int64)
    assert python_time(sp, (starts, starts + 8 * MS)) == 12 * 7 * MS          # 7 of each 8 ms
    assert python_time(sp, (starts[:1], starts[:1] + 3 * MS)) == 2 * MS       # 1 ms op, then 2 ms of Python
    assert python_time(sp, (starts[:1] + 8 * MS, starts[:1] + 10 * MS)) == 0  # between waits: none
    empty = np.zeros(0, np.int64)
    assert python_time(sp, (empty, empty)) == 0
