"""A real JAX GPU capture without I/O (tests/data/jax_gpu_h200_noio.xplane.pb: jaxlib 0.11.2 on
an H200, made while tb_iotrace still refused that jaxlib by version number), read through the
plugin's routes: the tab draws its GPU stream lanes and host threads, takes its steps from
StepTraceAnnotation, and says why there is no I/O (tb_iotrace not attached, or that jaxlib not
hooked), naming the warning the job's log then showed."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fixtures.plugin_client import items_of, make_client
from tb_iotrace.store.xplane import load_xspace
from tb_iotrace.store.xplane.origin import Origin, capture_origin

DATA = Path(__file__).resolve().parents[1] / "data" / "jax_gpu_h200_noio.xplane.pb"


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    assert DATA.is_file(), f"{DATA} is part of the repository"
    logdir = tmp_path_factory.mktemp("jaxgpu")
    run = logdir / "plugins" / "profile" / "2026_11_26_09_00_00"
    run.mkdir(parents=True)
    shutil.copyfile(DATA, run / "h200.xplane.pb")
    _, get = make_client(logdir)
    return get, run.name


def test_the_capture_is_jax_0_11_2_on_gpu() -> None:
    space = load_xspace(DATA)
    assert capture_origin(space.planes) == Origin("JAX", "0.11.2", "0.11.2")
    assert any(p.name.startswith("/device:GPU:") for p in space.planes)


def test_gpu_lanes_drawn_and_the_missing_io_explained(client) -> None:
    get, run = client
    status, runs = get("/runs")
    assert status == 200 and [(r["run"], r["hosts"]) for r in runs["runs"]] == [(run, ["h200"])]
    status, cap = get("/capture", run=run, host="h200")
    assert status == 200
    dev = [ln["name"] for ln in cap["lanes"] if ln["group"] == "device"]
    assert dev == ["GPU:0 Stream #14(MemcpyD2D,Compute)", "GPU:0 Stream #15(MemcpyH2D)"]
    assert [ln["events"] for ln in cap["lanes"] if ln["group"] == "device"] == [32, 8]
    assert any(ln["name"] == "python3" for ln in cap["lanes"] if ln["group"] == "host")
    assert not [ln for ln in cap["lanes"] if ln["group"] == "io"]
    # eight StepTraceAnnotation("train") steps
    assert [s["name"] for s in cap["steps"]] == [str(i) for i in range(8)]
    assert cap["io"]["has_io"] is False and cap["io"]["events"] == 0
    [why] = cap["messages"]
    assert why.startswith("This capture has no I/O data: JAX 0.11.2 (jaxlib 0.11.2) made it without "
                          "tb_iotrace's I/O plane")
    assert "tb_iotrace was not attached in that process" in why and "the jaxlib was not hooked" in why
    assert '"jaxlib 0.11.2 is not a version tb_iotrace knows how to hook"' in why
    # the files table says the same instead of an empty table
    status, files = get("/files", run=run, host="h200")
    assert status == 200 and files["rows"] == 0 and files["message"] == why


def test_gpu_lanes_have_their_kernels_on_the_timeline(client) -> None:
    get, run = client
    status, tl = get("/timeline", run=run, host="h200", width=800)
    assert status == 200
    dev = {i for i, ln in enumerate(tl["lanes"]) if ln["group"] == "device"}
    calls: dict[int, int] = {}
    for lane, _, n in items_of(tl):
        calls[lane] = calls.get(lane, 0) + n
    # every kernel and copy of both streams is drawn (items merge at this width; counts add up)
    assert sorted(calls[i] for i in dev) == [8, 32]
    assert {"MemcpyH2D", "MemcpyD2D"} <= set(tl["names"])
    assert any("fusion" in name for name in tl["names"])
