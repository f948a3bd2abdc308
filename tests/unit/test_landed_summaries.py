"""Summaries made as captures land (tb_iotrace.recording.landing, tb_iotrace.analysis.landed): each
place where tb_iotrace finishes writing a capture starts a background child that keeps its summary
(and job facts); the tab's "All hosts" then reads them without decoding the capture, and a
summary made damaged or stale afterwards is never trusted (the capture is decoded again)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("tensorboard")

from tb_iotrace.analysis.capture_row import capture_row
from tb_iotrace.model.tab.load import load_any
from tb_iotrace.recording import landing, url_profiles
from tb_iotrace.recording.window_writer import WindowWriter
from tb_iotrace.store import jobfacts, summaries
from tb_iotrace.store.logdir import scan
from plugin_client import counting_client, findings_all, make_client  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "data"
WAIT_S = 600.0      # the child runs at nice 19: on a loaded machine it waits for every other job


@pytest.fixture()
def beside(monkeypatch, tmp_path):
    """Summaries beside the captures (the default outside the tests), a local cache of this
    test's own (inherited by the children)."""
    monkeypatch.setenv(summaries.ENV, "1")
    monkeypatch.delenv(landing.ENV, raising=False)
    monkeypatch.setenv("TB_IOTRACE_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache" / "summaries"


def _io_capture(dest: Path, seed: int = 0, events: int = 500) -> Path:
    """A TF GPU capture with tb_iotrace's I/O plane merged (as a profile of a job tb_iotrace
    records is written)."""
    from tb_iotrace.plugin.synthetic import make_logdir

    made = make_logdir(dest.parent / "made", DATA / "gpu_multi_worker.xplane.pb", run="r", host="h", n_events=events,
                       seed=seed)
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(made), dest)
    shutil.rmtree(dest.parent / "made")
    return dest


def _hosts(logdir: Path) -> tuple[dict, list[str], dict[str, str]]:
    """A new TensorBoard's "All hosts" of the logdir's one run, the captures it decoded, and
    host -> path."""
    [run] = scan(str(logdir), records=True, kineto=True)[0]
    plugin, get, decoded = counting_client(logdir)
    code, got = get("/hosts", run=run.run, host="__all__")
    assert code == 200, got
    return got, decoded, dict(run.hosts)


def _fresh(path: str, host: str) -> dict:
    return capture_row(host, load_any(path, host))


def _check_used_then_redone(logdir: Path, path: Path) -> None:
    """The landed summary is valid and the tab's row; a damaged one, then a stale one, is
    decoded again (and the row is the capture's)."""
    assert summaries.load(str(path)) is not None
    got, decoded, hosts = _hosts(logdir)
    [row] = got["hosts"]
    assert decoded == []                                       # read from the landed summary
    assert row == _fresh(str(path), row["host"])               # the row the tab would compute
    kept = [f for f, _ in summaries.locations(str(path)) if f.exists()]
    assert kept
    kept[0].write_text('{"format": "tb_iotrace.summary/2", "row": ')     # damaged
    got, decoded, _ = _hosts(logdir)
    assert decoded == [path.name] and got["hosts"] == [row]
    if path.name.endswith(".xplane.pb"):                       # stale: the capture rewritten
        _io_capture(path, seed=1, events=600)
    else:
        path.write_bytes(path.read_bytes().replace(b'"traceEvents"', b'"traceEvents" ', 1))
    assert summaries.load(str(path)) is None
    got, decoded, _ = _hosts(logdir)
    assert decoded == [path.name] and got["hosts"][0] == _fresh(str(path), row["host"])


def test_a_published_profile_window_lands_with_its_summary_and_job_facts(tmp_path, beside):
    logdir = tmp_path / "logdir"
    writer = WindowWriter(str(logdir), "tensorflow")
    staging = writer.open_staging()
    _io_capture(staging / "plugins" / "profile" / "2026_01_01_00_00_00" / "w0.xplane.pb")
    [dest] = writer.close_staging(publish=True)
    assert landing.wait_idle(WAIT_S)
    path = Path(dest)
    assert jobfacts.load(str(path)).state == "ok"              # the job verdict need not analyse it
    assert list((logdir / "plugins" / "iotrace" / "summaries").iterdir())   # beside it, in its run
    _check_used_then_redone(logdir, path)


def test_a_profile_the_job_stops_into_a_local_logdir_lands_with_its_summary(tmp_path, beside):
    """The glue's stop (tf.profiler.experimental.stop / jax.profiler.stop_trace, wrapped as
    tb_iotrace.recording.url_profiles does): the captures the profile wrote are summarized, not
    those of a stop that saves nothing nor those written before the start."""
    logdir = tmp_path / "logdir"
    old = _io_capture(logdir / "plugins" / "profile" / "old" / "w0.xplane.pb")
    os.utime(old, ns=(time.time_ns() - 3_600 * 10**9,) * 2)
    os.utime(old.parent, ns=(time.time_ns() - 3_600 * 10**9,) * 2)
    where: list[str] = []

    def start(d, *a, **k):
        where.append(d)

    def stop(save=True):
        if save:
            _io_capture(Path(where[-1]) / "plugins" / "profile" / "2026_01_01_00_00_01" / "w1.xplane.pb")

    wstart = url_profiles._start_wrapper("tensorflow", start)
    wstop = url_profiles._stop_wrapper("tensorflow", stop, lambda save=True: bool(save))
    wstart(str(logdir))
    wstop(save=False)                                          # a warm-up: nothing kept
    assert landing.wait_idle(WAIT_S)
    wstart(str(logdir))
    wstop()
    assert landing.wait_idle(WAIT_S)
    new = logdir / "plugins" / "profile" / "2026_01_01_00_00_01" / "w1.xplane.pb"
    assert summaries.load(str(new)) is not None and summaries.load(str(old)) is None
    shutil.rmtree(old.parent)
    _check_used_then_redone(logdir, new)


class _Profiler:
    """What TraceHandler uses of torch.profiler.profile: PyTorch's own trace export."""

    def export_chrome_trace(self, path: str) -> None:
        shutil.copyfile(DATA / "kineto_gpu_synthetic.pt.trace.json", path)


def test_a_trace_handler_trace_lands_with_its_summary_and_job_facts_in_the_local_cache(tmp_path, beside):
    from tb_iotrace.recording.pytorch import TraceHandler

    logdir = tmp_path / "logdir"
    handler = TraceHandler(str(logdir / "torch"), worker_name="w0")
    handler(_Profiler())
    [written] = handler.written
    assert landing.wait_idle(WAIT_S)
    path = Path(written)
    assert summaries.load(str(path)) is not None
    assert not (logdir / "torch" / "plugins").exists()          # never beside a lone file
    kept = sorted(f.name.split(".", 1)[1] for f in beside.iterdir())
    assert kept == ["jobfacts.json", "summary.json"]              # its summary and its job facts
    assert jobfacts.load(str(path)).state == "ok"
    _check_used_then_redone(logdir, path)




def test_trace_handler_traces_of_ranks_land_with_their_job_facts(tmp_path, beside):
    """The PyTorch traces of a job's ranks, as tb_iotrace's trace_handler wrote them (four copies
    of a real gloo rank's, rank 2's input slow), landed: a new TensorBoard's "All hosts" gives
    the job verdict across them without decoding any, the one the tab's findings give (failed
    first: the landed child kept a trace's summary but no job facts, so /hosts had no verdict)."""
    from tb_iotrace.plugin.synthetic_ranks import make_ranks

    logdir = tmp_path / "logdir"
    paths = make_ranks(DATA / "ddp_rank0.pt.trace.json.gz", logdir / "torch", 4, 2)
    landing.landed([str(p) for p in paths])
    assert landing.wait_idle(WAIT_S)
    got, decoded, _ = _hosts(logdir)
    assert decoded == [] and len(got["hosts"]) == 4 and got["job_notes"] == []
    jv = got["job_verdict"]
    assert jv is not None and jv["ranks"] == 4 and jv["straggler"]["rank"] == 2, jv
    assert [jobfacts.load(str(p)).state for p in paths] == ["ok"] * 4
    [run] = scan(str(logdir), records=True, kineto=True)[0]
    _, get = make_client(logdir)                                # the tab's own answer, analysed now
    assert findings_all(get, run.run, WAIT_S)["job_verdict"] == jv


def test_run_records_land_with_their_summaries(tmp_path, beside):
    logdir = tmp_path / "logdir"
    data = tmp_path / "data.bin"
    data.write_bytes(b"x" * 100_000)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[2]),
                                                       os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-m", "tb_iotrace", "run", "--logdir", str(logdir), "--quiet", "--",
                        sys.executable, "-c", f"open({str(data)!r}, 'rb').read()"],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    [path] = sorted((logdir / "plugins" / "iotrace").glob("*.json"))
    deadline = time.monotonic() + WAIT_S                        # the child was left to run on its own
    while summaries.load(str(path)) is None and time.monotonic() < deadline:
        time.sleep(0.5)
    assert summaries.load(str(path)) is not None
    deadline = time.monotonic() + WAIT_S
    while jobfacts.load(str(path)).state != "ok" and time.monotonic() < deadline:
        time.sleep(0.5)
    assert jobfacts.load(str(path)).state == "ok"
    got, decoded, _ = _hosts(logdir)
    [row] = got["hosts"]
    assert decoded == [] and row == _fresh(str(path), row["host"]) and row["bytes_read"] >= 100_000


def test_off_starts_no_child(tmp_path, beside, monkeypatch):
    monkeypatch.setenv(landing.ENV, "0")
    logdir = tmp_path / "logdir"
    path = _io_capture(logdir / "plugins" / "profile" / "s" / "w0.xplane.pb")
    landing.landed([str(path)])
    assert landing.wait_idle(5.0)
    assert summaries.load(str(path)) is None


def test_a_capture_the_child_cannot_read_costs_one_line(tmp_path, beside):
    bad = tmp_path / "logdir" / "plugins" / "profile" / "s" / "bad.xplane.pb"
    bad.parent.mkdir(parents=True)
    bad.write_bytes(b"\x0a\xff\xff\xff\xff\x0f not a capture")
    good = _io_capture(tmp_path / "logdir" / "plugins" / "profile" / "s" / "good.xplane.pb")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[2]),
                                                       os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-m", "tb_iotrace.analysis.landed", "--facts", "bad", str(bad), "good", str(good)],
                       capture_output=True, text=True, env=env, timeout=WAIT_S)
    assert r.returncode == 0 and r.stdout == ""
    [line] = r.stderr.strip().splitlines()
    assert line.startswith("tb_iotrace: no summary kept for ") and str(bad) in line
    assert summaries.load(str(good)) is not None and summaries.load(str(bad)) is None


def test_an_uploaded_copy_is_removed_when_the_child_cannot_start_its_work(tmp_path, beside, monkeypatch):
    """The child owns the local copy of a capture uploaded to a URL: it removes it even when it
    fails before its own code runs (the job's interpreter lacks one of tb_iotrace's
    dependencies: a Python 3.12 venv without msgspec left every window's copy in staging)."""
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "msgspec.py").write_text("raise ImportError('no msgspec in this interpreter')\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(shadow), os.environ.get("PYTHONPATH", "")]))
    folder = tmp_path / "staging" / "landed-1"
    local = _io_capture(folder / "0.h.xplane.pb")
    landing.landed_uploaded([(str(local), "s3://bucket/logs/plugins/profile/s/h.xplane.pb")])
    assert landing.wait_idle(WAIT_S)
    assert not local.exists() and not folder.exists()


def test_a_copy_on_another_file_system_is_handed_over_too(tmp_path, beside, monkeypatch):
    """A trace handler's spool may be on another file system than staging (a tmpfs /tmp): the
    copy is moved there all the same (a rename cannot cross file systems), not left out."""
    import errno

    spool = tmp_path / "spool"
    spool.mkdir()
    src = spool / "w0.1.pt.trace.json"
    src.write_bytes(b"{}" * 1000)
    real = os.replace

    def cross(a, b):
        if os.fspath(a) == str(src):
            raise OSError(errno.EXDEV, "Invalid cross-device link")
        return real(a, b)

    monkeypatch.setattr(os, "replace", cross)
    [(local, url)] = landing.keep_for_landing([(src, "s3://b/logs/torch/w0.1.pt.trace.json")])
    monkeypatch.setattr(os, "replace", real)
    assert url == "s3://b/logs/torch/w0.1.pt.trace.json" and not src.exists()
    assert Path(local).read_bytes() == b"{}" * 1000 and Path(local).parent.name.startswith("landed")
    shutil.rmtree(Path(local).parent)


def test_a_record_whose_table_cannot_be_moved_is_not_handed_over(tmp_path, beside, monkeypatch):
    """A record's JSON moved but one of its tables not (a move refused, not a missing file): the
    child would summarize the record without that table, under an identity no reader trusts.
    The record is left out (the tab summarizes it when it opens the logdir); its JSON and the
    table that did move stay together in the staging folder; a record moved whole still goes."""
    import errno

    src = tmp_path / "rec"
    src.mkdir()
    names = {}
    for stem in ("h.1", "h.2"):
        for sfx in (".json", ".npz", ".files.npz"):
            (src / f"{stem}{sfx}").write_text(stem + sfx)
        names[stem] = src / f"{stem}.json"
    real = os.replace

    def refuse(a, b):
        if os.fspath(a) == str(src / "h.1.files.npz"):
            raise OSError(errno.EACCES, "Permission denied")
        return real(a, b)

    monkeypatch.setattr(os, "replace", refuse)
    got = landing.keep_for_landing([(names["h.1"], "s3://b/l/plugins/iotrace/h.1.json"),
                                    (names["h.2"], "s3://b/l/plugins/iotrace/h.2.json")])
    monkeypatch.setattr(os, "replace", real)
    assert [url for _, url in got] == ["s3://b/l/plugins/iotrace/h.2.json"], got
    folder = Path(got[0][0]).parent
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        ["0.h.1.json", "0.h.1.npz", "1.h.2.json", "1.h.2.npz", "1.h.2.files.npz"])
    assert (src / "h.1.files.npz").exists()          # the refused table, where it was
    shutil.rmtree(folder)


def test_run_imports_no_numpy_and_its_child_takes_only_this_runs_records(tmp_path, beside):
    """``tb-iotrace run``'s own process hands the records to the child by folder and start time:
    it imports no NumPy around the job (a fifth of a second of its exit on an idle machine); a
    record of an earlier run in the same logdir is not summarized again."""
    logdir = tmp_path / "logdir"
    folder = logdir / "plugins" / "iotrace"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[2]),
                                                       os.environ.get("PYTHONPATH", "")]))
    code = ("import sys\nfrom tb_iotrace.cli import main\n"
            f"rc = main(['run', '--logdir', {str(logdir)!r}, '--', sys.executable, '-c', 'pass'])\n"
            "print('rc', rc, 'numpy', 'numpy' in sys.modules, flush=True)\n")

    def run_once(n: int) -> Path:
        before = set(folder.glob("*.json"))
        proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=env)
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0 and "rc 0 numpy False" in out, (out, err)
        assert f"{n} process record(s)" in err, err
        [new] = set(folder.glob("*.json")) - before
        deadline = time.monotonic() + WAIT_S
        while summaries.load(str(new)) is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert summaries.load(str(new)) is not None
        return new

    first = run_once(1)
    for f, _ in summaries.locations(str(first)):       # its summary gone, the record an hour old
        if f.exists():
            f.unlink()
    os.utime(first, ns=(time.time_ns() - 3600 * 10**9,) * 2)
    assert summaries.load(str(first)) is None
    second = run_once(2)
    assert summaries.load(str(second)) is not None and summaries.load(str(first)) is None


def test_the_run_child_does_not_hold_the_runs_stderr(tmp_path, beside, monkeypatch):
    """The child left to run after ``tb-iotrace run`` gets no stdout nor stderr of the run's: a
    reader of them (``| tee``, a CI log, ``subprocess.run``) would wait for the child's end (under
    load 1.4 s after the run's), not the run's."""
    seen = []

    class Spy:
        def __init__(self, argv, **kw):
            seen.append((argv, kw))

    monkeypatch.setattr(landing.subprocess, "Popen", Spy)
    landing.landed_run(str(tmp_path), 123)
    [(argv, kw)] = seen
    assert kw["stdout"] == kw["stderr"] == subprocess.DEVNULL and kw["stdin"] == subprocess.DEVNULL
    assert argv[-3:] == ["--records", str(tmp_path), "123"] and kw["start_new_session"]


def test_no_summary_child_holds_the_callers_stderr(tmp_path, beside, monkeypatch):
    """Every summary child outlives its caller: the uploads of ``tb-iotrace run --logdir URL``
    (landed_uploaded), a profile window's captures (landed, landed_profile, in the job). None
    gets the caller's stderr: a reader of it waited for the child's end (a stress run's
    ``run --logdir s3://`` past its 60 s, the child summarizing against a loaded bucket)."""
    seen = []

    class Spy:
        def __init__(self, argv, **kw):
            seen.append(kw)

        def wait(self, timeout=None):
            return 0

        def poll(self):
            return 0

    monkeypatch.setattr(landing.subprocess, "Popen", Spy)
    cap = _io_capture(tmp_path / "logs" / "plugins" / "profile" / "r" / "h.xplane.pb")
    landing.landed_uploaded([(str(cap), "s3://b/logs/plugins/profile/r/h.xplane.pb")])
    landing.landed([str(cap)])
    landing.landed_profile(str(tmp_path / "logs"), 0)
    assert landing.wait_idle(30)
    assert len(seen) >= 2
    assert all(kw["stdout"] == kw["stderr"] == subprocess.DEVNULL == kw["stdin"] for kw in seen), seen
