"""An idle periodic flush skips its write only when the last partial record was written: after a
failed write (a full disk), the next flush writes again even if nothing new was recorded."""
from __future__ import annotations

import json

import tb_iotrace.store.runrecord as runrecord
from tb_iotrace.recording import api, session, shim_settings
from tb_iotrace.recording.autostart import _Run
from tb_iotrace.store.runrecord import record_paths


def test_idle_flush_writes_after_a_failed_write(tmp_path, monkeypatch) -> None:
    api.enable()
    before = shim_settings.excludes()
    shim_settings.set_filters(None, before + [str(tmp_path)])   # as `run` excludes its record folder
    st = _Run(str(tmp_path), 0)
    st.flush_sess = session.begin_session()
    real = runrecord.write_record
    calls = {"n": 0}

    def write(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 1:
            raise OSError(28, "No space left on device")
        return real(*args, **kwargs)

    monkeypatch.setattr(runrecord, "write_record", write)
    try:
        st._write_partial()                    # fails: no record yet
        assert st.unwritten
        st.flush()                             # idle, but the last write failed: written now
        assert calls["n"] == 2 and not st.unwritten
        st.flush()                             # idle, the record stands: no write
        assert calls["n"] == 2                 # (no file touched in between: this window is idle)
        doc = json.loads(record_paths(str(tmp_path))[0].read_text())
        assert doc["partial"] and doc["write_errors"]["count"] == 1
    finally:
        if st.flush_sess is not None:
            session.end_session(st.flush_sess, session.Recording())
        shim_settings.set_filters(None, before)
