"""Phase dm: the dm: params, the plan of knob settings, the statistics with known answers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tibenchlib import stats
from tibenchlib.dm import analysis
from tibenchlib.dm.phase import DmSetupError, check_target
from tibenchlib.dm.plan import arm_labels, plan, settings_for
from tibenchlib.params import ParamsError, parse_study
from tibenchlib.phase import RunContext


def study(**dm):
    return parse_study({"study": "dmp", "dm": dm})


@pytest.mark.parametrize(
    "dm,field",
    [
        ({"bogus": 1}, "dm.bogus: unknown key"),
        ({"dump": {"statement_size": [999]}}, "dm.dump.statement_size.0"),
        ({"dump": {"threads": [0]}}, "dm.dump.threads.0"),
        ({"load": {"threads": [2, 0]}}, "dm.load.threads.1"),
        ({"load": {"pool": [2]}}, "dm.load.pool: unknown key"),
        ({"sync": {"mode": "fast"}}, "dm.sync.mode"),
        ({"sync": {"workloads": ["oltp_point_select"]}}, "dm.sync.workloads.0"),
        ({"dump": {"threads": []}}, "dm.dump.threads"),
        ({"master_url": "http://10.0.0.1:8261"}, "source_name"),
        ({"master_url": "http://u:secret@10.0.0.1:8261", "source_name": "s"}, "password"),
    ],
)
def test_bad_dm_params_name_the_field(dm, field):
    with pytest.raises(ParamsError, match=field.replace(".", r"\.")) as e:
        study(**dm)
    assert "secret" not in str(e.value)


def test_plan_sweeps_one_knob_at_a_time_arms_alternate():
    s = study(
        repeats=3,
        dump={"threads": [4, 32], "statement_size": [1_000_000]},
        load={"threads": [2, 16]},
        sync={"workers": [4, 16], "workloads": ["oltp_insert", "oltp_write_only"]},
    )
    specs = plan(s)
    full = [x for x in specs if x.unit == "full"]
    sync = [x for x in specs if x.unit == "sync"]
    assert len(full) == 4 * 3 and len(sync) == 2 * 2 * 3
    # every full run precedes every sync run (the replica is set up once)
    assert max(x.seq for x in full) < min(x.seq for x in sync)
    assert len({x.run_key for x in specs}) == len(specs)
    assert arm_labels(s) == [
        "dump.threads=4", "dump.threads=32", "load.threads=2", "load.threads=16",
        "sync.workers=4", "sync.workers=16",
    ]  # fmt: skip
    # the arms' order changes between rounds: round 2 is round 1 reversed
    r1 = [x.arm for x in full if x.repeat == 1]
    r2 = [x.arm for x in full if x.repeat == 2]
    assert r2 == r1[::-1]
    # the other knobs stay at their base (first) setting
    assert settings_for(s, "load.threads", 16) == {
        "dump.threads": 4, "dump.rows": None, "dump.statement_size": 1_000_000,
        "load.threads": 16, "load.queries_per_transaction": 1000, "sync.workers": 4,
    }  # fmt: skip
    assert [x.arm for x in plan(s, ["load.threads=16"])] == ["load.threads=16"] * 3


def test_no_swept_knob_is_one_base_arm_and_rows_off_is_named():
    s = study(repeats=2, dump={"rows": [None, 320000]}, sync={"workers": []})
    assert arm_labels(s) == ["dump.rows=off", "dump.rows=320000"]
    s = study(repeats=2, sync={"workers": []})
    assert [x.run_key for x in plan(s)] == ["dm/full.base/full/r1", "dm/full.base/full/r2"]


def test_external_target_without_master_url_fails_before_measuring():
    s = parse_study(
        {"study": "x", "target": {"kind": "url", "url": "mysql+pymysql://root@10.0.0.1:4000/x"}}
    )
    with pytest.raises(DmSetupError, match="set dm.master_url"):
        check_target(s)


def _dm_runs(values: dict, unit="full", knob="load.threads", failed=()) -> pd.DataFrame:
    rows, seq = [], 0
    for setting, xs in values.items():
        for i, x in enumerate(xs, start=1):
            bad = (setting, i) in failed
            rows.append(
                {
                    "run_key": f"dm/{knob}={setting}/r{i}", "unit": unit, "knob": knob,
                    "setting": setting, "workload": "full" if unit == "full" else "oltp_insert",
                    "repeat": i, "seq": seq, "status": "failed" if bad else "ok",
                    "verified": not bad, "dump_mb_s": 10.0, "dump_rows_s": 1e4,
                    "load_mb_s": x, "load_rows_s": x * 1000, "latency_ms": 2 * x,
                    "rows_per_statement": 100.0, "rows_s": x,
                }
            )  # fmt: skip
            seq += 1
    return pd.DataFrame(rows)


def test_result_rows_known_answer():
    runs = _dm_runs({"2": [10.0, 12.0, 14.0], "16": [20.0, 22.0, 30.0]}, failed={("16", 3)})
    units = analysis.unit_rows(runs)
    assert set(units["unit"]) == {"load"}  # a load knob gives no dump rows
    rows = analysis.result_rows(units)
    r2, r16 = rows.iloc[0], rows.iloc[1]
    assert list(rows["setting"]) == ["2", "16"]  # by number, not as text
    # mean 12, sd 2, n 3, a positive figure: 12 · exp(± t(0.975, 2) · 2/(12√3)) (log scale)
    h = 4.302652729911275 * 2 / (12 * np.sqrt(3))
    assert r2["mb_s"] == pytest.approx(12.0) and r2["ci_low"] == pytest.approx(12 * np.exp(-h))
    assert r2["ci_high"] == pytest.approx(12 * np.exp(h)) and r2["latency_ms"] == pytest.approx(24)
    # the failed run (30) never enters a figure
    assert r16["n"] == 2 and r16["n_failed"] == 1 and r16["mb_s"] == pytest.approx(21.0)
    assert r16["status"] == "some failed" and not r16["verified"]
    assert r2["status"] == "ok" and r2["verified"]
    assert list(rows.columns[:4]) == ["unit", "knob", "setting", "workload"]


def test_recommendation_smallest_within_five_percent_with_fieller():
    runs = _dm_runs(
        {
            "2": [50.0, 52.0, 54.0],
            "8": [97.0, 99.0, 101.0],
            "16": [100.0, 101.0, 102.0],
            "32": [99.0, 100.0, 101.0],
        }  # fmt: skip
    )
    rec = analysis.recommendation(analysis.unit_rows(runs)).iloc[0]
    assert rec["best"] == "16" and rec["smallest"] == "8"
    f = stats.fieller_ratio([97.0, 99.0, 101.0], [100.0, 101.0, 102.0])
    assert rec["ratio"] == pytest.approx(99 / 101)
    assert (rec["ci_low"], rec["ci_high"]) == (
        pytest.approx(f["ci_low"]),
        pytest.approx(f["ci_high"]),
    )
    assert not rec["sure"]  # its interval reaches below 0.95


@pytest.mark.slow  # a seeded Monte-Carlo simulation
def test_recommendation_finds_the_true_knee_in_simulation():
    """Throughput that rises to a plateau at setting 16 (known truth), noise 2%, 5 runs each:
    the smallest setting within 5% of the best is 16 in nearly every simulated study, never 4."""
    rng = np.random.default_rng(7)
    truth = {"4": 40.0, "8": 80.0, "16": 100.0, "32": 101.0, "64": 100.5}
    picks = []
    for _ in range(200):
        vals = {k: list(v * (1 + 0.02 * rng.standard_normal(5))) for k, v in truth.items()}
        rec = analysis.recommendation(analysis.unit_rows(_dm_runs(vals))).iloc[0]
        picks.append(rec["smallest"])
        assert rec["smallest_mean"] >= 0.95 * rec["best_mean"]
    picks = pd.Series(picks)
    assert (picks == "16").mean() > 0.95 and not picks.isin(["4", "8"]).any()


def test_sync_rows_use_rows_per_second():
    runs = _dm_runs({"1": [400.0, 420.0], "4": [5000.0, 5200.0]}, unit="sync", knob="sync.workers")
    rows = analysis.result_rows(analysis.unit_rows(runs))
    assert list(rows["metric"]) == ["rows_s", "rows_s"] and rows["mb_s"].isna().all()
    assert rows["rows_s"].tolist() == [410.0, 5100.0]


def test_recommendation_when_nothing_smaller_comes_close():
    runs = _dm_runs({"1": [10.0, 11.0, 12.0], "4": [40.0, 41.0, 42.0]})
    rec = analysis.recommendation(analysis.unit_rows(runs)).iloc[0]
    assert rec["best"] == rec["smallest"] == "4" and rec["ratio"] == 1.0
    assert rec["ci_low"] is None and rec["sure"] is None
    assert rec["warnings"] == ["no smaller setting within 5% of the best"]


# -- real DM (dm.master_url) ---------------------------------------------------------------------
REAL = {
    "study": "dmreal",
    "target": {"kind": "url", "url": "mysql+pymysql://root@127.0.0.1:9/dm_benchmark"},
    "phases": ["dm"],
    "dm": {
        "master_url": "http://127.0.0.1:9",
        "source_name": "mysql-replica-01",
        "source_url": "mysql+pymysql://root@127.0.0.1:9/dm_benchmark",
    },
}


def test_real_dm_refused_without_yes_before_any_request(tmp_path, monkeypatch):
    from tibenchlib.dm.phase import run_dm_phase
    from tibenchlib.safety import DestructiveRefused
    from tibenchlib.store import Store

    monkeypatch.setenv("TIBENCH_DATA", str(tmp_path))
    with pytest.raises(DestructiveRefused, match="set allow_destructive: true.*--yes"):
        run_dm_phase(RunContext.open(parse_study(REAL), progress=False, store=Store("sqlite://")))


def test_real_dm_params_need_the_source():
    bad = {**REAL, "dm": {"master_url": "http://127.0.0.1:9", "source_name": "s"}}
    with pytest.raises(ParamsError, match="source_url"):
        parse_study(bad)


def test_seed_dm_params_are_report_003s_settings():
    from tibenchlib import paths
    from tibenchlib.params import load_study

    s = load_study(paths.params_examples_dir() / "seed-dm-1.0.yaml")
    assert s.dm.load.threads[0] == 32 and sorted(s.dm.load.threads) == [2, 4, 8, 16, 32, 64]
    assert sorted(s.dm.sync.workers) == [4, 8, 16, 32, 64, 1024] and s.dm.sync.batch == 100
    assert set(s.dm.dump.statement_size) >= {62500, 1000000, 1500000}
    assert s.target.kind == "url" and not s.allow_destructive


def test_real_dm_timing_and_counts_from_polled_status():
    from pathlib import Path

    from tibenchlib.dm import dmctl
    from tibenchlib.dm.real import counts_agree, unit_times

    fix = Path(__file__).parent / "fixtures" / "dm"
    load = dmctl.parse_query_status(
        (fix / "dmctl-v8.5.2-query-status-load-paused-error.txt").read_text()
    )
    sync = dmctl.parse_query_status(
        (fix / "dmctl-v8.5.4-query-status-sync-running-raw-tiup-banner.txt").read_text()
    )
    dump = load.assign(unit="dump")
    polls = pd.concat(
        [dump.assign(t=0.0), dump.assign(t=2.0), load.assign(t=4.0), sync.assign(t=9.0)]
    )
    assert unit_times(polls) == (4.0, 5.0)
    assert unit_times(polls[polls["t"] < 3]) == (2.0, None)
    assert counts_agree({"a": 3, "b": 2}, {"a": 3, "b": 2}) is None
    assert (
        counts_agree({"a": 3, "b": 2}, {"a": 3}) == "verification failed: b missing on the target"
    )
    assert counts_agree({"a": 3}, {"a": 4}) == "verification failed: a rows 3 ≠ 4"
