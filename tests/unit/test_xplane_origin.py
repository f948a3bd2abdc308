"""A capture without tb_iotrace's I/O record says why, from what it records itself: JAX names
its jax/jaxlib versions in /host:metadata (hooked or not), TensorFlow's host events carry names
no JAX capture has, and a capture that tells neither gets both likely reasons."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tb_iotrace.cli import main
from tb_iotrace.base.frameworks import jaxlib_support
from tb_iotrace.store.xplane import XEventMetadata, XSpace, XStatMetadata, load_xspace
from tb_iotrace.store.xplane.origin import Origin, capture_origin, missing_io_reason


def jax_space(jax: str | None, jaxlib: str | None) -> XSpace:
    """The planes a JAX capture has, with the given versions recorded (None: not recorded)."""
    sp = XSpace()
    meta = sp.planes.add(id=0, name="/host:metadata")
    for k, (name, value) in enumerate((("jax_version", jax), ("jaxlib_version", jaxlib)), 1):
        if value is not None:
            meta.stat_metadata[k].CopyFrom(XStatMetadata(id=k, name=name))
            meta.stats.add(metadata_id=k, str_value=value)
    host = sp.planes.add(id=1, name="/host:CPU")
    host.event_metadata[1].CopyFrom(XEventMetadata(id=1, name="PjitFunction(step)"))
    return sp


def test_real_jax_capture_without_io(jax_captures) -> None:
    sp = load_xspace(jax_captures[1])
    assert capture_origin(sp.planes) == Origin("JAX", "0.10.2", "0.10.2")
    why = missing_io_reason(sp.planes)
    assert "JAX 0.10.2 (jaxlib 0.10.2, a version tb_iotrace hooks)" in why and "not enabled" in why
    assert "does not hook" not in why


def test_real_tensorflow_capture(gpu_capture) -> None:
    sp = load_xspace(gpu_capture)
    assert capture_origin(sp.planes) == Origin("TensorFlow")
    assert "TensorFlow made it in a process where tb_iotrace was not enabled" in missing_io_reason(sp.planes)


@pytest.mark.parametrize("jaxlib", ["0.4.18", "0.4.13"])
def test_jax_release_without_plugin_profiler(jaxlib: str) -> None:
    why = missing_io_reason(jax_space("9.9", jaxlib).planes)
    assert f"jaxlib {jaxlib}), a version tb_iotrace does not hook: it has no plugin profiler" in why
    assert jaxlib_support() in why and "not enabled" not in why


@pytest.mark.parametrize("jaxlib", ["0.11.0", "0.11.2", "0.12.1.dev20270101"])
def test_jax_release_newer_than_the_old_version_gate(jaxlib: str) -> None:
    """A release tb_iotrace hooks now (it reads the table check) but hooked not when it chose
    by version number: both causes are named, and the old warning quoted."""
    why = missing_io_reason(jax_space("9.9", jaxlib).planes)
    assert f"JAX 9.9 (jaxlib {jaxlib}) made it without tb_iotrace's I/O plane" in why
    assert "was not attached" in why and "the jaxlib was not hooked" in why
    assert f'"jaxlib {jaxlib} is not a version tb_iotrace knows how to hook"' in why
    assert jaxlib_support() in why and "does not hook" not in why


def test_jax_without_recorded_version() -> None:
    sp = jax_space(None, None)
    assert capture_origin(sp.planes) == Origin("JAX")
    why = missing_io_reason(sp.planes)
    assert "does not record its version" in why and "not enabled" in why and jaxlib_support() in why


def test_unknown_framework_gives_both_reasons() -> None:
    sp = XSpace()
    sp.planes.add(id=1, name="/host:CPU").event_metadata[1].CopyFrom(XEventMetadata(id=1, name="work"))
    assert capture_origin(sp.planes) == Origin("")
    why = missing_io_reason(sp.planes)
    assert "does not say which framework" in why and "not enabled" in why and "does not hook" in why


def test_report_says_why(jax_captures, tmp_path: Path, capsys) -> None:
    run = tmp_path / "plugins" / "profile" / "r1"
    run.mkdir(parents=True)
    (run / "vm.xplane.pb").write_bytes(jax_captures[1].read_bytes())
    assert main(["report", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "JAX 0.10.2 (jaxlib 0.10.2, a version tb_iotrace hooks)" in out
    assert "nothing traced, or every path was excluded" not in out
    assert main(["report", str(tmp_path), "--json"]) == 0
    host = json.loads(capsys.readouterr().out)["runs"][0]["hosts"][0]
    assert "tb_iotrace was not enabled" in host["no_io_reason"]
