"""tb_iotrace.store.window_origin: the origin is written once per local capture folder (URLs and
non-captures skipped, an unwritable folder ignored) and read back only when it is a JSON object."""
from __future__ import annotations

import json
import os
from pathlib import Path

from tb_iotrace.store.window_origin import ORIGIN_FILE, read_origin, write_origin


def test_written_beside_local_captures_only(tmp_path: Path) -> None:
    a, b = tmp_path / "s1", tmp_path / "s2"
    a.mkdir(), b.mkdir()
    published = [str(a / "h1.xplane.pb"), str(a / "h2.xplane.pb"), str(b / "trace.json"),
                 "gs://bucket/s3/h.xplane.pb"]
    write_origin(published, {"by": "run", "at": 12})
    assert json.loads((a / ORIGIN_FILE).read_text()) == {"by": "run", "at": 12}
    assert not (b / ORIGIN_FILE).exists()
    assert read_origin(str(a / "h2.xplane.pb")) == {"by": "run", "at": 12}
    assert sorted(os.listdir(a)) == [ORIGIN_FILE]          # no temporary left behind


def test_unwritable_folder_is_skipped_without_error(tmp_path: Path) -> None:
    good = tmp_path / "ok"
    good.mkdir()
    write_origin([str(tmp_path / "missing" / "h.xplane.pb"), str(good / "h.xplane.pb")], {"by": "attach"})
    assert read_origin(str(good / "h.xplane.pb")) == {"by": "attach"}
    assert read_origin(str(tmp_path / "missing" / "h.xplane.pb")) is None


def test_read_rejects_what_is_not_an_object(tmp_path: Path) -> None:
    cap = str(tmp_path / "h.xplane.pb")
    origin = tmp_path / ORIGIN_FILE
    for body in (b"[1, 2]", b"{not json", b"\xff\xfe\x00", b"", b"null"):
        origin.write_bytes(body)
        assert read_origin(cap) is None, body
    origin.unlink()
    origin.mkdir()                                    # a folder by that name
    assert read_origin(cap) is None
