"""The ycsb phase: params, plan, combining clients' figures, status, and a real resumable run of
the upstream YCSB on the embedded MariaDB."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from tibenchlib import paths, registry
from tibenchlib.params import ParamsError, parse_study
from tibenchlib.parse.ycsb import parse_ycsb_file
from tibenchlib.ycsb import phase

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "tests" / "fixtures"
W = {"recordcount": 500, "maxexecutiontime_s": 2}


def _study(**ycsb):
    return parse_study(
        {
            "study": "y",
            "arms": [{"label": "a"}, {"label": "b"}],
            "phases": ["ycsb"],
            "ycsb": {"workloads": {"ru": W}, "threads": [1, 2], "repeats": 2, **ycsb},
        }
    )


# -- params -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "ycsb, field",
    [
        ({"workloads": {"ru": {**W, "readproportio": 0.5}}}, "ycsb.workloads.ru.readproportio"),
        ({"workloads": {"ru": {"recordcount": 10}}}, "operationcount or maxexecutiontime_s"),
        ({"workloads": {}}, "ycsb.workloads"),
        ({"threads": [0]}, "ycsb.threads.0"),
        ({"clients": 2, "endpoints": ["10.0.0.1:4000"]}, "one host:port per client"),
        ({"endpoints": ["10.0.0.1"]}, "ycsb.endpoints.0"),
        ({"thread": [1]}, "ycsb.thread: unknown key"),
        ({"workloads": {"ru": W, "big": {**W, "recordcount": 9}}}, "share table usertable"),
        ({"clients": 2, "workloads": {"i": {**W, "insertproportion": 0.1,
                                            "readproportion": 0.4}}}, "inserts collide"),
    ],
)  # fmt: skip
def test_bad_ycsb_params_name_the_field(ycsb, field):
    with pytest.raises(ParamsError) as e:
        _study(**ycsb)
    assert field in str(e.value)


def test_report_001_workload_validates():
    s = _study(
        workloads={
            "r001": {
                "recordcount": 800000, "operationcount": 1000000, "readproportion": 0.8,
                "updateproportion": 0.1, "insertproportion": 0.1,
                "requestdistribution": "uniform",
            }
        },
        threads=[8, 16, 32, 64, 128],
    )  # fmt: skip
    assert s.ycsb.workloads["r001"].properties()["insertproportion"] == "0.1"


def test_the_phase_is_registered_with_its_notebook():
    p = registry.get("ycsb")
    assert p is phase.YCSB and p.notebook == "07_ycsb.ipynb"
    assert (ROOT / "notebooks" / p.notebook).exists()


# -- plan ---------------------------------------------------------------------------------------
def test_plan_interleaves_arms_and_balances_their_order():
    specs = phase.plan(_study())
    assert len(specs) == 2 * 2 * 2 and len({s.run_key for s in specs}) == len(specs)
    assert [s.arm for s in specs] == ["a", "a", "b", "b", "b", "b", "a", "a"]
    assert [s.repeat for s in specs] == [1, 1, 1, 1, 2, 2, 2, 2]
    assert specs[0].run_key == "ycsb/a/ru/t1/r1" and [s.seq for s in specs] == list(range(8))
    assert phase.plan(_study(), arms=["b"])[0].arm == "b"


def test_estimate_counts_runs_and_time():
    est = phase.estimate(_study())
    assert est["runs"] == 8
    assert est["eta_s"] >= 8 * (2 + phase.RUN_OVERHEAD_S)


# -- combining clients --------------------------------------------------------------------------
def _go_summary():
    return parse_ycsb_file(FIX / "go-ycsb" / "go-ycsb-run-2020-old-format-with-properties.txt")


def test_one_go_ycsb_client_keeps_its_figures_and_no_overall_percentile_is_invented():
    s = _go_summary().summary
    ops, lat, source = phase.combine([s], None, tool="go-ycsb")
    calls = {op: n for op, n in s["operations"].items() if not op.endswith("_ERROR")}
    assert {op: v["count"] for op, v in ops.items()} == s["operations"]
    assert lat["READ"] == s["latency_ms"]["READ"] and "no histogram" in source
    if len(calls) > 1:
        assert lat["ALL"]["p95"] is None and lat["ALL"]["p99"] is None
    total = sum(s["operations"].values())
    want = sum(s["latency_ms"][op]["avg"] * n for op, n in s["operations"].items()) / total
    assert lat["ALL"]["avg"] == pytest.approx(want)


def test_two_real_clients_combine_into_sums_and_merged_latency():
    from tibenchlib.ycsb import hdr

    d = FIX / "ycsb" / "hdr2"
    sums = [parse_ycsb_file(d / f"client{i}.run.log").summary for i in (0, 1)]
    hist = [hdr.read_client(d / f"client{i}") for i in (0, 1)]
    ops, lat, source = phase.combine(sums, hist, tool="ycsb")
    assert ops["READ"]["count"] == sums[0]["operations"]["READ"] + sums[1]["operations"]["READ"]
    assert "2 clients merged" in source and lat["ALL"]["p95"] > 0
    rec = SimpleNamespace(arm="a", workload="ru", threads=4, repeat=1)
    rows = phase.op_rows(rec, ops, lat, source)
    all_row = next(r for r in rows if r["operation"] == "ALL")
    assert all_row["count"] == ops["READ"]["count"] + ops["UPDATE"]["count"]


def _ok(rc=0):
    return SimpleNamespace(missing=None, timed_out=False, returncode=rc, wall_s=2.0)


def test_status_counts_errors_and_names_the_failed_client():
    good = {"status": "ok"}
    ops = {"READ": {"count": 990, "errors": 5}, "UPDATE": {"count": 0, "errors": 0}}
    assert phase._status(ops, [good], [_ok()], 2)[0] == "ok"
    assert "5 of 995" in phase._status(ops, [good], [_ok()], 2)[2][0]
    ops["READ"]["errors"] = 50
    st, err, _ = phase._status(ops, [good], [_ok()], 2)
    assert st == "degenerate" and "50 of 1040" in err
    st, err, _ = phase._status(ops, [good, {"status": "error", "error": "truncated"}],
                               [_ok(), _ok(1)], 2)  # fmt: skip
    assert st == "failed" and err == "client 1: truncated; YCSB exited 1"  # the one status rule
    st, err, _ = phase._status(ops, [good], [_ok(137)], 2)
    assert st == "failed" and err == "YCSB exited 137"
    timed_out = SimpleNamespace(missing=None, timed_out=True, returncode=None, wall_s=61.4)
    assert phase._status(ops, [good], [timed_out], 2)[:2] == ("failed", "timeout after 61 s")
    assert phase._status({"CLEANUP": {"count": 2, "errors": 0}}, [good], [_ok()], 2)[0] == (
        "degenerate"
    )


# -- the real thing -----------------------------------------------------------------------------
@pytest.fixture
def ycsb_home(monkeypatch):
    if not (shutil.which("java") and shutil.which("mvn")):
        pytest.skip("java and mvn are not installed (make setup installs them)")
    # the clone's build, shared by the tests' temporary data directories
    monkeypatch.setenv("TIBENCH_YCSB_HOME", str(ROOT / "data" / "ycsb"))


@pytest.mark.slow
def test_phase_loads_once_runs_records_and_resumes(data_dir, ycsb_home):
    from tibenchlib import phases
    from tibenchlib.store import Store

    s = parse_study(
        {
            "study": "yc",
            "phases": ["ycsb"],
            "ycsb": {
                "workloads": {"ru": {"recordcount": 300, "maxexecutiontime_s": 2}},
                "threads": [2],
                "repeats": 2,
                "clients": 2,
                # runs of 2 s: the JVMs' optimizing compiler would cost more CPU than the run
                "jvm_options": ["-XX:TieredStopAtLevel=1"],
            },
        }
    )
    df = phases.run_phase(s, "ycsb", yes=False, arms=None, redo=False, progress=False)
    assert list(df["status"]) == ["ok", "ok"], df[["run_key", "error"]]
    store = Store.for_study(s)
    runs = store.runs("yc", phase="ycsb")
    assert (runs["threads"] == 4).all() and (runs["tps"] > 0).all()
    assert runs["command"].str.startswith("java -XX:TieredStopAtLevel=1 -cp ").all()
    assert (runs["lat_p99_ms"] >= runs["lat_p95_ms"]).all()
    ops = store.read("ycsb_ops", "yc")
    for r in runs.itertuples():
        mine = ops[ops["run_key"] == r.run_key].set_index("operation")
        assert mine.loc["ALL", "count"] == r.events
        assert mine.loc["ALL", "p95_ms"] == r.lat_p95_ms
        assert "2 clients merged" in mine.loc["ALL", "source"]
        assert set(json.loads(r.summary_json)["client_logs"]) and Path(r.log_path).is_file()
        # each client's log is named by the rule every tool follows, its histograms beside it
        logs = paths.client_run_logs("yc", "ycsb", r.run_key, 2)
        assert all(p.is_file() and p.with_suffix(".hdr").is_dir() for p in logs), logs
    steps = store.read("prepare_steps", "yc")
    assert list(steps["step"]) == ["ycsb_load"] and "verified: 300 rows" in steps["detail"][0]
    out = json.loads((data_dir / "yc" / "results" / "ycsb.json").read_text())
    assert [r["run_key"] for r in out] == list(df["run_key"]) and out[0]["tps"] > 0
    assert out[0]["clients"] == 2 and out[0]["operations"]["READ"]["count"] > 0
    assert out[0]["operations"]["ALL"]["p95_ms"] == out[0]["lat_p95_ms"]
    assert out[0]["operations"]["ALL"]["count"] == runs["events"][0]

    # again: nothing re-measured, the data set verified and not loaded again
    before = dict(zip(runs["run_key"], runs["started_at"], strict=True))
    phases.run_phase(s, "ycsb", yes=False, arms=None, redo=False, progress=False)
    again = Store.for_study(s).runs("yc", phase="ycsb")
    assert dict(zip(again["run_key"], again["started_at"], strict=True)) == before
    # (no arm was opened: nothing left to do)
    assert list(Store.for_study(s).read("prepare_steps", "yc")["step"]) == ["ycsb_load"]


def test_writes_on_a_cluster_are_refused_without_consent(data_dir):
    """Nothing is loaded or written on a real target without allow_destructive or --yes (the
    check comes before any connection to the table)."""
    from tibenchlib.db import ConnInfo
    from tibenchlib.safety import DestructiveRefused
    from tibenchlib.target import ArmContext

    s = _study()
    cluster = ConnInfo("10.0.0.5", 4000, "root", "test")
    ctx = ArmContext(s, s.arms[0], conn=cluster, info=None, store=None, server=None, yes=False)
    with pytest.raises(DestructiveRefused, match="run YCSB workloads that write"):
        phase.ensure_loaded(ctx)


@pytest.mark.parametrize("name, limit_s", [("ci.yaml", 90), ("demo.yaml", 180)])
def test_shipped_studies_run_the_phase_at_small_size(name, limit_s):
    """The CI study's phase (3 repeats, so that a cell has an interval worth reading) fits in a
    minute and a half, the demo's in three (the dry run's estimate, the
    binding's first Maven build left out: `make setup` builds it)."""
    from tibenchlib.params import load_study

    est = phase.estimate(load_study(ROOT / "params" / name))
    built = "binding is built first" in est["note"]
    assert est["runs"] > 0 and est["eta_s"] - (phase.BUILD_S if built else 0) <= limit_s
