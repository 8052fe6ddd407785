"""The layers CONTRIBUTING.md draws hold for every module of the library, through any chain of
imports, and the import graph has no circle.

The graph is read from the source (no module is imported): imports at the top of a module and
imports inside functions alike, relative imports resolved, and importing ``a.b.c`` counted as
importing its packages ``a.b`` too (Python runs their ``__init__``). Imports under
``if TYPE_CHECKING:`` do not run and are not counted.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import tibenchlib

PKG = Path(tibenchlib.__file__).parent
CONTRIBUTING = PKG.parent / "CONTRIBUTING.md"

#: The layers, lowest first: a module imports its own layer's modules and lower ones only.
#: Each entry names modules or packages (a package covers its modules); the longest name that
#: covers a module classifies it.
LAYERS: dict[str, tuple[str, ...]] = {
    "foundation": (
        "paths", "phasenames", "texttable", "cpulist", "ycsb_workload", "lock", "db", "record",
        "store", "tools", "gobuild", "safety", "terminal", "server", "parse", "params", "runorder",
        "httpclient", "hosts", "hosts.spec", "attempts", "kube.kubectl", "kube.resources",
        "kube.job",
    ),
    "statistics": (
        "stats", "blocks", "steady", "warmup", "rounds", "saturation", "stability", "adaptive",
        "multiclient", "carryover",
    ),
    "tools": (
        "sysbench", "ycsb", "tpcc", "tpch", "dm", "envcapture", "binding", "clients",
        "prometheus", "resources", "topology", "compare", "hosts.ssh", "hosts.preflight",
        "hosts.proc", "hosts.execute", "hosts.runs", "hosts.capture", "hosts.loopback",
        "hosts.demo", "kube",
    ),
    "run": ("phase", "target", "runloop"),
    "phases": (
        "sweep", "numa", "compare_phase", "prepare", "envcapture.phase", "tpch.phase",
        "dm.phase", "dm.real", "dm.plan", "ycsb.phase", "tpcc.phase",
    ),
    "study": ("registry", "phases", "studyplan"),
    "people": ("findings", "report", "diagnose", "hosts.tables", "published", "notebook"),
    "command line": ("cli", ""),  # "": the package itself, its lazily loaded public API
}  # fmt: skip
RANK = {name: i for i, name in enumerate(LAYERS)}

#: What the comment on an import inside a function starts with; the reason follows it.
INSIDE = "# import inside:"
#: The report's side, restructured on its own and checked by tests of its own below.
REPORT_SIDE = ("tibenchlib.report", "tibenchlib.findings", "tibenchlib.diagnose")


def module_name(f: Path) -> str:
    parts = f.relative_to(PKG.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


FILES = {module_name(f): f for f in sorted(PKG.rglob("*.py"))}


def _type_checking(node: ast.AST) -> bool:
    t = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING")
        or (isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING")
    )


def _import_nodes(tree: ast.AST):
    """Every import statement that runs, with whether it sits inside a function."""

    def walk(node, inside):
        for child in ast.iter_child_nodes(node):
            if _type_checking(child):
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                yield child, inside
            yield from walk(
                child, inside or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            )

    yield from walk(tree, False)


def _targets(mod: str, node: ast.Import | ast.ImportFrom) -> set[str]:
    """The library's modules one import statement names (relative imports resolved)."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        base = node.module or ""
        if node.level:
            pkg = mod.split(".") if FILES[mod].name == "__init__.py" else mod.split(".")[:-1]
            pkg = pkg[: len(pkg) - (node.level - 1)]
            base = ".".join(pkg + ([base] if base else []))
        names = [f"{base}.{a.name}" if f"{base}.{a.name}" in FILES else base for a in node.names]
    out = set()
    for n in names:
        while n and n not in FILES:  # a name inside a module: the module
            n = n.rpartition(".")[0]
        if n.startswith("tibenchlib"):
            out.add(n)
    return out


def imported(mod: str) -> set[str]:
    """Every library module that importing ``mod`` runs directly: the modules it names and
    their packages (outside ``mod``'s own package and the top one, which runs anyway)."""
    tree = ast.parse(FILES[mod].read_text(), str(FILES[mod]))
    out: set[str] = set()
    for node, _ in _import_nodes(tree):
        for t in _targets(mod, node):
            out.add(t)
            parts = t.split(".")
            for i in range(2, len(parts)):
                parent = ".".join(parts[:i])
                if not (mod == parent or mod.startswith(parent + ".")):
                    out.add(parent)
    out.discard(mod)
    return out


GRAPH = {m: imported(m) for m in FILES}


def layer_of(mod: str) -> str | None:
    rel = mod.removeprefix("tibenchlib").removeprefix(".")
    best: tuple[int, str] | None = None
    for layer, names in LAYERS.items():
        for n in names:
            if rel == n or (n and rel.startswith(n + ".")) or (n == "" and rel == ""):
                if best is None or len(n) > best[0]:
                    best = (len(n), layer)
    return best[1] if best else None


def _chain(start: str, graph: dict[str, set[str]]) -> dict[str, list[str]]:
    """Every module reachable from ``start``, each with one shortest chain of imports."""
    paths = {start: [start]}
    todo = [start]
    while todo:
        nxt = []
        for m in todo:
            for t in sorted(graph.get(m, ())):
                if t not in paths:
                    paths[t] = paths[m] + [t]
                    nxt.append(t)
        todo = nxt
    return paths


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _report_side(mod: str) -> bool:
    return mod.startswith(REPORT_SIDE)


# -- the tests ---------------------------------------------------------------------------------
def test_every_module_has_a_layer():
    assert len(FILES) > 100  # the reader found the library
    unplaced = sorted(m for m in FILES if layer_of(m) is None)
    assert not unplaced, f"modules in no layer (add them to LAYERS): {unplaced}"
    # no name in LAYERS is stale: each covers at least one module
    stale = [
        n for names in LAYERS.values() for n in names
        if not any(m == f"tibenchlib.{n}".rstrip(".") or m.startswith(f"tibenchlib.{n}.")
                   for m in FILES)
    ]  # fmt: skip
    assert not stale, f"names in LAYERS that cover no module: {stale}"


def test_no_module_reaches_a_higher_layer_through_any_chain():
    wrong = []
    for mod in FILES:
        rank = RANK[layer_of(mod)]
        for target, chain in _chain(mod, GRAPH).items():
            if RANK[layer_of(target)] > rank:
                wrong.append(f"{layer_of(mod)} {' -> '.join(chain)} ({layer_of(target)})")
                break  # one chain a module is enough to read
    assert not wrong, "lower layers reaching upper ones:\n" + "\n".join(sorted(wrong))


def test_no_circle_outside_the_report_side():
    graph = {m: {t for t in ts if not _report_side(t)} for m, ts in GRAPH.items()}
    graph = {m: ts for m, ts in graph.items() if not _report_side(m)}
    assert _circles(graph) == []


def test_no_circle_in_the_whole_graph():
    assert _circles(GRAPH) == []


def _unexplained_inner_imports(mod: str) -> list[int]:
    """Lines of imports inside functions with no ``# import inside: <reason>`` on them or in
    the comments and imports right above them."""
    lines = FILES[mod].read_text().splitlines()
    tree = ast.parse("\n".join(lines))
    bad = []
    for node, inside in _import_nodes(tree):
        if not inside:
            continue
        i = node.lineno - 1
        span = lines[i : node.end_lineno]
        while i > 0 and re.match(r"\s*(#|from |import )", lines[i - 1]):
            i -= 1
            span.append(lines[i])
        if not any(re.search(re.escape(INSIDE) + r"\s*\S", s) for s in span):
            bad.append(node.lineno)
    return bad


def test_every_import_inside_a_function_says_why():
    bad = {m: ln for m in FILES if not _report_side(m) and (ln := _unexplained_inner_imports(m))}
    assert not bad, f"imports inside functions without '{INSIDE} <reason>': {bad}"


def test_every_import_inside_a_function_says_why_on_the_report_side_too():
    bad = {m: ln for m in FILES if _report_side(m) and (ln := _unexplained_inner_imports(m))}
    assert not bad, f"imports inside functions without '{INSIDE} <reason>': {bad}"


def test_contributing_draws_the_same_layers():
    text = CONTRIBUTING.read_text()
    section = text.split("## Layers", 1)[1].split("\n## ", 1)[0]
    drawn = re.findall(r"^\d+\. \*\*([a-z ]+)\*\*", section, flags=re.M)
    assert drawn == list(LAYERS)


# -- the reader itself: a reader that found nothing would pass everything above ------------------
def test_the_import_reader_resolves_what_it_reads(tmp_path):
    got = GRAPH["tibenchlib.sysbench.runner"]
    assert {"tibenchlib.tools", "tibenchlib.sysbench.command", "tibenchlib.paths"} <= got
    assert "tibenchlib.runloop" in GRAPH["tibenchlib.phase"]
    # a submodule's package runs too: binding reaches the envcapture package
    assert "tibenchlib.envcapture" in GRAPH["tibenchlib.binding"]
    # an import inside a function is an arrow; one under TYPE_CHECKING is not
    assert "tibenchlib.notebook" in GRAPH["tibenchlib.cli"]
    assert "tibenchlib.params" not in GRAPH["tibenchlib.sysbench.command"]
    assert module_name(PKG / "sysbench" / "__init__.py") == "tibenchlib.sysbench"
    assert layer_of("tibenchlib.dm.phase") == "phases" and layer_of("tibenchlib.dm.dump") == "tools"
    assert layer_of("tibenchlib") == "command line"
    # the checks see a circle, an upward chain and an unexplained import when there is one
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _chain("a", {"a": {"b"}, "b": {"c"}})["c"] == ["a", "b", "c"]
    f = tmp_path / "m.py"
    f.write_text(
        "def f():\n    import os\n\n\ndef g():\n    # import inside: a reason\n"
        "    import sys\n    import json\n"
    )
    FILES["tibenchlib._probe"] = f
    try:
        assert _unexplained_inner_imports("tibenchlib._probe") == [2]
    finally:
        del FILES["tibenchlib._probe"]
