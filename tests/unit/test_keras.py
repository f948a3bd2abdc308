"""tb_iotrace.keras, ``ProfileEvery``: its argument checks (exactly one period, positive
integers and seconds, windows that never overlap, TensorFlow/JAX backends only) and its
schedule (windows at batches N, 2N, ... of each fit, or S seconds apart; ``steps`` batches
each, one step marker per batch; a window open at the fit's end is closed). Keras, the
profiler and the window writer are stand-ins: no TensorFlow or JAX is imported."""
from __future__ import annotations

import importlib
import math
import sys
import types
from types import ModuleType, SimpleNamespace
from typing import Any, Iterator

import pytest

import tb_iotrace

MISSING = object()


class Writer:
    """WindowWriter's stand-in: ``log`` is shared with the step markers."""

    def __init__(self, log_dir: str, framework: str | None, log: list[Any], ok: list[bool]) -> None:
        self.log_dir, self.framework, self.log, self.ok = log_dir, framework, log, ok
        self.active: str | None = None
        self.windows = 0
        self.published: list[str] = []

    def start(self) -> bool:
        if not self.ok[0]:
            self.log.append("refused")
            return False
        self.active = self.framework
        self.log.append("start")
        return True

    def stop(self) -> None:
        assert self.active
        self.active = None
        self.windows += 1
        self.published.append(f"{self.log_dir}/w{self.windows}")
        self.log.append("stop")


@pytest.fixture()
def env(monkeypatch: pytest.MonkeyPatch) -> Iterator[SimpleNamespace]:
    """tb_iotrace.keras imported over a stand-in ``keras``, then taken out of sys.modules."""
    fake = ModuleType("keras")
    backend = ["tensorflow"]
    fake.callbacks = SimpleNamespace(Callback=type("Callback", (), {}))  # type: ignore[attr-defined]
    fake.backend = SimpleNamespace(backend=lambda: backend[0])  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "keras", fake)
    had_mod, had_attr = sys.modules.pop("tb_iotrace.keras", MISSING), tb_iotrace.__dict__.get("keras", MISSING)
    try:
        mod = importlib.import_module("tb_iotrace.keras")
        log: list[Any] = []
        ok, enabled, now = [True], [], [0.0]

        def marker(framework: str, step: int) -> Any:
            log.append(("enter", framework, step))
            return SimpleNamespace(__exit__=lambda *a: log.append(("exit", step)))

        monkeypatch.setattr(mod, "WindowWriter", lambda d, fw: Writer(d, fw, log, ok))
        monkeypatch.setattr(mod, "api", SimpleNamespace(enable=lambda: enabled.append(1)))
        monkeypatch.setattr(mod, "_step_marker", marker)
        monkeypatch.setattr(mod, "time", SimpleNamespace(monotonic=lambda: now[0]))
        yield SimpleNamespace(mod=mod, log=log, ok=ok, enabled=enabled, now=now, backend=backend)
    finally:
        sys.modules.pop("tb_iotrace.keras", None)
        if had_mod is not MISSING:
            sys.modules["tb_iotrace.keras"] = had_mod  # type: ignore[assignment]
        if had_attr is MISSING:
            tb_iotrace.__dict__.pop("keras", None)
        else:
            tb_iotrace.keras = had_attr  # type: ignore[attr-defined]


def _fit(cb: Any, batches: int, clock: list[float] | None = None, times: list[float] | None = None) -> None:
    cb.on_train_begin()
    for b in range(batches):
        if clock is not None and times is not None:
            clock[0] = times[b]
        cb.on_train_batch_begin(b)
        cb.on_train_batch_end(b)
    cb.on_train_end()


def _windows(log: list[Any]) -> list[list[int]]:
    """The steps marked in each window, checked for marker and window balance."""
    out: list[list[int]] = []
    open_step = None
    for e in log:
        if e == "start":
            out.append([])
        elif isinstance(e, tuple) and e[0] == "enter":
            assert open_step is None
            open_step = e[2]
            out[-1].append(e[2])
        elif isinstance(e, tuple) and e[0] == "exit":
            assert e[1] == open_step
            open_step = None
        elif e == "stop":
            assert open_step is None
    return out


@pytest.mark.parametrize("kwargs,words", [
    ({}, "exactly one of every_steps and every_secs"),
    ({"every_steps": 5, "every_secs": 1.0}, "exactly one"),
    ({"every_steps": 0}, "every_steps must be a positive integer"),
    ({"every_steps": -3}, "every_steps must be a positive integer"),
    ({"every_steps": True}, "every_steps must be a positive integer, not True"),
    ({"every_secs": 0}, "every_secs must be > 0"),
    ({"every_secs": -1.0}, "every_secs must be > 0"),
    ({"every_secs": math.nan}, "every_secs must be > 0"),
    ({"every_steps": 5, "steps": 0}, "steps must be a positive integer"),
    ({"every_steps": 5, "steps": True}, "steps must be a positive integer"),
    ({"every_steps": 4, "steps": 5}, "steps (5) must not exceed every_steps (4)"),
])
def test_bad_arguments_are_refused_before_enabling(env: SimpleNamespace, kwargs: dict[str, Any], words: str) -> None:
    with pytest.raises(ValueError) as got:
        env.mod.ProfileEvery("/logs", **kwargs)
    assert words in str(got.value)
    assert env.enabled == []


@pytest.mark.parametrize("kwargs", [{"every_steps": 2.5}, {"every_steps": 4, "steps": 1.5}])
def test_fractional_counts_are_refused(env: SimpleNamespace, kwargs: dict[str, Any]) -> None:
    """A count of batches that is not whole is an error, not truncated (2.5 -> every 2)."""
    with pytest.raises(ValueError, match="must be a positive integer"):
        env.mod.ProfileEvery("/logs", **kwargs)


def test_good_arguments_enable_and_pick_the_backend(env: SimpleNamespace) -> None:
    cb = env.mod.ProfileEvery("gs://b/logs", every_steps=10, steps=10)
    assert (cb.every_steps, cb.every_secs, cb.steps) == (10, None, 10)
    assert cb.writer.log_dir == "gs://b/logs" and cb.writer.framework == "tensorflow"
    assert env.enabled == [1]
    env.backend[0] = "jax"
    cb = env.mod.ProfileEvery("/logs", every_secs=2, steps=50)  # steps are not bounded by seconds
    assert (cb.every_steps, cb.every_secs, cb.steps, cb.writer.framework) == (None, 2.0, 50, "jax")


def test_torch_backend_is_refused_with_the_way_out(env: SimpleNamespace) -> None:
    env.backend[0] = "torch"
    with pytest.raises(ValueError, match="not Keras's 'torch' backend.*trace_handler"):
        env.mod.ProfileEvery("/logs", every_steps=3)


def test_windows_every_n_batches_of_each_fit(env: SimpleNamespace) -> None:
    cb = env.mod.ProfileEvery("/logs", every_steps=3, steps=2)
    _fit(cb, 8)
    assert _windows(env.log) == [[3, 4], [6, 7]]
    assert all(e[1] == "tensorflow" for e in env.log if isinstance(e, tuple) and e[0] == "enter")
    assert cb.windows == 2 and cb.published == ["/logs/w1", "/logs/w2"]
    cb.published.append("x")   # a copy
    assert len(cb.published) == 2
    env.log.clear()
    _fit(cb, 4)                # a second fit counts from 1 again
    assert _windows(env.log) == [[3, 4]]


def test_back_to_back_windows_and_one_open_at_the_end(env: SimpleNamespace) -> None:
    cb = env.mod.ProfileEvery("/logs", every_steps=2, steps=2)
    _fit(cb, 5)
    assert _windows(env.log) == [[2, 3], [4, 5]]
    assert env.log[-1] == "stop" and cb.windows == 2


def test_fit_ending_inside_a_batch_closes_marker_and_window(env: SimpleNamespace) -> None:
    cb = env.mod.ProfileEvery("/logs", every_steps=1, steps=1)
    cb.on_train_begin()
    cb.on_train_batch_begin(0)
    cb.on_train_end()          # the batch raised: no on_train_batch_end
    assert env.log == ["start", ("enter", "tensorflow", 1), ("exit", 1), "stop"]
    cb.on_train_end()
    assert env.log[-1] == "stop" and len(env.log) == 4


def test_a_refused_start_skips_that_window_only(env: SimpleNamespace) -> None:
    cb = env.mod.ProfileEvery("/logs", every_steps=2, steps=1)
    env.ok[0] = False
    _fit(cb, 2)
    assert env.log == ["refused"]
    env.ok[0] = True
    env.log.clear()
    _fit(cb, 4)
    assert _windows(env.log) == [[2], [4]]


def test_windows_every_s_seconds_from_the_fit_start(env: SimpleNamespace) -> None:
    cb = env.mod.ProfileEvery("/logs", every_secs=10, steps=1)
    times = [5.0, 10.0, 15.0, 21.0, 30.0, 31.0, 32.0]
    _fit(cb, len(times), env.now, times)
    # due at 10 (fit began at 0), then 10 s after each window began: 20 (batch at 21), 31
    assert _windows(env.log) == [[2], [4], [6]]
