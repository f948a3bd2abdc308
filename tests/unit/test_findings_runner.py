"""tb_iotrace.plugin.findings_runner (the child itself replaced by a fake): answers cached by
file size and mtime, a failing child's message cached, captures over the size limit pointed
to the CLI without a child, "busy" when no slot frees in time (not cached), one child for
concurrent requests of one capture, and for "All hosts" one background batch whose failures
and silences give messages or "pending" (None), never a hang or a stuck key."""
from __future__ import annotations

import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any, Callable

import pytest

from tb_iotrace.plugin import findings_runner as fr
from tb_iotrace.plugin import findings_worker


@pytest.fixture(autouse=True)
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fr, "_findings_cache", OrderedDict())
    monkeypatch.setattr(fr, "_findings_locks", {})
    monkeypatch.setattr(fr, "_in_batch", set())
    monkeypatch.setattr(fr, "_children", threading.BoundedSemaphore(1))


def capture(tmp_path: Path, name: str = "h.xplane.pb", size: int = 10) -> str:
    p = tmp_path / name
    p.write_bytes(b"x" * size)
    return str(p)


def fake_child(monkeypatch: pytest.MonkeyPatch, answer: Callable[[str], dict[str, Any]]) -> list[str]:
    calls: list[str] = []

    def run_child(path: str, timeout_s: float) -> dict[str, Any]:
        calls.append(path)
        return answer(path)

    monkeypatch.setattr(findings_worker, "run_child", run_child)
    return calls


def test_answers_are_cached_per_file_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = capture(tmp_path)
    calls = fake_child(monkeypatch, lambda p: {"findings": [{"id": len(Path(p).read_bytes())}]})
    assert fr.findings_for(path) == {"findings": [{"id": 10}]}
    assert fr.findings_for(path)["findings"] == [{"id": 10}] and len(calls) == 1
    Path(path).write_bytes(b"y" * 11)                       # a new version: computed again
    assert fr.findings_for(path)["findings"] == [{"id": 11}] and len(calls) == 2
    assert fr._findings_locks == {}


def test_a_failing_child_gives_a_cached_message(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = capture(tmp_path)

    def boom(p: str) -> dict[str, Any]:
        raise RuntimeError("killed by signal 9")

    calls = fake_child(monkeypatch, boom)
    for _ in range(2):
        got = fr.findings_for(path)
        assert got == {"findings": [], "message": "Findings could not be computed: killed by signal 9"}
    assert len(calls) == 1
    assert fr._children.acquire(blocking=False)             # the slot was given back


def test_a_capture_over_the_limit_points_to_the_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = capture(tmp_path, "big\n.xplane.pb", size=3 << 20)
    monkeypatch.setattr(fr, "FINDINGS_MAX_BYTES", 1 << 20)
    calls = fake_child(monkeypatch, lambda p: {"findings": []})
    got = fr.findings_for(path)
    assert got["findings"] == [] and calls == []
    assert "3 MiB" in got["message"] and "(1 MiB)" in got["message"] and f"tb-iotrace report {path}" in got["message"]
    assert fr.findings_for_all([path], wait_s=0)[path] == got


def test_busy_when_no_slot_frees_in_time_and_not_cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = capture(tmp_path)
    calls = fake_child(monkeypatch, lambda p: {"findings": ["ok"]})
    monkeypatch.setattr(fr, "FINDINGS_WAIT_S", 0.05)
    assert fr._children.acquire()
    got = fr.findings_for(path)
    assert got["findings"] == [] and "being computed for other captures" in got["message"] and calls == []
    assert fr._findings_locks == {}
    fr._children.release()
    assert fr.findings_for(path) == {"findings": ["ok"]} and len(calls) == 1


def test_concurrent_requests_of_one_capture_run_one_child(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = capture(tmp_path)
    calls = fake_child(monkeypatch, lambda p: time.sleep(0.2) or {"findings": ["once"]})
    got: list[dict[str, Any]] = []
    threads = [threading.Thread(target=lambda: got.append(fr.findings_for(path))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(5)
    assert len(calls) == 1 and got == [{"findings": ["once"]}] * 4


def test_a_missing_file_raises_for_the_endpoint_to_answer(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        fr.findings_for(str(tmp_path / "gone.xplane.pb"))


def each(monkeypatch: pytest.MonkeyPatch, body: Callable[[list[str], Callable[..., None]], None]) -> list[list[str]]:
    batches: list[list[str]] = []

    def run_child_each(paths: list[str], timeout_s: float, on_result: Callable[..., None]) -> None:
        batches.append(list(paths))
        body(paths, on_result)

    monkeypatch.setattr(findings_worker, "run_child_each", run_child_each)
    return batches


def test_all_hosts_computes_the_uncached_ones_in_one_batch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b, c = (capture(tmp_path, f"{n}.xplane.pb") for n in "abc")
    fake_child(monkeypatch, lambda p: {"findings": ["single"]})
    fr.findings_for(a)

    def body(paths: list[str], on_result: Callable[..., None]) -> None:
        on_result("/not/asked", {"findings": ["x"]}, None)          # ignored
        on_result(paths[0], {"findings": [paths[0]]}, None)
        on_result(paths[1], None, "child exited 1")

    batches = each(monkeypatch, body)
    got = fr.findings_for_all([a, b, c], wait_s=5)
    assert batches == [[b, c]]
    assert got == {a: {"findings": ["single"]}, b: {"findings": [b]},
                   c: {"findings": [], "message": "Findings could not be computed: child exited 1"}}
    assert fr._in_batch == set()
    assert fr.findings_for_all([a, b, c], wait_s=0) == got and len(batches) == 1


def test_a_batch_that_raises_answers_every_host_with_its_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = (capture(tmp_path, f"{n}.xplane.pb") for n in "ab")

    def body(paths: list[str], on_result: Callable[..., None]) -> None:
        on_result(paths[0], {"findings": ["a"]}, None)
        raise OSError("no fork")

    each(monkeypatch, body)
    got = fr.findings_for_all([a, b], wait_s=5)
    assert got[a] == {"findings": ["a"]}
    assert got[b] == {"findings": [], "message": "Findings could not be computed: no fork"}


def test_a_silent_batch_leaves_hosts_pending_and_asks_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a = capture(tmp_path)
    batches = each(monkeypatch, lambda paths, on_result: None)      # answers nothing
    t0 = time.monotonic()
    assert fr.findings_for_all([a], wait_s=5) == {a: None}
    assert time.monotonic() - t0 < 2 and fr._in_batch == set()
    fr.findings_for_all([a], wait_s=5)
    assert len(batches) == 2


def test_a_slow_batch_answers_pending_then_cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a = capture(tmp_path)
    go = threading.Event()

    def body(paths: list[str], on_result: Callable[..., None]) -> None:
        go.wait(5)
        on_result(paths[0], {"findings": ["late"]}, None)

    batches = each(monkeypatch, body)
    assert fr.findings_for_all([a], wait_s=0.05) == {a: None}
    assert fr.findings_for_all([a], wait_s=0.05) == {a: None} and len(batches) == 1   # not started twice
    go.set()
    assert fr.findings_for_all([a], wait_s=5) == {a: {"findings": ["late"]}}
