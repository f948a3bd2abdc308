"""tb_iotrace.recording.jax, its pure parts, with jax/jaxlib and the native module played by
stand-ins (JAX is never started): which table registration hands over for each check jaxlib makes
(exact, at least, one read from the releases known, ``TBIO_JAX_TABLE`` only for a check it cannot
read), the one warning and nothing registered otherwise (no plugin profiler, a size it has no table
of, no version, a register that refuses), what ``hook_state`` reports, the library whose check is
taken, where ``register_plugin_profiler`` is found in either jaxlib layout, the packages' own
libraries when none is mapped, and ``attach`` done once."""
from __future__ import annotations

import logging
import sys
import types
from pathlib import Path
from typing import Any, Callable

import pytest

from tb_iotrace.recording import jax as J
from tb_iotrace.recording import jaxlib_check
from tb_iotrace.recording.jaxlib_check import TableCheck

LIB = "/opt/jaxlib/libjax_common.so"


def hide_jax(monkeypatch: pytest.MonkeyPatch) -> None:
    """No jax or jaxlib module, nor any of their submodules, in sys.modules (put back after)."""
    for name in list(sys.modules):
        if name in ("jax", "jaxlib") or name.startswith(("jax.", "jaxlib.")):
            monkeypatch.delitem(sys.modules, name)


def module(monkeypatch: pytest.MonkeyPatch, name: str, **attrs: Any) -> types.ModuleType:
    mod = types.ModuleType(name)
    for k, v in attrs.items():
        setattr(mod, k, v)
    monkeypatch.setitem(sys.modules, name, mod)
    parent, _, child = name.rpartition(".")
    if parent in sys.modules:
        monkeypatch.setattr(sys.modules[parent], child, mod, raising=False)
    return mod


class Lib:
    """The native module's JAX entry points."""

    def __init__(self, registered: bool = False) -> None:
        self.registered = registered
        self.apis: list[int] = []

    def tbio_jax_registered(self) -> int:
        return int(self.registered)

    def tbio_jax_api(self, size: int) -> str:
        self.apis.append(size)
        return f"api{size}"

    def tbio_jax_set_registered(self) -> None:
        self.registered = True


class Jaxlib:
    """Registration's view of a jaxlib: its version, its check, its register function."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, check: TableCheck | Callable[[], Any],
                 version: str = "0.5.0", refuses: bool = False) -> None:
        self.lib = Lib()
        self.taken: list[Any] = []
        monkeypatch.setattr(J, "native", lambda: ("ffi", self.lib))
        monkeypatch.setattr(J, "jaxlib_version", lambda: version)
        monkeypatch.setattr(J, "read_check", check if callable(check) else lambda: (check, LIB))
        monkeypatch.setattr(J, "_capsule", lambda ffi, lib, api: ("capsule", api))

        def register(capsule: Any) -> None:
            if refuses:
                raise RuntimeError("PJRT_Api rejected")
            self.taken.append(capsule)
        monkeypatch.setattr(J, "_register_function", lambda: register)


@pytest.fixture(autouse=True)
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(J, "_hook_state", {})
    monkeypatch.setattr(J.STATE, "warned", set())
    monkeypatch.delenv("TBIO_JAX_TABLE", raising=False)


def warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


@pytest.mark.parametrize(("check", "table"), [
    (TableCheck("exact", 80), 80),
    (TableCheck("at_least", 96), 104),
    (TableCheck("at_least", 64), 80),                       # the smallest table that passes
    (TableCheck("unknown", detail="stripped", form="exact"), 80),   # 0.5.0's size, as read before
])
def test_a_check_a_table_passes_registers_that_table(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
                                                     check: TableCheck, table: int) -> None:
    jl = Jaxlib(monkeypatch, check)
    with caplog.at_level(logging.WARNING, logger="tb_iotrace"):
        J._register_with_jax()
    assert jl.lib.apis == [table] and jl.taken == [("capsule", f"api{table}")] and jl.lib.registered
    state = J.hook_state()
    assert (state["jaxlib"], state["library"], state["table"], state["registered"]) == ("0.5.0", LIB, table, True)
    assert warnings(caplog) == []
    J._register_with_jax()                                  # registered already: once per process
    assert jl.lib.apis == [table]


@pytest.mark.parametrize(("check", "why"), [
    (TableCheck("none"), "it has no plugin profiler (jaxlib 0.4.19 and later have one)"),
    (TableCheck("exact", 96), "it wants a table of exactly 96 bytes and tb_iotrace has tables of 80 and 104 bytes"),
    (TableCheck("at_least", 120), "it wants a table of at least 120 bytes and tb_iotrace has tables of 80 and 104 "
                                  "bytes"),
    (TableCheck("unknown", detail="odd code"), "it makes a table check tb_iotrace cannot read (odd code); set "
                                               "TBIO_JAX_TABLE=80 or 104 to register a table anyway (a size it "
                                               "does not take crashes its captures)"),
])
def test_a_check_no_table_passes_warns_once_and_registers_nothing(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, check: TableCheck, why: str) -> None:
    jl = Jaxlib(monkeypatch, check)
    with caplog.at_level(logging.WARNING, logger="tb_iotrace"):
        J._register_with_jax()
        J._register_with_jax()
    assert warnings(caplog) == [f"tb_iotrace cannot hook jaxlib 0.5.0 (libjax_common.so): {why}; JAX profiles "
                                "will not carry I/O"]
    assert jl.lib.apis == [] and jl.taken == [] and not jl.lib.registered
    assert J.hook_state() == {"jaxlib": "0.5.0", "library": LIB, "check": check.describe(), "table": None,
                              "registered": False}


def test_tbio_jax_table_forces_a_table_only_where_the_check_cannot_be_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TBIO_JAX_TABLE", " 104 ")
    jl = Jaxlib(monkeypatch, TableCheck("unknown", detail="odd code"))
    J._register_with_jax()
    assert jl.lib.apis == [104] and J.hook_state()["table"] == 104
    other = Jaxlib(monkeypatch, TableCheck("exact", 96))
    J._register_with_jax()
    assert other.lib.apis == [] and not other.lib.registered


@pytest.mark.parametrize(("raw", "got"), [("80", 80), ("104", 104), (" 80\n", 80), ("96", None), ("", None),
                                          ("-80", None), ("eighty", None), ("80.0", None)])
def test_forced_table_is_an_implemented_size_or_none(monkeypatch: pytest.MonkeyPatch, raw: str, got: int | None) -> None:
    monkeypatch.setenv("TBIO_JAX_TABLE", raw)
    assert J._forced_table() == got


def test_a_check_that_cannot_be_read_is_unknown_and_said(monkeypatch: pytest.MonkeyPatch,
                                                         caplog: pytest.LogCaptureFixture) -> None:
    def fails() -> Any:
        raise OSError("permission denied")
    jl = Jaxlib(monkeypatch, fails)
    with caplog.at_level(logging.WARNING, logger="tb_iotrace"):
        J._register_with_jax()
    [msg] = warnings(caplog)
    assert msg.startswith("tb_iotrace cannot hook jaxlib 0.5.0 (no library read): it makes a table check "
                          "tb_iotrace cannot read (reading jaxlib failed: permission denied)")
    assert jl.lib.apis == [] and J.hook_state()["library"] == ""


def test_no_version_or_a_refused_register_warns_and_leaves_it_unregistered(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    jl = Jaxlib(monkeypatch, TableCheck("exact", 80), refuses=True)
    with caplog.at_level(logging.WARNING, logger="tb_iotrace"):
        J._register_with_jax()
    assert warnings(caplog) == ["tb_iotrace: jaxlib 0.5.0 did not take the I/O profiler (PJRT_Api rejected); "
                                "JAX profiles will not carry I/O"]
    assert not jl.lib.registered and J.hook_state()["registered"] is False

    def no_version() -> str:
        raise ImportError("no jaxlib.version")
    monkeypatch.setattr(J, "_hook_state", {})
    monkeypatch.setattr(J, "jaxlib_version", no_version)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="tb_iotrace"):
        J._register_with_jax()
    assert warnings(caplog) == ["tb_iotrace: cannot tell the jaxlib version (no jaxlib.version); JAX profiles "
                                "will not carry I/O"]
    assert J.hook_state() == {} and jl.lib.apis == [80]


def test_the_check_is_the_first_library_that_has_one(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    libs = {name: tmp_path / name for name in ("empty.so", "plain.so", "tracer.so", "later.so")}
    libs["empty.so"].write_bytes(b"")                       # mmap refuses it: skipped
    for name in ("plain.so", "tracer.so", "later.so"):
        libs[name].write_bytes(name.encode())
    seen: list[bytes] = []

    def read(m: Any) -> TableCheck:
        seen.append(bytes(m[:]))
        return TableCheck("none") if bytes(m[:]) == b"plain.so" else TableCheck("exact", len(seen))
    monkeypatch.setattr(jaxlib_check, "read_table_check", read)
    order = [str(tmp_path / "gone.so")] + [str(p) for p in libs.values()]
    monkeypatch.setattr(J, "library_paths", lambda: order)
    assert J.loaded_check() == (TableCheck("exact", 2), str(libs["tracer.so"]))
    assert seen == [b"plain.so", b"tracer.so"]
    monkeypatch.setattr(J, "library_paths", lambda: order[:3])
    assert J.loaded_check() == (TableCheck("none"), "")


def test_library_paths_keep_the_packages_own_and_walk_it_when_none_is_mapped(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    hide_jax(monkeypatch)
    pkg = tmp_path / "jaxlib"
    (pkg / "mlir").mkdir(parents=True)
    for rel in ("__init__.py", "libjax_common.so", "xla_extension.so", "mlir/_mlir.so", "mlir/libjax_common.so.1",
                "libjax_common.txt"):
        (pkg / rel).write_text("")
    module(monkeypatch, "jaxlib", __file__=str(pkg / "__init__.py"))
    maps = tmp_path / "maps"
    maps.write_text(f"1-2 r-xp 0 08:01 1 {pkg}/mlir/_mlir.so\n"
                    f"2-3 r-xp 0 08:01 2 {pkg}/libjax_common.so\n"
                    f"3-4 r--p 0 08:01 2 {pkg}/libjax_common.so\n"
                    f"4-5 r-xp 0 08:01 3 {tmp_path}/jaxlib_plugin/xla_extension.so\n"
                    f"5-6 r-xp 0 08:01 4 {pkg}/path with space/_x.so\n")
    monkeypatch.setattr(J, "MAPS", str(maps))
    assert J.library_paths() == [f"{pkg}/libjax_common.so", f"{pkg}/mlir/_mlir.so", f"{pkg}/path with space/_x.so"]
    monkeypatch.setattr(J, "MAPS", str(tmp_path / "no-maps"))
    assert J.library_paths() == [f"{pkg}/libjax_common.so", f"{pkg}/xla_extension.so"]


def test_register_function_and_version_from_either_jaxlib_layout(monkeypatch: pytest.MonkeyPatch) -> None:
    hide_jax(monkeypatch)
    def new() -> None: ...
    def old() -> None: ...
    module(monkeypatch, "jax")
    module(monkeypatch, "jax._src")
    module(monkeypatch, "jax._src.lib", xla_client=types.SimpleNamespace(profiler=types.SimpleNamespace(
        register_plugin_profiler=old)))
    module(monkeypatch, "jax._src.lib._profiler", register_plugin_profiler=new)
    assert J._register_function() is new                    # 0.6.1 and later
    monkeypatch.delattr(sys.modules["jax._src.lib._profiler"], "register_plugin_profiler")
    assert J._register_function() is old                    # _profiler without it
    monkeypatch.delattr(sys.modules["jax._src.lib"], "_profiler")
    monkeypatch.setitem(sys.modules, "jax._src.lib._profiler", None)
    assert J._register_function() is old                    # 0.4.20 to 0.6.0: no _profiler
    module(monkeypatch, "jaxlib")
    module(monkeypatch, "jaxlib.version", __version__="0.6.2")
    assert J.jaxlib_version() == "0.6.2"


def test_hook_state_is_empty_before_registration_and_a_copy_after(monkeypatch: pytest.MonkeyPatch) -> None:
    Jaxlib(monkeypatch, TableCheck("exact", 80))
    assert J.hook_state() == {}
    J._register_with_jax()
    J.hook_state()["table"] = 1
    assert J.hook_state()["table"] == 80


def test_attach_installs_its_callbacks_and_import_hooks_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Any] = []
    monkeypatch.setattr(J, "_attached", False)
    monkeypatch.setattr(J, "_install_callbacks", lambda: calls.append("callbacks"))
    monkeypatch.setattr(J, "call_after_import", lambda name, fn: calls.append((name, fn)))
    J.attach()
    J.attach()
    assert calls == ["callbacks", ("jax", J._register_with_jax), ("jax", J._wrap_url_profiles)]
