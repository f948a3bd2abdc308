"""tb_iotrace.store.remote without a network: URL rules (is_url, local_path, scheme, trim, join),
the one-line errors (no bucket, each kind of client failure; no credential of the URL in any of
them), the cache's keys, limits and LRU eviction, and fetch/materialize/upload/check_writable on
fsspec's in-memory filesystem: hostile object names ('..', over NAME_MAX, backslashes, writers'
temporaries) stay out of the mirror and never escape it, a record brings its own tables only, a
lazy file is a placeholder until materialized, uploads leave no temporary and send JSON last."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from fsspec.implementations.memory import MemoryFileSystem

from tb_iotrace.store import remote
from tb_iotrace.store.remote_calls import CallTimeout

SECRET_URL = "s3://AKIAEXAMPLEKEY:wJalrXUtnFEMIsecret@bucket/logs?X-Amz-Signature=deadbeefcafe"
SECRETS = ("AKIAEXAMPLEKEY", "wJalrXUtnFEMIsecret", "deadbeefcafe")


@pytest.fixture
def mem(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> MemoryFileSystem:
    """A fresh in-memory store (fsspec keeps it on the class) and a cache in tmp_path."""
    monkeypatch.setattr(MemoryFileSystem, "store", {})
    monkeypatch.setattr(MemoryFileSystem, "pseudo_dirs", [""])
    monkeypatch.setenv("TB_IOTRACE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(remote, "STATS", remote.Stats())
    return MemoryFileSystem()


def test_url_rules() -> None:
    assert remote.is_url("S3://b/x") and remote.is_url("gs+x://b")
    assert not remote.is_url(Path("s3://b/x")) and not remote.is_url("FILE:///tmp/x")
    assert not remote.is_url("1s3://b") and not remote.is_url("://b") and not remote.is_url("")
    assert remote.local_path("FILE:///tmp/x") == "/tmp/x" and remote.local_path("gs://b") == "gs://b"
    assert remote.scheme("GS://b/x") == "gs" and remote.scheme("/tmp/x") == ""
    assert remote.trim("s3://") == "s3://" and remote.trim("s3:///") == "s3:///"
    assert remote.trim("gs://b/x//") == "gs://b/x" and remote.trim("/tmp/x/") == "/tmp/x"
    assert remote.join("s3://b/", "", "/a/", "c.json") == "s3://b/a/c.json"


@pytest.mark.parametrize("url", ["s3://", "s3:///logs", "gs://AKIAEXAMPLEKEY:wJalrXUtnFEMIsecret@/logs"])
def test_an_object_store_url_without_a_bucket_is_one_line_without_secrets(url: str) -> None:
    with pytest.raises(remote.RemoteError, match="no bucket in the URL") as ei:
        remote.filesystem(url)
    text = str(ei.value)
    assert "\n" not in text and not any(s in text for s in SECRETS)


@pytest.mark.parametrize("exc, want", [
    (FileNotFoundError("gone"), "no such bucket or object (gone)"),
    (FileNotFoundError(), "no such bucket or object"),
    (PermissionError("x"), "access denied (check the credentials"),
    (RuntimeError("Forbidden: no"), "access denied (check the credentials"),
    (ConnectionRefusedError("refused"), "cannot reach the storage server (ConnectionRefusedError: refused)"),
    (RuntimeError("SignatureDoesNotMatch: bad"), "access denied (RuntimeError: SignatureDoesNotMatch: bad)"),
    (ValueError(), "ValueError"),
    (CallTimeout("the storage server did not answer within 20 s"), "the storage server did not answer within 20 s"),
])
def test_why_names_each_kind_of_failure(exc: BaseException, want: str) -> None:
    assert remote.why(exc).startswith(want)


def test_a_client_message_quoting_the_url_loses_its_secrets_and_stays_short() -> None:
    quoted = f"GET {SECRET_URL} failed: key AKIAEXAMPLEKEY\nsecret wJalrXUtnFEMIsecret " + "x" * 1000
    err = remote.failure(SECRET_URL, RuntimeError(quoted))
    text = str(err)
    assert isinstance(err, OSError) and "\n" not in text
    assert not any(s in text for s in SECRETS), text
    assert text.startswith("s3://***@bucket/logs?X-Amz-Signature=***: ") and len(text) < 420


def test_cache_root_and_limit(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TB_IOTRACE_CACHE", str(tmp_path / "c"))
    assert remote.cache_root() == tmp_path / "c"
    monkeypatch.delenv("TB_IOTRACE_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert remote.cache_root() == tmp_path / "xdg" / "tb_iotrace" / "remote"
    for value, want in (("abc", remote.DEFAULT_CACHE_BYTES), ("-5", 0), ("123", 123)):
        monkeypatch.setenv("TB_IOTRACE_CACHE_BYTES", value)
        assert remote.cache_limit() == want


def test_cache_keys_follow_version_and_size(tmp_path: Path) -> None:
    assert remote.version_of({"ETag": "e", "generation": 7}) == "generation=7"
    assert remote.version_of({"generation": "", "mtime": 5}) == "mtime=5" and remote.version_of({}) == ""
    a = remote.object_path("s3://b/k", {"ETag": "1", "size": 3}, tmp_path)
    assert a == remote.object_path("s3://b/k", {"ETag": "1", "size": 3}, tmp_path)
    assert a.parent.parent == tmp_path / "objects" and a.parent.name == a.name[:2]
    others = {remote.object_path("s3://b/k", {"ETag": "2", "size": 3}, tmp_path),
              remote.object_path("s3://b/k", {"ETag": "1", "size": 4}, tmp_path),
              remote.object_path("s3://b/k2", {"ETag": "1", "size": 3}, tmp_path)}
    assert a not in others and len(others) == 3


def test_names_past_name_max_do_not_fit() -> None:
    assert remote.fits_locally("a" * 255) and not remote.fits_locally("a" * 256)
    assert not remote.fits_locally("\u00e9" * 128)          # 256 bytes in UTF-8


def test_mirror_path_never_leaves_the_cache_nor_names_a_secret(tmp_path: Path) -> None:
    p = remote.mirror_path("s3://KEYID1:SECRET1@bkt/../../etc/./x?sig=SIGVALUE#frag", tmp_path)
    assert p.resolve().is_relative_to((tmp_path / "trees").resolve())
    assert p.parts[-3:] == ("bkt", "etc", "x")
    assert not any(s in str(p) for s in ("KEYID1", "SECRET1", "SIGVALUE", "frag"))
    assert remote.mirror_path("s3://b/x/", tmp_path) == remote.mirror_path("s3://b/x", tmp_path)


def test_evict_removes_least_recently_used_first_and_spares_kept(tmp_path: Path) -> None:
    objs = []
    for i in range(4):
        p = tmp_path / "objects" / f"{i:02d}" / f"{i:02d}obj"
        p.parent.mkdir(parents=True)
        p.write_bytes(b"x" * 100)
        os.utime(p, (1000 + i, 1000 + i))
        objs.append(p)
    removed = remote.evict(tmp_path, limit=200, keep=[objs[0]])
    assert removed == 200
    assert [p.exists() for p in objs] == [True, False, False, True]
    assert remote.evict(tmp_path, limit=200) == 0


def test_fetch_mirrors_wanted_files_and_leaves_hostile_names_out(mem: MemoryFileSystem, tmp_path: Path) -> None:
    mem.pipe("/bkt/logs/run/h.xplane.pb", b"capture")
    mem.pipe("/bkt/logs/run/" + "L" * 300 + ".xplane.pb", b"long")
    mem.pipe("/bkt/logs/run/.part-123-h.xplane.pb", b"partial")
    mem.pipe("/bkt/logs/run/a\\b.xplane.pb", b"backslash")
    mem.pipe("/bkt/logs/run/notes.txt", b"unwanted")
    MemoryFileSystem.store["/bkt/logs/run/../escape.xplane.pb"] = MemoryFileSystem.store["/bkt/logs/run/h.xplane.pb"]
    top = remote.fetch("memory://bkt/logs", lambda n: n.endswith(".xplane.pb"))
    files = sorted(p.relative_to(top).as_posix() for p in top.rglob("*") if p.is_file())
    assert files == ["run/h.xplane.pb"]
    assert (top / "run" / "h.xplane.pb").read_bytes() == b"capture"
    assert top.resolve().is_relative_to((tmp_path / "cache" / "trees").resolve())
    assert not list((tmp_path / "cache" / "trees").rglob("escape*"))
    assert remote.STATS.objects == 1 and remote.STATS.bytes == 7
    # unchanged: not fetched again; gone from the URL: gone from the mirror
    remote.fetch("memory://bkt/logs", lambda n: n.endswith(".xplane.pb"))
    assert remote.STATS.objects == 1
    mem.rm("/bkt/logs/run/h.xplane.pb")
    remote.fetch("memory://bkt/logs", lambda n: n.endswith(".xplane.pb"))
    assert not (top / "run" / "h.xplane.pb").exists()


def test_fetch_of_a_record_brings_its_own_tables_only(mem: MemoryFileSystem) -> None:
    for name in ("h.1.json", "h.1.npz", "h.1.files.npz", "h.10.json", "h.10.npz"):
        mem.pipe(f"/bkt/logs/plugins/iotrace/{name}", name.encode())
    got = remote.fetch("memory://bkt/logs/plugins/iotrace/h.1.json", lambda n: True)
    assert got.name == "h.1.json" and got.read_bytes() == b"h.1.json"
    assert sorted(p.name for p in got.parent.iterdir()) == ["h.1.files.npz", "h.1.json", "h.1.npz"]


def test_fetch_of_a_missing_object_is_one_line(mem: MemoryFileSystem) -> None:
    with pytest.raises(remote.RemoteError, match=r"^memory://bkt/nope: no such bucket or object"):
        remote.fetch("memory://bkt/nope", lambda n: True)


def test_lazy_files_are_placeholders_until_materialized(mem: MemoryFileSystem, tmp_path: Path) -> None:
    mem.pipe("/bkt/logs/run/h.xplane.pb", b"capture-bytes")
    top = remote.fetch("memory://bkt/logs", lambda n: True, lazy=lambda n: n.endswith(".pb"))
    f = top / "run" / "h.xplane.pb"
    assert f.is_file() and f.stat().st_size == 0 and remote.STATS.objects == 0
    assert remote.materialize(f) is True
    assert f.read_bytes() == b"capture-bytes" and remote.STATS.objects == 1
    assert remote.materialize(f) is True and remote.STATS.objects == 1      # fetched once
    outside = tmp_path / "elsewhere.pb"
    outside.write_bytes(b"")
    assert remote.materialize(outside) is False


def test_upload_sends_json_last_skips_dot_files_and_leaves_no_temporary(mem: MemoryFileSystem,
                                                                       tmp_path: Path) -> None:
    src = tmp_path / "stage"
    (src / "plugins" / "iotrace").mkdir(parents=True)
    (src / "plugins" / "iotrace" / "h.1.json").write_text("{}")
    (src / "plugins" / "iotrace" / "h.1.npz").write_bytes(b"npz")
    (src / "z.xplane.pb").write_bytes(b"pb")
    (src / ".h.2.json.tmp").write_text("partial")
    done = remote.upload(src, "memory://bkt/out/")
    assert done == ["memory://bkt/out/plugins/iotrace/h.1.npz", "memory://bkt/out/z.xplane.pb",
                    "memory://bkt/out/plugins/iotrace/h.1.json"]
    assert sorted(MemoryFileSystem.store) == ["/bkt/out/plugins/iotrace/h.1.json", "/bkt/out/plugins/iotrace/h.1.npz",
                                              "/bkt/out/z.xplane.pb"]
    assert mem.cat("/bkt/out/z.xplane.pb") == b"pb"


def test_check_writable_names_a_missing_folder(mem: MemoryFileSystem) -> None:
    mem.pipe("/bkt/present/x", b"1")
    remote.check_writable("memory://bkt/present/out")
    with pytest.raises(remote.RemoteError, match=r"no such bucket or folder \(/nobkt\)"):
        remote.check_writable("memory://nobkt/out")
