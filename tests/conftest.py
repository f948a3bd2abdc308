"""Fixtures every test directory shares. The data they need is kept in tests/data/."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

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


@pytest.fixture(autouse=True, scope="session")
def _summaries_kept_off_the_data(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Per-capture summaries (tb_iotrace.store.summaries) go to a temporary local cache
    (``$TB_IOTRACE_CACHE/summaries``), never beside the captures nor into the user's cache:
    tests read tests/data/ in place and must not write into the checkout. The
    tests of summaries kept beside a capture set TBIO_SUMMARIES=1 on a logdir of their own."""
    old = {k: os.environ.get(k) for k in ("TBIO_SUMMARIES", "TB_IOTRACE_CACHE")}
    os.environ["TBIO_SUMMARIES"] = "local"
    os.environ["TB_IOTRACE_CACHE"] = str(tmp_path_factory.mktemp("tbio-cache"))
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
