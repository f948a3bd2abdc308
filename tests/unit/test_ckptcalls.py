"""tb_iotrace.base.ckptcalls: the checkpoint calls a process made, kept for its record and its
profile windows."""
from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tb_iotrace.base import ckptcalls


@pytest.fixture(autouse=True)
def empty() -> Iterator[None]:
    ckptcalls._calls.clear()       # noqa: SLF001
    yield
    ckptcalls._calls.clear()       # noqa: SLF001


def test_note_keeps_every_field_as_given() -> None:
    ckptcalls.note("save", "/c/a.pt", "/c", "torch.save", 10, 20, 7)
    assert ckptcalls.snapshot() == [{"kind": "save", "path": "/c/a.pt", "root": "/c", "call": "torch.save",
                                     "start_ns": 10, "end_ns": 20, "tid": 7}]


def test_snapshot_gives_copies() -> None:
    ckptcalls.note("load", "/c/a", "/c", "x", 1, 2, 3)
    ckptcalls.snapshot()[0]["path"] = "changed"
    ckptcalls.between(0, 5)[0]["path"] = "changed"
    assert ckptcalls.snapshot()[0]["path"] == "/c/a"


def test_between_keeps_calls_that_overlap_the_window_ends_included() -> None:
    for name, a, b in [("before", 0, 99), ("touches_start", 50, 100), ("inside", 120, 130),
                       ("across", 90, 300), ("touches_end", 200, 250), ("after", 201, 260)]:
        ckptcalls.note("save", name, "/", "c", a, b, 1)
    got = [c["path"] for c in ckptcalls.between(100, 200)]
    assert got == ["touches_start", "inside", "across", "touches_end"]


def test_the_first_max_calls_are_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ckptcalls, "MAX_CALLS", 3)
    for i in range(5):
        ckptcalls.note("save", f"/c/{i}", "/c", "c", i, i + 1, 1)
    assert [c["path"] for c in ckptcalls.snapshot()] == ["/c/0", "/c/1", "/c/2"]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork: POSIX only")
def test_a_forked_child_starts_with_no_calls() -> None:
    ckptcalls.note("save", "/c/parent", "/c", "c", 1, 2, 1)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:                                    # the child: report how many it sees
        os.write(w, str(len(ckptcalls.snapshot())).encode())
        os._exit(0)
    os.close(w)
    seen = os.read(r, 16)
    os.close(r)
    os.waitpid(pid, 0)
    assert seen == b"0"
    assert len(ckptcalls.snapshot()) == 1           # the parent keeps its own
