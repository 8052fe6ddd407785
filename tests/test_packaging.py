"""Packaging: environment.yml follows pyproject.toml; notebooks are committed without outputs;
the Makefile documents itself; the README gives the two commands."""

from __future__ import annotations

import json
import re
import subprocess
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def _name(req: str) -> str:
    return re.split(r"[<>=!~\[ ]", req, maxsplit=1)[0].lower().replace("_", "-")


def test_environment_yml_lists_the_same_dependencies_as_pyproject():
    py = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = {_name(r): r for r in py["dependencies"] + py["optional-dependencies"]["dev"]}
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    listed = {}
    for dep in env["dependencies"]:
        if isinstance(dep, dict):
            for r in dep["pip"]:
                if not r.startswith("-e"):
                    listed[_name(r)] = r
        elif not dep.startswith(("python", "pip")) or dep.startswith("python-"):
            listed[_name(dep)] = dep
    assert set(listed) == set(wanted), set(wanted) ^ set(listed)
    for name, req in wanted.items():
        # same version constraint, conda spelling (no spaces)
        assert listed[name].replace(" ", "") == req.replace(" ", ""), name


def test_committed_notebooks_have_no_outputs_and_a_parameters_cell():
    nbs = sorted((ROOT / "notebooks").glob("*.ipynb"))
    assert nbs
    for nb in nbs:
        cells = json.loads(nb.read_text())["cells"]
        code = [c for c in cells if c["cell_type"] == "code"]
        assert all(not c.get("outputs") and c.get("execution_count") is None for c in code), nb
        tagged = [c for c in code if "parameters" in c.get("metadata", {}).get("tags", [])]
        assert len(tagged) == 1, nb
        # literal defaults only, each with a comment saying what it is
        for line in "".join(tagged[0]["source"]).splitlines():
            assert re.match(r"^\w+ = .+  # .+", line), (nb.name, line)


def test_make_help_lists_the_targets():
    out = subprocess.run(["make", "-s", "help"], cwd=ROOT, capture_output=True, text=True).stdout
    for target in ("setup", "demo", "test", "lab"):
        assert re.search(rf"^\s+{target}\s+\S", out, re.M), target


def test_readme_gives_the_two_commands_and_ci_calls_make_test():
    readme = (ROOT / "README.md").read_text()
    assert "make demo" in readme and "make test" in readme
    assert "make test" in (ROOT / ".ci/run").read_text()


def test_ruff_lint_and_format_hold():
    import shutil
    import sys

    ruff = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    dirs = ["tibenchlib", "tests", "benchmarks"]
    check = subprocess.run([ruff, "check", *dirs], cwd=ROOT, capture_output=True, text=True)
    assert check.returncode == 0, check.stdout[-3000:]
    fmt = subprocess.run(
        [ruff, "format", "--check", *dirs], cwd=ROOT, capture_output=True, text=True
    )
    assert fmt.returncode == 0, fmt.stdout[-3000:]
