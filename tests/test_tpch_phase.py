"""Phase tpch_scaling on the private server: arms as CPU sets, power and throughput, every
execution verified and stored as it finishes, resumed without re-running."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from tibenchlib import phases
from tibenchlib.params import parse_study
from tibenchlib.store import Store
from tibenchlib.tpch import phase

CLI = ["query", "arm", "mode", "n", "status", "mean_s", "ci_low_s", "ci_high_s",
       "improvement_pct", "ci_low_pct", "ci_high_pct", "verified"]  # fmt: skip


def test_elapsed_summary_compares_rates_not_wall_times():
    # arm b runs two streams in about the same wall time as a's one: twice the rate, paired
    # by pass (the passes alternated: b's pass r ran beside a's)
    rows = []
    for arm, streams, walls in (("a", 1, (10.0, 11.0, 9.0)), ("b", 2, (10.0, 11.22, 8.82))):
        for rep, wall in zip((1, 2, 3), walls, strict=True):
            for s in range(streams):
                rows.append(
                    {
                        "arm": arm,
                        "mode": "throughput",
                        "rep": rep,
                        "stream": s,
                        "query": 1,
                        "warmup": False,
                        "started_at": 100.0 * rep,
                        "seconds": wall,
                        "status": "ok",
                    }
                )
    out = phase.elapsed_summary(pd.DataFrame(rows), ["a", "b"]).set_index("arm")
    assert out.loc["b", "qph_improvement_pct"] == pytest.approx(100.0, abs=0.1)
    assert out.loc["b", "ci_low_pct"] < 100 < out.loc["b", "ci_high_pct"]
    assert out.loc["a", "queries"] == 1 and out.loc["b", "queries"] == 2


@pytest.mark.slow
def test_tpch_phase_runs_verifies_and_resumes(data_dir):
    study = parse_study({
        "study": "tp",
        "tpch_scaling": {"scale_factor": 0.01, "repeats": 2, "queries": [1, 6, 15],
                         "arms": ["cpus:0", "unbound"], "modes": ["power", "throughput"]},
    })  # fmt: skip
    rows = phases.run_phase(study, "tpch_scaling", progress=False)
    assert list(rows.columns) == CLI
    assert len(rows) == 3 * 2 * 2
    assert (rows["status"] == "ok").all() and rows["verified"].all()
    base = rows[rows["arm"] == "cpus:0"]
    assert base["ci_low_pct"].isna().all() and (base["improvement_pct"] == 0).all()
    other = rows[rows["arm"] == "unbound"]
    assert (other["n"] == 2).all()
    bounded = other.dropna(subset=["ci_low_pct"])  # n = 2: Fieller may be unbounded, then null
    assert (
        (bounded["ci_low_pct"] <= bounded["improvement_pct"])
        & (bounded["improvement_pct"] <= bounded["ci_high_pct"])
    ).all()
    store = Store.for_study(study)
    q = store.read("tpch_queries", "tp")
    # power: 3 queries × (1 warm-up + 2 repeats) per arm; throughput: one stream per core
    assert len(q[(q["mode"] == "power")]) == 2 * 3 * 3
    thr = q[(q["mode"] == "throughput") & (q["repeat"] > 0)]
    assert thr.groupby("arm")["stream"].nunique().to_dict() == {"cpus:0": 1, "unbound": 2}
    saved = json.loads((data_dir / "tp/results/tpch_scaling.json").read_text())
    assert len(saved) == 12 and set(saved[0]) == set(CLI)
    before = q.set_index(["arm", "mode", "query", "stream", "repeat"])["at"]
    phases.run_phase(study, "tpch_scaling", progress=False)
    after = store.read("tpch_queries", "tp").set_index(["arm", "mode", "query", "stream", "repeat"])
    assert after["at"].equals(before), "a complete phase runs nothing again"
