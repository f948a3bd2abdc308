"""tb_iotrace.recording.attach_listen: where each process's channel is, that a request is taken
once (renamed, read, removed) and handed to the agent with its control folder and request file,
that a malformed one is not served, and that listen() starts one thread per process and registers
its fork hook once."""
from __future__ import annotations

import os
import types
from pathlib import Path
from typing import Any

import pytest

from tb_iotrace.recording import attach_agent, attach_listen


class _Polls:
    """threading's stand-in: Event().wait() says "go on" ``n`` times, then "stop"."""

    def __init__(self, n: int) -> None:
        self.n = n

    def Event(self) -> Any:  # noqa: N802 - threading's name
        outer = self

        class _Ev:
            def wait(self, timeout: float) -> bool:
                outer.n -= 1
                return outer.n < 0

        return _Ev()


@pytest.fixture()
def channel(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> tuple[Path, list[tuple[str, str]]]:
    monkeypatch.setattr(attach_listen.tempfile, "tempdir", str(tmp_path))
    started: list[tuple[str, str]] = []
    monkeypatch.setattr(attach_agent, "start", lambda ctrl, req: started.append((ctrl, req)))
    path = Path(attach_listen.channel_path(os.getpid()))
    path.parent.mkdir()
    return path, started


def test_channel_path_is_per_pid_under_the_temp_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(attach_listen.tempfile, "tempdir", str(tmp_path))
    assert attach_listen.channel_prefix() == str(tmp_path / "tb_iotrace-attach-")
    assert attach_listen.channel_path(42) == str(tmp_path / "tb_iotrace-attach-42" / "channel")
    assert attach_listen.channel_path(4) != attach_listen.channel_path(42)


def test_a_request_is_taken_once_and_handed_to_the_agent(monkeypatch: pytest.MonkeyPatch, channel: Any) -> None:
    path, started = channel
    path.write_text("/ctl/folder\nreq.17.json\nextra\n", encoding="utf-8")
    monkeypatch.setattr(attach_listen, "threading", _Polls(3))
    attach_listen._serve()
    assert started == [("/ctl/folder", "req.17.json")]       # served once, over three polls
    assert list(path.parent.iterdir()) == []                  # neither the channel nor its .taken left


@pytest.mark.parametrize("text", ["/ctl/only-one-line", ""])
def test_a_malformed_request_starts_no_agent(monkeypatch: pytest.MonkeyPatch, channel: Any, text: str) -> None:
    path, started = channel
    path.write_text(text, encoding="utf-8")
    monkeypatch.setattr(attach_listen, "threading", _Polls(2))
    attach_listen._serve()
    assert started == [] and not path.exists()
    assert list(path.parent.iterdir()) == []                  # no .taken left behind either


def test_no_channel_file_no_agent(monkeypatch: pytest.MonkeyPatch, channel: Any) -> None:
    _, started = channel
    monkeypatch.setattr(attach_listen, "threading", _Polls(2))
    attach_listen._serve()
    assert started == []


def test_listen_starts_one_thread_per_process_and_registers_the_fork_hook_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    threads: list[dict[str, Any]] = []
    hooks: list[Any] = []

    class _Thread:
        def __init__(self, **kw: Any) -> None:
            threads.append(kw)

        def start(self) -> None:
            threads[-1]["started"] = True

    monkeypatch.setattr(attach_listen, "threading", types.SimpleNamespace(Thread=_Thread))
    monkeypatch.setattr(attach_listen.os, "register_at_fork", lambda **kw: hooks.append(kw))
    monkeypatch.setattr(attach_listen, "_started_in", None)
    attach_listen.listen()
    attach_listen.listen()
    assert len(threads) == 1 and threads[0]["started"] and threads[0]["daemon"]
    assert threads[0]["target"] is attach_listen._serve and threads[0]["name"] == "tb_iotrace-attach-listen"
    assert hooks == [{"after_in_child": attach_listen.listen}]
    monkeypatch.setattr(attach_listen, "_started_in", os.getpid() + 1)   # as in a forked child
    attach_listen.listen()
    assert len(threads) == 2 and len(hooks) == 1 and attach_listen._started_in == os.getpid()
