"""The layers the README draws hold: the tools' and the foundation's modules never import a
phase, the run loop, the registry, the notebooks, the command line or what people read."""

from __future__ import annotations

import ast
from pathlib import Path

import tibenchlib

PKG = Path(tibenchlib.__file__).parent
#: Modules (or packages) that know nothing of phases and notebooks.
LOWER = (
    "parse",
    "tools",
    "db",
    "server",
    "record",
    "paths",
    "stats",
    "resources",
    "steady",
    "warmup",
    "lock",
    "safety",
    "prometheus",
    "sysbench",
)
#: What only the layers above may import.
UPPER = (
    "sweep",
    "numa",
    "phases",
    "runloop",
    "registry",
    "studyplan",
    "notebook",
    "cli",
    "report",
    "target",
)


def module_name(f: Path) -> str:
    parts = f.relative_to(PKG.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(f: Path) -> set[str]:
    """Every ``tibenchlib`` module ``f`` imports (relative imports resolved)."""
    mod = module_name(f)
    pkg = mod if f.name == "__init__.py" else mod.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(f.read_text(), str(f))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")[: len(pkg.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if node.module is None or target == "tibenchlib":  # from . import a, b
                out |= {f"{target}.{a.name}" for a in node.names}
            else:
                out.add(target)
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
    return {m for m in out if m.startswith("tibenchlib.")}


def _top(module: str) -> str:
    return module.split(".")[1]


def test_lower_layers_never_import_upper_ones():
    wrong = {}
    for f in sorted(PKG.rglob("*.py")):
        mod = module_name(f)
        if mod == "tibenchlib" or _top(mod) not in LOWER:
            continue
        up = sorted(m for m in imported(f) if _top(m) in UPPER)
        if up:
            wrong[mod] = up
    assert not wrong, f"lower modules importing upper ones: {wrong}"


def test_the_import_reader_resolves_relative_imports():
    f = PKG / "sysbench" / "runner.py"
    got = imported(f)
    assert {"tibenchlib.tools", "tibenchlib.sysbench.command", "tibenchlib.paths"} <= got
    assert all(m.startswith("tibenchlib.") for m in got)
    assert module_name(PKG / "sysbench" / "__init__.py") == "tibenchlib.sysbench"
    # a reader that resolved nothing would pass the test above vacuously: sweep is upper and
    # does import the run loop
    assert "tibenchlib.runloop" in imported(PKG / "sweep.py")
