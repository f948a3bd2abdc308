"""tb_iotrace.store.mirror_versions: a mirror's placeholder is named by its manifest entry, a
fetched file only while it is the very cached object (hard link, same size); files outside the
mirror, escaping it by a link or '..', or under a corrupt manifest have none; a rewritten
manifest is read again."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from tb_iotrace.store import remote
from tb_iotrace.store.mirror_versions import lazy_entry, mirror_entry


def mirror(root: Path, listing: Any) -> Path:
    top = root / "trees" / "m1"
    (top / "run" / "plugins").mkdir(parents=True)
    (top / remote.MANIFEST).write_text(json.dumps(listing))
    return top


def entry(size: int, version: str = "v1") -> dict[str, Any]:
    return {"url": "gs://b/run/h.xplane.pb", "path": "b/run/h.xplane.pb", "size": size, "version": version}


def test_placeholder_is_named_by_its_entry(tmp_path: Path) -> None:
    top = mirror(tmp_path, {"run/h.xplane.pb": entry(5)})
    p = top / "run" / "h.xplane.pb"
    p.write_bytes(b"")
    assert lazy_entry(p, tmp_path) == entry(5) == mirror_entry(p, tmp_path)
    assert lazy_entry(top / "run" / "other.xplane.pb", tmp_path) is None      # not there at all
    p.write_bytes(b"12345")                                                   # a fetched copy, not linked
    assert lazy_entry(p, tmp_path) is None and mirror_entry(p, tmp_path) is None


def test_fetched_file_is_named_only_while_it_is_the_cached_object(tmp_path: Path) -> None:
    e = entry(5)
    top = mirror(tmp_path, {"run/h.xplane.pb": e})
    obj = remote.object_path(e["url"], {"size": 5, "_version": "v1"}, tmp_path)
    obj.parent.mkdir(parents=True)
    obj.write_bytes(b"12345")
    p = top / "run" / "h.xplane.pb"
    os.link(obj, p)
    assert mirror_entry(p, tmp_path) == e
    p.unlink()
    p.write_bytes(b"12345")                 # same bytes, another file: not the cached version
    assert mirror_entry(p, tmp_path) is None


def test_outside_or_escaping_the_mirror_has_no_entry(tmp_path: Path) -> None:
    top = mirror(tmp_path, {"run/h.xplane.pb": entry(0), "../../out.xplane.pb": entry(0)})
    outside = tmp_path / "out.xplane.pb"
    outside.write_bytes(b"")
    assert lazy_entry(outside, tmp_path) is None
    assert lazy_entry(top / ".." / ".." / "out.xplane.pb", tmp_path) is None
    link = top / "run" / "h.xplane.pb"
    link.symlink_to(outside)                # inside by name, outside in fact
    assert lazy_entry(link, tmp_path) is None and mirror_entry(link, tmp_path) is None


def test_corrupt_or_odd_manifests_give_none(tmp_path: Path) -> None:
    top = mirror(tmp_path, {})
    p = top / "run" / "h.xplane.pb"
    p.write_bytes(b"")
    for body in ("{broken", "[1, 2]", json.dumps({"run/h.xplane.pb": [1]}), "\udcff"):
        (top / remote.MANIFEST).write_text(body, errors="surrogateescape")
        assert lazy_entry(p, tmp_path) is None and mirror_entry(p, tmp_path) is None, body
    (top / remote.MANIFEST).write_text(json.dumps({"run/h.xplane.pb": {"url": "x"}}))
    os.utime(top / remote.MANIFEST, ns=(1, time.time_ns() + 10**9))
    assert mirror_entry(p, tmp_path) == {"url": "x"}           # placeholder: listed as is
    p.write_bytes(b"1")
    assert mirror_entry(p, tmp_path) is None                    # fetched: lacks size/version


def test_a_rewritten_manifest_is_read_again(tmp_path: Path) -> None:
    top = mirror(tmp_path, {"run/h.xplane.pb": entry(3, "v1")})
    p = top / "run" / "h.xplane.pb"
    p.write_bytes(b"")
    assert lazy_entry(p, tmp_path)["version"] == "v1"          # type: ignore[index]
    (top / remote.MANIFEST).write_text(json.dumps({"run/h.xplane.pb": entry(30, "v22")}))
    assert lazy_entry(p, tmp_path)["version"] == "v22"         # type: ignore[index]


def test_no_manifest_anywhere_up_to_the_trees(tmp_path: Path) -> None:
    d = tmp_path / "trees" / "m2" / "run"
    d.mkdir(parents=True)
    (d / "h.xplane.pb").write_bytes(b"")
    assert lazy_entry(d / "h.xplane.pb", tmp_path) is None
    assert lazy_entry(tmp_path / "nope" / "h.xplane.pb", tmp_path) is None
