"""A process under ``run`` killed while a periodic flush renames its record's files (the table
renamed, the JSON not yet: a SIGKILL there is for good) keeps a readable record: the last flush's
JSON names the number of the write after it, and a table of that number is read with it (before,
the record was refused for good as "not from the same write", and ``report`` of the log dir
failed: seen in a stress run of test_cloud's killed job)."""
from __future__ import annotations

import json
import os

import pytest

from tb_iotrace.base import atomic
from tb_iotrace.recording import api, shim_settings
from tb_iotrace.recording.autostart import _Run
from tb_iotrace.store.runrecord import RecordError, read_record, record_paths


@pytest.fixture
def run_dir(tmp_path):
    api.enable()
    before = shim_settings.excludes()
    shim_settings.set_filters(None, before + [str(tmp_path / "run")])   # as `run` excludes its record folder
    yield tmp_path / "run"
    shim_settings.set_filters(None, before)


class Killed(BaseException):
    """The process ends here (as a SIGKILL would: nothing after it runs)."""


def _read_bytes(path, n: int) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.read(fd, n)
    finally:
        os.close(fd)


def _bytes_read(doc_path, data) -> int:
    rec = read_record(doc_path)
    t = rec.table()
    return sum(f["counters"].get("POSIX_BYTES_READ", 0) for f in t.dicts() if f["path"] == str(data))


def test_a_flush_killed_between_its_table_and_its_json_leaves_the_newer_counts(run_dir, tmp_path, monkeypatch):
    data = tmp_path / "data.bin"
    data.write_bytes(os.urandom(8192))
    st = _Run(str(run_dir), 60.0)
    st.forked = True                       # no first record written by its thread
    st.begin()
    try:
        _read_bytes(data, 1000)
        st.flush()                         # a whole flush: 1000 bytes
        jpath = record_paths(str(run_dir))[0]
        first = json.loads(jpath.read_text())
        assert first["partial"]
        assert _bytes_read(jpath, data) == 1000
        _read_bytes(data, 3000)

        real_commit = atomic.Staged.commit

        def torn(self) -> None:            # the record's table renamed, then the process dies
            tmp, target, _ = self._pending[0]
            if not str(target).endswith(".files.npz"):
                return real_commit(self)   # the flush's trace part, written before the record
            os.replace(tmp, target)
            self._pending.pop(0)
            raise Killed()

        monkeypatch.setattr(atomic.Staged, "commit", torn)
        with pytest.raises(Killed):
            st.flush()
        monkeypatch.undo()
        assert json.loads(jpath.read_text())["generation"] == first["generation"]   # the JSON: the first flush's
        assert _bytes_read(jpath, data) == 4000    # the table: the second's, read with it
    finally:
        st.done = True                     # the "killed" process writes nothing more
        from tb_iotrace.recording import session

        for s in (st.sess, st.flush_sess):
            if s is not None:
                session.end_session(s, None)


def test_a_table_of_another_write_is_still_refused(run_dir, tmp_path):
    """Only the write the JSON names as the next goes with it: any other table is an error."""
    from tb_iotrace.store.filetable import FileTable
    from tb_iotrace.store.runrecord import write_record

    files = [{"path": "/d/a", "module": "POSIX", "record_id": 1, "counters": {"POSIX_OPENS": 1}, "fcounters": {}}]
    write_record(str(run_dir), None, partial=True, files=FileTable.from_dicts(files), generation=5, next_generation=6)
    jpath = record_paths(str(run_dir))[0]
    doc = jpath.read_text()
    write_record(str(run_dir), None, partial=True, files=FileTable.from_dicts(files), generation=7, next_generation=8)
    jpath.write_text(doc)                  # the first write's JSON beside the third write's table
    with pytest.raises(RecordError, match="not from the same write"):
        read_record(jpath).table()
