"""tb_iotrace.recording.session: native sessions begin and end (an ended or forgotten one is not
read again, end_all_and_disable ends every live one and forgets it), and a Recording's tables and
lookups (files by index, slice, path and module; the per-row path, module and op columns;
records() and to_dict()) agree with what was recorded."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tb_iotrace.recording import object_hooks, session
from tb_iotrace.recording.ffi import native

from built_inputs import pread_file


def test_an_ended_session_is_not_read_again(shim: Any, tmp_path: Path) -> None:
    shim.enable()
    p = tmp_path / "once.bin"
    p.write_bytes(b"o" * 100)
    sess = session.begin_session()
    pread_file(p)
    first = session.Recording()
    session.end_session(sess, first)
    assert first.closed and first.file(p).counters["POSIX_READS"] == 2
    again = session.Recording()
    session.end_session(sess, again)                           # no double free, nothing read
    assert not again.closed and len(again.files) == 0 and again.start_ns == 0
    assert sess not in session._live and sess not in session._left_out_at


def test_a_session_ended_unread_frees_its_slot_and_hooks(shim: Any, tmp_path: Path) -> None:
    """end_session(sess, None): a run's flush session at a worker's exit, a stale window's."""
    shim.enable()
    users = object_hooks._users
    p = tmp_path / "x.bin"
    p.write_bytes(b"x" * 10)
    sess = session.begin_session()
    pread_file(p)                                              # something it would have copied out
    session.end_session(sess, None)
    assert sess not in session._live and sess not in session._left_out_at
    assert object_hooks._users == users
    with shim.capture(), shim.capture(), shim.capture(), shim.capture():   # all 4 slots free
        pass


def test_end_all_and_disable_ends_every_live_session_unread(shim: Any, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(session, "_left_out_at", {})
    _, lib = native()
    shim.enable()
    a, b = session.begin_session(), session.begin_session()
    users = object_hooks._users
    session.end_all_and_disable()
    assert object_hooks._users == users - 2                    # each one's hooks released
    assert not lib.tbio_is_enabled() and session._live == set()
    rec = session.Recording()
    session.end_session(a, rec)
    assert not rec.closed and rec.events.start_ns.shape == (0,)
    with shim.capture():                                       # all 4 slots free again
        with shim.capture(), shim.capture(), shim.capture():
            pass
    assert object_hooks._users == users - 2
    assert a not in session._left_out_at and b not in session._left_out_at   # nothing kept of them


def test_forget_drops_a_session_from_the_live_set_only(shim: Any) -> None:
    _, lib = native()
    shim.enable()
    users = object_hooks._users
    sess = session.begin_session()
    try:
        session.forget(sess)
        assert sess not in session._live
        rec = session.Recording()
        session.end_session(sess, rec)                         # not ours any more: left alone
        assert not rec.closed and object_hooks._users == users + 1   # its hooks still held
    finally:
        ended = lib.tbio_end(sess)
        if ended:
            lib.tbio_session_free(ended)
        object_hooks.release()
        session._left_out_at.pop(sess, None)


def test_a_recordings_files_and_lookups(shim: Any, tmp_path: Path, libio_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from capture_util import load_libio

    io = load_libio(libio_path)
    a, b, s = tmp_path / "a.bin", tmp_path / "b.bin", tmp_path / "s.txt"
    for p in (a, b):
        p.write_bytes(b"d" * 100)
    with shim.capture() as cap:
        pread_file(a, 2)
        pread_file(b, 1)
        assert io.c_stdio_write(str(s).encode(), 64, 2) > 0
    files = cap.files
    names = [(f.path, f.module) for f in files]
    for want in ((str(a), "POSIX"), (str(b), "POSIX"), (str(s), "STDIO")):
        assert want in names
    assert files[-1] == files[len(files) - 1] and files[0:2] == list(files)[:2] and files == list(files)
    with pytest.raises(IndexError):
        files[len(files)]
    with pytest.raises(IndexError):
        files[-len(files) - 1]
    assert repr(files) == f"FileRecords({len(files)} files)"
    monkeypatch.chdir(tmp_path)
    assert cap.file("a.bin").counters["POSIX_READS"] == 2 and cap.file(b).counters["POSIX_READS"] == 1
    assert cap.file(a, "STDIO") is None and cap.file(tmp_path / "none.bin") is None
    assert cap.file(s, "STDIO").counters["STDIO_WRITES"] >= 1 and cap.file(a).path_bytes == os.fsencode(str(a))
    ev = cap.events
    mine = ev.path == str(a)
    assert mine.sum() >= 4 and set(ev.op[mine]) >= {"pread64", "close"} and set(ev.module[mine]) == {"POSIX"}
    assert list(ev.path_names(np.array([ev.file_id[mine][0], session.NO_FILE]))) == [str(a), ""]
    assert all(ev.tid[i] == cap.threads[ev.thread[i]].tid for i in range(len(ev)))
    d = cap.to_dict()
    assert d["nevents"] == len(ev) and d["files"] == cap.records() and d["end_ns"] >= d["start_ns"] > 0
    assert {(r["path"], r["module"]) for r in cap.records()} == set(names)


def test_file_codes_and_per_row_columns_of_a_hand_made_table() -> None:
    n = 4
    z = np.zeros(n, np.int64)
    ev = session.EventTable(start_ns=z, end_ns=z, op_id=np.array([0, 1, 0, 1]),
                            file_id=np.array([2, session.NO_FILE, 0, 9], np.uint32), fd=z, offset=z,
                            requested=z, returned=z, errno=z, thread=z, tid=z, op_names=("open", "read"),
                            paths={0: "/a", 2: "/c", 9: "/j"}, modules={0: "POSIX", 2: "STDIO"})
    codes, lut = ev.file_codes(dict(ev.paths))
    assert [lut[c] for c in codes] == ["/c", "", "/a", "/j"]
    assert list(ev.path) == ["/c", "", "/a", "/j"] and list(ev.module) == ["STDIO", "", "POSIX", ""]
    assert list(ev.op) == ["open", "read", "open", "read"]
    assert ev.path_names(np.array([9, 5])) == ["/j", ""]
    empty = session._empty_events()
    assert len(empty) == 0 and list(empty.op) == [] and list(empty.path) == []


def test_untracked_is_true_only_when_something_was_left_out() -> None:
    assert not session.Untracked() and not session.Untracked(bytes_read=5)
    u = session.Untracked(files=1, examples=("/x",))
    assert u and u.to_dict()["examples"] == ["/x"] and session.Untracked(reentrant_calls=1)
