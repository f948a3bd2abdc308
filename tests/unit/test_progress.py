"""tb_iotrace.base.progress: the progress line, on a terminal only, never on stdout."""
from __future__ import annotations

import io

import pytest

from tb_iotrace.base import progress
from tb_iotrace.base.progress import CLEAR, Progress


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture()
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    now = [1000.0]
    monkeypatch.setattr(progress.time, "monotonic", lambda: now[0])
    return now


def test_nothing_when_the_stream_is_not_a_terminal(clock: list[float]) -> None:
    out = io.StringIO()
    p = Progress("export", 10, stream=out)
    p.add(10)
    p.close()
    assert out.getvalue() == ""


def test_nothing_for_an_empty_total(clock: list[float]) -> None:
    out = Tty()
    p = Progress("export", 0, stream=out)
    p.add(1)
    p.close()
    assert out.getvalue() == ""


def test_updates_at_most_every_fifth_of_a_second_and_always_at_the_end(clock: list[float]) -> None:
    out = Tty()
    p = Progress("decode", 3000, unit="events", stream=out)
    p.add(1000)                         # first update (the last one was at 0)
    clock[0] += 0.1
    p.add(1000)                         # too soon: not written
    clock[0] += 0.05
    p.add(1000)                         # the end: written even though soon
    p.close()
    text = out.getvalue()
    assert text == (f"{CLEAR}decode: 1,000/3,000 events (33%)"
                    f"{CLEAR}decode: 3,000/3,000 events (100%)\n")


def test_close_erases_the_line_when_not_kept_and_the_note_is_printable(clock: list[float]) -> None:
    out = Tty()
    p = Progress("report", 2, unit="hosts", stream=out, keep=False)
    p.add(2, note="host\x1b[2J")
    p.close()
    p.close()                           # a second close writes nothing more
    assert out.getvalue() == f"{CLEAR}report: 2/2 hosts (100%) host\\x1b[2J{CLEAR}"
