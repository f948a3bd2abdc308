"""The package's import rules, checked on the source (every import, function-level ones
included, parsed with ``ast``; nothing is imported):

- data flows one way: recording -> store -> model -> analysis -> surfaces; a module imports only
  from its own layer or a layer it is allowed to read (``MAY_IMPORT``);
- no import cycles between modules;
- no private name (``_x``) used across modules, and a private module (``pkg._x``) is imported
  only from inside ``pkg``.

A new module must be given a layer in ``LAYERS``; docs/architecture.md lists them.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[2] / "tb_iotrace"

# Longest prefix wins. A folder is a layer; the top level holds only the facade and the compiled
# extensions.
LAYERS = {
    "tb_iotrace.base": "base",           # pure rules: record ids, releases, code paths, atomic writes, bounds
    "tb_iotrace._codec": "store",        # the compiled codecs (native/codec: encode.c, xdecode.c)
    "tb_iotrace.store": "store",         # formats on disk and in buckets: XPlane, records, Kineto, logdirs, URLs
    "tb_iotrace.model": "model",         # the columnar tables of a capture; the step and input-wait rule
    "tb_iotrace._native": "recording",     # the interposer
    "tb_iotrace.recording": "recording",   # the shim's Python side, framework glue, the whole-run recorder
    "tb_iotrace.analysis": "analysis",   # attribution, findings, verdict, checkpoints, the text report
    "tb_iotrace": "surface",             # the facade: enable()/capture() for users
    "tb_iotrace.__main__": "surface",
    "tb_iotrace.cli": "surface",
    "tb_iotrace.export": "surface",
    "tb_iotrace.fleet": "surface",       # the fleet dataset: Parquet parts, DuckDB/Spark queries
    "tb_iotrace.plugin": "surface",
}
LOWER = {
    "base": set(),
    "store": {"base"},
    "recording": {"base", "store"},        # the recording writes through the store's encoders
    "model": {"base", "store"},
    "analysis": {"base", "store", "model"},
    "surface": {"base", "store", "model", "analysis"},
}
MAY_IMPORT = {layer: lower | {layer} for layer, lower in LOWER.items()}
# Only these surfaces start a recording; TensorBoard's plugin and the exporters never load the
# interposer.
RECORDING_USERS = ("tb_iotrace", "tb_iotrace.cli", "tb_iotrace.torch", "tb_iotrace.keras")
# Surfaces stand side by side: one uses another only where listed (the CLI's ``export`` verb
# drives the exporters and ``fleet`` the fleet dataset, which takes the hosts' results from the
# analysis through the CLI and never opens sources itself; ``python -m tb_iotrace`` is the CLI).
SURFACES = ("tb_iotrace.cli", "tb_iotrace.export", "tb_iotrace.fleet", "tb_iotrace.plugin", "tb_iotrace.__main__")
SURFACE_USES = {"tb_iotrace.cli": {"tb_iotrace.export", "tb_iotrace.fleet"}, "tb_iotrace.__main__": {"tb_iotrace.cli"}}


def module_name(path: Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def all_modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PKG.rglob("*.py"))}


MODULES = all_modules()
# compiled extensions are modules too (tb_iotrace._native, tb_iotrace._codec)
EXTENSIONS = {"tb_iotrace._native", "tb_iotrace._codec"}


def layer_of(mod: str) -> str | None:
    best = None
    for prefix, layer in LAYERS.items():
        if (mod == prefix or mod.startswith(prefix + ".")) and (best is None or len(prefix) > len(best[0])):
            best = (prefix, layer)
    return best[1] if best else None


def surface_of(mod: str) -> str | None:
    return next((s for s in SURFACES if mod == s or mod.startswith(s + ".")), None)


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


@dataclass(frozen=True)
class Edge:
    src: str
    dst: str           # the module imported from
    name: str | None   # the name taken from it (``from dst import name``), None for ``import dst``
    line: int


def _is_module(name: str) -> bool:
    return name in MODULES or name in EXTENSIONS


def edges_of(mod: str, path: Path) -> tuple[list[Edge], list[tuple[int, str, str]]]:
    """Import edges of one module, and (line, module, attribute) of private attributes read
    from an imported tb_iotrace module (``recorder._live``)."""
    tree = ast.parse(path.read_text(), str(path))
    is_pkg = path.name == "__init__.py"
    package = mod if is_pkg else mod.rpartition(".")[0]
    edges: list[Edge] = []
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "tb_iotrace" or a.name.startswith("tb_iotrace."):
                    edges.append(Edge(mod, a.name, None, node.lineno))
                    aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                src = ".".join(base + ([node.module] if node.module else []))
            else:
                src = node.module or ""
            if not (src == "tb_iotrace" or src.startswith("tb_iotrace.")):
                continue
            for a in node.names:
                sub = f"{src}.{a.name}"
                if _is_module(sub):
                    edges.append(Edge(mod, sub, None, node.lineno))
                    aliases[a.asname or a.name] = sub
                else:
                    edges.append(Edge(mod, src, a.name, node.lineno))
    private_attrs = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in aliases and is_private(node.attr)
                and not _is_module(f"{aliases[node.value.id]}.{node.attr}")):
            private_attrs.append((node.lineno, aliases[node.value.id], node.attr))
    return edges, private_attrs


def graph() -> tuple[list[Edge], list[tuple[str, int, str, str]]]:
    edges: list[Edge] = []
    attrs = []
    for mod, path in MODULES.items():
        e, a = edges_of(mod, path)
        edges.extend(e)
        attrs.extend((mod, *x) for x in a)
    return edges, attrs


EDGES, PRIVATE_ATTRS = graph()


def test_every_module_has_a_layer():
    assert [m for m in MODULES if layer_of(m) is None] == []


def test_imports_follow_the_layers():
    bad = []
    for e in EDGES:
        if e.dst not in MODULES and e.dst not in EXTENSIONS:
            bad.append(f"{e.src}:{e.line} imports {e.dst}, which does not exist")
            continue
        src, dst = layer_of(e.src), layer_of(e.dst)
        if dst == "recording" and src != "recording":
            if not any(e.src == u or (u != "tb_iotrace" and e.src.startswith(u + ".")) for u in RECORDING_USERS):
                bad.append(f"{e.src}:{e.line} ({src}) loads the recording layer ({e.dst})")
            continue
        if dst not in MAY_IMPORT[src]:
            bad.append(f"{e.src}:{e.line} ({src}) imports {e.dst} ({dst})")
        a, b = surface_of(e.src), surface_of(e.dst)
        if a and b and a != b and b not in SURFACE_USES.get(a, set()):
            bad.append(f"{e.src}:{e.line} imports another surface ({e.dst})")
    assert not bad, "\n".join(bad)


def _cycles(edges: list[Edge]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    adj: dict[str, set[str]] = {}
    for e in edges:
        if e.src != e.dst:
            adj.setdefault(e.src, set()).add(e.dst)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(adj.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(adj):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycles():
    assert _cycles(EDGES) == []


def test_no_private_names_across_modules():
    bad = [f"{e.src}:{e.line} imports {e.name} from {e.dst}" for e in EDGES if e.name and is_private(e.name)]
    bad += [f"{m}:{line} reads {dst}.{attr}" for m, line, dst, attr in PRIVATE_ATTRS]
    for e in EDGES:
        parts = e.dst.split(".")
        for i, part in enumerate(parts):
            if is_private(part):
                owner = ".".join(parts[:i])   # a private module belongs to its package
                if not (e.src == owner or e.src.startswith(owner + ".")):
                    bad.append(f"{e.src}:{e.line} imports the private module {e.dst}")
                break
    assert not bad, "\n".join(bad)


# The checker itself, on small made-up modules: each rule fails when broken.
@pytest.mark.parametrize("rule", ["cycle", "upward", "private"])
def test_the_checker_catches_each_rule(rule, tmp_path):
    if rule == "cycle":
        got = _cycles([Edge("a", "b", None, 1), Edge("b", "c", "f", 1), Edge("c", "a", None, 9)])
        assert got == [["a", "b", "c"]]
        assert _cycles([Edge("a", "b", None, 1), Edge("b", "c", None, 1)]) == []
    elif rule == "upward":
        assert layer_of("tb_iotrace.model.columnar") == "model"
        assert layer_of("tb_iotrace.store.xplane.read_xspace") == "store"
        assert "analysis" not in MAY_IMPORT["model"] and "surface" not in MAY_IMPORT["analysis"]
    else:
        src = tmp_path / "tb_iotrace" / "x.py"
        src.parent.mkdir()
        src.write_text("from .store.xplane import read_xspace as reader\n\ndef f():\n    from .store.xplane.read_xspace import _private\n"
                       "    return reader._hidden\n")
        edges, attrs = edges_of("tb_iotrace.x", src)
        assert [e.name for e in edges if e.name and is_private(e.name)] == ["_private"]
        assert attrs == [(5, "tb_iotrace.store.xplane.read_xspace", "_hidden")]


CEILING = 900


def test_no_module_is_far_past_the_size_guide():
    """A ceiling well past the 600-line guide that ``tools/review_hints.py`` prints for review: a
    module over it holds several concepts. Names that repeat across folders and modules without
    a test file of their own are review hints too, not failures (a forced unique name breeds
    synonyms)."""
    long = [f"{m}: {n} lines" for m, p in MODULES.items()
            if (n := len(p.read_text().splitlines())) > CEILING]
    assert not long, "\n".join(long)


def test_review_hints_name_what_they_see(tmp_path, monkeypatch):
    """The hints tool reports a long module, a repeated name and an untested module."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("review_hints", PKG.parent / "tools" / "review_hints.py")
    assert spec and spec.loader
    rh = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rh)
    pkg = tmp_path / "tb_iotrace"
    (pkg / "a").mkdir(parents=True)
    (pkg / "b").mkdir()
    (pkg / "a" / "facts.py").write_text("x = 1\n" * 5)
    (pkg / "b" / "facts.py").write_text("y = 2\n")
    (pkg / "b" / "alone.py").write_text("z = 3\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_b_facts.py").write_text("")
    (tmp_path / "tests" / "test_alone.py").write_text("")
    monkeypatch.setattr(rh, "ROOT", tmp_path)
    monkeypatch.setattr(rh, "PKG", pkg)
    got = rh.hints(guide=3)
    assert got == ["long: tb_iotrace/a/facts.py: 5 lines (guide 3): one concept, or two?",
                   "one name, 2 modules: facts.py: tb_iotrace/a, tb_iotrace/b",
                   "no test file named after it: tb_iotrace/a/facts.py"]
