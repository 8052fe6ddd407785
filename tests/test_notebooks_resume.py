"""A finished study resumed, on the catalog `tibench run params/ci.yaml` left in data/ci (conftest's
``ci_study``, measured once per session): running it again measures nothing again, and executed
notebooks re-execute under nbval (``--nbval-lax``) as a user runs it.

Every phase's resume is checked by one ``tibench run params/ci.yaml --in-process``: each phase's
run function, the one a notebook calls when it measures (:func:`tibenchlib.phases.run_phase`),
finds everything measured, and no run, attempt or per-phase row of the catalog changes. nbval
then re-executes the executed copies of :data:`NBVAL_NOTEBOOKS` (a resume too: tibench injected
``measure=True``), whose cells show what the notebooks of every other phase show (the header,
the phase's table, figures, findings, assert cells) from the same session code; the other
executed notebooks were each run once, with the same cells, by the study itself
(test_notebooks.py) and opened again in JupyterLab (test_notebooks_browser.py). The embedded
servers used are stopped afterwards whatever the outcome.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys

import pytest

from tibenchlib import cli, paths
from tibenchlib.notebook import executed_path
from tibenchlib.server import embedded

pytestmark = [pytest.mark.slow, pytest.mark.notebook]

#: The phases whose executed notebooks nbval re-executes: the sweep (runs over both arms, the
#: run loop every measuring phase shares, the most cells) and prepare (its own resume: the
#: tables verified on each arm, not loaded again).
NBVAL_NOTEBOOKS = ("prepare", "sweep")
#: The catalog's tables of measured rows: a resume adds to none of them. (Not the environment
#: and the prepare steps: a resume captures the environment again and verifies the tables, as
#: it must before measuring anything left.)
MEASURED = (
    "runs", "run_attempts", "intervals", "tpch_queries", "dm_runs", "dm_lag", "ycsb_ops",
    "tpcc_runs", "numa_memory", "warmups",
)  # fmt: skip


def _measured_rows(study: str, leave_out: frozenset[str] = frozenset()) -> dict[str, list[str]]:
    """Every row of the catalog's measured tables, sorted (the runs with their finishing time),
    but the rows of the runs in ``leave_out``."""
    db = sqlite3.connect(paths.catalog_file(study))
    try:
        have = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        out = {}
        for t in MEASURED:
            if t not in have:
                continue
            cols = [c[1] for c in db.execute(f"PRAGMA table_info({t})")]
            rows = db.execute(f"SELECT * FROM {t}").fetchall()
            if "run_key" in cols:
                rows = [r for r in rows if r[cols.index("run_key")] not in leave_out]
            out[t] = sorted(map(repr, rows))
        return out
    finally:
        db.close()


def _attempts(study: str) -> dict[str, tuple[str, int]]:
    """Each run's status and attempts, from the catalog's ``runs``."""
    db = sqlite3.connect(paths.catalog_file(study))
    try:
        rows = db.execute("SELECT run_key, status, attempts FROM runs").fetchall()
        return {k: (s, n) for k, s, n in rows}
    finally:
        db.close()


def test_a_finished_study_run_again_measures_nothing_again(clone_data_dir, ci_study, capsys):
    assert ci_study.returncode == 0, ci_study.stdout
    # a run the study left failed or degenerate (a stall on a loaded machine) is what a resume
    # must measure again, and only that
    runs = _attempts("ci")
    retried = frozenset(k for k, (status, _) in runs.items() if status != "ok")
    before = _measured_rows("ci", retried)
    assert len(before["runs"]) > 0 and len(before["run_attempts"]) >= len(before["runs"])
    try:
        code = cli.main(["run", str(paths.ROOT / "params" / "ci.yaml"), "--in-process"])
    finally:
        embedded().stop()
    out = capsys.readouterr()
    assert code == 0, out.out + out.err
    after = _measured_rows("ci", retried)
    changed = [t for t in before if after.get(t) != before[t]]
    assert not changed, f"a resume measured again: {changed} (retried as it should: {retried})"
    again = _attempts("ci")
    assert set(again) == set(runs)
    assert all(again[k][1] == runs[k][1] + 1 for k in retried), (runs, again)


def test_nbval_reexecutes_executed_ci_notebooks(clone_data_dir, ci_study, tmp_path):
    executed = [executed_path("ci", p) for p in NBVAL_NOTEBOOKS]
    assert all(nb.is_file() for nb in executed), ci_study.stdout
    # nbval in a pytest of its own, as a user runs it; not this session's xdist worker
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}
    args = ["--nbval-lax", *map(str, executed), "--nbval-current-env", f"--basetemp={tmp_path}"]
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
