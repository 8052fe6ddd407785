"""The executed CI notebooks re-executed by nbval (``--nbval-lax``): a resume, since everything is
already measured, so every cell runs without error on the catalog `tibench run params/ci.yaml`
left in data/ci (conftest's ``ci_study``, measured once per session). The embedded server the
notebooks used is stopped afterwards whatever the outcome."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tibenchlib import paths
from tibenchlib.server import embedded

pytestmark = [pytest.mark.slow, pytest.mark.notebook]


def test_nbval_reexecutes_the_executed_ci_notebooks(clone_data_dir, ci_study, tmp_path):
    executed = paths.executed_notebooks_dir("ci")
    assert list(executed.glob("*.ipynb")), ci_study.stdout
    # nbval in a pytest of its own, as a user runs it; not this session's xdist worker
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}
    args = ["--nbval-lax", str(executed), "--nbval-current-env", f"--basetemp={tmp_path}"]
    try:
        r = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist"]
            + args,
            capture_output=True, text=True, cwd=paths.ROOT, env=env, timeout=1800,
        )  # fmt: skip
    finally:
        embedded().stop()
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-2000:]
    assert " passed" in r.stdout.splitlines()[-1], r.stdout[-2000:]
