"""tb_iotrace.recording.pytorch.parent.loaders, what tests/unit/test_torch_loaders.py does not prove:
``install`` wraps the two names once and turns a missing one off with its note; an epoch begun in
the window is timed and says whether its iterator is new and which workers it started (a persistent
loader's reused iterator starts none); worker shutdowns are timed only inside a window and only
when there are workers to stop; a loader is named once per window (the next window starts empty);
the settings are JSON-ready (objects as text, the start method only with workers); and a wrapper
that fails inside never reaches the training loop. Loaders are played by small classes; one test
reads a real CPU DataLoader's settings."""
from __future__ import annotations

import multiprocessing
import sys
import types
import weakref
from typing import Any

import pytest

from tb_iotrace.recording.pytorch.parent import loaders as L

MODULE = "tbio_fake_dataloader_module"


class Worker:
    def __init__(self, pid: int) -> None:
        self.pid = pid


class Iter:
    """A DataLoader iterator as the module reads it: batches given, workers, shut down or not."""

    def __init__(self, pids: list[int]) -> None:
        self._num_yielded = 0
        self._workers = [Worker(p) for p in pids]
        self._shutdown = not pids
        self.stopped = 0

    def __next__(self) -> int:
        raise StopIteration

    def _shutdown_workers(self) -> None:
        self.stopped += 1
        self._shutdown = True


class Loader:
    """A DataLoader: a new iterator per epoch, or the same one when persistent."""

    def __init__(self, pids: list[int] | None = None, persistent: bool = False, **settings: Any) -> None:
        self.pids = pids or []
        self.persistent = persistent
        self._it: Iter | None = None
        self.num_workers = len(self.pids)
        self.batch_size = 4
        self.dataset: Any = []
        self.__dict__.update(settings)

    def __iter__(self) -> Iter:
        if self._it is None or not self.persistent:
            self._it = Iter(self.pids)
        return self._it


@pytest.fixture(autouse=True)
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    """The module's state of its own, put back after."""
    monkeypatch.setattr(L, "_loaders", weakref.WeakKeyDictionary())
    monkeypatch.setattr(L, "_of_iterator", weakref.WeakKeyDictionary())
    monkeypatch.setattr(L, "_seen", {})
    monkeypatch.setattr(L, "_window_on", False)
    monkeypatch.setattr(L, "_installed", False)
    monkeypatch.setattr(L, "_off", [])


@pytest.fixture()
def hooked(monkeypatch: pytest.MonkeyPatch) -> type[Loader]:
    """``Loader`` and ``Iter`` wrapped as install wraps torch's."""
    monkeypatch.setattr(Loader, "__iter__", L._wrap(Loader.__iter__))
    monkeypatch.setattr(Iter, "_shutdown_workers", L._wrap_shutdown(Iter._shutdown_workers))
    return Loader


def fake_module(monkeypatch: pytest.MonkeyPatch, shutdown: bool = True) -> tuple[type, type]:
    class DataLoader:
        def __iter__(self) -> Any:
            return iter(())

    class MPIter:
        def _shutdown_workers(self) -> None:
            pass
    if not shutdown:
        del MPIter._shutdown_workers
    mod = types.ModuleType(MODULE)
    mod.DataLoader, mod._MultiProcessingDataLoaderIter = DataLoader, MPIter   # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, MODULE, mod)
    monkeypatch.setattr(L, "ITER_HOOK", (MODULE, "DataLoader", "__iter__"))
    monkeypatch.setattr(L, "SHUTDOWN_HOOK", (MODULE, "_MultiProcessingDataLoaderIter", "_shutdown_workers"))
    return DataLoader, MPIter


def test_install_wraps_both_names_once(monkeypatch: pytest.MonkeyPatch) -> None:
    dl, mp = fake_module(monkeypatch)
    real_iter, real_stop = dl.__iter__, mp._shutdown_workers
    L.install()
    wrapped_iter, wrapped_stop = dl.__iter__, mp._shutdown_workers
    assert wrapped_iter.__wrapped__ is real_iter and wrapped_stop.__wrapped__ is real_stop
    L.install()
    monkeypatch.setattr(L, "_installed", False)       # the flag lost: the wrappers are still not doubled
    L.install()
    assert dl.__iter__ is wrapped_iter and mp._shutdown_workers is wrapped_stop and L.off() == []


def test_a_missing_name_turns_only_its_hook_off_with_a_note(monkeypatch: pytest.MonkeyPatch) -> None:
    dl, mp = fake_module(monkeypatch, shutdown=False)
    L.install()
    assert getattr(dl.__iter__, "__tbio_wrapper__", False) and not hasattr(mp, "_shutdown_workers")
    assert L.off() == [f"the worker shutdown hook is off ({MODULE}._MultiProcessingDataLoaderIter."
                       "_shutdown_workers is missing in this torch): the time spent stopping DataLoader "
                       "workers is not measured"]
    L.off().append("not kept")                       # a copy
    assert len(L.off()) == 1
    monkeypatch.setattr(L, "ITER_HOOK", ("tbio_no_such_module_here", "DataLoader", "__iter__"))
    assert L._lookup(L.ITER_HOOK) is None
    monkeypatch.setattr(L, "ITER_HOOK", (MODULE, "no_class", "__iter__"))
    assert L._lookup(L.ITER_HOOK) is None


def test_epochs_say_whether_their_iterator_is_new_and_which_workers_it_started(hooked: type[Loader]) -> None:
    fresh = hooked(pids=[11, 12])
    persistent = hooked(pids=[21], persistent=True)
    L.window_started()
    for _ in range(2):
        iter(fresh)
        iter(persistent)
    got = {d["id"]: d for d in L.window_stopped()}
    by_pids = {tuple(d["worker_pids"]): d for d in got.values()}
    a, b = by_pids[(11, 12)], by_pids[(21,)]
    assert [(e["new_iterator"], e["workers_started"]) for e in a["epochs"]] == [(True, [11, 12])] * 2
    assert [(e["new_iterator"], e["workers_started"]) for e in b["epochs"]] == [(True, [21]), (False, [])]
    assert all(e["start_ns"] <= e["end_ns"] for e in a["epochs"] + b["epochs"])
    assert a["iterator"] == "Iter" and a["id"] < b["id"] and list(got) == sorted(got)
    assert L.window_stopped() == []                   # named once: the next stop has none


def test_a_persistent_iterator_from_before_the_window_counts_when_it_yields_in_it(hooked: type[Loader]) -> None:
    loader = hooked(pids=[31], persistent=True)
    it = iter(loader)
    L.window_started()
    assert L.window_stopped() == []                   # it gave nothing in the window
    L.window_started()
    it._num_yielded += 2
    [d] = L.window_stopped()
    assert d["epochs"] == [] and d["worker_pids"] == [31] and d["num_workers"] == 1


def test_worker_shutdowns_are_timed_only_in_a_window_and_only_with_workers_to_stop(hooked: type[Loader]) -> None:
    before = iter(hooked(pids=[41]))
    before._shutdown_workers()                        # outside every window: run, not timed
    assert before.stopped == 1
    loader, idle = hooked(pids=[42, 43]), hooked(pids=[])
    it, no_workers = iter(loader), iter(idle)
    no_workers._shutdown = False
    L.window_started()
    it._shutdown_workers()
    it._shutdown_workers()                            # already shut down: nothing more to time
    no_workers._shutdown_workers()                    # no worker to stop: not a stop
    assert it.stopped == 2 and no_workers.stopped == 1
    [d] = L.window_stopped()
    [stop] = d["worker_stops"]
    assert stop["workers"] == [42, 43] and stop["start_ns"] <= stop["end_ns"] and d["epochs"] == []


def test_settings_are_json_ready_and_name_the_start_method_only_with_workers(hooked: type[Loader]) -> None:
    ctx = multiprocessing.get_context("spawn")
    s = L._settings(hooked(pids=[1], multiprocessing_context=ctx, pin_memory_device=object, timeout=2.5))
    assert s["start_method"] == "spawn" and s["num_workers"] == 1 and s["timeout"] == 2.5
    assert s["pin_memory_device"] == str(object) and s["dataset"] == "list" and s["prefetch_factor"] is None
    assert L._settings(hooked(pids=[], multiprocessing_context=ctx))["start_method"] is None
    assert L._settings(hooked(pids=[1], multiprocessing_context="forkserver"))["start_method"] == "forkserver"
    default = multiprocessing.get_start_method(allow_none=True) or "fork"
    assert L._settings(hooked(pids=[1]))["start_method"] == default


def test_a_failure_inside_the_wrapper_never_reaches_the_loop(monkeypatch: pytest.MonkeyPatch,
                                                              hooked: type[Loader]) -> None:
    def broken(loader: Any) -> dict[str, Any]:
        raise RuntimeError("settings")
    monkeypatch.setattr(L, "_settings", broken)
    L.window_started()
    loader = hooked(pids=[])
    assert isinstance(iter(loader), Iter)


@pytest.mark.torch
def test_a_real_dataloaders_settings_are_read_by_their_torch_names() -> None:
    torch = pytest.importorskip("torch")
    loader = torch.utils.data.DataLoader(list(range(8)), batch_size=2, num_workers=2, prefetch_factor=3,
                                         persistent_workers=True, drop_last=True, multiprocessing_context="spawn")
    s = L._settings(loader)                           # no iterator made: no worker started
    assert {k: s[k] for k in ("num_workers", "prefetch_factor", "persistent_workers", "pin_memory", "batch_size",
                              "drop_last", "timeout", "start_method", "dataset")} == {
        "num_workers": 2, "prefetch_factor": 3, "persistent_workers": True, "pin_memory": False,
        "batch_size": 2, "drop_last": True, "timeout": 0, "start_method": "spawn", "dataset": "list"}
    assert s["in_order"] in (True, None) and isinstance(s["pin_memory_device"], str)
