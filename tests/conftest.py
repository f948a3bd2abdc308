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
