"""Many hosts: the capture cache is bounded by bytes (not entries), and an "All hosts" view
of a 64-host run decodes each capture once however many requests ask for it (issue 10)."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

pytest.importorskip("tensorboard")

from werkzeug.test import Client  # noqa: E402
from werkzeug.wrappers import Response  # noqa: E402

from tb_iotrace.plugin import cache as cache_mod  # noqa: E402
from tb_iotrace.plugin.cache import load_any  # noqa: E402
from tb_iotrace.plugin.plugin import IoTracePlugin  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "data"
RUN = "many"


def make_client(logdir: Path):
    plugin = IoTracePlugin(SimpleNamespace(logdir=str(logdir)))
    apps = plugin.get_plugin_apps()

    def get(route: str, **params):
        resp = Client(apps[route], Response).get(f"/data/plugin/iotrace{route}", query_string=params)
        return resp.status_code, json.loads(resp.get_data())

    return plugin, get


def _hosts_logdir(root: Path, n: int) -> Path:
    """``n`` hosts of one run, each a copy of the small JAX capture with tb_iotrace's I/O."""
    d = root / "plugins" / "profile" / RUN
    d.mkdir(parents=True)
    for i in range(n):
        shutil.copyfile(DATA / "jax_io.xplane.pb", d / f"w{i:02d}.xplane.pb")
    return root


def _counting(plugin) -> list[str]:
    decoded: list[str] = []

    def loader(path: str, host: str):
        decoded.append(os.path.basename(path))
        return load_any(path, host)

    plugin.index.loader = loader
    return decoded


def test_all_hosts_view_of_64_hosts_decodes_each_capture_once(tmp_path):
    plugin, get = make_client(_hosts_logdir(tmp_path, 64))
    decoded = _counting(plugin)
    answers = {}
    for _ in range(3):                                   # repeated requests, every endpoint
        for route in ("/capture", "/hosts", "/files", "/steps", "/bandwidth"):
            code, got = get(route, run=RUN, host="__all__")
            assert code == 200, got
            assert answers.setdefault(route, got) == got
    assert len(answers["/hosts"]["hosts"]) == 64
    assert sorted(decoded) == [f"w{i:02d}.xplane.pb" for i in range(64)]   # each once
    # one host asked for alone afterwards: its capture comes from the cache too
    assert get("/capture", run=RUN, host="w07")[0] == 200
    assert len(decoded) == 64
    assert plugin.index.cached_bytes <= plugin.index.max_bytes


def test_changed_capture_is_decoded_again_and_the_view_rebuilt(tmp_path):
    root = _hosts_logdir(tmp_path, 6)
    plugin, get = make_client(root)
    decoded = _counting(plugin)
    first = get("/hosts", run=RUN, host="__all__")[1]
    path = root / "plugins" / "profile" / RUN / "w03.xplane.pb"
    shutil.copyfile(DATA / "jax_plain.xplane.pb", path)        # w03 now has no I/O record
    os.utime(path, ns=(1, 1))
    again = get("/hosts", run=RUN, host="__all__")[1]
    assert decoded == [f"w{i:02d}.xplane.pb" for i in range(6)] + ["w03.xplane.pb"]
    assert first["hosts"][3]["io_calls"] > 0 and again["hosts"][3]["io_calls"] == 0
    assert again["hosts"][2] == first["hosts"][2]


def test_byte_budget_evicts_least_recently_used(tmp_path, monkeypatch):
    root = _hosts_logdir(tmp_path, 8)
    one = load_any(str(root / "plugins" / "profile" / RUN / "w00.xplane.pb"), "w00").nbytes()
    monkeypatch.setenv(cache_mod.CACHE_BYTES_ENV, str(3 * one + one // 2))   # room for 3 captures
    plugin, get = make_client(root)
    assert plugin.index.max_bytes == 3 * one + one // 2
    decoded = _counting(plugin)
    for i in range(8):
        assert get("/capture", run=RUN, host=f"w{i:02d}")[0] == 200
    assert plugin.index.cached_bytes <= plugin.index.max_bytes
    assert sorted(plugin.index._captures) == sorted(
        str(root / "plugins" / "profile" / RUN / f"w{i:02d}.xplane.pb") for i in (5, 6, 7))
    assert get("/capture", run=RUN, host="w07")[0] == 200       # kept: no decode
    assert len(decoded) == 8
    assert get("/capture", run=RUN, host="w00")[0] == 200       # evicted: decoded again
    assert decoded[-1] == "w00.xplane.pb" and len(decoded) == 9
    # the All-hosts view does not fit: still answered (each capture decoded as it is needed)
    code, got = get("/hosts", run=RUN, host="__all__")
    assert code == 200 and len(got["hosts"]) == 8
    assert plugin.index.cached_bytes <= plugin.index.max_bytes


def test_cache_budget_parsing(monkeypatch):
    monkeypatch.setenv(cache_mod.CACHE_BYTES_ENV, "2G")
    assert cache_mod.cache_budget() == 2 << 30
    monkeypatch.setenv(cache_mod.CACHE_BYTES_ENV, "512M")
    assert cache_mod.cache_budget() == 512 << 20
    monkeypatch.setenv(cache_mod.CACHE_BYTES_ENV, "lots")
    with pytest.raises(ValueError, match="TBIO_PLUGIN_CACHE_BYTES"):
        cache_mod.cache_budget()
    monkeypatch.delenv(cache_mod.CACHE_BYTES_ENV)
    assert cache_mod.CACHE_MIN_DEFAULT <= cache_mod.cache_budget() <= cache_mod.CACHE_MAX_DEFAULT


def test_capture_nbytes_counts_its_arrays():
    cap = load_any(str(DATA / "jax_io.xplane.pb"), "vm")
    arrays = sum(a.nbytes for ln in cap.lanes for a in (ln.start, ln.end, ln.name_id))
    assert cap.io is not None and arrays > 0
    assert cap.nbytes() >= arrays + cap.io.start.nbytes + cap.io.end.nbytes
