"""Object storage is I/O: PyTorch DataLoader jobs (2 workers, fork and spawn) whose samples are
objects, read through boto3, s3fs, gcsfs, requests (presigned S3 URLs) and a plain HTTP server,
each behind a proxy on 127.0.0.1 that adds 30 ms to every request (moto's S3 server,
gcp-storage-emulator, http.server; nothing leaves the machine). Every object is named with its
bytes exact; the latency-bound jobs' verdicts put the wait on object I/O and name the small
GETs; the same job reading the same data from local files is diagnosed as before; and the
credentials the jobs used (access key, secret, session token, presigned signatures) appear in no
trace, report, export or log."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import unquote, urlsplit

import pytest

pytest.importorskip("torch")
pytest.importorskip("s3fs")
pytest.importorskip("gcsfs")
pytest.importorskip("boto3")
pytest.importorskip("requests")
pytestmark = pytest.mark.torch
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "unit" / "fixtures"))
from cloud_servers import start_gcs, start_s3  # noqa: E402
from slow_proxy import FileServer, SlowProxy  # noqa: E402

JOB = Path(__file__).parent / "scripts" / "torch_objects_job.py"
N, SIZE = 32, 64 << 10
DELAY_S = 0.03
SECRETS = {"AWS_ACCESS_KEY_ID": "AKIATBIOLEAKCHECK7Q2Z", "AWS_SECRET_ACCESS_KEY": "tbioLeakCheckSecret9fK2mQ7vX4",
           "AWS_SESSION_TOKEN": "tbioLeakCheckSessionToken3hT8pW1"}


def _body(i: int) -> bytes:
    # letters: gcp-storage-emulator loses a byte of an object made of b"\r"
    return bytes([65 + i % 26]) * SIZE


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    import boto3
    import fsspec

    work = tmp_path_factory.mktemp("objects")
    local = work / "local"
    local.mkdir()
    for i in range(N):
        (local / f"s{i:03d}.bin").write_bytes(_body(i))
    saved = {k: os.environ.get(k) for k in SECRETS}
    os.environ.update(SECRETS)
    s3, gcs = start_s3(), start_gcs()
    files = FileServer(str(local))
    proxies = {name: SlowProxy("127.0.0.1", int(ep.rsplit(":", 1)[1]), DELAY_S)
               for name, ep in (("s3", s3.endpoint), ("gs", gcs.endpoint), ("http", files.endpoint))}
    try:
        c = boto3.client("s3", endpoint_url=s3.endpoint, region_name="us-east-1")
        c.create_bucket(Bucket="objs")
        for i in range(N):
            c.put_object(Bucket="objs", Key=f"shards/s{i:03d}.bin", Body=_body(i))
        signer = boto3.client("s3", endpoint_url=proxies["s3"].endpoint, region_name="us-east-1")
        urls = [signer.generate_presigned_url("get_object", Params={"Bucket": "objs", "Key": f"shards/s{i:03d}.bin"})
                for i in range(N)]
        (work / "urls.txt").write_text("\n".join(urls))
        env_gs = {k: v for k, v in gcs.env.items() if k != "STORAGE_EMULATOR_HOST"}
        old = os.environ.get("STORAGE_EMULATOR_HOST")
        os.environ["STORAGE_EMULATOR_HOST"] = gcs.endpoint
        try:
            g = fsspec.filesystem("gs", skip_instance_cache=True)
            g.mkdir("objs")
            for i in range(N):
                g.pipe(f"objs/shards/s{i:03d}.bin", _body(i))
        finally:
            if old is None:
                os.environ.pop("STORAGE_EMULATOR_HOST", None)
            else:
                os.environ["STORAGE_EMULATOR_HOST"] = old
        secret_params = {"signature", "x-amz-signature", "x-amz-credential", "x-amz-security-token",
                         "awsaccesskeyid"}
        # as sent (percent-encoded), and decoded
        raw = {v for u in urls for k, _, v in (q.partition("=") for q in urlsplit(u).query.split("&"))
               if k.lower() in secret_params and len(v) >= 8}
        signatures = sorted(raw | {unquote(v) for v in raw})
        yield {"work": work, "local": local, "urls": work / "urls.txt", "s3": s3, "gcs": gcs, "proxies": proxies,
               "env_s3": {**s3.env, **SECRETS, "AWS_ENDPOINT_URL": proxies["s3"].endpoint},
               "env_gs": {**env_gs, "STORAGE_EMULATOR_HOST": proxies["gs"].endpoint},
               "signatures": signatures, "logs": []}
    finally:
        for p in proxies.values():
            p.stop()
        files.stop()
        s3.stop()
        gcs.stop()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _run(stores: dict[str, Any], mode: str, start: str) -> tuple[Path, dict[str, Any], str]:
    out = stores["work"] / f"out-{mode}-{start}"
    endpoint = {"boto3": stores["proxies"]["s3"].endpoint, "s3fs": stores["proxies"]["s3"].endpoint,
                "gcsfs": stores["proxies"]["gs"].endpoint, "requests": "", "http": stores["proxies"]["http"].endpoint,
                "local": str(stores["local"])}[mode]
    env = {**os.environ, **(stores["env_gs"] if mode == "gcsfs" else stores["env_s3"]),
           "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    args = [sys.executable, str(JOB), mode, start, str(out), endpoint]
    if mode == "requests":
        args.append(str(stores["urls"]))
    r = subprocess.run(args, env=env, capture_output=True, text=True, timeout=400)
    stores["logs"].append(r.stdout + r.stderr)
    assert r.returncode == 0, r.stderr[-3000:]
    rep = subprocess.run([sys.executable, "-m", "tb_iotrace", "report", "--json", str(out)], env=env,
                         capture_output=True, text=True, timeout=300)
    assert rep.returncode == 0, rep.stderr[-3000:]
    text = subprocess.run([sys.executable, "-m", "tb_iotrace", "report", str(out)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert text.returncode == 0, text.stderr[-3000:]
    stores["logs"].extend([rep.stdout, rep.stderr, text.stdout, text.stderr])
    return out, json.loads(rep.stdout), text.stdout


def _hosts(doc: dict[str, Any]) -> list[dict[str, Any]]:
    [run] = doc["runs"]
    return run["hosts"]


def _requests(out: Path) -> list[dict[str, Any]]:
    """Every request of every process of the trace, from the file itself."""
    from tb_iotrace.store.kineto import read_trace
    from tb_iotrace.store.objcolumns import checked, rows

    [path] = list(out.glob("*.pt.trace.json"))
    procs = read_trace(path)["tb_iotrace"]["processes"]
    return [r for p in procs for r in rows(checked(p.get("objects")))]


def _name(mode: str, stores: dict[str, Any], i: int) -> str:
    if mode in ("boto3", "s3fs", "requests"):
        return f"s3://objs/shards/s{i:03d}.bin"
    if mode == "gcsfs":
        return f"gs://objs/shards/s{i:03d}.bin"
    return f"{stores['proxies']['http'].endpoint}/s{i:03d}.bin"


def _check_named_exact(mode: str, stores: dict[str, Any], reqs: list[dict[str, Any]], doc: dict[str, Any]) -> None:
    names = {_name(mode, stores, i) for i in range(N)}
    gets = [r for r in reqs if r["op"] == "GET"]
    assert len({r["object"] for r in gets}) >= 16          # 12 recorded steps x 2 samples, some prefetched
    assert {r["object"] for r in gets} <= names
    assert {r["pid"] for r in gets} == {h["process"]["pid"] for h in _hosts(doc) if h["process"]["role"] == "worker"}
    for r in gets:
        assert r["status"] in (200, 206) and not r["error"], r
        if r["complete"]:
            want = r["range_end"] - r["range_start"] + 1 if r["range_start"] >= 0 else SIZE
            assert r["bytes"] == want, r
    # per object, the report's counters: an object a worker read whole in the window: its size, once
    done: dict[tuple[int, str], int] = {}
    for r in gets:
        if r["complete"]:
            done[(r["pid"], r["object"])] = done.get((r["pid"], r["object"]), 0) + r["bytes"]
    whole = {k for k, n in done.items() if n == SIZE
             and all(r["complete"] for r in gets if (r["pid"], r["object"]) == k)}
    assert len(whole) >= 12
    checked = 0
    for h in _hosts(doc):
        for o in (h.get("objects") or {}).get("objects", []):
            if (h["process"]["pid"], o["object"]) in whole:
                assert o["counters"]["OBJ_BYTES_READ"] == SIZE == o["counters"]["OBJ_UNIQUE_BYTES_READ"], o
                checked += 1
    assert checked == len(whole)


def _main(doc: dict[str, Any]) -> dict[str, Any]:
    [main] = [h for h in _hosts(doc) if h["process"]["role"] == "main"]
    return main


@pytest.mark.parametrize("mode,start", [("s3fs", "fork"), ("s3fs", "spawn"), ("gcsfs", "fork")])
def test_latency_bound_small_gets(stores: dict[str, Any], mode: str, start: str) -> None:
    """Four 16 KiB ranged GETs per 64 KiB object, 30 ms each: the wait is storage, and the
    advice names the small GETs in the client's terms."""
    out, doc, text = _run(stores, mode, start)
    reqs = _requests(out)
    _check_named_exact(mode, stores, reqs, doc)
    ranged = [r for r in reqs if r["op"] == "GET" and r["range_start"] >= 0]
    assert len(ranged) >= 32 and all(r["bytes"] <= 16 << 10 for r in ranged if r["complete"])
    v = _main(doc)["verdict"]
    assert v["bound"] == "input", v
    assert v["cause"] == "object_io" and v["wait_breakdown"]["object_io"] >= 0.5, v
    assert v["wait_breakdown"]["decode"] is not None and v["wait_breakdown"]["decode"] < 0.3, v
    fs = "s3fs" if mode == "s3fs" else "gcsfs"
    assert v["change"].startswith(f"{fs}: fewer, larger GETs"), v
    top = _main(doc)["findings"][0]
    assert top["id"] == "input-bound" and "fewer, larger GETs" in top["suggestion"], top
    small = [f for f in _main(doc)["findings"] if f["id"] == "object-small-requests"]
    assert small and small[0]["severity"] in ("warning", "critical"), _main(doc)["findings"]
    assert "object I/O" in text and "Objects:" in text


@pytest.mark.parametrize("mode,start", [("boto3", "fork"), ("boto3", "spawn"), ("requests", "fork"),
                                        ("http", "spawn")])
def test_whole_object_gets(stores: dict[str, Any], mode: str, start: str) -> None:
    """One GET per object (boto3 GetObject, requests over presigned URLs, a plain HTTP server):
    each named with its 64 KiB, and the wait on them is object I/O."""
    out, doc, _ = _run(stores, mode, start)
    reqs = _requests(out)
    _check_named_exact(mode, stores, reqs, doc)
    assert all(r["range_start"] < 0 for r in reqs if r["op"] == "GET")
    v = _main(doc)["verdict"]
    assert v["bound"] == "input" and v["cause"] == "object_io", v
    assert v["wait_breakdown"]["object_io"] >= 0.5, v


def test_local_files_diagnosed_as_before(stores: dict[str, Any]) -> None:
    """The same job reading the same bytes from local files: no object, nothing on object I/O."""
    out, doc, _ = _run(stores, "local", "fork")
    assert _requests(out) == []
    main = _main(doc)
    assert main["verdict"]["wait_breakdown"]["object_io"] == 0.0
    assert main["verdict"]["cause"] != "object_io"
    assert not [f for f in main["findings"] if f["id"].startswith("object-")]
    workers = [h for h in _hosts(doc) if h["process"]["role"] == "worker"]
    read = sum(f["counters"].get("POSIX_BYTES_READ", 0) for h in workers for f in h["files"]
               if f["path"].startswith(str(stores["local"])))
    assert read >= 16 * SIZE and read % SIZE == 0


def test_no_credential_anywhere(stores: dict[str, Any]) -> None:
    """Run last (after the jobs above in this module): the keys, the session token and the
    presigned URLs' signatures appear in no trace, report, export, log or answer of the tab."""
    outs = sorted(stores["work"].glob("out-*"))
    if len(outs) < 3:
        _run(stores, "requests", "fork")
        _run(stores, "s3fs", "fork")
        outs = sorted(stores["work"].glob("out-*"))
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    for out in outs:
        for fmt, dst in (("chrome", out.parent / f"{out.name}.chrome.json"), ("parquet", out.parent / f"{out.name}.pq"),
                         ("darshan", out.parent / f"{out.name}.darshan.txt")):
            r = subprocess.run([sys.executable, "-m", "tb_iotrace", "export", str(out), "--format", fmt, "-o", str(dst)],
                               env=env, capture_output=True, text=True, timeout=300)
            stores["logs"].extend([r.stdout, r.stderr])
    # the tab's answers on the same traces (the runs of a logdir holding the job folders)
    from tb_iotrace.plugin.cache import LogdirIndex
    from tb_iotrace.plugin.endpoints.objects import objects_impl
    from tb_iotrace.plugin.endpoints.capture import capture_impl

    index = LogdirIndex(str(stores["work"]))
    answers = 0
    for info in index.runs():
        view = index.view(info.run, sorted(info.hosts.items()))
        for body in (objects_impl(view), capture_impl(view, "thread")):
            stores["logs"].append(json.dumps(body, default=str))
            answers += 1
    assert answers >= 2 * len(outs)
    needles = list(SECRETS.values()) + stores["signatures"] + ["X-Amz-Signature", "Signature="]
    assert len(stores["signatures"]) >= 2
    urls = stores["urls"].read_text()          # the needles are what the job really sent
    assert SECRETS["AWS_ACCESS_KEY_ID"] in urls and sum(s in urls for s in stores["signatures"]) >= 2
    blobs = [p.read_bytes() for p in stores["work"].rglob("*") if p.is_file() and p.parent != stores["local"]
             and p.name != "urls.txt"]
    blobs += [s.encode() for s in stores["logs"]]
    assert len(blobs) > 10
    for needle in needles:
        enc = needle.encode()
        assert not any(enc in b for b in blobs), f"{needle[:12]}... found"
    # the requests job's presigned URLs were recorded as bucket and key
    reqs = [r for out in outs if "requests" in out.name for r in _requests(out)]
    assert reqs and all(r["object"].startswith("s3://objs/shards/") for r in reqs)
