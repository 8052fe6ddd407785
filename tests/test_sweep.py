"""Sweeps: plan order, run checks, and real sysbench runs on the private MariaDB — failures
recorded and passed over, resume after SIGTERM and SIGKILL with nothing lost or run twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml
from helpers import tibench

from tibenchlib.params import parse_study
from tibenchlib.store import Store
from tibenchlib.sweep import estimate, plan, pre_only_first
from tibenchlib.sysbench.record import check_run

ROOT = Path(__file__).resolve().parent.parent


def _study(**kw):
    base = {
        "study": "t",
        "workloads": ["oltp_point_select", "oltp_update_non_index"],
        "threads": [1, 2],
        "repeats": 2,
        "arms": [{"label": "a"}, {"label": "b"}],
    }
    return parse_study({**base, **kw})


def test_plan_interleaved_spreads_repeats_over_the_ladder():
    specs = plan(_study())
    assert len(specs) == 1 + 2 * 2 * 2 * 2
    assert [s.seq for s in specs] == list(range(17))
    # the pre-period: one run of the first arm's last cell, recorded apart, never compared
    assert specs[0].run_key == "sweep-pre/a/oltp_update_non_index/t2/r0"
    assert [s.phase for s in specs[1:]] == ["sweep"] * 16
    # every cell of repeat 1 (both arms) before any of repeat 2
    reps = [s.repeat for s in specs]
    assert reps == sorted(reps)
    assert [s.arm for s in specs[1:9]] == ["a"] * 4 + ["b"] * 4
    assert len({s.run_key for s in specs}) == 17


def test_a_pre_period_run_is_never_made_after_the_rounds_began():
    """A study resumed after round 1 began (or measured before runs had a pre-period) does not
    run the pre-period after its rounds; one already measured stays in the plan."""
    specs = plan(_study())
    pre, first = specs[0], specs[1]
    assert pre_only_first(specs, {}) == specs
    assert pre_only_first(specs, {first.run_key: "ok"}) == specs[1:]
    assert pre_only_first(specs, {pre.run_key: "ok", first.run_key: "failed"}) == specs
    assert pre_only_first(specs, {first.run_key: "ok"}, redo=True) == specs


def test_plan_interleaved_balances_the_arm_order_over_rounds():
    s = _study(arms=[{"label": x} for x in "abc"], repeats=6, workloads=["oltp_point_select"])
    orders = ["".join([x.arm for x in plan(s) if x.repeat == r][::2]) for r in range(1, 7)]
    assert orders == ["abc", "cab", "bac", "cba", "acb", "bca"]
    # serially balanced after the pre-period run of a: each arm in each position twice, and
    # each arm preceded by each arm (itself included, across rounds) twice
    assert all(sorted(o[i] for o in orders) == sorted("aabbcc") for i in range(3))
    seq = "a" + "".join(orders)
    pairs = [seq[i : i + 2] for i in range(len(seq) - 1)]
    assert {p: pairs.count(p) for p in pairs} == {x + y: 2 for x in "abc" for y in "abc"}
    two = _study(repeats=4, workloads=["oltp_point_select"], threads=[1])
    assert [x.arm for x in plan(two)] == list("aabbaabba")


def test_plan_sequential_and_random():
    seq = plan(_study(order="sequential"))
    assert [(s.threads, s.repeat) for s in seq[:4]] == [(1, 1), (1, 2), (2, 1), (2, 2)]
    r1 = plan(_study(order="random", seed=7))
    r2 = plan(_study(order="random", seed=7))
    assert [s.run_key for s in r1] == [s.run_key for s in r2]
    assert {s.run_key for s in r1} == {s.run_key for s in seq}
    # arms stay in blocks: no server restart per run
    assert len({s.arm for s in r1[:4]}) == 1 and len({s.arm for s in r1[4:8]}) == 1


def test_threads_by_workload_and_estimate():
    s = _study(threads_by_workload={"oltp_update_non_index": [8]}, cooldown_s=5, duration_s=10)
    specs = plan(s)
    assert {x.threads for x in specs if x.workload == "oltp_update_non_index"} == {8}
    est = estimate(s, specs)
    assert est["runs"] == len(specs) == 13
    assert est["eta_s"] == pytest.approx(13 * 11 + 12 * 5)


def _iv(tps, lat=None):
    n = len(tps)
    return pd.DataFrame({"t": range(1, n + 1), "tps": tps, "lat_ms": lat or [1.0] * n})


def test_check_run_flags_failed_and_degenerate_runs():
    ok = {"status": "ok", "tps": 100.0, "events": 1000}
    assert check_run(ok, _iv([100.0] * 10), 10, 1)[0] == "ok"
    assert check_run({"status": "failed", "error": "FATAL: x"}, _iv([]), 10, 1)[:2] == (
        "failed",
        "FATAL: x",
    )
    st, err, _ = check_run({**ok, "tps": 0.0, "events": 0}, _iv([0.0] * 10), 10, 1)
    assert st == "degenerate" and "zero throughput" in err
    st, err, _ = check_run(ok, _iv([100.0] * 6 + [0.0] * 4), 10, 1)
    assert st == "degenerate" and "4 of 10" in err
    st, err, _ = check_run(ok, _iv([100.0] * 10, [0.0] * 10), 10, 1)
    assert st == "degenerate" and "latency flat at 0" in err
    st, err, _ = check_run(ok, _iv([100.0] * 3), 10, 1)
    assert st == "degenerate" and "3 of 10" in err
    assert check_run(ok, _iv([100.0] * 3), 4, 1)[0] == "ok"  # only the last line lost
    assert check_run(ok, _iv([100.0] * 2), 4, 1)[0] == "degenerate"
    st, _, warns = check_run(ok, _iv([100.0] * 19 + [0.0]), 20, 1)
    assert st == "ok" and warns[0] == "1 of 20 intervals had zero TPS"
    st, _, warns = check_run(ok, _iv([100.0, 10.0] * 5), 10, 1)
    assert st == "ok" and "varies" in warns[0]


# -- real runs -----------------------------------------------------------------------------------
def _write_params(tmp_path, **kw) -> Path:
    p = {
        "study": "sw",
        "dataset": {"tables": 2, "table_size": 500},
        "workloads": ["oltp_point_select", "oltp_update_non_index"],
        "threads": [1, 2],
        "duration_s": 1,
        "repeats": 3,
        "arms": [{"label": "a"}],
        "sample_resources": True,
    }
    p.update(kw)
    f = tmp_path / "study.yaml"
    f.write_text(yaml.safe_dump(p))
    return f


@pytest.mark.slow
def test_sweep_runs_stores_and_resumes(tmp_path, data_dir, sysbench_bin):
    from tibenchlib import phases
    from tibenchlib.params import load_study

    study = load_study(_write_params(tmp_path, repeats=2))
    df = phases.run_phase(study, "sweep", progress=False)
    assert len(df) == 8 and (df["status"] == "ok").all(), df[["run_key", "status", "error"]]
    assert (df["tps"] > 0).all() and df["lat_p95_ms"].notna().all()
    store = Store.for_study(study)
    runs = store.runs("sw")
    # the exact command is kept, without the password or the credentials file's path
    assert all("--config-file=<0600 credentials file>" in c for c in runs["command"])
    assert all(Path(p).is_file() for p in runs["log_path"])
    counts = store.intervals("sw").groupby("run_key").size()
    assert all(counts.get(r.run_key, 0) == r.n_intervals for r in runs.itertuples())
    assert runs["n_intervals"].sum() > 0  # a 1-s run may lose its only line (sysbench)
    smp = store.read("samples", "sw")
    assert {"server", "client"} <= set(smp["source"])
    # again: nothing to do, nothing re-run
    before = runs.set_index("run_key")["started_at"]
    phases.run_phase(study, "sweep", progress=False)
    after = store.runs("sw").set_index("run_key")["started_at"]
    assert before.equals(after)
    # results file for the command line
    rows = json.loads((data_dir / "sw/results/sweep.json").read_text())
    assert len(rows) == 8 and {"run_key", "tps", "status", "warnings"} <= set(rows[0])


@pytest.mark.slow
def test_failed_runs_are_retried_on_resume(tmp_path, data_dir, sysbench_bin, monkeypatch):
    from tibenchlib import phases
    from tibenchlib.params import load_study
    from tibenchlib.store import Store
    from tibenchlib.tools import ToolMissing

    base = dict(workloads=["oltp_point_select"], threads=[1, 2], repeats=1)
    study = load_study(_write_params(tmp_path, **base, extra_args=[]))
    phases.run_phase(study, "prepare", progress=False)
    # sysbench missing: said before the first run, nothing recorded
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(ToolMissing, match="sysbench is not installed"):
        phases.run_phase(study, "sweep", progress=False)
    monkeypatch.undo()
    monkeypatch.setenv("TIBENCH_DATA", str(data_dir))
    assert len(Store.for_study(study).runs("t")) == 0
    # every run fails (sysbench refuses an option): the phase fails with a summary in words
    bad = load_study(_write_params(tmp_path, **base, extra_args=["--db-ps-mode=bogus"]))
    with pytest.raises(phases.PhaseFailed) as e:
        phases.run_phase(bad, "sweep", progress=False)
    msg = str(e.value)
    assert "2 of 2 runs failed" in msg and "Invalid value for db-ps-mode" in msg
    assert f"tibench run {tmp_path / 'study.yaml'} --phase sweep" in msg
    # resume (no --redo) retries the failed runs; their logs stay as earlier attempts
    df = phases.run_phase(study, "sweep", progress=False)
    assert (df["status"] == "ok").all() and (df["attempts"] == 2).all()
    for p in df["log_path"]:
        first = Path(p).with_name(Path(p).stem + ".attempt1.log")
        assert "Invalid value for db-ps-mode" in first.read_text()
        assert "Invalid value" not in Path(p).read_text()
    # good runs are not measured again without --redo
    again = phases.run_phase(study, "sweep", progress=False)
    assert list(again["tps"]) == list(df["tps"])


@pytest.mark.slow
def test_auth_failure_is_a_failed_run(tmp_path, data_dir, sysbench_bin, mariadb):
    from tibenchlib import phases
    from tibenchlib.params import load_study

    good = mariadb.conninfo()
    f = _write_params(
        tmp_path,
        study="auth",
        repeats=1,
        workloads=["oltp_point_select"],
        threads=[1],
        target={
            "kind": "url",
            "url": f"mysql+pymysql://{good.user}@127.0.0.1:{good.port}/sbtest",
            "password_env": "TB_TEST_PW",
        },
        allow_destructive=True,
    )
    study = load_study(f)
    os.environ["TB_TEST_PW"] = good.password
    try:
        phases.run_phase(study, "prepare", progress=False)
        from tibenchlib.sysbench.runner import RunSpec, run_one
        from tibenchlib.target import open_arm

        ctx = open_arm(study, "a")
        bad = type(ctx.conn)(**{**ctx.conn.__dict__, "password": "wrong-password"})
        ctx.conn = bad
        row = run_one(ctx, RunSpec("a", "oltp_point_select", 1, 1))
        assert row["status"] == "failed"
        assert "Access denied" in row["error"] and "error 1045" in row["error"]
    finally:
        del os.environ["TB_TEST_PW"]


@pytest.mark.slow
def test_destructive_steps_need_consent_on_a_real_target(tmp_path, data_dir, mariadb):
    from tibenchlib import phases
    from tibenchlib.params import load_study
    from tibenchlib.safety import DestructiveRefused

    c = mariadb.conninfo()
    f = _write_params(
        tmp_path,
        study="guard",
        dataset={"tables": 3, "table_size": 100},
        target={
            "kind": "url",
            "url": f"mysql+pymysql://{c.user}@127.0.0.1:{c.port}/guarded",
            "password_env": "TB_TEST_PW",
        },
    )
    os.environ["TB_TEST_PW"] = c.password
    try:
        with pytest.raises(DestructiveRefused, match="drop and re-create sbtest1..sbtest3"):
            phases.run_phase(load_study(f), "prepare", progress=False)
        steps = phases.run_phase(load_study(f), "prepare", yes=True, progress=False)
        assert (steps["status"].isin(["ok"])).all()
    finally:
        del os.environ["TB_TEST_PW"]


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_killed_mid_sweep_resumes_without_loss_or_repeats(tmp_path, data_dir, sysbench_bin, sig):
    """The sweep killed inside its second run (of four): the run measured before is kept as it
    was, the resume measures the other three, nothing twice."""
    from tibenchlib import phases
    from tibenchlib.params import load_study

    f = _write_params(
        tmp_path,
        study=f"kill{int(sig)}",
        workloads=["oltp_point_select"],
        threads=[1, 2],
        repeats=2,
        duration_s=2,
    )
    env = os.environ.copy()
    # prepared here (its server stays up for the sweep to find); the sweep, in a child, is killed
    phases.run_phase(load_study(f), "prepare", progress=False)
    cat = data_dir / f"kill{int(sig)}" / "results.sqlite"
    p = subprocess.Popen(
        [sys.executable, "-m", "tibenchlib.cli", "run", str(f), "--phase", "sweep", "--in-process"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    store = Store(f"sqlite:///{cat}")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(store.run_status(f"kill{int(sig)}")) < 1:
        time.sleep(0.2)
    time.sleep(1.0)  # now inside a run
    p.send_signal(sig)
    p.wait(timeout=30)
    before = store.runs(f"kill{int(sig)}")
    assert 1 <= len(before) < 4
    # no sysbench left running against the server from the killed study
    time.sleep(0.5)
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert not [ln for ln in ps.splitlines() if "sysbench" in ln and str(tmp_path) in ln]
    # a credentials file a SIGKILL left behind is only ever in the study's 0700 folder
    private = data_dir / f"kill{int(sig)}" / ".private"
    assert (private.stat().st_mode & 0o777) == 0o700
    # the resume in this process: only the killed sweep needs to be a child
    r = tibench("run", str(f), "--phase", "sweep", "--in-process", "--json")
    assert r.returncode == 0, r.stderr
    assert not list(private.glob("*.cfg")), "stale credentials removed at start"
    rows = json.loads(r.stdout)
    assert len(rows) == 4 and all(x["status"] == "ok" for x in rows)
    after = store.runs(f"kill{int(sig)}").set_index("run_key")
    # what was measured before the kill is untouched (same start times): nothing ran twice
    for rec in before.itertuples():
        assert after.loc[rec.run_key, "started_at"] == rec.started_at
    assert len(after) == 4


def test_estimate_counts_warmup_runs_and_dataset_growth_is_accepted():
    from tibenchlib.sysbench.prepare import matches

    s = _study(warmup_s=3, duration_s=10, cooldown_s=0)
    specs = plan(s)  # pre a | a, b | b, a: each round re-opens its arms -> 5 openings
    assert estimate(s, specs)["eta_s"] == pytest.approx(17 * 11 + 5 * 2 * 2 * 4)
    state = pd.DataFrame(
        {"table": ["sbtest1"], "exists": [True], "rows": [1005], "k_index": [True]}
    )
    assert not matches(state, 1000) and matches(state, 1000, grown_ok=True)
    assert not matches(state.assign(rows=999), 1000, grown_ok=True)


@pytest.mark.slow
def test_cooldown_holds_across_arm_switches_and_inserts_do_not_reprepare(
    tmp_path, data_dir, sysbench_bin
):
    from tibenchlib import phases
    from tibenchlib.params import load_study

    f = _write_params(
        tmp_path,
        study="cool",
        workloads=["oltp_insert"],
        threads=[1],
        repeats=2,
        duration_s=1,
        cooldown_s=1.5,
        arms=[
            {"label": "a"},
            {"label": "b", "server_options": {"innodb_flush_log_at_trx_commit": 2}},
        ],
    )
    study = load_study(f)
    df = phases.run_phase(study, "sweep", progress=False)
    assert (df["status"] == "ok").all()
    runs = Store.for_study(study).runs("cool")
    gaps = runs["started_at"].to_numpy()[1:] - runs["finished_at"].to_numpy()[:-1]
    assert (gaps >= 1.5).all(), gaps
    steps = Store.for_study(study).read("prepare_steps", "cool")
    assert (steps["step"] == "prepare").sum() == 1, "inserts must not re-create the tables"
