"""The command line: JSON on stdout, progress and errors on stderr, clear errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "tests" / "fixtures" / "sysbench"


def tibench(*args, env=None):
    return subprocess.run(
        [sys.executable, "-m", "tibenchlib.cli", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
    )


def test_dry_run_prints_the_plan_eta_and_disk(tmp_path):
    r = tibench(
        "run",
        "params/ci.yaml",
        "--dry-run",
        "--json",
        "--phase",
        "sweep",
        env={"TIBENCH_DATA": str(tmp_path)},
    )
    assert r.returncode == 0, r.stderr
    plan = json.loads(r.stdout)
    assert plan["study"] == "ci" and len(plan["runs"]) == 2 * 2 * 2 * 3
    assert plan["eta_s"] > 0 and plan["disk_bytes"] > 0
    assert plan["runs"][0]["run_key"] == "flush1/oltp_point_select/t1/r1"
    assert not (tmp_path / "ci").exists(), "a dry run writes nothing"
    human = tibench("run", "params/seed-v514-vs-v600.yaml", "--dry-run", "--phase", "sweep")
    assert "144 runs" in human.stdout and "ETA" in human.stdout


def test_bad_params_exit_2_with_every_field(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("study: x\nthreads: [0]\nduration_s: 0\n")
    r = tibench("run", str(p), "--dry-run")
    assert r.returncode == 2 and r.stdout == ""
    assert "2 problems" in r.stderr and "threads.0" in r.stderr and "duration_s" in r.stderr


def test_unknown_phase_is_an_error():
    r = tibench("run", "params/ci.yaml", "--phase", "nope", "--dry-run")
    assert r.returncode == 2 and "unknown phase 'nope'" in r.stderr


def test_parse_sysbench_json():
    files = sorted((FIX / "mariadb").glob("*-hist.txt"))[:2]
    r = tibench("parse", "sysbench", *map(str, files), "--json")
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    assert [Path(x["file"]).name for x in rows] == [f.name for f in files]
    assert all(x["status"] == "ok" and x["tps"] > 0 for x in rows)
    r = tibench("parse", "sysbench", "/nonexistent.log", "--json")
    assert r.returncode == 2 and "/nonexistent.log: no such file" in r.stderr


def test_compare_table_json_and_errors(tmp_path):
    csv = tmp_path / "t.csv"
    csv.write_text(
        "workload,threads,arm,tps\n"
        + "".join(f"w,8,A,{v}\n" for v in (1000, 1020, 990))
        + "".join(f"w,8,B,{v}\n" for v in (1050, 1068, 1041))
    )
    r = tibench("compare", "--table", str(csv), "--baseline", "A", "--candidate", "B", "--json")
    assert r.returncode == 0, r.stderr
    (row,) = json.loads(r.stdout)
    assert row["improvement_pct"] == pytest.approx(4.95, abs=0.01)
    assert row["n_baseline"] == row["n_candidate"] == 3 and row["p_value"] < 0.05
    r = tibench("compare", "--table", str(csv), "--baseline", "A", "--candidate", "C", "--json")
    assert r.returncode == 1 and "C" in r.stderr
    (tmp_path / "bad.csv").write_text("workload,threads,tps\nw,8,1\n")
    r = tibench(
        "compare",
        "--table",
        str(tmp_path / "bad.csv"),
        "--baseline",
        "A",
        "--candidate",
        "B",
        "--json",
    )
    assert r.returncode == 1 and "arm" in r.stderr and "bad.csv" in r.stderr


@pytest.mark.slow
def test_server_start_status_stop(tmp_path):
    env = {"TIBENCH_DATA": str(tmp_path)}
    try:
        st = json.loads(tibench("server", "start", "--json", env=env).stdout)
        assert st["running"] and st["port"] and st["host"] == "127.0.0.1"
        again = json.loads(tibench("server", "status", "--json", env=env).stdout)
        assert again["pid"] == st["pid"]
    finally:
        stopped = json.loads(tibench("server", "stop", "--json", env=env).stdout)
    assert not stopped["running"]


def test_compare_study_arm_references(tmp_path):
    from tibenchlib.store import Store

    for study, arm, values in (
        ("v514", "tidb", (1000, 1020, 990)),
        ("v600", "tidb", (1050, 1068, 1041)),
    ):
        st = Store(f"sqlite:///{tmp_path / study / 'results.sqlite'}")
        for i, v in enumerate(values, 1):
            st.record_run(
                {
                    "study": study,
                    "run_key": f"{arm}/oltp_point_select/t8/r{i}",
                    "phase": "sweep",
                    "arm": arm,
                    "workload": "oltp_point_select",
                    "threads": 8,
                    "repeat": i,
                    "seq": i,
                    "status": "ok",
                    "tps": v,
                }
            )
    env = {"TIBENCH_DATA": str(tmp_path)}
    r = tibench("compare", "v514/tidb", "v600/tidb", "--json", env=env)
    assert r.returncode == 0, r.stderr
    (row,) = json.loads(r.stdout)
    assert row["workload"] == "oltp_point_select" and row["threads"] == 8
    assert row["improvement_pct"] == pytest.approx(4.95, abs=0.01)
    r = tibench("compare", "v514/tidb", "v600/nope", "--json", env=env)
    assert r.returncode == 1 and "arm 'nope' not found in study 'v600'" in r.stderr
    r = tibench("compare", "v514/tidb", "v999/tidb", "--json", env=env)
    assert r.returncode == 1 and "study 'v999' has no catalog" in r.stderr
