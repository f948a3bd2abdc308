"""tb_iotrace.base.redact: a URL's secrets (user-info, query values, fragment) never printed,
logged or used as a folder name."""
from __future__ import annotations

import pytest

from tb_iotrace.base.redact import MASK, redact_url, scrub, secrets_of, where


@pytest.mark.parametrize("url,want", [
    ("s3://bucket/run/a", "s3://bucket/run/a"),
    ("s3://KEY:SECRET@bucket/run", "s3://***@bucket/run"),
    ("http://user:pw@host:9000/p?a=1&b=2#frag", "http://***@host:9000/p?a=***&b=***#***"),
    ("https://h/p?X-Amz-Signature=abc&flag", "https://h/p?X-Amz-Signature=***&flag"),
    ("https://h/p#only-fragment", "https://h/p#***"),
    ("https://h/p?q=v#f", "https://h/p?q=***#***"),
    ("/local/logdir", "/local/logdir"),
    ("gs://a@b@bucket/x", "gs://***@bucket/x"),            # the last "@" ends the user-info
])
def test_redact_url(url: str, want: str) -> None:
    assert redact_url(url) == want


def test_where_is_host_and_path_only() -> None:
    assert where("s3://K:S@bucket/run/x?sig=1#f") == "bucket/run/x"
    assert where("http://h:9000/a/b") == "h:9000/a/b"
    assert where("relative/dir?x") == "relative/dir"


def test_secrets_raw_and_decoded_longest_first_short_ones_left() -> None:
    got = secrets_of("s3://AK:s%2Fcr@bkt/p?token=t%3Dok&x=ab#frag")
    assert set(got) == {"AK:s%2Fcr", "AK:s/cr", "s%2Fcr", "s/cr", "t%3Dok", "t=ok", "frag"}
    assert [len(s) for s in got] == sorted((len(s) for s in got), reverse=True)
    assert "AK" not in got and "ab" not in got                 # under three characters: ordinary words
    assert secrets_of("https://h/p") == []


def test_scrub_masks_the_url_and_its_decoded_secrets_in_any_text() -> None:
    url = "https://h/p?sig=s3cr%2Ft&user=me"
    text = f"GET {url} failed (h/p?sig=s3cr/t): denied for s3cr%2Ft"
    out = scrub(text, url, "")
    assert "s3cr" not in out
    assert out.startswith(f"GET https://h/p?sig={MASK}&user={MASK} failed")
    assert scrub("nothing secret", "s3://bucket/x") == "nothing secret"
