"""What a reviewer looks at besides the tests: modules past the size guide, file names that more
than one module uses, and modules that no test file is named after. It prints and never fails:
these guide a review (split by concept, name by meaning) rather than force a split by line
count or a synonym. The hard rules (layers, no cycles, no private names across modules, a
ceiling far past the guide) are tests: tests/unit/test_layers.py.

    python tools/review_hints.py [--guide 600]
"""
from __future__ import annotations

import argparse
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "tb_iotrace"


def modules() -> list[Path]:
    return sorted(p for p in PKG.rglob("*.py") if "frontend-build" not in p.parts)


def test_names() -> set[str]:
    return {p.stem[len("test_"):] for p in (ROOT / "tests").rglob("test_*.py")}


def hints(guide: int) -> list[str]:
    out = []
    mods = modules()
    for p in mods:
        n = len(p.read_text().splitlines())
        if n > guide:
            out.append(f"long: {p.relative_to(ROOT)}: {n} lines (guide {guide}): one concept, or two?")
    by_name: dict[str, list[Path]] = {}
    for p in mods:
        if p.name != "__init__.py":
            by_name.setdefault(p.name, []).append(p)
    for name, ps in sorted(by_name.items()):
        if len(ps) > 1:
            out.append(f"one name, {len(ps)} modules: {name}: " + ", ".join(str(p.parent.relative_to(ROOT)) for p in ps))
    tested = test_names()
    for p in mods:
        stem = p.stem.lstrip("_")
        named = {stem, f"{p.parent.name}_{stem}", f"{p.parent.name.rstrip('s')}_{stem}"}
        if p.name == "__init__.py" or named & tested:
            continue
        out.append(f"no test file named after it: {p.relative_to(ROOT)}")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--guide", type=int, default=600, help="lines a module is expected to stay under")
    for line in hints(ap.parse_args().guide):
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
