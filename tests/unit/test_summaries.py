"""Per-capture summaries kept on disk (tb_iotrace.store.summaries): the host row of the
tab's "All hosts" table, of ``report``'s per-host table and of the fleet's ``hosts`` table is
stored once per version of a capture, beside it (or in the local cache), and read back after a
restart instead of decoding the capture again; a changed, corrupt or foreign summary is never
trusted."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

pytest.importorskip("tensorboard")

from tb_iotrace.store import summaries
from tb_iotrace.cli import hostrows
from tb_iotrace.cli.report_text.document import render_host_table
from tb_iotrace.analysis.host_result import summary_row
from tb_iotrace.model.open_source import open_source as resolve
from tb_iotrace.store.logdir import scan
from tb_iotrace.plugin.cache import load_any
from tb_iotrace.plugin.endpoints.hosts import capture_row
from plugin_client import make_client  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "data"
ROOT = Path(__file__).resolve().parents[2]
RUN = "many"


@pytest.fixture()
def beside(monkeypatch, tmp_path):
    """Summaries kept beside the captures (the default outside the tests), a local cache of
    this test's own."""
    monkeypatch.setenv(summaries.ENV, "1")
    monkeypatch.setenv("TB_IOTRACE_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache" / "summaries"


def _real_logdir(root: Path) -> dict[str, Path]:
    """One logdir holding each kind of real source: a TF GPU capture (with tb_iotrace's
    synthetic I/O merged), a JAX capture with I/O, a PyTorch trace, a whole-run record."""
    from tb_iotrace.plugin.synthetic import make_logdir

    tf = make_logdir(root, DATA / "gpu_multi_worker.xplane.pb", run="tf", host="gpu0", n_events=2_000)
    jax = root / "plugins" / "profile" / "jax" / "cpu0.xplane.pb"
    jax.parent.mkdir(parents=True)
    shutil.copyfile(DATA / "jax_io.xplane.pb", jax)
    torch = root / "torchrun" / "worker0.1795474975155532512.pt.trace.json.gz"
    torch.parent.mkdir(parents=True)
    shutil.copyfile(DATA / "torch_loader.pt.trace.json.gz", torch)
    rec_dir = root / "job" / "plugins" / "iotrace"
    rec_dir.mkdir(parents=True)
    for f in (DATA / "run_v1" / "plugins" / "iotrace").iterdir():
        shutil.copyfile(f, rec_dir / f.name)
    return {"tf": tf, "jax": jax, "torch": torch, "record": rec_dir / "vm.21889.json"}


def _runs(root: Path) -> list[tuple[str, str, dict[str, str]]]:
    runs, _ = scan(str(root), records=True, kineto=True)
    return [(r.run, r.kind, dict(r.hosts)) for r in runs]


def _without_host(row: dict) -> dict:
    return {k: v for k, v in row.items() if k != "host"}


def test_tab_summaries_equal_the_fresh_rows_of_real_captures_and_are_never_taken_for_captures(tmp_path, beside):
    srcs = _real_logdir(tmp_path / "logdir")
    root = tmp_path / "logdir"
    runs_before = _runs(root)
    sources_before = [(s.run, s.host, s.kind) for s in resolve(str(root))]
    plugin, get = make_client(root)
    for run, _, hosts in runs_before:
        code, got = get("/hosts", run=run, host="__all__")
        assert code == 200, got
        for row in got["hosts"]:
            path = hosts[row["host"]]
            fresh = capture_row(row["host"], load_any(path, row["host"]))
            assert row == fresh                                   # the answer is the capture's row
            assert summaries.load(path) == _without_host(fresh)   # and so is what was kept
    kept = sorted(p.relative_to(root).as_posix() for p in root.rglob("*" + summaries.SUFFIX))
    assert len(kept) == 3, kept
    assert [k.rsplit("/", 1)[0] for k in kept] == sorted(
        ["plugins/iotrace/summaries", "plugins/iotrace/summaries", "job/plugins/iotrace/summaries"])
    # the PyTorch trace is in no run's plugins/ tree: nothing is made beside it, its summary is
    # in the local cache
    assert not (root / "torchrun" / "plugins").exists()
    assert len(list(beside.iterdir())) == 1
    # the scanners see the same runs, hosts and sources as before the summaries existed
    assert _runs(root) == runs_before
    assert [(s.run, s.host, s.kind) for s in resolve(str(root))] == sources_before
    assert {r for r, _, _ in runs_before} == {"tf", "jax", "torchrun", "job/iotrace"}


@pytest.mark.slow
def test_report_rows_are_kept_and_read_back_equal_on_real_sources(tmp_path, beside):
    _real_logdir(tmp_path / "logdir")
    sources = resolve(str(tmp_path / "logdir"))
    docs = {(s.run, s.host): hostrows.kept(s) for s in sources}
    # (a PyTorch trace is one host per process in the report, one host for the whole trace in
    # the tab: different parts of the file, kept apart)
    assert {s.kind for s in sources} == {"xplane", "record", "kineto"}
    for s in resolve(str(tmp_path / "logdir")):
        row = docs[(s.run, s.host)]["summary"]
        assert hostrows.stored(s) == row                          # kept by `report`, read back equal
        assert summary_row(s) == row                   # `report --hosts` computes the same
        if s.kind != "kineto":                                    # the tab's row of the same capture too
            assert capture_row(s.host, load_any(s.path, s.host)) == row
    again = hostrows.build(resolve(str(tmp_path / "logdir")), summary_row, jobs=1)
    assert again["computed"] == 0
    assert {(r["run"], h["host"]): h for r in again["runs"] for h in r["hosts"]} == \
        {k: d["summary"] for k, d in docs.items()}
    text = render_host_table(again)
    assert all(f"  {s.host} " in text for s in sources) and "Per host" in text
    for f in (tmp_path / "logdir").rglob("*" + summaries.SUFFIX):
        f.unlink()
    shutil.rmtree(beside)                                         # (the PyTorch trace's)
    fresh = hostrows.build(resolve(str(tmp_path / "logdir")), summary_row, jobs=2)   # in 2 processes
    assert fresh["computed"] == len(sources) and fresh["runs"] == again["runs"]
    assert hostrows.build(resolve(str(tmp_path / "logdir")), summary_row, jobs=2)["computed"] == 0


def test_changed_capture_is_summarized_again(tmp_path, beside):
    path = _real_logdir(tmp_path / "logdir")["jax"]
    row = capture_row("h", load_any(str(path), "h"))
    assert summaries.save(str(path), row) is not None
    assert summaries.load(str(path)) == _without_host(row)
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))        # same size, new mtime
    assert summaries.load(str(path)) is None
    assert summaries.save(str(path), row) is not None and summaries.load(str(path)) is not None
    with open(path, "ab") as fh:                                            # new size
        fh.write(b"\0")
    assert summaries.load(str(path)) is None
    # a record's trace rewritten (a periodic flush) makes its summary stale too
    rec = tmp_path / "logdir" / "job" / "plugins" / "iotrace" / "vm.21889.json"
    assert summaries.save(str(rec), row) is not None and summaries.load(str(rec)) is not None
    npz = rec.with_suffix(".npz")
    os.utime(npz, ns=(npz.stat().st_atime_ns, npz.stat().st_mtime_ns + 1_000_000))
    assert summaries.load(str(rec)) is None


def test_changed_capture_in_the_tab_is_decoded_again_and_its_summary_replaced(tmp_path, beside):
    root = tmp_path / "logdir"
    path = _real_logdir(root)["jax"]
    _, get = make_client(root)
    first = get("/hosts", run="jax", host="__all__")[1]["hosts"]
    shutil.copyfile(DATA / "jax_plain.xplane.pb", path)                    # another capture, same name
    plugin, get = make_client(root)
    decoded = _counting(plugin)
    again = get("/hosts", run="jax", host="__all__")[1]["hosts"]
    assert decoded == ["cpu0.xplane.pb"]
    assert again != first and again == [capture_row("cpu0", load_any(str(path), "cpu0"))]
    assert summaries.load(str(path)) == _without_host(again[0])


def _block_beside(root: Path) -> None:
    """Make the logdir's summaries folder impossible to create: a read-only logdir (root
    ignores permission bits, so a file stands where the folder would go; chmod as well)."""
    (root / "plugins" / "iotrace").write_bytes(b"")
    for d in (root, root / "plugins"):
        d.chmod(0o555)


def test_read_only_logdir_keeps_summaries_in_the_local_cache(tmp_path, beside):
    root = tmp_path / "logdir"
    path = _real_logdir(root)["jax"]
    _block_beside(root)
    try:
        _, get = make_client(root)
        rows = get("/hosts", run="jax", host="__all__")[1]["hosts"]
        kept = list(beside.glob("*" + summaries.SUFFIX))
        assert len(kept) == 1
        assert json.loads(kept[0].read_text())["path"] == os.path.realpath(path)
        assert summaries.load(str(path)) == _without_host(rows[0])
        plugin, get = make_client(root)                                      # a restart
        decoded = _counting(plugin)
        assert get("/hosts", run="jax", host="__all__")[1]["hosts"] == rows and decoded == []
    finally:
        for d in (root, root / "plugins"):
            d.chmod(0o755)


CORRUPT = [b"", b"{", b"[]", b"\xff\xfe", b"{" * 100_000, b" " * (summaries.MAX_BYTES + 1) + b"{}"]


def _variants(doc: dict) -> list[bytes]:
    """A valid summary changed in each way that must make it untrusted."""
    out = []
    for key, value in (("format", "tb_iotrace.summary/0"), ("path", "other.xplane.pb"), ("part", "pid1"),
                       ("identities", [[["cpu0.xplane.pb", 1, 2]]]), ("identities", "x")):
        out.append(json.dumps({**doc, key: value}).encode())
    for key, value in (("bytes_read", -1), ("bytes_read", 1.5), ("bytes_read", True), ("read_time_s", "1"),
                       ("input_wait_pct", 101.0), ("source", "made up"), ("wait_basis", None), ("extra", 1)):
        out.append(json.dumps({**doc, "row": {**doc["row"], key: value}}).encode())
    out.append(json.dumps({**doc, "row": {k: v for k, v in doc["row"].items() if k != "files"}}).encode())
    return out


def test_corrupt_or_foreign_summary_is_ignored_and_replaced(tmp_path, beside):
    root = tmp_path / "logdir"
    path = _real_logdir(root)["jax"]
    _, get = make_client(root)
    good = get("/hosts", run="jax", host="__all__")[1]
    (file, _), _ = summaries.locations(str(path))
    valid = json.loads(file.read_text())
    for bad in CORRUPT + _variants(valid):
        file.write_bytes(bad)
        assert summaries.load(str(path)) is None, bad[:80]
        plugin, get = make_client(root)                                      # a restart
        decoded = _counting(plugin)
        assert get("/hosts", run="jax", host="__all__")[1] == good
        assert decoded == ["cpu0.xplane.pb"]                                # recomputed from the capture
        assert json.loads(file.read_text()) == valid                        # and the summary replaced
    file.unlink()
    file.mkdir()                                                             # cannot even be replaced
    plugin, get = make_client(root)
    assert get("/hosts", run="jax", host="__all__")[1] == good


def _counting(plugin) -> list[str]:
    decoded: list[str] = []

    def loader(path: str, host: str):
        decoded.append(os.path.basename(path))
        return load_any(path, host)

    plugin.index.loader = loader
    return decoded


def test_all_hosts_after_a_restart_decodes_nothing(tmp_path, beside):
    d = tmp_path / "logdir" / "plugins" / "profile" / RUN
    d.mkdir(parents=True)
    for i in range(12):
        shutil.copyfile(DATA / "jax_io.xplane.pb", d / f"w{i:02d}.xplane.pb")
    shutil.copyfile(DATA / "jax_plain.xplane.pb", d / "plain.xplane.pb")
    (d / "bad.xplane.pb").write_bytes(b"\x0a\xff\xff\xff\xff\x0f not a capture")
    plugin, get = make_client(tmp_path / "logdir")
    decoded = _counting(plugin)
    code, cold = get("/hosts", run=RUN, host="__all__")
    assert code == 200 and len(cold["hosts"]) == 13 and [u["host"] for u in cold["unreadable"]] == ["bad"]
    assert len(decoded) == 14
    plugin, get = make_client(tmp_path / "logdir")                          # TensorBoard restarted
    decoded = _counting(plugin)
    code, warm = get("/hosts", run=RUN, host="__all__")
    assert code == 200 and warm == cold
    assert decoded == ["bad.xplane.pb"]            # only the capture that has no summary (unreadable)
    assert get("/hosts", run=RUN, host="w03") == (200, {"hosts": [cold["hosts"][4]], "unreadable": [],
                                                        "job_verdict": None, "job_notes": []})
    assert decoded == ["bad.xplane.pb"]
    assert get("/hosts", run=RUN, host="bad")[0] == 422


@pytest.mark.slow
def test_report_hosts_in_a_new_process_reads_the_summaries(tmp_path, beside):
    """``tb-iotrace report --hosts`` run twice, each in its own process: the first computes
    and keeps every host's row, the second reads them all back (``computed`` 0) and prints the
    same rows; then a capture overwritten with garbage of the same size and mtime is still
    summarized again (its identity holds its change time and a hash of its ends, which a
    rewrite cannot put back as it can the mtime): it fails as unreadable; so does the same garbage
    with a new mtime."""
    d = tmp_path / "logdir" / "plugins" / "profile" / RUN
    d.mkdir(parents=True)
    for i in range(3):
        shutil.copyfile(DATA / "jax_io.xplane.pb", d / f"w{i}.xplane.pb")
    env = {**os.environ, "PYTHONPATH": str(ROOT), summaries.ENV: "1", "TB_IOTRACE_CACHE": str(tmp_path / "cache")}

    def run(*extra: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "tb_iotrace", "report", str(tmp_path / "logdir"), "--hosts",
                               "--json", "--jobs", "1", *extra], capture_output=True, text=True, env=env, timeout=300)

    first = run()
    assert first.returncode == 0, first.stderr
    second = run()
    a, b = json.loads(first.stdout), json.loads(second.stdout)
    assert a["computed"] == 3 and b["computed"] == 0
    assert a["runs"] == b["runs"] and [h["host"] for h in b["runs"][0]["hosts"]] == ["w0", "w1", "w2"]
    # the tab, restarted, reads the rows `report` kept
    plugin, get = make_client(tmp_path / "logdir")
    decoded = _counting(plugin)
    assert get("/hosts", run=RUN, host="__all__")[1]["hosts"] == b["runs"][0]["hosts"] and decoded == []
    victim = d / "w1.xplane.pb"
    st = victim.stat()
    victim.write_bytes(b"\x0a\xff\xff\xff\xff\x0f" + b"\0" * (st.st_size - 6))
    os.utime(victim, ns=(st.st_atime_ns, st.st_mtime_ns))
    third = run()
    assert third.returncode != 0 and "w1.xplane.pb" in third.stderr, third.stderr
    os.utime(victim, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    fourth = run()
    assert fourth.returncode != 0 and "w1.xplane.pb" in fourth.stderr, fourth.stderr


def test_concurrent_writers_leave_one_whole_summary(tmp_path, beside):
    path = _real_logdir(tmp_path / "logdir")["jax"]
    row = capture_row("h", load_any(str(path), "h"))
    rows = [{**row, "io_calls": i} for i in range(8)]
    errors: list[BaseException] = []

    def write(r: dict) -> None:
        try:
            for _ in range(30):
                assert summaries.save(str(path), r) is not None
                got = summaries.load(str(path))
                assert got is not None and got["io_calls"] in range(8)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(r,)) for r in rows]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    folder = summaries.locations(str(path))[0][0].parent
    assert [p.name for p in folder.iterdir() if p.name.startswith(".")] == []   # no temporary file left


def test_off_keeps_nothing(tmp_path, beside, monkeypatch):
    monkeypatch.setenv(summaries.ENV, "0")
    path = _real_logdir(tmp_path / "logdir")["jax"]
    row = capture_row("h", load_any(str(path), "h"))
    assert summaries.save(str(path), row) is None and summaries.load(str(path)) is None
    assert list((tmp_path / "logdir").rglob("*" + summaries.SUFFIX)) == []


def test_remote_capture_not_fetched_is_identified_by_its_object_version(tmp_path, beside):
    """A remote logdir's file still a placeholder in the local mirror: its identity is the
    object's URL, version and size from the mirror's manifest (no fetch); its summary is read
    from the bucket's summaries folder as mirrored (what the writer kept there) or the local
    cache, written in the local cache only (never in the mirror, which each sync prunes), and
    once the file is fetched its own size and mtime are accepted as the same version."""
    from tb_iotrace.store import remote

    top = remote.mirror_path("s3://bucket/logs")
    f = top / "plugins" / "profile" / "r" / "h.xplane.pb"
    f.parent.mkdir(parents=True)
    f.write_bytes(b"")
    entry = {"url": "s3://bucket/logs/plugins/profile/r/h.xplane.pb", "path": "bucket/logs/plugins/profile/r/h.xplane.pb",
             "size": 43023, "version": "ETag=\"abc\""}
    (top / remote.MANIFEST).write_text(json.dumps({"plugins/profile/r/h.xplane.pb": entry}))
    before = summaries.identity(str(f))
    assert before == [["remote", entry["url"], entry["version"], 43023]]
    assert [loc.parent for loc, _ in summaries.locations(str(f))] == [top / "plugins" / "iotrace" / "summaries", beside]
    row = capture_row("h", load_any(str(DATA / "jax_io.xplane.pb"), "h"))
    shutil.copyfile(DATA / "jax_io.xplane.pb", f)                            # fetched meanwhile
    saved = summaries.save(str(f), row, before=before)
    assert saved is not None and saved.parent == beside
    assert summaries.load(str(f)) == _without_host(row)                       # fetched: its stat matches
    f.write_bytes(b"")                                                        # a placeholder again
    assert summaries.load(str(f)) == _without_host(row)
    entry["version"] = "ETag=\"def\""                                         # the object was rewritten
    (top / remote.MANIFEST).write_text(json.dumps({"plugins/profile/r/h.xplane.pb": entry}))
    assert summaries.load(str(f)) is None
    assert not list(top.rglob("*" + summaries.SUFFIX))


def test_hostile_summary_files_neither_hang_nor_redirect_writes(tmp_path, beside):
    """A logdir's writer cannot hang the tab with a FIFO or a link where a summary would be,
    nor send its summary writes elsewhere with a linked summaries folder."""
    root = tmp_path / "logdir"
    path = _real_logdir(root)["jax"]
    (file, _), _ = summaries.locations(str(path))
    file.parent.mkdir(parents=True)
    os.mkfifo(file)                                   # opened blocking, this would hang for ever
    _, get = make_client(root)
    good = get("/hosts", run="jax", host="__all__")
    assert good[0] == 200
    assert summaries.load(str(path)) is not None       # the FIFO was replaced by a real summary
    file.unlink()
    os.symlink(DATA / "torch_loader.json", file)       # a link is never followed
    assert summaries.load(str(path)) is None
    file.unlink()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.rmtree(file.parent)
    os.symlink(elsewhere, file.parent)
    plugin, get = make_client(root)
    assert get("/hosts", run="jax", host="__all__") == good
    assert list(elsewhere.iterdir()) == []             # not written through the link ...
    assert [p.parent for p in beside.iterdir()] == [beside]   # ... but in the local cache


def test_repeated_all_hosts_in_one_process_reads_its_memo_until_a_capture_changes(tmp_path, beside):
    root = tmp_path / "logdir"
    path = _real_logdir(root)["jax"]
    plugin, get = make_client(root)
    decoded = _counting(plugin)
    first = get("/hosts", run="jax", host="__all__")
    for f in root.rglob("*" + summaries.SUFFIX):
        f.unlink()                                     # the memo answers: nothing read, nothing decoded
    assert get("/hosts", run="jax", host="__all__") == first and decoded == ["cpu0.xplane.pb"]
    shutil.copyfile(DATA / "jax_plain.xplane.pb", path)
    again = get("/hosts", run="jax", host="__all__")
    assert decoded == ["cpu0.xplane.pb"] * 2 and again != first
    assert again[1]["hosts"] == [capture_row("cpu0", load_any(str(path), "cpu0"))]
