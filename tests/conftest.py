"""Fixtures every test directory shares. The data they need is kept in tests/data/."""
from __future__ import annotations

from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture(scope="session")
def gpu_capture() -> Path:
    """A real multi-worker GPU profiler capture (provenance and licence: tests/data/README.md).

    Read-only: copy it into a temporary log directory before writing anything beside it."""
    path = DATA / "gpu_multi_worker.xplane.pb"
    assert path.is_file(), f"{path} is part of the repository; a checkout without it is broken"
    return path


@pytest.fixture(scope="session")
def jax_captures() -> tuple[Path, Path]:
    """Two small real JAX captures (CPU jax 0.10.2, tests/data/make_jax_captures.py): one made
    with tb_iotrace enabled (four StepTraceAnnotation steps, each reading a 16 KiB file, and a
    side file on a second thread), one of the same job without it. Read-only."""
    paths = (DATA / "jax_io.xplane.pb", DATA / "jax_plain.xplane.pb")
    for p in paths:
        assert p.is_file(), f"{p} is part of the repository; a checkout without it is broken"
    return paths
