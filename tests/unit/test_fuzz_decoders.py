"""Seeded fuzzing of the decoders and of every route of the tab ("no 500 from any
route on any file content"). The small captures, traces and records of tests/data are
mutated (bit flips, byte overwrites, truncations, splices, duplicated or dropped chunks)
and each mutant is

- decoded in this process by every reader that takes its kind of file (the columnar decoder
  on its native and NumPy paths, the Kineto reader and converter, the record reader), which
  may only raise the reader's own error: a crash (SIGSEGV, SIGBUS, abort) kills the test;
- served: every data route of the plugin for that host, and for "All hosts" with a good host
  beside it (``/findings``, which starts a child process, for every 20th mutant), must answer
  200 or a JSON 4xx, never a 500 (an exception out of a route is what TensorBoard turns into
  a 500).

Deterministic: a fixed seed and a fixed number of mutants per input (FUZZ_ITERATIONS in
the environment scales them), about a minute on a loaded 2-core VM. CI runs it with the
rest of tests/unit (marker ``fuzz``).
"""
from __future__ import annotations

import os
import random
import shutil
from pathlib import Path

import pytest

from plugin_client import make_client
import tb_iotrace.model.columnar as columnar
from tb_iotrace.store.kineto import KinetoTraceError, read_trace
from tb_iotrace.store.kineto_xspace import read_xspace, to_xspace
from tb_iotrace.store.runrecord import RecordError, read_record
from tb_iotrace.store.xplane.io_fields import STAT_DEFAULTS
from tb_iotrace.store.xplane import LINE_PREFIX, XPlaneError
from tb_iotrace.store.xplane.schema import EVENT_STATS

pytestmark = pytest.mark.fuzz

DATA = Path(__file__).resolve().parents[1] / "data"
SEED = 25
# (input, mutants): the whole-run record counts its JSON and its trace as two inputs
INPUTS = {
    "jax_io.xplane.pb": 60,
    "jax_plain.xplane.pb": 30,
    "kineto_gpu_synthetic.pt.trace.json": 40,
    "torch_loader.pt.trace.json.gz": 30,
    "run_v1/plugins/iotrace/vm.21889.json": 40,
    "run_v1/plugins/iotrace/vm.21889.npz": 40,
}
SCALE = float(os.environ.get("FUZZ_ITERATIONS", "1"))
ROUTES = ("/capture", "/files", "/histograms", "/bandwidth", "/steps", "/hosts")
KW = dict(stats_for=lambda pn, meta, ln: pn.startswith("/host:") and ln.name.startswith(LINE_PREFIX),
          stat_names=EVENT_STATS, stat_defaults=STAT_DEFAULTS)
INTERESTING = (0x00, 0xFF, 0x7F, 0x80, 0x01, 0x22, 0x0A, 0x12)


def mutate(body: bytes, rng: random.Random, others: list[bytes]) -> bytes:
    """One to three mutations of ``body``."""
    b = bytearray(body)
    for _ in range(rng.choice((1, 1, 2, 3))):
        if not b:
            b = bytearray(rng.choice(others)[:64])
        kind = rng.randrange(7)
        at = rng.randrange(len(b))
        if kind == 0:                      # bit flips
            for _ in range(rng.randint(1, 8)):
                i = rng.randrange(len(b))
                b[i] ^= 1 << rng.randrange(8)
        elif kind == 1:                    # interesting bytes
            for _ in range(rng.randint(1, 4)):
                b[rng.randrange(len(b))] = rng.choice(INTERESTING)
        elif kind == 2:                    # truncation
            del b[at:]
        elif kind == 3:                    # a chunk dropped
            del b[at:at + rng.randint(1, 256)]
        elif kind == 4:                    # a chunk duplicated in place
            n = rng.randint(1, 256)
            b[at:at] = b[at:at + n]
        elif kind == 5:                    # a splice from another input
            src = rng.choice(others)
            i = rng.randrange(len(src))
            b[at:at + rng.randint(0, 64)] = src[i:i + rng.randint(1, 512)]
        else:                              # a varint made huge
            b[at:at + 1] = b"\xff" * rng.randint(1, 11) + b"\x01"
    return bytes(b)


def check_decoders(path: Path, kind: str) -> None:
    """Every reader of the file's kind: its own error or a result, nothing else."""
    if kind == "xplane":
        for native in (True, False):
            columnar.USE_NATIVE = native
            try:
                columnar.decode_xspace(path, lazy_event_metadata=native, **KW)
            except XPlaneError:
                pass
    elif kind == "kineto":
        got = []
        for convert in (lambda: to_xspace(read_trace(path), str(path)), lambda: read_xspace(path)):
            try:   # the dict per event, and the batches into columns (kineto_json) the tab reads with
                got.append(convert().SerializeToString(deterministic=True))
            except (KinetoTraceError, ValueError, TypeError, KeyError, OverflowError, AttributeError, IndexError) as exc:
                got.append(str(exc))   # the tab's cache turns each of these into a 422 (plugin.cache.LogdirIndex.capture)
        truncated = isinstance(got[1], str) and "truncated: its JSON ends" in got[1]   # json says it less plainly
        assert got[0] == got[1] or (truncated and "not a readable Kineto trace" in got[0]), (path, got[0][:300], got[1][:300])
    else:
        try:
            rec = read_record(path)
            rec.trace()
            rec.table()
        except RecordError:
            pass


def check_routes(get, run: str, hosts: list[str], label: str, findings: bool) -> None:
    code, body = get("/runs")
    assert code == 200 and any(r["run"] == run for r in body["runs"]), (label, code, body)
    for host in hosts:
        if findings:   # tb_iotrace.analysis in a child process: a few mutants only (~1 s each)
            try:
                code, body = get("/findings", run=run, host=host)
            except Exception as exc:
                raise AssertionError(f"{label}: /findings host={host}: {type(exc).__name__}: {exc}") from exc
            assert code in (200, 400, 404, 422), (label, "/findings", host, code, body)
        for route in ROUTES:
            try:
                code, body = get(route, run=run, host=host)
            except Exception as exc:   # what TensorBoard answers 500
                raise AssertionError(f"{label}: {route} host={host}: {type(exc).__name__}: {exc}") from exc
            assert code in (200, 400, 404, 422), (label, route, host, code, body)
            assert isinstance(body, dict), (label, route, host, code)
        for params in ({"width": "800"}, {"width": "800", "enc": "bin", "io_by": "file"}):
            try:
                code, body = get("/timeline", run=run, host=host, **params)
            except Exception as exc:
                raise AssertionError(f"{label}: /timeline host={host}: {type(exc).__name__}: {exc}") from exc
            assert code in (200, 400, 404, 422), (label, "/timeline", host, code, body)
        code, cap = get("/capture", run=run, host=host)
        if code == 200:
            for lane in [ln["key"] for ln in cap["lanes"]][:4]:
                for index in (0, 1_000_000):
                    try:
                        code, body = get("/event", run=run, host=host, lane=lane, index=index)
                    except Exception as exc:
                        raise AssertionError(f"{label}: /event {lane}: {type(exc).__name__}: {exc}") from exc
                    assert code in (200, 400, 404, 422), (label, "/event", lane, code, body)


def place(root: Path, name: str, body: bytes, good: dict[str, bytes]) -> tuple[str, str, list[str], Path]:
    """Lay the mutant out as the tab finds it, beside a good host of the same kind:
    (kind, run, hosts, the mutant's path)."""
    if name.endswith(".xplane.pb"):
        d = root / "plugins" / "profile" / "r"
        d.mkdir(parents=True)
        (d / "good.xplane.pb").write_bytes(good[name])
        (d / "bad.xplane.pb").write_bytes(body)
        return "xplane", "r", ["bad", "__all__"], d / "bad.xplane.pb"
    if ".pt.trace.json" in name:
        d = root / "r"
        d.mkdir(parents=True)
        suffix = name[name.index(".pt.trace"):]
        (d / f"good.1{suffix}").write_bytes(good[name])
        (d / f"bad.1{suffix}").write_bytes(body)
        return "kineto", "r", ["bad.1", "__all__"], d / f"bad.1{suffix}"
    d = root / "plugins" / "iotrace"
    d.mkdir(parents=True)
    src = DATA / "run_v1" / "plugins" / "iotrace"
    shutil.copyfile(src / "vm.21889.json", d / "good.1.json")
    shutil.copyfile(src / "vm.21889.npz", d / "good.1.npz")
    shutil.copyfile(src / "vm.21889.json", d / "bad.1.json")
    shutil.copyfile(src / "vm.21889.npz", d / "bad.1.npz")
    (d / ("bad.1.json" if name.endswith(".json") else "bad.1.npz")).write_bytes(body)
    return "record", "iotrace", ["bad.1", "__all__"], d / "bad.1.json"


@pytest.mark.parametrize("name", sorted(INPUTS))
def test_fuzz(name, tmp_path, monkeypatch):
    monkeypatch.setenv("TBIO_PLUGIN_PREFETCH", "0")
    monkeypatch.setattr(columnar, "USE_NATIVE", columnar.USE_NATIVE)
    good = {n: (DATA / n).read_bytes() for n in INPUTS}
    others = list(good.values())
    rng = random.Random(f"{SEED}:{name}")
    n = max(1, int(INPUTS[name] * SCALE))
    for i in range(n):
        body = mutate(good[name], rng, others)
        root = tmp_path / f"m{i}"
        kind, run, hosts, path = place(root, name, body, good)
        label = f"{name} mutant {i} (seed {SEED})"
        try:
            check_decoders(path, kind)
        except Exception as exc:
            raise AssertionError(f"{label}: {type(exc).__name__}: {exc}") from exc
        columnar.USE_NATIVE = i % 2 == 0   # the tab on either path
        _, get = make_client(root)
        check_routes(get, run, hosts, label, findings=i % 20 == 0)
        shutil.rmtree(root)
