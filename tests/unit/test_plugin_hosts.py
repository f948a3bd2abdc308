"""Many hosts: the capture cache is bounded by bytes (not entries), and an "All hosts" view
of a 64-host run decodes each capture once however many requests ask for it."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

pytest.importorskip("tensorboard")

from tb_iotrace.plugin import cache as cache_mod
from tb_iotrace.plugin.cache import load_any
from plugin_client import make_client  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "data"
RUN = "many"


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


def test_all_hosts_findings_answer_in_bounded_time_from_one_child(tmp_path, monkeypatch):
    """64 hosts: one child analyses every host (not 64 children one after another inside the
    request); the request answers within FINDINGS_ALL_WAIT_S with the hosts done so far and
    ``pending`` for the others; asking again once the child is done gives every host."""
    from collections import OrderedDict
    import threading
    import time

    from tb_iotrace.plugin import findings_runner, findings_worker

    root = _hosts_logdir(tmp_path, 64)
    children: list[list[str]] = []
    release = threading.Event()

    def each(paths, timeout_s, on_result):
        children.append(list(paths))
        for k, p in enumerate(paths):
            if k == 10:
                release.wait(20)            # the rest takes long
            on_result(p, {"findings": [{"id": "x", "statement": os.path.basename(p)}], "notes": [],
                          "message": ""}, None)

    monkeypatch.setattr(findings_worker, "run_child_each", each)
    monkeypatch.setattr(findings_worker, "run_child", lambda p, t: pytest.fail("one child per host"))
    monkeypatch.setattr(findings_runner, "_findings_cache", OrderedDict())
    monkeypatch.setattr(findings_runner, "FINDINGS_ALL_WAIT_S", 0.5)
    plugin, get = make_client(root)
    t = time.monotonic()
    code, first = get("/findings", run=RUN, host="__all__")
    assert code == 200 and time.monotonic() - t < 5
    assert first["pending"] == 54 and len(first["findings"]) == 10 and first["hosts"] == 64
    assert "10 of 64 hosts" in first["notes"][0]
    again = get("/findings", run=RUN, host="__all__")[1]        # still running: no second child
    assert again["pending"] == 54 and len(children) == 1
    release.set()
    deadline = time.monotonic() + 20
    while findings_runner._in_batch and time.monotonic() < deadline:
        time.sleep(0.05)
    done = get("/findings", run=RUN, host="__all__")[1]
    assert done["pending"] == 0 and len(children) == 1 and len(children[0]) == 64
    assert sorted(f["host"] for f in done["findings"]) == [f"w{i:02d}" for i in range(64)]
    assert all(f["statement"] == f"{f['host']}.xplane.pb" for f in done["findings"])


@pytest.mark.slow
def test_findings_each_child_matches_one_child_per_capture(tmp_path):
    """The real ``--each`` child answers every file as the one-file child does, and a bad file
    gets its own error without costing the others theirs."""
    from tb_iotrace.plugin import findings_worker

    root = _hosts_logdir(tmp_path, 2)
    paths = sorted(str(p) for p in (root / "plugins" / "profile" / RUN).glob("*.pb"))
    bad = tmp_path / "bad.xplane.pb"
    bad.write_bytes(b"\xff" * 64)
    got: dict[str, object] = {}
    findings_worker.run_child_each(paths[:1] + [str(bad)] + paths[1:], 120,
                                   lambda p, out, err: got.__setitem__(p, out if out is not None else err))
    assert isinstance(got[str(bad)], str)
    for p in paths:
        assert got[p] == findings_worker.run_child(p, 120)
        assert "findings" in got[p]


@pytest.mark.slow
def test_report_per_host_table_matches_the_captures_and_the_tab(tmp_path):
    """``tb-iotrace report`` decodes hosts in parallel (same document as one at a time) and its
    per-host rows are the captures' counters summed (POSIX + STDIO), equal to the tab's
    /hosts rows (one row rule, file_totals.host_row, read from the source here and from the tab's
    decoding there: the input wait too); the text table marks the host with the slowest reads."""
    from tb_iotrace.analysis import run_result
    from tb_iotrace.cli import hostrows
    from tb_iotrace.cli.report_text.document import render_report
    from tb_iotrace.model.open_source import open_source as resolve
    from tb_iotrace.plugin.synthetic import make_logdir

    for i, n in enumerate((1_000, 6_000, 2_000)):
        make_logdir(tmp_path, DATA / "gpu_multi_worker.xplane.pb", run=RUN, host=f"w{i}", n_events=n, seed=i)
    sources = resolve(str(tmp_path), None, None)
    doc = run_result.build(sources, jobs=2, make=hostrows.kept)
    assert doc == run_result.build(resolve(str(tmp_path), None, None), jobs=1, make=hostrows.kept)
    hosts = doc["runs"][0]["hosts"]
    assert [h["host"] for h in hosts] == ["w0", "w1", "w2"]
    _, get = make_client(tmp_path)
    tab = {r["host"]: r for r in get("/hosts", run=RUN, host="__all__")[1]["hosts"]}
    for h in hosts:
        row = h["summary"]
        truth = {k: sum(f["counters"].get(f"{m}_{k.upper()}", 0) for f in h["files"] for m in ("POSIX", "STDIO")
                        if f["module"] == m) for k in ("bytes_read", "bytes_written")}
        rtime = sum(f["fcounters"].get(f"{f['module']}_F_READ_TIME", 0.0) for f in h["files"])
        assert row["bytes_read"] == truth["bytes_read"] > 0
        assert row["bytes_written"] == truth["bytes_written"]
        assert row["read_time_s"] == pytest.approx(rtime) and rtime > 0
        assert row["io_calls"] == h["nevents"] > 0 and row["source"] == "counters"
        for k in ("bytes_read", "bytes_written", "io_calls", "files", "source", "input_wait_ns", "span_ns",
                  "wait_basis", "input_wait_pct"):
            assert row[k] == tab[h["host"]][k], k
        assert row["read_time_s"] == pytest.approx(tab[h["host"]]["read_time_s"])
    assert all(h["summary"]["input_wait_ns"] > 0 and h["summary"]["wait_basis"] == "steps" for h in hosts)
    text = render_report(doc)
    table = text[text.index("Per host"):].splitlines()
    slow = max(hosts, key=lambda h: h["summary"]["read_time_s"])["host"]
    assert slow == "w1"
    marked = [ln for ln in table if "slowest reads" in ln]
    assert len(marked) == 1 and marked[0].split()[0] == slow
    assert sum(1 for ln in table if ln.split()[:1] in (["w0"], ["w1"], ["w2"])) == 3


def test_hosts_reads_each_files_identity_once_per_request(tmp_path, monkeypatch):
    """A /hosts request stats and hashes each capture (its identity: what its summary and job
    facts must be of) once, whether it decodes the captures, reads their summaries and job
    facts after a restart, or answers from this process's rows (failed first: twice, once
    before the summary children were considered and once for the rows)."""
    import collections
    import threading

    from tb_iotrace.plugin import summary_pool
    from tb_iotrace.store import jobfacts, summaries

    monkeypatch.setenv("TB_IOTRACE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv(summaries.ENV, "1")
    monkeypatch.setenv(summary_pool.ENV, "2")       # the summary children are considered (too few to start)
    root = _hosts_logdir(tmp_path / "logs", 3)
    paths = sorted(str(p) for p in (root / "plugins" / "profile" / RUN).iterdir())
    reads: collections.Counter[str] = collections.Counter()
    real = summaries.identity
    me = threading.current_thread()

    def counted(path: str):
        if threading.current_thread() is me:
            reads[os.path.basename(path)] += 1
        return real(path)

    monkeypatch.setattr(summaries, "identity", counted)

    def once(get) -> dict:
        reads.clear()
        code, got = get("/hosts", run=RUN, host="__all__")
        assert code == 200, got
        assert dict(reads) == {os.path.basename(p): 1 for p in paths}, dict(reads)
        return got

    first = once(make_client(root)[1])                         # decoded, summaries kept
    assert len(first["hosts"]) == 3 and first["job_verdict"] is None
    facts = {"rank": None, "role": None, "verdict": None, "has_step_markers": True,
             "steps": {c: [1, 2] for c in jobfacts.STEP_COLUMNS}, "bytes_read": 0, "files": 0, "data_dirs": {}}
    for k, p in enumerate(paths):
        assert jobfacts.save(p, dict(facts, rank=k)) is not None
    _, get = make_client(root)                                 # a restart: summaries and job facts read
    again = once(get)
    assert again["hosts"] == first["hosts"] and again["job_verdict"] is not None
    assert once(get) == again                                  # this process's rows
