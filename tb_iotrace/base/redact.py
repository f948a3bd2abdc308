"""Credentials a URL may carry, kept out of everything we print, log, store or name a folder by.

A logdir URL can hold secrets in three places: the user-info (``http://user:pass@host``,
``s3://KEY:SECRET@bucket``), the query string (``?access_key=..&secret_key=..``, a presigned
URL's ``X-Amz-Signature``/``X-Amz-Credential``/``Signature``/``sig``/``token``), and the
fragment. :func:`redact_url` writes a URL with the user-info replaced by ``***`` and every
query value (and the fragment) replaced by ``***``: the URL still says where, never who.
:func:`scrub` removes the same secrets from any text (an error message of a storage client
that quotes the URL it was given, decoded or not).
"""
from __future__ import annotations

import re
from urllib.parse import unquote

MASK = "***"
_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://)([^/?#]*)(.*)$", re.S)
_MIN_SECRET = 3   # shorter pieces (a one-letter user) would mask ordinary words of a message


def _split(url: str) -> tuple[str, str, str, str]:
    """(scheme://, user-info or "", host[:port], the rest) of a URL; ("", "", "", url) else."""
    m = _URL.match(url)
    if not m:
        return "", "", "", url
    auth = m.group(2)
    userinfo, at, host = auth.rpartition("@")
    return m.group(1), userinfo if at else "", host if at else auth, m.group(3)


def redact_url(url: str) -> str:
    """``url`` without its secrets: user-info, query values and fragment masked."""
    head, userinfo, host, rest = _split(url)
    out = head + (MASK + "@" if userinfo else "") + host
    path, q, query = rest.partition("?")
    path, h, frag = path.partition("#")
    if q:
        query, h2, frag2 = query.partition("#")
        h, frag = (h2, frag2) if h2 else (h, frag)
        pairs = [p.partition("=") for p in query.split("&")]
        query = "&".join(k + (eq + MASK if eq else "") for k, eq, _ in pairs)
    return out + path + (q + query) + (h + MASK if h else "")


def where(url: str) -> str:
    """``host/path`` of a URL: no scheme, user-info, query or fragment (a name for a folder)."""
    _, _, host, rest = _split(url)
    return host + rest.partition("?")[0].partition("#")[0]


def secrets_of(url: str) -> list[str]:
    """The secret pieces of ``url`` (raw and percent-decoded), longest first."""
    _, userinfo, _, rest = _split(url)
    found: set[str] = set()
    if userinfo:
        found.add(userinfo)
        found.update(userinfo.split(":"))
    query = rest.partition("?")[2]
    frag = rest.partition("#")[2]
    for pair in query.split("&") if query else []:
        v = pair.partition("=")[2].partition("#")[0]
        if v:
            found.add(v)
    if frag:
        found.add(frag)
    found |= {unquote(s) for s in found}
    return sorted((s for s in found if len(s) >= _MIN_SECRET), key=len, reverse=True)


def scrub(text: str, *urls: str) -> str:
    """``text`` with every secret of ``urls`` masked, each URL itself first written redacted."""
    for url in urls:
        if not url:
            continue
        text = text.replace(url, redact_url(url))
        for s in secrets_of(url):
            text = text.replace(s, MASK)
    return text


__all__ = ["MASK", "redact_url", "scrub", "secrets_of", "where"]
