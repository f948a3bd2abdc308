"""tb_iotrace.analysis.tf_gil: which kernels are a tf.data map's Python (py_function,
numpy_function), and their time inside the input waits."""
from __future__ import annotations

import numpy as np
import pytest

from tb_iotrace.analysis import tf_gil
from tb_iotrace.analysis.tf_gil import GIL_MODEL, PY_FUNC, py_function_time


@pytest.mark.parametrize("name", ["EagerPyFunc", "PyFunc", "PyFuncStateless", "map/EagerPyFunc",
                                  "ParallelMapDatasetV2:EagerPyFunc", "Iterator::Map/PyFunc"])
def test_py_function_kernels(name: str) -> None:
    assert PY_FUNC.search(name)


@pytest.mark.parametrize("name", ["MyPyFuncWrapper", "EagerPyFuncs", "PyFunctional", "MapDataset", "pyfunc"])
def test_other_names_are_not(name: str) -> None:
    assert not PY_FUNC.search(name)


def test_time_inside_the_window_only(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = []

    def named(space: object, match) -> tuple[np.ndarray, np.ndarray]:
        seen.append([n for n in ("EagerPyFunc", "MapDataset") if match(n)])
        return np.array([0, 100], np.int64), np.array([50, 200], np.int64)

    monkeypatch.setattr(tf_gil, "named_intervals", named)
    window = (np.array([40, 150], np.int64), np.array([120, 400], np.int64))
    assert py_function_time(object(), window) == 10 + 20 + 50                   # [40,50] [100,120] [150,200]
    assert seen == [["EagerPyFunc"]]
    assert py_function_time(object(), (np.zeros(0, np.int64), np.zeros(0, np.int64))) == 0


def test_the_model_sentence_takes_its_figures() -> None:
    assert "(30%)" in GIL_MODEL.format(s=30, part=50) and "(50%)" in GIL_MODEL.format(s=30, part=50)
