"""What an HTTP request to object storage asks for, from its method, URL and headers: the object's
name (``s3://bucket/key``, ``gs://bucket/key``, or the URL without its query), the operation
(GET, PUT, HEAD, LIST, STAT, MPU) and the byte range. Pure.

Nothing secret leaves this module: the query string is read only for the names of its
parameters (``list-type``, ``uploadId``, ``alt``...), never kept; user info in the authority
(``user:pass@``) is dropped; a presigned URL (``X-Amz-Signature``, ``Signature``,
``X-Goog-Signature``) becomes its bucket and key. Header values are read only for ``Range``
and the kind of ``Authorization`` (its scheme word: ``AWS4-HMAC-SHA256`` says S3), never kept.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import parse_qsl, unquote, urlsplit

__all__ = ["ObjectName", "classify", "parse_range"]

_RANGE = re.compile(r"^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$", re.I)
_S3_HOST = re.compile(r"^(?:(?P<bucket>.+)\.)?s3[.-](?:[a-z0-9-]+\.)*amazonaws\.com$", re.I)
_GCS_JSON = re.compile(r"^/(?:download/|upload/)?storage/v1/b/(?P<bucket>[^/]+)(?:/o(?:/(?P<key>.*))?)?$")
_GCS_HOSTS = ("storage.googleapis.com", "storage.cloud.google.com")


@dataclass(frozen=True)
class ObjectName:
    """One request's object: ``service`` ``"s3"``, ``"gs"`` or ``"http"``; ``name`` the object
    (``s3://b/k``, ``gs://b/k``, ``http://host:port/path``); ``bucket``/``key`` ("" for a
    plain URL's bucket: its host); ``op`` GET, PUT, HEAD, LIST, STAT (GCS metadata), MPU (a
    multipart upload's create, part or complete), DELETE or the method."""

    service: str
    name: str
    bucket: str
    key: str
    op: str


def parse_range(value: str | None) -> tuple[int, int] | None:
    """``Range: bytes=a-b`` as (a, b) inclusive; ``bytes=a-`` gives (a, -1); a suffix range
    (``bytes=-n``) or anything else: None."""
    if not value:
        return None
    m = _RANGE.match(value)
    if not m or not m.group(1):
        return None
    return int(m.group(1)), int(m.group(2)) if m.group(2) else -1


def _host_port(netloc: str) -> str:
    return netloc.rpartition("@")[2].lower()


def _is_s3(host: str, params: set[str], headers: dict[str, str]) -> bool:
    if _S3_HOST.match(host.split(":")[0]):
        return True
    auth = headers.get("authorization", "")
    if auth.startswith("AWS4-HMAC-SHA256") or auth.startswith("AWS "):
        return True
    if any(k.startswith("x-amz-") for k in headers):
        return True
    return any(p.lower().startswith("x-amz-") for p in params) or "AWSAccessKeyId" in params


def _s3_op(method: str, key: str, params: set[str]) -> str:
    if "uploadId" in params or "uploads" in params:
        return "MPU"
    if method == "GET" and (not key or "list-type" in params or "prefix" in params or "delimiter" in params):
        return "LIST"
    return method


def classify(method: str, url: str, headers: dict[str, str] | None = None) -> ObjectName:
    """The object an HTTP request names (see the module doc). ``headers``: the request's, any
    case (only ``Authorization``'s first word and the ``x-amz-*`` names are looked at)."""
    method = (method or "GET").upper()
    hdrs = {str(k).lower(): str(v) for k, v in (headers or {}).items()}
    parts = urlsplit(url)
    scheme = (parts.scheme or "http").lower()
    host = _host_port(parts.netloc)
    path = parts.path or "/"
    params = {k for k, _ in parse_qsl(parts.query, keep_blank_values=True)}
    gcs = _GCS_JSON.match(path)
    if gcs:
        bucket, key = unquote(gcs.group("bucket")), unquote(gcs.group("key") or "")
        listing = gcs.group("key") is None and path.endswith("/o")
        if listing and method == "GET":
            op = "LIST"
        elif method == "GET" and (path.startswith("/download/") or _alt(parts.query) == "media"):
            op = "GET"
        elif method == "GET" and key:
            op = "STAT"
        elif path.startswith("/upload/"):
            op = "PUT"
        else:
            op = method
        return ObjectName("gs", f"gs://{bucket}/{key}", bucket, key, op)
    hostname = host.split(":")[0]
    if hostname in _GCS_HOSTS:
        bucket, _, key = path.lstrip("/").partition("/")
        key = unquote(key)
        op = "LIST" if method == "GET" and not key else method
        return ObjectName("gs", f"gs://{bucket}/{key}", bucket, key, op)
    if _is_s3(host, params, hdrs):
        m = _S3_HOST.match(hostname)
        if m and m.group("bucket"):
            bucket, key = m.group("bucket"), unquote(path.lstrip("/"))
        else:
            bucket, _, key = path.lstrip("/").partition("/")
            key = unquote(key)
        return ObjectName("s3", f"s3://{bucket}/{key}", bucket, key, _s3_op(method, key, params))
    # a plain URL: scheme, host and path only (no user info, no query, no fragment)
    return ObjectName("http", f"{scheme}://{host}{path}", host, path, method)


def _alt(query: str) -> str:
    return ",".join(v for k, v in parse_qsl(query, keep_blank_values=True) if k == "alt")
