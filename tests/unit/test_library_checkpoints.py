"""The checkpoint library hooks (tb_iotrace.recording.library_checkpoints) on stand-in
modules: each call noted once (kind, path, root, call, times, thread), a nested call not
again, what the call returns and raises unchanged; the notes reach a record's JSON."""
from __future__ import annotations

import os
import threading
import types

import pytest

from tb_iotrace.base import ckptcalls
from tb_iotrace.recording import library_checkpoints as lc


@pytest.fixture(autouse=True)
def _fresh():
    ckptcalls._calls.clear()       # noqa: SLF001
    yield
    ckptcalls._calls.clear()       # noqa: SLF001


def test_safetensors_calls_noted_with_their_file_and_directory(tmp_path):
    mod = types.SimpleNamespace(save_file=lambda tensors, filename, metadata=None: ("saved", filename),
                                load_file=lambda filename, device="cpu": {"x": 1})
    lc._safetensors(mod)           # noqa: SLF001
    path = str(tmp_path / "m.safetensors")
    assert mod.save_file({}, path) == ("saved", path) and mod.load_file(path) == {"x": 1}
    save, load = ckptcalls.snapshot()
    assert (save["kind"], save["path"], save["root"], save["call"]) == ("save", path, str(tmp_path),
                                                                         "safetensors.torch.save_file")
    assert (load["kind"], load["path"], load["root"]) == ("load", path, path)
    assert save["start_ns"] <= save["end_ns"] <= load["start_ns"] and save["tid"] == threading.get_native_id()
    lc._safetensors(mod)           # noqa: SLF001   # wrapping again keeps one wrapper
    mod.save_file({}, path)
    assert len(ckptcalls.snapshot()) == 3


def test_orbax_nested_calls_noted_once_and_errors_pass_through(tmp_path):
    class Checkpointer:
        def save(self, directory, item=None):
            return "ok"

        def restore(self, directory, item=None):
            raise ValueError("no checkpoint")

    class CheckpointManager:
        directory = str(tmp_path / "run")

        def save(self, step, args=None):
            return Checkpointer().save(os.path.join(self.directory, str(step)))

    mod = types.SimpleNamespace(Checkpointer=Checkpointer, CheckpointManager=CheckpointManager)
    lc._orbax(mod)                 # noqa: SLF001
    assert CheckpointManager().save(7) == "ok"
    with pytest.raises(ValueError, match="no checkpoint"):
        Checkpointer().restore(str(tmp_path / "run" / "7"))
    save, load = ckptcalls.snapshot()
    assert (save["call"], save["path"], save["root"]) == ("orbax.checkpoint.CheckpointManager.save",
                                                          str(tmp_path / "run" / "7"), str(tmp_path / "run"))
    assert (load["kind"], load["call"]) == ("load", "orbax.checkpoint.Checkpointer.restore")


def test_tf_checkpoint_prefix_files_under_its_directory(tmp_path):
    class Checkpoint:
        def save(self, file_prefix, options=None):
            return file_prefix + "-1"

    mod = types.SimpleNamespace(train=types.SimpleNamespace(Checkpoint=Checkpoint))
    lc._tensorflow(mod)            # noqa: SLF001
    prefix = str(tmp_path / "ck" / "model")
    assert Checkpoint().save(prefix) == prefix + "-1"
    (c,) = ckptcalls.snapshot()
    assert (c["path"], c["root"], c["call"]) == (prefix, str(tmp_path / "ck"), "tf.train.Checkpoint.save")


def test_noted_calls_go_into_the_record(tmp_path):
    from tb_iotrace.store.runrecord import read_record, write_record

    ckptcalls.note("save", "/c/a.pt", "/c", "safetensors.torch.save_file", 1, 2, 3)
    rec = read_record(write_record(str(tmp_path), None, partial=False))
    assert rec.doc["checkpoint_calls"] == [{"kind": "save", "path": "/c/a.pt", "root": "/c",
                                            "call": "safetensors.torch.save_file", "start_ns": 1, "end_ns": 2,
                                            "tid": 3}]


def test_orbax_wait_until_finished_noted_as_a_wait(tmp_path):
    class AsyncCheckpointer:
        def save(self, directory, item=None):
            self.wait_until_finished()          # orbax waits for the previous save in its save
            return "ok"

        def wait_until_finished(self):
            return None

    mod = types.SimpleNamespace(AsyncCheckpointer=AsyncCheckpointer)
    lc._orbax(mod)                 # noqa: SLF001
    ck = AsyncCheckpointer()
    assert ck.save(str(tmp_path / "s1")) == "ok" and ck.wait_until_finished() is None
    save, wait = ckptcalls.snapshot()          # the wait inside the save is the save's
    assert (save["kind"], wait["kind"], wait["call"]) == (
        "save", "wait", "orbax.checkpoint.AsyncCheckpointer.wait_until_finished")
    assert save["end_ns"] <= wait["start_ns"]


def test_a_window_capture_carries_the_calls_made_during_it():
    """The calls overlapping a window go into its capture's I/O record and are read back with
    its trace (both readers: the protobuf one and the analysis' columnar one)."""
    import tempfile

    import numpy as np

    from tb_iotrace.analysis.slim_xspace import read_slim_xspace
    from tb_iotrace.store.xplane import XSpace, io_space_bytes, read_io_data
    from tb_iotrace.store.xplane.iotrace import IoTrace

    for k, (a, b) in enumerate([(10, 20), (90, 110), (150, 160), (195, 250), (300, 310)]):
        ckptcalls.note("save", f"/c/{k}", "/c", "tf.train.Checkpoint.save", a, b, 7)
    calls = ckptcalls.between(100, 200)
    assert [c["path"] for c in calls] == ["/c/1", "/c/2", "/c/3"]
    one = lambda v: np.array([v])       # noqa: E731
    trace = IoTrace(op=np.array(["write"], object), path=np.array(["/c/1"], object), offset=one(0),
                    requested=one(8), returned=one(8), fd=one(3), errno=one(0), start_ns=one(120),
                    end_ns=one(130), tid=one(7), threads={7: (1, "main")}, checkpoint_calls=calls)
    data = bytes(io_space_bytes(trace, "/host:CPU", start_ns=0))
    space = XSpace()
    space.ParseFromString(data)
    assert read_io_data(space).checkpoint_calls == calls
    with tempfile.NamedTemporaryFile(suffix=".xplane.pb") as fh:
        fh.write(data)
        fh.flush()
        _, got = read_slim_xspace(fh.name)
    assert got is not None and got.checkpoint_calls == calls
