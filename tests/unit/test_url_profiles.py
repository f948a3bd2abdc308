"""tb_iotrace.recording.url_profiles: the job's own profiler start/stop, wrapped (stand-in
start and stop functions, fsspec's memory:// filesystem as the bucket; no TensorFlow or JAX).

Proves: only a URL with a client is redirected to a staging folder (not a local dir, a path
object, an unknown scheme, nor anything with TBIO_URL_PROFILES=0); a stop that saves publishes
the staged window whole under the URL, one that does not (or a stop or start that raises) drops
it, the exception passing through; a local profile is summarized only when saved and never for
tb_iotrace's own staging folders; ``_replace`` and ``wrap_*`` put the wrappers wherever the
framework's modules hold the functions, once; the wrapped start takes its log dir by the
framework's own keyword.
"""
from __future__ import annotations

import os
import sys
import time
import types
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from tb_iotrace.recording import url_profiles
from tb_iotrace.store import staging


@pytest.fixture()
def bucket(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, str]]:
    """(fs, URL) of a folder of its own in fsspec's memory:// filesystem; staging under tmp_path;
    the landings recorded, not started."""
    import fsspec

    monkeypatch.setenv("TB_IOTRACE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("TBIO_URL_PROFILES", raising=False)
    landed: list[tuple[str, int]] = []
    monkeypatch.setattr(url_profiles.landing, "landed_profile", lambda d, ns: landed.append((d, ns)))
    monkeypatch.setattr(url_profiles.landing, "landed_uploaded", lambda items: None)
    monkeypatch.setattr(url_profiles, "_open", {})
    monkeypatch.setattr(url_profiles, "_local", {})
    fs = fsspec.filesystem("memory")
    name = f"tbio-urlprof-{os.getpid()}-{tmp_path.name}"
    fs.mkdir(f"/{name}/logs")
    fs.landed = landed  # type: ignore[attr-defined]
    try:
        yield fs, f"memory://{name}/logs"
    finally:
        fs.rm(f"/{name}", recursive=True)


def _profiler(framework: str) -> tuple[list[str], Callable[..., Any], Callable[..., Any]]:
    """A stand-in profiler: start records its log dir, stop writes a capture there."""
    dirs: list[str] = []

    def start(logdir: str, options: Any = None) -> str:
        dirs.append(logdir)
        return "started"

    def stop(save: bool = True) -> str:
        if save:
            d = Path(dirs[-1], "plugins", "profile", "2026_01_01_00_00_00")
            d.mkdir(parents=True)
            (d / "host.xplane.pb").write_bytes(b"capture")
        return "stopped"

    saves = (lambda save=True: bool(save)) if framework == "tensorflow" else (lambda: True)
    return dirs, url_profiles._start_wrapper(framework, start), url_profiles._stop_wrapper(framework, stop, saves)


def test_only_a_url_with_a_client_is_redirected(bucket: tuple[Any, str], monkeypatch: pytest.MonkeyPatch,
                                                tmp_path: Path) -> None:
    _, url = bucket
    for d in (str(tmp_path / "local"), tmp_path / "local", "nosuchscheme://b/logs", None):
        assert url_profiles._redirect("tensorflow", d) == (d, None)
    target, writer = url_profiles._redirect("tensorflow", url)
    assert writer is not None and writer.log_dir == url and Path(target).is_dir()
    assert Path(target).parent == staging.where()
    writer.close_staging(publish=False)
    assert not Path(target).exists()
    monkeypatch.setenv("TBIO_URL_PROFILES", "0")
    assert url_profiles._redirect("tensorflow", url) == (url, None)


def test_a_saved_window_is_published_whole_under_the_url(bucket: tuple[Any, str]) -> None:
    fs, url = bucket
    dirs, start, stop = _profiler("tensorflow")
    assert start(url) == "started"
    assert dirs[0] != url and Path(dirs[0]).is_dir()              # the framework profiled into staging
    assert stop() == "stopped"
    got = fs.find("/" + url.split("://", 1)[1])
    assert [g.rsplit("/logs/", 1)[1] for g in got] == ["plugins/profile/2026_01_01_00_00_00/host.xplane.pb"]
    assert fs.cat_file(got[0]) == b"capture"
    assert not Path(dirs[0]).exists() and url_profiles._open == {}
    assert fs.landed == []                                         # (a URL's landing is the writer's)


def test_a_stop_that_does_not_save_drops_the_window(bucket: tuple[Any, str]) -> None:
    fs, url = bucket
    dirs, start, stop = _profiler("tensorflow")
    start(url, None)
    stop(False)
    assert fs.find("/" + url.split("://", 1)[1]) == [] and not Path(dirs[0]).exists()


def test_a_failing_start_or_stop_drops_the_staging_and_raises(bucket: tuple[Any, str]) -> None:
    fs, url = bucket
    seen: list[str] = []

    def bad_start(logdir: str) -> None:
        seen.append(logdir)
        raise RuntimeError("profiler busy")

    with pytest.raises(RuntimeError, match="profiler busy"):
        url_profiles._start_wrapper("jax", bad_start)(url)
    assert not Path(seen[0]).exists() and url_profiles._open == {}
    dirs, start, _ = _profiler("jax")

    def bad_stop() -> None:
        Path(dirs[-1], "plugins", "profile", "s").mkdir(parents=True)
        Path(dirs[-1], "plugins", "profile", "s", "h.xplane.pb").write_bytes(b"half")
        raise RuntimeError("stop failed")

    start(url)
    with pytest.raises(RuntimeError, match="stop failed"):
        url_profiles._stop_wrapper("jax", bad_stop, lambda: True)()
    assert fs.find("/" + url.split("://", 1)[1]) == [] and not Path(dirs[-1]).exists()
    assert url_profiles._open == {}


def test_a_local_profile_lands_only_when_saved(bucket: tuple[Any, str], tmp_path: Path) -> None:
    fs, _ = bucket
    dirs, start, stop = _profiler("tensorflow")
    start(str(tmp_path / "logs"))
    assert dirs == [str(tmp_path / "logs")]                         # unchanged
    stop(save=False)
    assert fs.landed == []
    start(str(tmp_path / "logs"))
    stop()
    [(d, ns)] = fs.landed
    assert d == str(tmp_path / "logs") and ns < time.time_ns()
    own = staging.root() / "window-1-x"                              # tb_iotrace's own staging folder
    start(str(own))
    stop()
    assert len(fs.landed) == 1


def test_the_jax_start_takes_its_log_dir_by_keyword(bucket: tuple[Any, str], tmp_path: Path) -> None:
    """``jax.profiler.start_trace(log_dir=...)`` is a valid call of JAX's own function; wrapped,
    it must reach the real start with that log dir (a URL one redirected to staging)."""
    _, url = bucket
    got: list[str] = []

    def start_trace(log_dir: str, create_perfetto_link: bool = False) -> None:
        got.append(log_dir)

    wrapped = url_profiles._start_wrapper("jax", start_trace)
    wrapped(log_dir=str(tmp_path / "logs"))
    assert got == [str(tmp_path / "logs")]
    wrapped(log_dir=url)
    assert got[-1] != url and Path(got[-1]).parent == staging.where()
    url_profiles._finish("jax", publish=False)


def test_replace_puts_the_wrapper_where_the_framework_holds_it(monkeypatch: pytest.MonkeyPatch) -> None:
    def real() -> None: ...

    def wrapper() -> None: ...

    a, b, other = (types.ModuleType(n) for n in ("fw", "fw.api.v1", "fwx"))
    a.start = real  # type: ignore[attr-defined]
    b.start_alias = real  # type: ignore[attr-defined]
    other.start = real  # type: ignore[attr-defined]
    for m in (a, b, other):
        monkeypatch.setitem(sys.modules, m.__name__, m)
    url_profiles._replace("fw", real, wrapper)
    assert a.start is wrapper and b.start_alias is wrapper       # the package and its submodules
    assert other.start is real                                     # a module merely named alike
    assert wrapper.__tbio_url__ is True  # type: ignore[attr-defined]


def test_wrap_tensorflow_and_jax_once(monkeypatch: pytest.MonkeyPatch) -> None:
    def start(logdir: str, options: Any = None) -> None: ...

    def stop(save: bool = True) -> None: ...

    def start_trace(log_dir: str) -> None: ...

    def stop_trace() -> None: ...

    mods: dict[str, types.ModuleType] = {}
    for n in ("tensorflow", "tensorflow.python", "tensorflow.python.profiler", "tensorflow.python.profiler.profiler_v2",
              "tensorflow.profiler.experimental", "jax", "jax._src", "jax._src.profiler", "jax.profiler"):
        mods[n] = types.ModuleType(n)
        monkeypatch.setitem(sys.modules, n, mods[n])
    pv2 = mods["tensorflow.python.profiler.profiler_v2"]
    pv2.start, pv2.stop = start, stop  # type: ignore[attr-defined]
    mods["tensorflow.python.profiler"].profiler_v2 = pv2  # type: ignore[attr-defined]
    api = mods["tensorflow.profiler.experimental"]
    api.start, api.stop = start, stop  # type: ignore[attr-defined]
    jp = mods["jax._src.profiler"]
    jp.start_trace, jp.stop_trace = start_trace, stop_trace  # type: ignore[attr-defined]
    mods["jax._src"].profiler = jp  # type: ignore[attr-defined]
    mods["jax.profiler"].start_trace = start_trace  # type: ignore[attr-defined]
    for _ in range(2):                                             # idempotent
        url_profiles.wrap_tensorflow()
        url_profiles.wrap_jax()
    assert api.start is pv2.start and api.start.__wrapped__ is start  # type: ignore[attr-defined]
    assert api.stop is pv2.stop and api.stop.__wrapped__ is stop  # type: ignore[attr-defined]
    assert mods["jax.profiler"].start_trace.__wrapped__ is start_trace  # type: ignore[attr-defined]
    assert jp.stop_trace.__wrapped__ is stop_trace  # type: ignore[attr-defined]
