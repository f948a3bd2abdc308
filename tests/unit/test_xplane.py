"""tb_iotrace.store.xplane: the message classes (against xplane.proto and TensorFlow's), the wire
helpers and thread line ids, and the helpers the other xplane tests share (reading a capture:
test_read_xspace; the I/O writer: test_xplane_encode; reading the I/O back: test_read_io; merging
into a saved capture and what xprof's viewers draw: test_xplane_merge).

TensorFlow and xprof are installed wherever these tests run (dev venv and CI); they are used
as the reference implementations, never by tb_iotrace.store.xplane itself.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tb_iotrace.store import xplane as X
from tb_iotrace.store.xplane import _proto, wire

REPO = Path(__file__).resolve().parents[2]
GPU_HOST = "34.83.195.179_6003"
PROTO_FILE = REPO / "tb_iotrace" / "store" / "xplane" / "xplane.proto"
T0 = 1_700_000_000_000_000_000  # an arbitrary profile start for the GPU capture (it has none)


# --------------------------------------------------------------------------- helpers


def make_trace(n: int, start: int, *, nthreads: int = 3, seed: int = 0, dropped: int = 0) -> X.IoTrace:
    rng = np.random.default_rng(seed)
    ops = np.array(["pread64", "read", "open", "close", "fwrite", "write"], dtype=object)
    paths = np.array([f"/data/shard-{i:03d}.tfrecord" for i in range(20)]
                     + ["", "/tmp/odd \udcff\n\tname", "/tmp/ünï😀", "/tmp/lone \ud800 surrogate"],
                     dtype=object)
    tids = np.arange(4000, 4000 + nthreads, dtype=np.int64)
    st = start + np.sort(rng.integers(0, 50_000_000, n))
    return X.IoTrace(
        op=ops[rng.integers(0, len(ops), n)],
        path=paths[rng.integers(0, len(paths), n)],
        offset=np.where(rng.random(n) < 0.2, -1, rng.integers(0, 1 << 40, n)),
        requested=rng.integers(0, 1 << 20, n),
        returned=rng.integers(-1, 1 << 20, n),
        fd=rng.integers(-1, 100, n),
        errno=np.where(rng.random(n) < 0.1, 5, 0),
        start_ns=st,
        end_ns=st + rng.integers(0, 200_000, n),
        tid=tids[rng.integers(0, nthreads, n)],
        threads={int(t): (0x7F0000000000 + int(t), f"worker-{t}") for t in tids},
        dropped=dropped,
        counters=[{"path": "/data/shard-001.tfrecord", "module": "POSIX",
                   "counters": {"POSIX_READS": 3, "POSIX_BYTES_READ": 12288},
                   "fcounters": {"POSIX_F_READ_TIME": 0.25}},
                  {"path": "/tmp/odd \udcff\n\tname", "module": "STDIO",
                   "counters": {"STDIO_WRITES": 1}, "fcounters": {}}],
    )


def assert_same_rows(expected: X.IoTrace, got: X.IoTrace) -> None:
    """read_io_data returns rows by tid then start time."""
    order = np.lexsort((expected.start_ns, expected.tid))
    assert len(got) == len(expected)
    for name in X.iotrace.COLUMNS:
        a, b = getattr(expected, name)[order], getattr(got, name)
        if a.dtype == object:
            assert a.tolist() == b.tolist(), name
        else:
            np.testing.assert_array_equal(a, b, err_msg=name)


def capture_copy(tmp_path: Path, src: Path, host: str = GPU_HOST) -> Path:
    run = tmp_path / "logdir" / "plugins" / "profile" / "2020_01_01_00_00_00"
    run.mkdir(parents=True)
    dst = run / f"{host}.xplane.pb"
    shutil.copyfile(src, dst)
    os.chmod(dst, 0o644)
    return dst


def viewer(path: Path, tool: str):
    """(process names by pid, thread names by (pid, tid), complete events) from xprof."""
    from xprof.convert import raw_to_tool_data

    data, _ = raw_to_tool_data.xspace_to_tool_data([str(path)], tool, {})
    assert data, f"xprof {tool} returned nothing for {path}"
    events = json.loads(data)["traceEvents"]
    procs = {e["pid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "process_name"}
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
               if e.get("ph") == "M" and e.get("name") == "thread_name"}
    spans = [e for e in events if e.get("ph") == "X"]
    return procs, threads, spans


def selected_event_args(path: Path, event: dict) -> dict:
    """What trace_viewer@ returns for an event the user selects (xprof's event details)."""
    from xprof.convert import raw_to_tool_data

    opts = {"event_name": event["name"], "start_time_ms": str(event["ts"] / 1000),
            "duration_ms": str(event["dur"] / 1000), "unique_id": str(event["args"]["uid"]), "format": "json"}
    data, _ = raw_to_tool_data.xspace_to_tool_data([str(path)], "trace_viewer@", {"trace_viewer_options": opts})
    (sel,) = [e for e in json.loads(data)["traceEvents"] if e.get("ph") == "X"]
    assert (sel["name"], sel["ts"]) == (event["name"], event["ts"])
    return sel["args"]


def host_pid(procs: dict) -> int:
    pids = [pid for pid, name in procs.items() if name.split(" ")[-1] == "/host:CPU"]
    assert len(pids) == 1, procs
    return pids[0]


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def tf_xplane():
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    return xplane_pb2


# --------------------------------------------------------------------------- schema


def parse_proto_file(text: str) -> dict[str, dict[str, tuple]]:
    """A small parser for xplane.proto: message -> field -> (number, type, label, oneof)."""
    text = re.sub(r"//[^\n]*", "", text)
    messages: dict[str, dict[str, tuple]] = {}
    stack: list[tuple[str, str]] = []  # (kind, name)
    for raw in text.split("\n"):
        line = raw.strip()
        if not line:
            continue
        m = re.match(r"(message|oneof)\s+(\w+)\s*\{$", line)
        if m:
            stack.append((m.group(1), m.group(2)))
            if m.group(1) == "message":
                messages[m.group(2)] = {}
            continue
        if line == "}":
            stack.pop()
            continue
        m = re.match(r"(repeated\s+)?(map<\s*\w+\s*,\s*\w+\s*>|\w+)\s+(\w+)\s*=\s*(\d+)\s*;$", line)
        if m and stack:
            msg = next(name for kind, name in reversed(stack) if kind == "message")
            oneof = stack[-1][1] if stack[-1][0] == "oneof" else ""
            ftype = re.sub(r"\s+", "", m.group(2))
            label = "repeated" if (m.group(1) or ftype.startswith("map<")) else ""
            messages[msg][m.group(3)] = (int(m.group(4)), ftype, label, oneof)
    return messages


_TYPE_NAMES = {3: "int64", 4: "uint64", 1: "double", 9: "string", 12: "bytes"}


def describe(file_descriptor) -> dict[str, dict[str, tuple]]:
    """Same shape as parse_proto_file, from a runtime FileDescriptor."""
    out: dict[str, dict[str, tuple]] = {}
    for name, msg in file_descriptor.message_types_by_name.items():
        fields = {}
        for f in msg.fields:
            if f.message_type is not None and f.message_type.GetOptions().map_entry:
                k, v = f.message_type.fields_by_name["key"], f.message_type.fields_by_name["value"]
                ftype = f"map<{_TYPE_NAMES[k.type]},{v.message_type.name}>"
                label = "repeated"
            else:
                ftype = f.message_type.name if f.message_type is not None else _TYPE_NAMES[f.type]
                repeated = f.is_repeated if hasattr(f, "is_repeated") else f.label == f.LABEL_REPEATED
                label = "repeated" if repeated else ""
            oneof = f.containing_oneof.name if f.containing_oneof is not None else ""
            fields[f.name] = (f.number, ftype, label, oneof)
        out[name] = fields
    return out


def test_python_descriptor_matches_proto_file():
    from_file = parse_proto_file(PROTO_FILE.read_text())
    assert set(from_file) == {"XSpace", "XPlane", "XLine", "XEvent", "XStat", "XEventMetadata", "XStatMetadata"}
    assert from_file["XLine"]["display_id"] == (10, "int64", "", "")
    assert from_file["XStat"]["ref_value"] == (7, "uint64", "", "value")
    assert describe(_proto.FILE_DESCRIPTOR) == from_file
    assert _proto.FILE_DESCRIPTOR.package == "tensorflow.profiler"
    assert re.search(r"^package tensorflow\.profiler;$", PROTO_FILE.read_text(), re.M)


@pytest.mark.tf
def test_python_descriptor_matches_tensorflow(tf_xplane):
    from google.protobuf import descriptor_pb2

    assert describe(_proto.FILE_DESCRIPTOR) == describe(tf_xplane.DESCRIPTOR)
    # Whole descriptors too (messages, nested map entries, oneofs, reserved ranges).
    ours, theirs = descriptor_pb2.FileDescriptorProto(), descriptor_pb2.FileDescriptorProto()
    _proto.FILE_DESCRIPTOR.CopyToProto(ours)
    tf_xplane.DESCRIPTOR.CopyToProto(theirs)
    for fdp in (ours, theirs):
        fdp.ClearField("name")
        for msg in fdp.message_type:
            for f in list(msg.field) + [f for nt in msg.nested_type for f in nt.field]:
                f.ClearField("json_name")
    assert list(ours.message_type) == list(theirs.message_type)


@pytest.mark.tf
def test_private_pool_coexists_with_tensorflow(gpu_capture, tf_xplane):
    from google.protobuf import descriptor_pool

    # TF's registration in the default pool is intact, and ours is elsewhere.
    default = descriptor_pool.Default()
    assert default.FindMessageTypeByName("tensorflow.profiler.XSpace") is tf_xplane.XSpace.DESCRIPTOR
    assert X.XSpace.DESCRIPTOR is not tf_xplane.XSpace.DESCRIPTOR
    assert X.XSpace.DESCRIPTOR.full_name == tf_xplane.XSpace.DESCRIPTOR.full_name
    raw = gpu_capture.read_bytes()
    ours = X.XSpace.FromString(raw)
    theirs = tf_xplane.XSpace.FromString(raw)
    assert ours.SerializeToString(deterministic=True) == theirs.SerializeToString(deterministic=True)
    assert tf_xplane.XSpace.FromString(ours.SerializeToString()) == theirs


def test_import_needs_no_tensorflow():
    code = ("import sys, tb_iotrace.store.xplane as x; "
            "assert 'tensorflow' not in sys.modules, 'tensorflow imported'; "
            "assert x.XSpace.DESCRIPTOR.file.pool is not __import__('google.protobuf.descriptor_pool', "
            "fromlist=['x']).Default()")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=60)


# --------------------------------------------------------------------------- wire encoding


def test_wire_varints_match_protobuf():
    values = np.array([0, 1, 127, 128, 300, 2**32, 2**63 - 1, -1, -300], dtype=np.int64)
    rows = wire.Rows(len(values)).varint_field(4, values).wrap(4).finish()
    data = rows.data.tobytes()
    ends = rows.ends()
    for i, v in enumerate(values.tolist()):
        ev = X.XEvent()
        ev.stats.add(int64_value=v)
        a = int(ends[i - 1]) if i else 0
        assert data[a:int(ends[i])] == ev.SerializeToString()


# --------------------------------------------------------------------------- thread lines


def test_thread_line_id_matches_libstdcxx_hash():
    # std::hash<std::thread::id> for a main thread seen in a TF 2.21 capture on this machine
    assert X.thread_line_id(140279877782400) == 6145426817083010591


