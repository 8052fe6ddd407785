"""Measured warm-up: when a warm-up may stop, and what the catalog keeps of it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tibenchlib.store import Store
from tibenchlib.warmup import steady_after, warmup_summary, warmup_table


def test_a_long_warmup_run_is_judged_by_mser5_alone():
    rng = np.random.default_rng(1)
    flat = 1000 + 20 * rng.standard_normal(30)
    st = steady_after(flat, None)
    assert st["steady"] and st["change_pct"] is None  # MSER-5 may cut noise; it moves nothing
    ramp = np.concatenate([np.linspace(200, 1000, 15), 1000 + 20 * rng.standard_normal(15)])
    st = steady_after(ramp, None)
    assert not st["steady"] and st["mser_cut_s"] > 5 and "still warming" in st["detail"]


def test_short_warmup_runs_must_agree_with_the_previous_one():
    first = steady_after([900.0, 950.0, 1000.0], None)
    assert not first["steady"] and "compared with the next" in first["detail"]
    assert first["tps"] == 950.0
    near = steady_after([1000.0, 1010.0, 990.0], 950.0)
    assert near["steady"] and round(near["change_pct"], 2) == 5.26
    far = steady_after([1300.0, 1310.0, 1290.0], 950.0)
    assert not far["steady"] and "beyond" in far["detail"]
    assert not steady_after([], 950.0)["steady"]


def test_warmups_are_kept_in_the_catalog_and_summarised(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'c.sqlite'}")
    rows = [
        {"study": "s", "arm": "a", "workload": "w", "threads": 4, "opening": 1, "attempt": k,
         "seconds": 3.1, "tps": tps, "n_intervals": 3, "mser_cut_s": None,
         "change_pct": ch, "steady": st, "detail": "", "log_path": "x", "at": float(k)}
        for k, tps, ch, st in [(1, 800.0, None, False), (2, 990.0, 23.75, False),
                               (3, 1000.0, 1.0, True)]
    ]  # fmt: skip
    store.append("warmups", rows)
    t = warmup_table(store, "s")
    assert list(t["attempt"]) == [1, 2, 3] and t["steady"].tolist() == [False, False, True]
    s = warmup_summary(t).iloc[0]
    assert (s["runs"], round(s["seconds"], 1), bool(s["steady"]), s["last_tps"]) == (
        3,
        9.3,
        True,
        1000.0,
    )
    assert warmup_summary(pd.DataFrame()).empty


@pytest.mark.slow
def test_sweep_warms_up_each_arm_opening_and_records_it(data_dir, sysbench_bin):
    """Real MariaDB and sysbench: two arms over two balanced rounds after a pre-period run of
    the first arm -> pre a | a, b | b, a, every round re-opening its arms: five openings, each
    with 1-2 two-second warm-up runs kept in the catalog, none in the runs."""
    from tibenchlib import phases
    from tibenchlib.params import parse_study

    study = parse_study(
        {
            "study": "warm",
            "dataset": {"tables": 1, "table_size": 500},
            "workloads": ["oltp_point_select"],
            "threads": [1],
            "duration_s": 1,
            "repeats": 2,
            "warmup_s": 2,
            "warmup_max_runs": 2,
            "arms": [
                {"label": "a"},
                {"label": "b", "server_options": {"innodb_flush_log_at_trx_commit": 2}},
            ],
        }
    )
    phases.run_phase(study, "sweep", progress=False)
    store = Store.for_study(study)
    w = warmup_table(store, "warm")
    assert sorted(w["opening"].unique()) == [1, 2, 3, 4, 5]
    assert list(w.groupby("opening")["arm"].first()) == ["a", "a", "b", "b", "a"]
    assert w["attempt"].max() <= 2 and (w["tps"] > 0).all() and (w["n_intervals"] >= 1).all()
    assert w["detail"].str.len().gt(0).all()
    s = warmup_summary(w)
    assert len(s) == 5 and (s["runs"] >= 1).all()
    # warm-ups never enter the runs: the four measured runs and the pre-period run
    runs = store.runs("warm")
    assert len(runs) == 5 and (runs["phase"] == "sweep-pre").sum() == 1


@pytest.mark.slow
def test_one_warmup_run_per_opening_is_recorded_without_a_warning(data_dir, sysbench_bin, caplog):
    """``warmup_max_runs: 1`` (the demo's) is a fixed warm-up: one run per opening, recorded in
    the catalog, and no "not steady" warning, which one run can only ever earn (it has nothing
    to be compared with) and which would fill the terminal at every arm switch."""
    import logging

    from tibenchlib import phases
    from tibenchlib.params import parse_study

    study = parse_study(
        {
            "study": "warm1",
            "dataset": {"tables": 1, "table_size": 500},
            "workloads": ["oltp_point_select"],
            "threads": [1],
            "duration_s": 1,
            "repeats": 1,
            "warmup_s": 2,
            "warmup_max_runs": 1,
            "arms": [{"label": "a"}, {"label": "b"}],
        }
    )
    with caplog.at_level(logging.INFO, logger="tibenchlib.sysbench.runner"):
        phases.run_phase(study, "sweep", progress=False)
    w = warmup_table(Store.for_study(study), "warm1")
    # pre a | a, b: the pre-period run's opening and each arm's in the round
    assert len(w) == 3 and (w["attempt"] == 1).all()
    said = [r for r in caplog.records if "not steady after" in r.getMessage()]
    assert said and all(r.levelno < logging.WARNING for r in said)
