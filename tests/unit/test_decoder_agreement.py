"""The columnar decoder's two paths (native/codec/xdecode.c and the NumPy one) accept and
reject the same damaged files, and agree on what they accept: a file the
tab shows with TBIO_PLUGIN_NATIVE=1 it shows the same with TBIO_PLUGIN_NATIVE=0."""
from __future__ import annotations

import random
from pathlib import Path

import pytest

import tb_iotrace.model.columnar as columnar
from tb_iotrace.model.tab.of_xplane import decode_xplane
from tb_iotrace.plugin.synthetic import make_logdir
from tb_iotrace.store.xplane import XPlaneError

pytestmark = pytest.mark.slow   # thousands of damaged captures through both decoders

DATA = Path(__file__).resolve().parents[1] / "data"


def outcome(path: Path, native: bool, monkeypatch) -> tuple:
    monkeypatch.setattr(columnar, "USE_NATIVE", native)
    try:
        cap = decode_xplane(str(path), "h")
    except (XPlaneError, ValueError, IndexError, KeyError, OverflowError, TypeError, AttributeError):
        return ("rejected",)   # what the tab's cache keeps as a 422 (plugin.cache.LogdirIndex.capture)
    return ("accepted", [(ln.key, len(ln), int(ln.start.sum()), int(ln.end.sum())) for ln in cap.lanes],
            len(cap.io) if cap.io is not None else None)


def cut_points(size: int, rng: random.Random, n: int, edge: int) -> list[int]:
    """``n`` truncation points spread at random, and every one in the first and last ``edge``
    bytes."""
    edge = list(range(1, min(size, edge + 1))) + list(range(max(1, size - edge), size))
    return sorted(set(edge + rng.sample(range(1, size), min(size - 1, n))))


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory) -> Path:
    """A small capture with I/O lines of every event layout the decoders take."""
    return make_logdir(tmp_path_factory.mktemp("syn"), DATA / "jax_plain.xplane.pb", n_events=300)


@pytest.mark.parametrize("name", ["jax_io.xplane.pb", "jax_plain.xplane.pb", "synthetic", "gpu_multi_worker.xplane.pb"])
def test_truncations_agree(name, synthetic, tmp_path, monkeypatch):
    src = synthetic if name == "synthetic" else DATA / name
    body = src.read_bytes()
    rng = random.Random(name)
    path = tmp_path / "t.xplane.pb"
    big = name.startswith("gpu")   # 3 MB: ~0.1 s a decode
    points = cut_points(len(body), rng, 20 if big else 250, 12 if big else 64)
    accepted = 0
    for cut in points:
        path.write_bytes(body[:cut])
        a, b = outcome(path, True, monkeypatch), outcome(path, False, monkeypatch)
        assert a == b, (name, cut, a[0], b[0])
        accepted += a[0] == "accepted"
    path.write_bytes(body)
    whole = outcome(path, True, monkeypatch)
    assert whole == outcome(path, False, monkeypatch) and whole[0] == "accepted"
    assert accepted < len(points)


@pytest.mark.parametrize("name", ["jax_io.xplane.pb", "synthetic"])
def test_bit_flips_agree(name, synthetic, tmp_path, monkeypatch):
    """Damage inside a file (1 to 4 flipped bits): the NumPy path skipped some of it (fields
    of an event past those it reads; the token decoder misreading events as ending where
    shifted tokens said), the native scan some other (inside event metadata entries, read
    back lazily): 64 of 1,500 mutants of jax_io.xplane.pb were accepted by one path only."""
    src = synthetic if name == "synthetic" else DATA / name
    body = src.read_bytes()
    rng = random.Random(f"flips:{name}")
    path = tmp_path / "t.xplane.pb"
    rejected = 0
    for i in range(300):
        b = bytearray(body)
        for _ in range(rng.choice((1, 1, 2, 4))):
            b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
        path.write_bytes(b)
        a, c = outcome(path, True, monkeypatch), outcome(path, False, monkeypatch)
        assert a == c, (name, i, a[0], c[0])
        rejected += a[0] == "rejected"
    assert 0 < rejected < 300
