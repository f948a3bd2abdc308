"""Object storage read by clients whose bytes pass through neither urllib3 nor aiohttp, under
``tb-iotrace run``: WebDataset's shards over HTTP (fetched by a ``curl`` child, and by a
``pipe:curl`` URL) and s3torchconnector's objects (AWS's CRT client, in Rust) against moto's S3
server; each object named, its bytes exact against the files served, in the report's objects
(local servers on 127.0.0.1; nothing leaves the machine)."""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "unit" / "fixtures"))
from cloud_servers import start_s3  # noqa: E402
from slow_proxy import FileServer  # noqa: E402

JOB = Path(__file__).parent / "scripts" / "object_streams_job.py"
pytestmark = pytest.mark.torch


def _shards(root: Path, count: int) -> dict[str, int]:
    sizes = {}
    for s in range(count):
        path = root / f"shard-{s:02d}.tar"
        with tarfile.open(path, "w") as t:
            for i in range(12):
                for ext, n in (("bin", 20_000 + 7 * i), ("cls", 1)):
                    data = bytes([65 + i % 26]) * n
                    ti = tarfile.TarInfo(f"s{s:02d}_{i:03d}.{ext}")
                    ti.size = len(data)
                    t.addfile(ti, io.BytesIO(data))
        sizes[path.name] = path.stat().st_size
    return sizes


def _run(tmp: Path, env: dict[str, str], *args: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    logs = tmp / "logs"
    env = {**os.environ, **env, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    r = subprocess.run([sys.executable, "-m", "tb_iotrace", "run", "--logdir", str(logs), "--quiet", "--",
                        sys.executable, str(JOB), *args], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    res = json.loads(r.stdout.strip().splitlines()[-1])
    rep = subprocess.run([sys.executable, "-m", "tb_iotrace", "report", str(logs), "--json", "--no-progress"],
                         env=env, capture_output=True, text=True, timeout=300)
    assert rep.returncode == 0, rep.stderr[-3000:]
    objects = [o for run in json.loads(rep.stdout)["runs"] for h in run["hosts"]
               for o in (h.get("objects") or {}).get("objects", [])]
    return res, objects


def test_webdataset_shards_over_http_are_objects(tmp_path: Path) -> None:
    pytest.importorskip("webdataset")
    root = tmp_path / "shards"
    root.mkdir()
    sizes = _shards(root, 4)
    srv = FileServer(str(root))
    try:
        urls = [f"{srv.endpoint}/shard-00.tar", f"pipe:curl -s {srv.endpoint}/shard-01.tar"]
        res, objects = _run(tmp_path / "gopen", {}, "gopen", *urls)
        # read to their ends: every byte of each shard, one GET each, named by its URL
        assert sorted(res["sizes"].values()) == [sizes["shard-00.tar"], sizes["shard-01.tar"]]
        got = {o["object"]: o["counters"] for o in objects}
        assert set(got) == {f"{srv.endpoint}/shard-00.tar", f"{srv.endpoint}/shard-01.tar"}, sorted(got)
        for name, c in got.items():
            assert c["OBJ_GETS"] == 1 and c["OBJ_BYTES_READ"] == sizes[name.rsplit("/", 1)[1]], (name, c)
        # a WebDataset in two DataLoader workers: each shard named once, by the worker that read it;
        # the tar reader stops at the archive's end marker, before the last record's padding
        shard_urls = [f"{srv.endpoint}/shard-{s:02d}.tar" for s in range(4)]
        res, objects = _run(tmp_path / "wds", {}, "wds", *shard_urls)
        assert res["samples"] == 48
        got = {o["object"]: o["counters"] for o in objects}
        assert set(got) == set(shard_urls), sorted(got)
        for name, c in got.items():
            size = sizes[name.rsplit("/", 1)[1]]
            assert c["OBJ_GETS"] == 1 and size - 10240 < c["OBJ_BYTES_READ"] <= size, (name, c, size)
    finally:
        srv.stop()


def test_s3torchconnector_objects_are_named_with_exact_bytes(tmp_path: Path) -> None:
    pytest.importorskip("s3torchconnector")
    import boto3

    s3 = start_s3()
    try:
        c = boto3.client("s3", endpoint_url=s3.endpoint, region_name="us-east-1",
                         aws_access_key_id="testing", aws_secret_access_key="testing")
        c.create_bucket(Bucket="data")
        sizes = {f"train/s{i:03d}.bin": (64 << 10) + 11 * i for i in range(12)}
        for key, n in sizes.items():
            c.put_object(Bucket="data", Key=key, Body=bytes([65 + n % 26]) * n)
        res, objects = _run(tmp_path, s3.env, "s3t", s3.endpoint, "data/train/")
        assert res == {"samples": 12, "bytes": sum(sizes.values())}
        got = {o["object"]: o["counters"] for o in objects}
        assert set(got) == {f"s3://data/{k}" for k in sizes}, sorted(got)
        for key, n in sizes.items():
            cnt = got[f"s3://data/{key}"]
            assert cnt["OBJ_GETS"] == 1 and cnt["OBJ_BYTES_READ"] == n, (key, cnt)
    finally:
        s3.stop()
