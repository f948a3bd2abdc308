"""``tb_iotrace.torch.trace_handler("s3://...")`` in a real PyTorch job (PyTorch's own
``tensorboard_trace_handler`` writes to local paths only):
each window's trace lands in the bucket (moto's S3 server on 127.0.0.1, listed through it), with
the window's reads in bytes equal to the data file's size per step, its summary and job facts
kept beside it, and nothing in the cwd."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("s3fs")
pytestmark = pytest.mark.torch
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "unit" / "fixtures"))
from cloud_servers import start_s3  # noqa: E402

JOB = Path(__file__).parent / "scripts" / "torch_cloud_job.py"


def test_trace_handler_uploads_each_window(tmp_path: Path) -> None:
    import fsspec

    srv = start_s3()
    try:
        fs = fsspec.filesystem("s3", skip_instance_cache=True, endpoint_url=srv.endpoint, key="testing",
                               secret="testing")
        fs.mkdir("jobs")
        data = tmp_path / "data.bin"
        data.write_bytes(os.urandom(300_000))
        cwd = tmp_path / "cwd"
        cwd.mkdir()
        env = {**os.environ, **srv.env, "TB_IOTRACE_CACHE": str(tmp_path / "cache"),
               "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
        r = subprocess.run([sys.executable, str(JOB), str(data), "s3://jobs/torch"], cwd=cwd, env=env,
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr[-3000:]
        written = r.stdout.split()
        assert len(written) == 2 and all(w.startswith("s3://jobs/torch/w0.") for w in written)
        # each trace whole in the bucket, then its summary and job facts beside it (a child of
        # the job's, which owns a local copy in staging until it is done: waited for, bounded)
        staging = tmp_path / "staging"
        deadline = time.monotonic() + 300
        while staging.exists() and any(staging.rglob("*.pt.trace.json")) and time.monotonic() < deadline:
            time.sleep(0.5)
        listed = fs.find("jobs/torch")
        traces = sorted(k for k in listed if not k.startswith("jobs/torch/plugins/"))
        assert traces == sorted(w[len("s3://"):] for w in written)
        kept = sorted(k.rsplit(".", 2)[-2] for k in listed if k.startswith("jobs/torch/plugins/iotrace/summaries/"))
        assert kept == ["jobfacts", "jobfacts", "summary", "summary"], listed
        for w in written:
            doc = json.loads(fs.cat_file(w[len("s3://"):]))
            [main] = [p for p in doc["tb_iotrace"]["processes"] if p.get("role") == "main"]
            got = [c["counters"]["POSIX_BYTES_READ"] for c in main["counters"] if c["path"] == str(data)]
            assert got == [2 * data.stat().st_size]                 # two active steps per window
        assert os.listdir(cwd) == []
    finally:
        srv.stop()
