"""tb_iotrace.store.remote_summaries on fsspec's memory:// store: a capture's version as a reader
names it (none once the object is not the bytes uploaded), and the summary kept beside it in the
bucket, where a profile capture's or a PyTorch trace's reader looks (nothing for an object with
no such place, an invalid row or invalid job facts)."""
from __future__ import annotations

import json
import os

from tb_iotrace.store import jobfacts, summaries
from tb_iotrace.store.remote_summaries import keep_remote, remote_identity, uploaded_identity

ROW = {"host": "w0", "source": "counters", "bytes_read": 4096, "bytes_written": 0, "read_time_s": 0.5,
       "io_calls": 3, "files": 1, "input_wait_ns": 10, "input_wait_pct": 1.0, "span_ns": 1000, "wait_basis": "steps"}


def _fs():
    import fsspec

    return fsspec.filesystem("memory")


def test_the_version_of_the_bytes_uploaded():
    fs = _fs()
    url = f"memory://rs{os.getpid()}/logs/plugins/profile/s/w0.xplane.pb"
    fs.pipe_file(url[len("memory://"):], b"x" * 100)
    [ident] = remote_identity(url, 100)
    assert ident[:2] == ["remote", url] and ident[3] == 100
    assert remote_identity(url, 99) is None                   # another object than the one uploaded


def test_summaries_kept_where_readers_look():
    fs = _fs()
    base = f"memory://rs{os.getpid()}/logs"
    ident = [["remote", "u", "v", 100]]
    for url, folder, name in ((f"{base}/run/plugins/profile/s/w0.xplane.pb", f"{base}/run/plugins/iotrace/summaries",
                               "profile/s/w0.xplane.pb"),
                              (f"{base}/torch/w0.1.pt.trace.json.gz", f"{base}/torch/plugins/iotrace/summaries",
                               "w0.1.pt.trace.json.gz")):
        assert summaries.beside_url(url) == (folder, name)
        assert keep_remote(url, ident, ROW, None) == ["summary"]
        doc = json.loads(fs.cat_file(f"{folder}/{summaries.doc_name(name, '')}"[len("memory://"):]))
        assert doc == summaries.make_doc(name, "", [ident], summaries.row_of(ROW))     # of that version
        assert "host" not in doc["row"]
        assert keep_remote(url, ident, {**ROW, "source": "guess"}, None) == []          # an invalid row
        assert keep_remote(url, ident, None, {"steps": "many"}) == []                   # invalid facts
        assert not fs.exists(f"{folder}/{summaries.doc_name(name, '', jobfacts.SUFFIX)}"[len("memory://"):])
    assert keep_remote(f"{base}/loose.xplane.pb", ident, ROW, None) == []              # no place beside it


def test_a_records_version_is_of_its_json_and_tables(tmp_path):
    """A whole-run record uploaded: its summary in its run's plugins/iotrace/summaries/, of the
    versions of its JSON and of each table uploaded beside it (in the order a reader's mirror
    lists them); none once any of them is not the bytes uploaded."""
    fs = _fs()
    base = f"memory://rr{os.getpid()}/logs"
    url = f"{base}/plugins/iotrace/vm.7.json"
    assert summaries.beside_url(url) == (f"{base}/plugins/iotrace/summaries", "iotrace/vm.7.json")
    assert summaries.beside_url(f"{base}/x/vm.7.json") is None                      # no run's record
    local = tmp_path / "0.vm.7.json"
    for name, size in (("vm.7.json", 30), ("vm.7.npz", 40), ("vm.7.files.npz", 50)):
        (tmp_path / f"0.{name}").write_bytes(b"r" * size)
        fs.pipe_file(f"{base}/plugins/iotrace/{name}"[len("memory://"):], b"r" * size)
    ident = uploaded_identity(url, str(local))
    assert [(i[1].rsplit("/", 1)[1], i[3]) for i in ident] == [("vm.7.json", 30), ("vm.7.npz", 40),
                                                                 ("vm.7.files.npz", 50)]
    (tmp_path / "0.vm.7.files.npz").unlink()                     # a record without a file table
    assert len(uploaded_identity(url, str(local))) == 2
    fs.pipe_file(f"{base}/plugins/iotrace/vm.7.npz"[len("memory://"):], b"r" * 41)   # replaced since
    assert uploaded_identity(url, str(local)) is None
