"""The report's and the findings' modules import at their top, and no module of the report
lies on an import circle, counting the imports inside functions too."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import tibenchlib

PKG = Path(tibenchlib.__file__).parent
OURS = sorted([*(PKG / "report").glob("*.py"), *(PKG / "findings").glob("*.py")])
#: The comment that gives a function-level import its reason.
REASON = "# import inside:"


def module_name(f: Path) -> str:
    parts = f.relative_to(PKG.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(f: Path, inner: bool = True) -> set[str]:
    """The ``tibenchlib`` modules ``f`` imports (at its top, or anywhere with ``inner``)."""
    mod = module_name(f)
    pkg = mod if f.name == "__init__.py" else mod.rpartition(".")[0]
    tree = ast.parse(f.read_text(), str(f))
    out: set[str] = set()
    for node in ast.walk(tree) if inner else tree.body:
        if isinstance(node, ast.ImportFrom):
            base = pkg.split(".")[: len(pkg.split(".")) - (node.level - 1)] if node.level else []
            target = ".".join(base + ([node.module] if node.module else []))
            # "from .. import paths" imports tibenchlib.paths, not the package's own __init__
            out |= {f"{target}.{a.name}" for a in node.names}
            if target != "tibenchlib":
                out.add(target)
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
    return {m for m in out if m.startswith("tibenchlib.")}


def graph() -> dict[str, set[str]]:
    files = {module_name(f): f for f in PKG.rglob("*.py")}
    return {m: {x for x in imports(f) if x in files and x != m} for m, f in files.items()}


def cycle_through(g: dict[str, set[str]], start: str) -> list[str] | None:
    """A shortest import path from ``start`` back to itself, or None."""
    prev: dict[str, str | None] = {start: None}
    todo = [start]
    while todo:
        nxt = []
        for v in todo:
            for w in sorted(g[v]):
                if w == start:
                    path = [v]
                    while prev[path[-1]] is not None:
                        path.append(prev[path[-1]])
                    return (
                        [start, *reversed(path[:-1]), start] if len(path) > 1 else [start, v, start]
                    )
                if w not in prev:
                    prev[w] = v
                    nxt.append(w)
        todo = nxt
    return None


@pytest.mark.parametrize("f", OURS, ids=lambda f: module_name(f))
def test_imports_sit_at_the_top_unless_a_comment_says_why(f):
    lines = f.read_text().splitlines()
    tree = ast.parse("\n".join(lines), str(f))
    top = set(map(id, tree.body))
    bare = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom) and id(node) not in top:
            above = "\n".join(lines[max(0, node.lineno - 4) : node.lineno - 1])
            if REASON not in above:
                bare.append(f"{f.name}:{node.lineno}: {lines[node.lineno - 1].strip()}")
    assert not bare, "imports inside functions without a reason:\n" + "\n".join(bare)


def test_no_module_of_the_report_lies_on_an_import_circle():
    g = graph()
    circles = {}
    for m in sorted(g):
        if m.startswith("tibenchlib.report"):
            c = cycle_through(g, m)
            if c:
                circles[m] = " -> ".join(x.removeprefix("tibenchlib.") for x in c)
    assert not circles, circles


def test_the_circle_finder_finds_one():
    g = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycle_through(g, "a") == ["a", "b", "c", "a"]
    assert cycle_through(g, "d") is None
