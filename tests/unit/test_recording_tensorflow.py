"""tb_iotrace.recording.tensorflow's _drop_unsaved_windows, against small fake TensorFlow modules
(no real TensorFlow): tf.profiler.experimental.stop is wrapped wherever a TensorFlow module holds
that very function, the wrapper passes calls through and then forgets the window that stop ended
(also when stop raises), it wraps once, and it changes nothing where TensorFlow or its stop is
missing."""
from __future__ import annotations

import sys
import types
from typing import Any

import pytest

from tb_iotrace.recording import tensorflow as tfrec


def _hide_tensorflow(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [k for k in sys.modules if k == "tensorflow" or k.startswith("tensorflow.")]:
        monkeypatch.delitem(sys.modules, name)


def _fake_tf(monkeypatch: pytest.MonkeyPatch, stop: Any) -> dict[str, types.ModuleType]:
    _hide_tensorflow(monkeypatch)
    mods = {n: types.ModuleType(n) for n in ("tensorflow", "tensorflow.python", "tensorflow.python.profiler",
                                             "tensorflow.python.profiler.profiler_v2",
                                             "tensorflow.profiler.experimental", "tensorflow.other",
                                             "not_tf.holder")}
    mods["tensorflow"].python = mods["tensorflow.python"]  # type: ignore[attr-defined]
    mods["tensorflow.python"].profiler = mods["tensorflow.python.profiler"]  # type: ignore[attr-defined]
    mods["tensorflow.python.profiler"].profiler_v2 = mods["tensorflow.python.profiler.profiler_v2"]  # type: ignore[attr-defined]
    if stop is not None:
        mods["tensorflow.python.profiler.profiler_v2"].stop = stop  # type: ignore[attr-defined]
    mods["tensorflow.profiler.experimental"].stop = stop  # type: ignore[attr-defined]
    mods["tensorflow.other"].stop = lambda: "another stop"  # type: ignore[attr-defined]
    mods["not_tf.holder"].stop = stop  # type: ignore[attr-defined]
    for name, mod in mods.items():
        monkeypatch.setitem(sys.modules, name, mod)
    return mods


@pytest.fixture()
def forgotten(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    got: list[int] = []
    monkeypatch.setattr(tfrec.STATE, "forget_uncollected", got.append)
    monkeypatch.setattr(tfrec.STATE, "windows", 6)
    return got


def test_stop_is_wrapped_wherever_tensorflow_holds_it(monkeypatch: pytest.MonkeyPatch, forgotten: list[int]) -> None:
    calls: list[tuple[Any, ...]] = []

    def stop(*args: Any, **kwargs: Any) -> str:
        calls.append((args, kwargs))
        return "stopped"

    mods = _fake_tf(monkeypatch, stop)
    other = mods["tensorflow.other"].stop  # type: ignore[attr-defined]
    tfrec._drop_unsaved_windows()
    wrapped = mods["tensorflow.python.profiler.profiler_v2"].stop  # type: ignore[attr-defined]
    assert wrapped is not stop and wrapped.__wrapped__ is stop and wrapped.__tbio_wrapper__
    assert mods["tensorflow.profiler.experimental"].stop is wrapped  # type: ignore[attr-defined]
    assert mods["tensorflow.other"].stop is other  # type: ignore[attr-defined]
    assert mods["not_tf.holder"].stop is stop  # type: ignore[attr-defined]
    assert wrapped(1, save=False) == "stopped" and calls == [((1,), {"save": False})]
    assert forgotten == [7]                                # the number the window it stopped gets
    tfrec._drop_unsaved_windows()                          # idempotent: not a wrapper of the wrapper
    assert mods["tensorflow.python.profiler.profiler_v2"].stop is wrapped  # type: ignore[attr-defined]


def test_a_stop_that_raises_still_forgets_its_window(monkeypatch: pytest.MonkeyPatch, forgotten: list[int]) -> None:
    def stop() -> None:
        raise RuntimeError("no profiler running")

    mods = _fake_tf(monkeypatch, stop)
    tfrec._drop_unsaved_windows()
    with pytest.raises(RuntimeError, match="no profiler running"):
        mods["tensorflow.profiler.experimental"].stop()  # type: ignore[attr-defined]
    assert forgotten == [7]


def test_the_uncollected_window_is_dropped_but_an_earlier_one_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the real ProfileWindow: a stop that ended a window drops it; a stop that ended none
    (windows unchanged) leaves the last window's pending recording for its collect."""
    st = tfrec.STATE
    monkeypatch.setattr(st, "windows", 2)
    monkeypatch.setattr(st, "session", None)
    monkeypatch.setattr(st, "payload", None)
    monkeypatch.setattr(st, "pending", "window 2")

    def stop(ends: bool) -> None:
        if ends:
            st.windows += 1
            st.pending = "window 3"

    mods = _fake_tf(monkeypatch, stop)
    tfrec._drop_unsaved_windows()
    wrapped = mods["tensorflow.python.profiler.profiler_v2"].stop  # type: ignore[attr-defined]
    wrapped(False)
    assert st.pending == "window 2"
    wrapped(True)
    assert st.windows == 3 and st.pending is None


def test_nothing_changes_without_tensorflows_stop(monkeypatch: pytest.MonkeyPatch, forgotten: list[int]) -> None:
    mods = _fake_tf(monkeypatch, None)
    tfrec._drop_unsaved_windows()
    assert "stop" not in mods["tensorflow.python.profiler.profiler_v2"].__dict__
    assert mods["tensorflow.profiler.experimental"].stop is None  # type: ignore[attr-defined]


def test_nothing_happens_without_tensorflow(monkeypatch: pytest.MonkeyPatch, forgotten: list[int]) -> None:
    _hide_tensorflow(monkeypatch)
    monkeypatch.setitem(sys.modules, "tensorflow", None)   # import tensorflow... raises ImportError
    tfrec._drop_unsaved_windows()
    assert forgotten == [] and sys.modules["tensorflow"] is None
    assert not any(k.startswith("tensorflow.") for k in sys.modules)
