"""Logdirs and outputs given as URLs (``s3://``, ``gs://`` and whatever else fsspec knows).

The readers and writers of the package work on local files (the decoders memory-map them), so a
URL is bridged at its edge:

- reading: :func:`fetch` lists the remote tree one level at a time (``fs.ls``, the store's
  delimiter listing; never a recursive glob), fetches each file the scanner reads (captures,
  run records, PyTorch traces) once into a bounded local cache keyed by the object's
  etag/generation and size, and lays out a local mirror of the tree with hard links to the
  cached objects. A changed object has another key and is fetched again; an unchanged one is
  not fetched at all. :data:`STATS` counts what came over the network;
- writing: the caller writes into a local staging folder; :func:`upload` sends each file whole
  (object stores replace an object atomically on PUT; other filesystems get a temporary name and
  a rename).

``file://`` URLs and plain paths are local and never come here (:func:`is_url` says no). A URL
whose scheme's client is not installed is :class:`RemoteError` naming the extra
(``pip install tb_iotrace[cloud]``); every remote failure (missing bucket, wrong key or
credentials, server down, a server that hangs: each call has a deadline, :mod:`.remote_calls`)
is one line, with no credential of the URL in it (:mod:`tb_iotrace.base.redact`). Credentials and endpoints come the standard way (AWS_*
variables and config for s3fs, Application Default Credentials or ``STORAGE_EMULATOR_HOST`` for
gcsfs).
"""
from __future__ import annotations

import hashlib
import logging
import os
import posixpath
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tb_iotrace.base.redact import redact_url, scrub, where
from tb_iotrace.store.remote_calls import CallTimeout, call, storage_options

EXTRA = "pip install tb_iotrace[cloud]"
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
# schemes whose objects are replaced whole by one PUT (no rename needed, none atomic)
OBJECT_STORES = {"s3", "s3a", "gs", "gcs", "az", "abfs", "abfss", "adl", "oss", "r2"}
# where a scheme's client comes from, for the error that names it
CLIENTS = {"s3": "s3fs", "s3a": "s3fs", "gs": "gcsfs", "gcs": "gcsfs", "az": "adlfs", "abfs": "adlfs",
           "abfss": "adlfs"}
MAX_DEPTH = 10          # folder levels below the URL listed
MAX_DIRS = 5000         # folders listed by one fetch
MAX_NAME_BYTES = 255    # NAME_MAX: an object whose name is longer is left out of the mirror
DEFAULT_CACHE_BYTES = 4 << 30


class RemoteError(OSError):
    """A URL that cannot be used: its one-line message is for the user."""


@dataclass
class Stats:
    """What the fetches of this process brought over the network (tests and benchmarks read it)."""
    objects: int = 0
    bytes: int = 0
    listed_dirs: int = 0


STATS = Stats()


def is_url(value: str | os.PathLike[str]) -> bool:
    """A remote URL (a scheme other than ``file``); plain paths and ``file://`` are local."""
    if not isinstance(value, str):
        return False
    m = _SCHEME.match(value)
    return bool(m) and m.group(1).lower() != "file"


def local_path(value: str) -> str:
    """A ``file://`` URL's path; anything else unchanged."""
    return value[len("file://"):] if value.lower().startswith("file://") else value


def scheme(url: str) -> str:
    m = _SCHEME.match(url)
    return m.group(1).lower() if m else ""


def trim(url: str) -> str:
    """``url`` without trailing slashes, but "s3://" stays "s3://" (a URL whose error says the
    bucket is missing), never "s3:" (a local folder's name)."""
    base = url.rstrip("/")
    return url if base.endswith(":") else base


def join(url: str, *parts: str) -> str:
    return posixpath.join(trim(url), *[p.strip("/") for p in parts if p])


# the clients log each retry and failure with a traceback; without a handler of the
# application's, Python's last-resort handler printed them on stderr (our one line says it)
QUIET_LOGGERS = ("fsspec", "s3fs", "gcsfs", "aiobotocore", "botocore", "google", "urllib3", "aiohttp",
                 "asyncio")  # asyncio: "Task exception was never retrieved" of a dropped connection


def _quiet_clients() -> None:
    for name in QUIET_LOGGERS:
        lg = logging.getLogger(name)
        if not any(isinstance(h, logging.NullHandler) for h in lg.handlers):
            lg.addHandler(logging.NullHandler())


def filesystem(url: str) -> tuple[Any, str]:
    """``(fs, path)`` for a URL; :class:`RemoteError` naming the extra when its client (or
    fsspec) is not installed."""
    sch = scheme(url)
    _quiet_clients()
    if sch in OBJECT_STORES and not where(url).split("/", 1)[0]:
        # "s3://" alone: no bucket (never a local folder "s3:", which is what is left of it once
        # a trailing slash is stripped)
        raise _error(url, f"no bucket in the URL ({sch}://BUCKET/PATH)")
    try:
        import fsspec
        from fsspec.core import url_to_fs
    except ImportError:
        raise _error(url, f"reading and writing {sch}:// URLs needs fsspec: {EXTRA}") from None
    try:
        fsspec.get_filesystem_class(sch)
    except ImportError:
        client = CLIENTS.get(sch, f"the fsspec backend for {sch}://")
        raise _error(url, f"{sch}:// needs {client}, which is not installed: {EXTRA}") from None
    except ValueError:
        raise _error(url, f"unknown URL scheme {sch}:// (not a filesystem fsspec knows)") from None
    try:
        fs, path = url_to_fs(url, **storage_options(sch))
    except Exception as exc:
        raise failure(url, exc) from None
    return fs, path


def why(exc: BaseException) -> str:
    """One line for a remote failure, from whatever the client raised."""
    if isinstance(exc, (RemoteError, CallTimeout)):
        return str(exc)
    if isinstance(exc, FileNotFoundError):
        return "no such bucket or object" + (f" ({_short(exc)})" if _short(exc) else "")
    if isinstance(exc, PermissionError) or "forbidden" in str(exc).lower()[:40]:
        return "access denied (check the credentials: AWS_* variables, Application Default Credentials)"
    text = _short(exc)
    low = f"{type(exc).__name__} {text}".lower()
    if any(k in low for k in ("connect", "endpoint", "timeout", "timed out", "refused", "unreachable")):
        return f"cannot reach the storage server ({type(exc).__name__}: {text})"
    if any(k in low for k in ("invalidaccesskeyid", "signaturedoesnotmatch", "credential", "forbidden",
                              "accessdenied", "401", "403")):
        return f"access denied ({type(exc).__name__}: {text})"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:300]


def _error(url: str, text: str) -> RemoteError:
    """The one-line error about ``url``: the URL without its credentials, and none of them in
    the text either (a client's message may quote the URL it was given)."""
    return RemoteError(scrub(f"{redact_url(url)}: {text}", url))


def failure(url: str, exc: BaseException) -> RemoteError:
    return _error(url, why(exc))


# ---------------------------------------------------------------------------- the cache
def cache_root() -> Path:
    base = os.environ.get("TB_IOTRACE_CACHE")
    if base:
        return Path(base)
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(xdg) / "tb_iotrace" / "remote"


def cache_limit() -> int:
    try:
        return max(0, int(os.environ.get("TB_IOTRACE_CACHE_BYTES", DEFAULT_CACHE_BYTES)))
    except ValueError:
        return DEFAULT_CACHE_BYTES


def version_of(info: dict[str, Any]) -> str:
    """What changes when an object is rewritten: GCS's generation, S3's ETag, else the mtime."""
    for key in ("generation", "ETag", "etag", "md5Hash", "LastModified", "mtime", "updated", "last_modified"):
        v = info.get(key)
        if v not in (None, ""):
            return f"{key}={v}"
    return ""


def _key(url: str, info: dict[str, Any]) -> str:
    raw = f"{url}\x00{info.get('_version') or version_of(info)}\x00{int(info.get('size') or 0)}"
    return hashlib.sha256(raw.encode("utf-8", "surrogateescape")).hexdigest()[:40]


def object_path(url: str, info: dict[str, Any], root: Path) -> Path:
    """Where the cache keeps the object at ``url`` of the version and size ``info`` gives."""
    key = _key(url, info)
    return root / "objects" / key[:2] / key


def _object(fs: Any, url: str, rpath: str, info: dict[str, Any], root: Path) -> Path:
    """The cached copy of one object, fetched when its key is not cached yet."""
    obj = object_path(url, info, root)
    if obj.is_file() and obj.stat().st_size == int(info.get("size") or 0):
        try:   # recently used: evicted last (the access time only: readers key on the mtime)
            os.utime(obj, ns=(time.time_ns(), obj.stat().st_mtime_ns))
        except OSError:
            pass
        return obj
    obj.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".part-", dir=obj.parent)
    os.close(fd)
    try:
        call(fs, "get_file", rpath, tmp, nbytes=int(info.get("size") or 0))
        got = os.path.getsize(tmp)
        os.replace(tmp, obj)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, Exception):
            raise failure(url, exc) from None
        raise
    STATS.objects += 1
    STATS.bytes += got
    return obj


def evict(root: Path | None = None, limit: int | None = None, keep: Iterable[Path] = ()) -> int:
    """Remove the least recently used cached objects until the cache is under ``limit`` bytes
    (``keep``: the objects the current fetch uses). Returns the bytes removed."""
    root = root or cache_root()
    limit = cache_limit() if limit is None else limit
    kept = {os.path.realpath(p) for p in keep}
    files = []
    for p in (root / "objects").glob("*/*"):
        try:
            st = p.stat()
        except OSError:
            continue
        files.append((max(st.st_atime, st.st_mtime), st.st_size, p))
    total = sum(s for _, s, _ in files)
    removed = 0
    for _, size, p in sorted(files, key=lambda t: t[0]):
        if total <= limit:
            break
        if os.path.realpath(p) in kept:
            continue
        try:
            p.unlink()
        except OSError:
            continue
        total -= size
        removed += size
    return removed


# ---------------------------------------------------------------------------- reading
def _listing(fs: Any, url: str, path: str) -> list[dict[str, Any]]:
    try:
        entries = call(fs, "ls", path, detail=True, refresh=True)
    except TypeError:          # a filesystem without the refresh keyword
        entries = call(fs, "ls", path, detail=True)
    STATS.listed_dirs += 1
    return list(entries)


def _base(p: str) -> str:
    return posixpath.basename(p.rstrip("/"))


def mirror_path(url: str, root: Path | None = None) -> Path:
    """Where :func:`fetch` lays the local mirror of a folder URL (stable across fetches)."""
    root = root or cache_root()
    tree_id = hashlib.sha256(url.rstrip("/").encode("utf-8", "surrogateescape")).hexdigest()[:24]
    # the URL's own folder names (bucket/logs/plugins/iotrace): readers look at a folder's
    # parents too (a plugins/iotrace folder given as the path)
    # (never its credentials or query: a folder name stays on disk)
    parts = [p for p in where(url).split("/") if p not in ("", ".", "..")]
    return root / "trees" / tree_id / Path(*(parts or ["root"]))


MANIFEST = ".tb_iotrace-remote.json"   # in a mirror's top folder (dot files: the scan skips them)


def fetch(url: str, wanted: Callable[[str], bool], root: Path | None = None,
          lazy: Callable[[str], bool] | None = None) -> Path:
    """The local mirror of ``url`` (a folder, or one file): every file whose name ``wanted``
    accepts, fetched into the cache when its version is not there yet, hard-linked into the
    mirror (:func:`mirror_path`: its folder names are the URL's, so runs are named as for a
    local logdir). Folders are listed one level at a time. A record's JSON URL brings its
    tables (``.npz``) beside it.

    The mirror is updated in place, one file at a time (each replaced by a rename, files gone
    from the URL removed after), so a reader of the mirror (the TensorBoard tab) never finds it
    missing. :class:`RemoteError` (one line) for a missing bucket or object, bad credentials, a
    stopped server.

    ``lazy`` (folder URLs): the files it names are not fetched yet unless their version is
    cached already: an empty placeholder stands in the mirror, and :func:`materialize` fetches
    it when a reader opens it (the tab lists every run, and opens one capture at a time)."""
    fs, rpath = filesystem(url)
    root = root or cache_root()
    try:
        info = call(fs, "info", rpath)
    except Exception as exc:
        raise failure(url, exc) from None
    used: list[Path] = []
    links: dict[Path, Any] = {}    # mirror file -> cached object, or a lazy file's manifest entry
    fetched: dict[Path, dict[str, Any]] = {}   # a lazy kind's file whose object was cached: its entry
    if info.get("type") != "directory":
        name = _base(rpath) or "object"
        parent_url = url.rstrip("/").rsplit("/", 1)[0]
        local = mirror_path(parent_url, root)
        parent = posixpath.dirname(rpath.rstrip("/"))
        # a record's tables: <host>.<pid>.npz, <host>.<pid>.files.npz beside <host>.<pid>.json
        stem = name[: -len(".json")] + "." if name.endswith(".json") else None
        siblings = [info]
        try:
            if stem:
                siblings += [e for e in _listing(fs, url, parent) if e.get("type") != "directory"
                             and _base(e.get("name", "")) != name and _base(e.get("name", "")).startswith(stem)
                             and wanted(_base(e.get("name", "")))]
        except Exception:
            pass   # the record reads without its tables (its counters are in the JSON)
        for e in siblings:
            ename = _base(e.get("name", rpath)) or name
            links[local / ename] = _object(fs, f"{parent_url}/{ename}", e.get("name", rpath), e, root)
        target = local / name
        stale_root = None
    else:
        local = mirror_path(url, root)
        _mirror(fs, url, rpath, local, wanted, root, links, lazy, fetched)
        target = stale_root = local
    manifest: dict[str, Any] = {}
    for dest, got in list(links.items()):
        try:
            if isinstance(got, Path):
                used.append(got)
                _link(got, dest)
                if dest in fetched:
                    manifest[dest.relative_to(target).as_posix()] = fetched[dest]
            else:                     # lazy: (object url, remote path, size, version)
                manifest[dest.relative_to(target).as_posix()] = got
                _placeholder(dest)
        except OSError:
            # one object the local filesystem cannot hold (a path too long, a name it refuses):
            # left out, the others are read
            manifest.pop(dest.relative_to(target).as_posix() if stale_root is not None else "", None)
            del links[dest]
    if lazy is not None and stale_root is not None:
        _write_manifest(target, manifest)
    if stale_root is not None:
        _remove_stale(stale_root, set(links) | {stale_root / MANIFEST})
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
    evict(root, keep=used)
    return target


def _remove_stale(top: Path, keep: set[Path]) -> None:
    """Files of the mirror no longer at the URL (and folders left empty) go."""
    top.mkdir(parents=True, exist_ok=True)
    for dirpath, dirnames, filenames in os.walk(top, topdown=False):
        d = Path(dirpath)
        for f in filenames:
            if d / f not in keep:
                try:
                    (d / f).unlink()
                except OSError:
                    pass
        if d != top:
            try:
                d.rmdir()
            except OSError:
                pass


def _mirror(fs: Any, url: str, rpath: str, local_top: Path, wanted: Callable[[str], bool], root: Path,
            links: dict[Path, Any], lazy: Callable[[str], bool] | None = None,
            fetched: dict[Path, dict[str, Any]] | None = None) -> None:
    fetched = {} if fetched is None else fetched
    top = rpath.rstrip("/")
    todo = [(top, local_top, 0)]
    seen = 0
    while todo:
        d, local, depth = todo.pop()
        seen += 1
        if seen > MAX_DIRS:
            break
        try:
            entries = _listing(fs, url, d)
        except Exception as exc:
            if d == top:
                raise failure(url, exc) from None
            continue
        for e in entries:
            name = _base(e.get("name", ""))
            if (not name or name in (".", "..") or "\\" in name or name.startswith(".part-")
                    or "\x00" in name or not fits_locally(name)):
                continue
            full = e["name"].rstrip("/")
            if full == d:
                continue
            if e.get("type") == "directory":
                if depth < MAX_DEPTH:
                    todo.append((full, local / name, depth + 1))
            elif wanted(name):
                ourl = join(url, posixpath.relpath(full, top))
                entry = {"url": ourl, "path": full, "size": int(e.get("size") or 0), "version": version_of(e)}
                if lazy is not None and lazy(name) and not object_path(ourl, e, root).is_file():
                    links[local / name] = entry
                else:
                    try:
                        links[local / name] = _object(fs, ourl, full, e, root)
                        if lazy is not None:     # fetched (before, or now: a record's JSON): its version kept too
                            fetched[local / name] = entry
                    except RemoteError as exc:
                        if not isinstance(exc.__context__, FileNotFoundError) and "no such" not in str(exc):
                            raise            # the storage itself fails: the whole fetch says so
                        # one object gone between the listing and its fetch: the others are read


def _mkdir(p: Path) -> Path:
    p.mkdir(parents=True, exist_ok=True)
    return p


def _temp_beside(dest: Path) -> Path:
    """A temporary name beside ``dest`` of fixed length (a hash of its name): an object's name
    may be up to NAME_MAX bytes already, and a prefix would pass it."""
    digest = hashlib.sha256(dest.name.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return dest.with_name(f".link-{os.getpid()}-{digest}")


def fits_locally(name: str) -> bool:
    """Whether an object's name can be a local file's name (S3 allows 1024 bytes, a local
    filesystem 255)."""
    return len(name.encode("utf-8", "surrogateescape")) <= MAX_NAME_BYTES


def _link(obj: Path, dest: Path) -> None:
    """``dest`` becomes the cached object (a hard link, else a copy), replaced by a rename."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        if os.path.samefile(obj, dest):
            return
    except OSError:
        pass
    tmp = _temp_beside(dest)
    try:
        tmp.unlink()
    except OSError:
        pass
    try:
        os.link(obj, tmp)
    except OSError:            # another filesystem, or no hard links: a copy
        shutil.copyfile(obj, tmp)
    os.replace(tmp, dest)


def _placeholder(dest: Path) -> None:
    """An empty stand-in for a lazy file (kept when it is one already)."""
    try:
        if dest.stat().st_size == 0 and dest.stat().st_nlink == 1:
            return
    except OSError:
        pass
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = _temp_beside(dest)
    tmp.write_bytes(b"")
    os.replace(tmp, dest)


def _write_manifest(top: Path, manifest: dict[str, Any]) -> None:
    import json

    top.mkdir(parents=True, exist_ok=True)
    tmp = top / f"{MANIFEST}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(manifest))
    os.replace(tmp, top / MANIFEST)


def materialize(path: str | os.PathLike[str], root: Path | None = None) -> bool:
    """Fetch a lazy file of a mirror (and its record's tables beside it) if it is still a
    placeholder; False when ``path`` is not in a mirror with a manifest. RemoteError (one
    line) when the fetch fails."""
    import json

    p = Path(path)
    root = root or cache_root()
    trees = (root / "trees").resolve()
    top = p.parent
    while top != top.parent and top.resolve() != trees:
        if (top / MANIFEST).is_file():
            break
        top = top.parent
    else:
        return False
    try:
        manifest = json.loads((top / MANIFEST).read_text())
    except (OSError, ValueError):
        return False
    rel = p.relative_to(top).as_posix()
    folder, _, name = rel.rpartition("/")
    stem = name[: -len(".json")] + "." if name.endswith(".json") else None
    used: list[Path] = []
    for key, e in manifest.items():
        kdir, _, kname = key.rpartition("/")
        if key != rel and not (stem and kdir == folder and kname.startswith(stem)):
            continue
        info = {"size": e["size"], "_version": e["version"]}
        dest = top / key
        obj = object_path(e["url"], info, root)
        if e["size"] and dest.is_file() and dest.stat().st_size == e["size"]:
            continue           # fetched already (its cached copy perhaps evicted since: the mirror's link holds it)
        if not obj.is_file():
            fs, _ = filesystem(e["url"])
            obj = _object(fs, e["url"], e["path"], info, root)
        _link(obj, dest)
        used.append(obj)
    if used:
        evict(root, keep=used)
    return True


# ---------------------------------------------------------------------------- writing
def check_writable(url: str) -> None:
    """Fail early (one line) when the URL's bucket cannot be reached or listed."""
    fs, rpath = filesystem(url)
    bucket = rpath.split("/", 1)[0] if scheme(url) in OBJECT_STORES else posixpath.dirname(rpath.rstrip("/"))
    if not bucket:
        return
    try:   # a listing, not exists(): exists() answers False for a forbidden bucket too
        call(fs, "ls", bucket, detail=False)
    except FileNotFoundError:
        raise _error(url, f"no such bucket or folder ({bucket})") from None
    except Exception as exc:
        raise failure(url, exc) from None


def upload_file(local: str | os.PathLike[str], url: str, fs: Any = None) -> int:
    """Send one local file to ``url`` whole; returns its size."""
    if fs is None:
        fs, rpath = filesystem(url)
    else:
        rpath = fs._strip_protocol(url)
    size = os.path.getsize(local)
    try:
        if scheme(url) in OBJECT_STORES:
            call(fs, "put_file", str(local), rpath, nbytes=size)
        else:
            tmp = posixpath.join(posixpath.dirname(rpath), f".part-{os.getpid()}-{posixpath.basename(rpath)}")
            call(fs, "put_file", str(local), tmp, nbytes=size)
            call(fs, "mv", tmp, rpath)
    except Exception as exc:
        raise failure(url, exc) from None
    return size


def upload(local_dir: str | os.PathLike[str], url: str, only: Iterable[Path] | None = None,
           last: Callable[[str], bool] = lambda name: name.endswith(".json")) -> list[str]:
    """Send the files of ``local_dir`` (or just ``only``) to the same relative paths under
    ``url``; the files ``last`` names (the records' JSON, which readers read first) go after the
    others. Returns the URLs written."""
    fs, _ = filesystem(url)
    base = Path(local_dir)
    files = list(only) if only is not None else [p for p in base.rglob("*") if p.is_file()]
    files.sort(key=lambda p: (last(p.name), str(p)))
    done = []
    for p in files:
        if p.name.startswith("."):
            continue   # temporary names of writers still at work
        dest = join(url, p.relative_to(base).as_posix())
        upload_file(p, dest, fs)
        done.append(dest)
    return done
