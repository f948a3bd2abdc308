"""tb_iotrace.recording.tf_iterator: the wrapper of tf.data's eager ``__next__``, with stand-ins
for the iterator, ``traceme_enabled`` and ``TraceMe`` (no TensorFlow).

Proves: each call counts one TensorFlow loop call; no TraceMe while no profiler records; while
one does, one ``tb_iotrace::next`` TraceMe around the call, stopped even when the iterator ends
or fails; the element and the exception pass through unchanged; ``wrap_iterators`` wraps once,
leaves a class without its own ``__next__`` and a TensorFlow whose TraceMe binding differs as
they are, and never raises.
"""
from __future__ import annotations

import logging
import sys
import types
from typing import Any

import pytest

from tb_iotrace.recording import tf_iterator
from tb_iotrace.recording.loop_activity import COUNTS, TF, TORCH


class _TraceMe:
    made: list[_TraceMe] = []

    def __init__(self, name: str) -> None:
        self.name, self.stopped = name, 0
        _TraceMe.made.append(self)

    def Stop(self) -> None:  # noqa: N802 - TensorFlow's binding's name
        self.stopped += 1


@pytest.fixture(autouse=True)
def _fresh() -> None:
    _TraceMe.made = []


def test_counts_each_call_and_traces_only_while_recording(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(COUNTS, TF, 0)
    monkeypatch.setitem(COUNTS, TORCH, 0)
    on = [False]
    seen: list[Any] = []

    def real(self: Any) -> Any:
        seen.append(self)
        return ("batch", len(seen))

    nxt = tf_iterator._wrap(real, lambda: on[0], _TraceMe)
    it = object()
    assert nxt(it) == ("batch", 1) and _TraceMe.made == []       # not recording: no TraceMe
    on[0] = True
    assert nxt(it) == ("batch", 2)
    assert [(t.name, t.stopped) for t in _TraceMe.made] == [(tf_iterator.NEXT_EVENT, 1)]
    assert seen == [it, it]                                        # the iterator itself passed
    assert COUNTS[TF] == 2 and COUNTS[TORCH] == 0
    assert nxt.__wrapped__ is real and nxt.__tbio_wrapper__ is True


@pytest.mark.parametrize("exc", [StopIteration(), RuntimeError("input pipeline failed")])
def test_the_span_ends_when_the_iterator_raises(exc: BaseException, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(COUNTS, TF, 0)

    def real(self: Any) -> Any:
        raise exc

    nxt = tf_iterator._wrap(real, lambda: True, _TraceMe)
    with pytest.raises(type(exc)):
        nxt(object())
    assert [t.stopped for t in _TraceMe.made] == [1] and COUNTS[TF] == 1


def _fake_tensorflow(monkeypatch: pytest.MonkeyPatch, cls: type, traceme_mod: Any) -> None:
    names = ["tensorflow", "tensorflow.python", "tensorflow.python.data", "tensorflow.python.data.ops",
             "tensorflow.python.profiler", "tensorflow.python.profiler.internal"]
    mods = {n: types.ModuleType(n) for n in names}
    ops = types.ModuleType("tensorflow.python.data.ops.iterator_ops")
    ops.OwnedIterator = cls  # type: ignore[attr-defined]
    mods["tensorflow.python.data.ops"].iterator_ops = ops  # type: ignore[attr-defined]
    mods["tensorflow.python.data.ops.iterator_ops"] = ops
    mods["tensorflow.python.profiler.internal"]._pywrap_traceme = traceme_mod  # type: ignore[attr-defined]
    mods["tensorflow.python.profiler.internal._pywrap_traceme"] = traceme_mod
    for n, m in mods.items():
        monkeypatch.setitem(sys.modules, n, m)


def _traceme_module() -> Any:
    m = types.ModuleType("tensorflow.python.profiler.internal._pywrap_traceme")
    m.traceme_enabled = lambda: True  # type: ignore[attr-defined]
    m.TraceMe = _TraceMe  # type: ignore[attr-defined]
    return m


def test_wrap_iterators_wraps_once(monkeypatch: pytest.MonkeyPatch) -> None:
    class OwnedIterator:
        def __next__(self) -> int:
            return 7

    real = OwnedIterator.__dict__["__next__"]
    _fake_tensorflow(monkeypatch, OwnedIterator, _traceme_module())
    tf_iterator.wrap_iterators()
    tf_iterator.wrap_iterators()                                   # idempotent: not wrapped twice
    wrapped = OwnedIterator.__dict__["__next__"]
    assert wrapped.__wrapped__ is real
    assert next(OwnedIterator()) == 7
    assert [(t.name, t.stopped) for t in _TraceMe.made] == [(tf_iterator.NEXT_EVENT, 1)]


def test_wrap_iterators_leaves_an_unknown_tensorflow_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    class Base:
        def __next__(self) -> int:
            return 1

    class Inherits(Base):
        pass

    _fake_tensorflow(monkeypatch, Inherits, _traceme_module())
    tf_iterator.wrap_iterators()
    assert "__next__" not in Inherits.__dict__ and Base.__dict__["__next__"].__name__ == "__next__"
    assert not hasattr(Base.__dict__["__next__"], "__tbio_wrapper__")

    class Own:
        def __next__(self) -> int:
            return 2

    real = Own.__dict__["__next__"]
    no_traceme = types.ModuleType("tensorflow.python.profiler.internal._pywrap_traceme")
    _fake_tensorflow(monkeypatch, Own, no_traceme)                # a binding without TraceMe
    tf_iterator.wrap_iterators()                                   # no exception
    assert Own.__dict__["__next__"] is real


def test_wrap_iterators_without_tensorflow_does_nothing(monkeypatch: pytest.MonkeyPatch,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    # import fails, however much of TensorFlow another test of this process imported already
    for name in [n for n in sys.modules if n == "tensorflow" or n.startswith("tensorflow.")] + ["tensorflow"]:
        monkeypatch.setitem(sys.modules, name, None)
    with caplog.at_level(logging.DEBUG, logger="tb_iotrace"):
        tf_iterator.wrap_iterators()                               # no exception: said at debug
    assert any("not traced" in r.getMessage() for r in caplog.records)
