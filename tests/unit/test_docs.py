"""The README is a front door (at most 2,500 words) and the documentation has no dead references:
every relative link in README.md and docs/*.md (and its #anchor) points to a file of the
repository, and so does every repository path they quote (`tb_iotrace/...`, `native/...`)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
README_MAX_WORDS = 2500

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
CODE = re.compile(r"`([^`\n]+)`")
TOP = ("native/", "tb_iotrace/", "tests/", "bench/", "tools/", "docs/", "examples/", "plugin_frontend/", ".ci/")


def prose(text: str) -> str:
    """The text outside fenced code blocks (a snippet's strings are not references)."""
    return re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)


def anchors(path: Path) -> set[str]:
    """GitHub's ids for a Markdown file's headings."""
    out: set[str] = set()
    for line in prose(path.read_text()).splitlines():
        m = re.match(r"#{1,6}\s+(.*)", line)
        if m:
            title = m.group(1).strip().lower()
            out.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return out


def dead_links(doc: Path, text: str | None = None) -> list[str]:
    """The relative links of ``doc`` (its text, or ``text`` as if it were in that file) that
    lead nowhere."""
    bad = []
    for target in LINK.findall(prose(doc.read_text() if text is None else text)):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        file, _, anchor = target.partition("#")
        dest = (doc.parent / file).resolve() if file else doc
        if not dest.is_relative_to(ROOT) or not dest.exists():
            bad.append(f"{target} (no such file)")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            bad.append(f"{target} (no heading #{anchor} in {dest.relative_to(ROOT)})")
    return bad


def dead_paths(text: str) -> list[str]:
    bad = []
    for span in CODE.findall(prose(text)):
        for word in span.split():
            word = word.rstrip(".,;:")
            if not word.startswith(TOP) or any(c in word for c in "<>{}*$|"):
                continue
            path = word.split(":")[0]  # native/x.c:12
            if not (ROOT / path).exists():
                bad.append(word)
    return bad


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_point_to_files(doc):
    assert dead_links(doc) == []


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_quoted_repository_paths_exist(doc):
    assert dead_paths(doc.read_text()) == []


def test_readme_is_a_front_door():
    text = (ROOT / "README.md").read_text()
    words = len(text.split())
    assert words <= README_MAX_WORDS, f"README.md has {words} words (at most {README_MAX_WORDS}): move reference material to docs/"
    first_screen = "\n".join(text.splitlines()[:30])
    for must in ("./dev.sh demo", "./dev.sh test", "pip install"):
        assert must in first_screen, must
    for doc in sorted((ROOT / "docs").glob("*.md")):
        assert f"docs/{doc.name}" in text, f"README.md does not point to docs/{doc.name}"


def test_the_checks_catch_dead_references():
    """The checks above find what they look for: a missing file, a missing heading in another
    document, a quoted path that is not in the repository; not what a code block holds."""
    text = ("# Probe\n\nSee [gone](gone.md), [there](internals.md#no-such-heading), "
            "[ok](internals.md#clock-conventions), [web](https://example.org/x.md)\n"
            "and `tb_iotrace/no_such_module.py`, `tb_iotrace/plugin/plugin.py`, `native/hooks.def:3`.\n"
            "```\n[in a snippet](nowhere.md) `native/none.c`\n```\n")
    probe = ROOT / "docs" / "probe.md"  # never written: the links are read as if from docs/
    assert dead_links(probe, text) == ["gone.md (no such file)",
                                       "internals.md#no-such-heading (no heading #no-such-heading in docs/internals.md)"]
    assert dead_paths(text) == ["tb_iotrace/no_such_module.py"]
