"""The command line starts light: ``tibench --version`` and ``tibench parse`` import neither SciPy
nor nbformat, nor the report's modules; each subcommand imports what it needs when it runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SYSBENCH_LOG = next((ROOT / "tests/fixtures/sysbench/mariadb").glob("*-hist.txt"))

# what neither command needs: statistics, notebooks, plots, the catalog's engine
HEAVY = ("scipy", "nbformat", "papermill", "matplotlib", "seaborn", "sqlalchemy", "pydantic")

PROBE = """
import contextlib, io, json, sys
from tibenchlib.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        code = main(sys.argv[1:])
    except SystemExit as e:  # --version exits through argparse
        code = e.code
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def _modules_after(*args: str) -> set[str]:
    r = subprocess.run(
        [sys.executable, "-c", PROBE, *args], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.splitlines()[-1])
    assert out["code"] == 0, r.stderr
    return set(out["modules"])


def _heavy(modules: set[str], extra: tuple[str, ...] = ()) -> list[str]:
    roots = HEAVY + extra
    return sorted(
        m
        for m in modules
        if m.split(".")[0] in roots or m.startswith(("tibenchlib.report", "tibenchlib.params"))
    )


def test_version_imports_no_heavy_module():
    modules = _modules_after("--version")
    assert not _heavy(modules, extra=("pandas", "numpy")), _heavy(modules, ("pandas", "numpy"))


def test_parse_imports_only_the_parsers():
    modules = _modules_after("parse", "sysbench", str(SYSBENCH_LOG))
    assert "tibenchlib.parse.sysbench" in modules  # the probe did parse
    assert not _heavy(modules), _heavy(modules)


def test_version_import_time_names_no_heavy_module():
    # -X importtime lists every module imported by the real entry point, `python -m`
    r = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "tibenchlib.cli", "--version"],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )  # fmt: skip
    assert r.returncode == 0 and r.stdout.startswith("tibench "), r.stderr
    imported = {line.rsplit("|", 1)[-1].strip() for line in r.stderr.splitlines() if "|" in line}
    assert "argparse" in imported  # the list is the real one
    assert not _heavy(imported, extra=("pandas", "numpy")), _heavy(imported, ("pandas", "numpy"))


@pytest.mark.parametrize("command", [["run", "--help"], ["compare", "--help"]])
def test_help_needs_no_study_modules(command):
    modules = _modules_after(*command)  # argparse exits 0 after the help
    assert not _heavy(modules, extra=("pandas",)), _heavy(modules, ("pandas",))
