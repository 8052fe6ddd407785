"""Packaging: environment.yml follows pyproject.toml; notebooks are committed without outputs;
the Makefile documents itself; the README gives the two commands; the built wheel works."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from tibenchlib import published

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
    # duckdb only rebuilds reference answers by hand: an extra, not in the environment
    reference = {_name(r) for r in py["optional-dependencies"]["reference"]}
    assert reference == {"duckdb", "duckdb-ext-tpch"} and not reference & set(wanted)
    for name, req in wanted.items():
        # same version constraint, conda spelling (no spaces)
        assert listed[name].replace(" ", "") == req.replace(" ", ""), name


def test_committed_notebooks_have_no_outputs_and_a_parameters_cell():
    nbs = sorted((ROOT / "notebooks").glob("*.ipynb"))
    assert nbs
    for nb in nbs:
        if nb.name == published.NOTEBOOK:
            continue  # committed with outputs on purpose: nbval checks them (test_published.py)
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


def test_package_metadata_matches_what_the_package_holds():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert meta["project"]["requires-python"] == ">=3.11"  # tests use tomllib
    # tpchgen-cli pinned to the major version the reference answers were built with
    built = re.search(
        r"`tpchgen-cli` (\d+)\.", (ROOT / "data/reference/tpch/PROVENANCE.md").read_text()
    )
    (pin,) = [r for r in meta["project"]["dependencies"] if _name(r) == "tpchgen-cli"]
    major = int(built.group(1))
    assert f">={major}" in pin and f"<{major + 1}" in pin, pin
    # every package-data pattern names files that exist
    for pkg, patterns in meta["tool"]["setuptools"]["package-data"].items():
        base = ROOT / pkg.replace(".", "/")
        for pat in patterns:
            assert list(base.glob(pat)), f"{pkg}: {pat} matches nothing"


@pytest.mark.slow
def test_the_built_wheel_installs_a_working_tibench(tmp_path):
    """Build the wheel, install it into a fresh venv (its dependencies taken from this one),
    and use it from a directory outside the repository: version, dry run, one real phase."""
    if not shutil.which("mariadbd") and not Path("/usr/sbin/mariadbd").exists():
        pytest.skip("mariadbd is not installed (make setup installs it)")
    wheels = tmp_path / "wheels"
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(ROOT)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert build.returncode == 0, build.stderr[-3000:]
    (wheel,) = wheels.glob("tibench-*.whl")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next(venv.glob("lib/python*/site-packages"))
    inst = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q",
         "--no-deps", str(wheel)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert inst.returncode == 0, inst.stderr[-3000:]
    import zipfile

    names = zipfile.ZipFile(wheel).namelist()
    assert "tibenchlib/share/notebooks/02_sweep.ipynb" in names
    assert "tibenchlib/share/params/ci.yaml" in names
    assert "tibenchlib/share/reference/tpch/tpchgen/sf0.01/q01.csv" in names
    assert not any(n.startswith(("tests/", "data/")) for n in names)
    # the dependencies come from this environment, after the wheel's own files; a plain path
    # (not a site dir) so this environment's editable tibench is not picked up
    deps = [p for p in sys.path if p.endswith("site-packages")]
    (site / "zz_deps.pth").write_text("\n".join(deps) + "\n")
    py = venv / "bin" / "python"
    tibench_bin = venv / "bin" / "tibench"  # the console script pip wrote
    work = tmp_path / "study"
    work.mkdir()
    shutil.copy(ROOT / "params" / "ci.yaml", work / "ci.yaml")
    env = {k: v for k, v in os.environ.items() if k not in ("TIBENCH_DATA", "PYTHONPATH")}
    env["PATH"] = f"{venv / 'bin'}:{env['PATH']}"

    def run(*args):
        return subprocess.run(
            [str(tibench_bin), *args], cwd=work, env=env, capture_output=True, text=True
        )

    where = subprocess.run(
        [str(py), "-c", "import tibenchlib, sys; print(tibenchlib.__file__)"],
        cwd=work, env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert where.stdout.startswith(str(site)), where.stdout + where.stderr
    r = run("--version")
    assert r.returncode == 0 and r.stdout.startswith("tibench "), r.stderr
    r = run("run", "ci.yaml", "--dry-run", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["study"] == "ci" and not (work / "data").exists()
    try:
        r = run("run", "ci.yaml", "--phase", "environment", "--json")
        assert r.returncode == 0, r.stderr[-3000:]
        (row,) = [x for x in json.loads(r.stdout) if x["arm"] == "flush1"]
        assert row["flavor"] == "mariadb"
        # results in the current directory's data/, never in the installed package
        assert (work / "data" / "ci" / "notebooks" / "00_environment.ipynb").is_file()
        assert (work / "data" / "ci" / "results.sqlite").is_file()
        assert not (site / "data").exists()
        # --data-dir puts everything elsewhere, the embedded server too
        other = tmp_path / "elsewhere"
        r = run("server", "status", "--data-dir", str(other))
        assert r.returncode == 0 and str(other / "server" / "embedded") in r.stdout, r.stdout
    finally:
        run("server", "stop")
