"""The software on the host: benchmark and database tools found on PATH with their versions, and
the Python packages tibench depends on."""

from __future__ import annotations

import importlib.metadata
import re
from typing import Any

from ..gobuild import source_of
from .record import is_unavailable, unavailable
from .sources import _Host, _run

# (arguments that print the version or None when the tool has none, purpose shown in tables)
_TOOLS: dict[str, tuple[list[str] | None, str]] = {
    "sysbench": (["--version"], "OLTP benchmark driver"),
    "mariadbd": (["--version"], "embedded database server"),
    "mysqld": (["--version"], "MySQL server"),
    "numactl": (None, "CPU and memory binding"),
    "go-ycsb": (None, "YCSB benchmark driver"),
    "go-tpc": (["version"], "TPC-C / TPC-H benchmark driver"),
    "tiup": (["--version"], "TiDB cluster management"),
}

_FALLBACK_PACKAGES = ("pandas", "numpy", "scipy", "statsmodels", "sqlalchemy", "pymysql", "psutil")


def tool_version(output: str) -> str | None:
    """The version in a tool's ``--version`` output, or None.

    Tries, in order: a ``Release version:`` line (go-tpc), a ``Ver X`` word (mariadbd,
    mysqld), the first token that starts like a version number (sysbench, tiup).
    """
    for pattern in (
        r"(?im)^\s*release version:\s*(\S+)",
        r"\bVer\s+(v?\d[\w.+\-]*)",
        r"(?<![\w.])(v?\d+\.\d+[\w.+\-]*)",
    ):
        m = re.search(pattern, output)
        if m:
            return m.group(1)
    return None


def _collect_tools(h: _Host) -> dict:
    tools = {}
    for name, (args, _purpose) in _TOOLS.items():
        path = h.which(name)
        if not path:
            tools[name] = unavailable(f"{name} not found on PATH")
            continue
        built = source_of(path)
        if built:  # tibench's own build: its version (go-tpc prints "dev", go-ycsb none)
            tools[name] = {"path": path, "version": built["version"], "source": built}
            continue
        if args is None:
            tools[name] = {"path": path, "version": unavailable(f"{name} prints no version")}
            continue
        out = _run([path, *args])
        if is_unavailable(out):
            tools[name] = {"path": path, "version": out}
            continue
        first = next((ln.strip() for ln in out["stdout"].splitlines() if ln.strip()), "")
        version = tool_version(out["stdout"])
        tools[name] = {
            "path": path,
            "output": first,
            "version": version or unavailable(f"no version in: {first!r}"),
        }
    return tools


def _project_packages() -> list[str]:
    try:
        reqs = importlib.metadata.requires("tibench") or []
    except importlib.metadata.PackageNotFoundError:
        return list(_FALLBACK_PACKAGES)
    names = []
    for req in reqs:
        if "extra ==" in req:
            continue
        m = re.match(r"[A-Za-z0-9][A-Za-z0-9._\-]*", req)
        if m:
            names.append(m.group(0))
    return names


def _collect_packages(h: _Host) -> dict:
    out: dict[str, Any] = {}
    for name in ["tibench", *_project_packages()]:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = unavailable("not installed")
    return out
