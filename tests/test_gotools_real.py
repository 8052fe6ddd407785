"""go-ycsb v1.0.3 and go-tpc v1.0.7, tibench's own builds (:mod:`tibenchlib.gobuild`), run for
real by the ``ycsb`` and ``tpcc`` phases against the embedded MariaDB."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from tibenchlib import gobuild, phases
from tibenchlib.params import parse_study
from tibenchlib.server import embedded
from tibenchlib.store import Store
from tibenchlib.tools import origin, require

pytestmark = pytest.mark.slow

#: go-ycsb's start and its connections, and the end after SIGINT (final figures printed)
MARGIN_S = 2.0


@pytest.fixture(scope="module")
def go_tools() -> dict[str, str]:
    """Both tools, built here when ``make setup`` did not (minutes, once per user)."""
    if gobuild.find_go() is None and not all(gobuild.built(n) for n in gobuild.TOOLS):
        pytest.skip(f"go-ycsb and go-tpc are built with the go command: {gobuild.GO_HINT}")
    return {n: require(n) for n in gobuild.TOOLS}


def test_the_builds_are_the_pinned_versions(go_tools):
    for name, tool in gobuild.TOOLS.items():
        o = origin(name)
        assert o is not None and o["path"] == go_tools[name]
        if gobuild.built(name):  # tibench's own build: its module and hash recorded
            assert (o["source"]["module"], o["source"]["version"]) == (tool.module, tool.version)
            assert o["source"]["sum"] == tool.sum


def test_a_study_of_go_ycsb_and_go_tpc_runs_every_run_ok(data_dir, go_tools):
    s = parse_study(
        {
            "study": "go",
            "phases": ["ycsb", "tpcc"],
            "ycsb": {
                "tool": "go-ycsb",
                "workloads": {
                    "a": {"recordcount": 500, "maxexecutiontime_s": 2, "readproportion": 0.5,
                          "updateproportion": 0.5},
                },
                "threads": [2],
                "repeats": 2,
            },
            "tpcc": {"tool": "go-tpc", "warehouses": [1], "threads": [2], "duration_s": 3,
                     "repeats": 2},
        }
    )  # fmt: skip
    df = phases.run_phase(s, "ycsb", yes=False, arms=None, redo=False, progress=False)
    assert list(df["status"]) == ["ok", "ok"], df[["run_key", "error"]]
    store = Store.for_study(s)
    runs = store.runs("go", phase="ycsb")
    # timed runs end at their duration: SIGINT at 2 s, go-ycsb's own clock close to it
    assert (runs["wall_s"] < 2 + MARGIN_S).all(), runs["wall_s"]
    assert runs["total_time_s"].between(1.5, 2.5).all(), runs["total_time_s"]
    assert runs["command"].str.startswith("go-ycsb run mysql -P '<0600 property file>'").all()
    assert (runs["tps"] > 0).all() and (runs["n_intervals"] >= 1).all()
    # one client: the TOTAL line's percentiles are the run's
    assert runs["lat_p95_ms"].notna().all() and (runs["lat_p99_ms"] >= runs["lat_p95_ms"]).all()
    for r in runs.itertuples():
        summary = json.loads(r.summary_json)
        assert summary["tool"] == "go-ycsb" and summary["operations"]["READ"]["count"] > 0
        log = Path(r.log_path).read_text()
        assert "Got signal [interrupt] to exit." in log and "Run finished, takes" in log
        # the calls the interrupt cut short are go-ycsb's _ERROR counts, not the server's
        cut = log.count("operation err: context canceled")
        assert summary["cancelled_at_deadline"] == cut <= 2
    assert (runs["errors"] == 0).all(), runs[["run_key", "errors", "warnings"]]
    steps = store.read("prepare_steps", "go")
    assert list(steps["step"]) == ["ycsb_load"] and "500 rows" in steps["detail"][0]

    phases.run_phase(s, "tpcc", yes=False, arms=None, redo=False, progress=False)
    runs = store.runs("go", phase="tpcc")
    assert list(runs["status"]) == ["ok", "ok"], runs[["run_key", "error"]]
    assert runs["command"].str.startswith("go-tpc tpcc ").all()
    assert (runs["tps"] > 0).all()
    # the per-second [Current] series, stored as sysbench's
    assert (runs["n_intervals"] >= 2).all(), runs["n_intervals"]
    iv = store.intervals("go")
    iv = iv[iv["run_key"].isin(runs["run_key"])]
    assert len(iv) == runs["n_intervals"].sum() and (iv["tps"] > 0).all()
    steps = store.read("prepare_steps", "go")
    got = {r.step: (r.status, r.detail) for r in steps.itertuples()}
    assert got["tpcc_prepare"][0] == "ok" and "(go-tpc)" in got["tpcc_prepare"][1], got
    assert got["tpcc_verify"][0] == "ok", got
    # go-tpc takes the password on its command line only: never in a log or a record
    pw = embedded().conninfo().password
    assert pw and not any(pw in Path(p).read_text() for p in runs["log_path"])
    assert not any(pw in str(v) for v in runs.astype(str).to_numpy().ravel())


def test_several_go_ycsb_clients_end_together_at_the_deadline(data_dir, go_tools):
    """Two go-ycsb clients started together each get SIGINT at the deadline; their throughput
    is summed, and no percentile is made up from two clients' (no histogram to merge)."""
    s = parse_study(
        {
            "study": "gm",
            "phases": ["ycsb"],
            "ycsb": {
                "tool": "go-ycsb",
                "clients": 2,
                "workloads": {"a": {"recordcount": 300, "maxexecutiontime_s": 2}},
                "threads": [1],
                "repeats": 1,
            },
        }
    )
    phases.run_phase(s, "ycsb", yes=False, arms=None, redo=False, progress=False)
    (r,) = Store.for_study(s).runs("gm", phase="ycsb").itertuples()
    assert r.status == "ok" and r.threads == 2 and r.wall_s < 2 + MARGIN_S, r
    summary = json.loads(r.summary_json)
    logs = [Path(p).read_text() for p in summary["client_logs"]]
    assert len(logs) == 2 and all("Got signal [interrupt] to exit." in t for t in logs)
    assert pd.isna(r.lat_p95_ms)  # empty, not averaged
    assert r.tps > 0 and r.errors == 0
