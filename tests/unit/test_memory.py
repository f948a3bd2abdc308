"""tb_iotrace.base.memory: freed heap given back once per batch of decodes, and nothing where
the C library is not glibc."""
from __future__ import annotations

import threading

import pytest

from tb_iotrace.base import memory


class Libc:
    def __init__(self) -> None:
        self.calls = 0

    def malloc_trim(self, pad: int) -> int:
        assert pad == 0
        self.calls += 1
        return 1


@pytest.fixture()
def libc(monkeypatch: pytest.MonkeyPatch) -> Libc:
    fake = Libc()
    monkeypatch.setattr(memory, "_libc", fake)
    return fake


def test_outside_a_batch_each_call_trims(libc: Libc) -> None:
    memory.trim_memory()
    memory.trim_memory()
    assert libc.calls == 2


def test_nested_batches_trim_once_at_the_outer_end(libc: Libc) -> None:
    with memory.one_trim():
        for _ in range(5):
            memory.trim_memory()
        with memory.one_trim():
            memory.trim_memory()
        memory.trim_memory()                    # after the inner block: still in the outer one
        assert libc.calls == 0
    assert libc.calls == 1


def test_a_batch_left_by_an_exception_still_trims_and_ends(libc: Libc) -> None:
    with pytest.raises(RuntimeError):
        with memory.one_trim():
            memory.trim_memory()
            raise RuntimeError("decode failed")
    assert libc.calls == 1
    memory.trim_memory()                        # the batch is over: this trims at once
    assert libc.calls == 2


def test_a_batch_is_this_threads_only(libc: Libc) -> None:
    with memory.one_trim():
        t = threading.Thread(target=memory.trim_memory)
        t.start()
        t.join()
        assert libc.calls == 1                  # the other thread was in no batch
    assert libc.calls == 1                      # this thread asked for none


def test_no_glibc_is_tried_once_and_then_left(monkeypatch: pytest.MonkeyPatch) -> None:
    import ctypes

    tries = []

    def no_libc(name: str) -> None:
        tries.append(name)
        raise OSError(f"{name}: cannot open shared object file")

    monkeypatch.setattr(memory, "_libc", None)
    monkeypatch.setattr(ctypes, "CDLL", no_libc)
    memory.trim_memory()
    memory.trim_memory()
    assert tries == ["libc.so.6"]
    assert memory._libc is False                # noqa: SLF001


def test_a_decorated_decoder_trims_after_it_returns_or_raises(libc: Libc) -> None:
    seen: list[int] = []

    @memory.trims_memory
    def decode(x: int) -> int:
        """A decoder."""
        seen.append(libc.calls)          # trims so far, as it runs
        if x < 0:
            raise ValueError("bad input")
        return x * 2

    assert decode(21) == 42 and libc.calls == 1 and seen == [0]     # after it ran, not before
    with pytest.raises(ValueError):
        decode(-1)
    assert libc.calls == 2
    assert decode.__doc__ == "A decoder." and decode.__name__ == "decode"
    with memory.one_trim():             # inside a batch: once at its end
        decode(1)
        decode(2)
        assert libc.calls == 2
    assert libc.calls == 3
