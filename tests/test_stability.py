"""Dips, floors and change points on series whose truth is known; CPU against throughput."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest
import ruptures as rpt

from tibenchlib import stability
from tibenchlib.stability import (
    change_points,
    cpu_vs_throughput,
    dip_events,
    stability_by_run,
    stability_report,
)


def _series(
    seed: int, n: int = 600, sd: float = 0.05, rho: float = 0.0, white: float = 0.0
) -> pd.DataFrame:
    """``n`` one-second intervals labelled t = 1..n, TPS 1000 × (1 + noise): AR(1) noise of
    marginal sd ``sd`` plus independent measurement noise of sd ``white``."""
    rng = np.random.default_rng(seed)
    e = rng.standard_normal(n)
    if rho:
        for i in range(1, n):
            e[i] = rho * e[i - 1] + np.sqrt(1 - rho**2) * e[i]
    w = white * rng.standard_normal(n) if white else 0.0
    return pd.DataFrame({"t": np.arange(1, n + 1, dtype=float), "tps": 1000 * (1 + sd * e + w)})


def _known_answer(seed: int = 7) -> pd.DataFrame:
    df = _series(seed)
    t = df["t"]
    df.loc[t.between(200, 202), "tps"] = 0.05 * 1000
    df.loc[t.between(400, 459), "tps"] *= 0.70
    return df


def test_known_answer_floor_event_and_level_shift():
    rep = stability_report(_known_answer())
    ev = rep["events"]
    assert len(ev) == 1, ev
    e = ev.iloc[0]
    assert e["kind"] == "floor"
    assert (e["start"], e["end"], e["duration_s"]) == (200, 203, 3)
    assert e["floor_s"] == 3 and e["dip_s"] == 3
    # The shift to 70% is no dip ...
    assert rep["n_dip_events"] == 0
    # ... but the change points find it, to the second.
    assert rep["change_points"] == [400.0, 460.0]
    seg = rep["segments"]
    assert seg["level_pct"].iloc[1] == pytest.approx(70, abs=3)
    assert rep["n_floor_events"] == 1 and rep["longest_event_s"] == 3
    assert any("level shifts at t=400, 460s" in w for w in rep["warnings"])


def test_lost_throughput_recomputed_plainly():
    df = pd.DataFrame({"t": np.arange(1, 601.0), "tps": 1000.0})
    df.loc[df["t"].between(200, 202), "tps"] = 50.0
    ev = dip_events(df)
    assert ev["lost_tx"].iloc[0] == pytest.approx(3 * 950)
    assert ev["lost_pct"].iloc[0] == pytest.approx(100 * 3 * 950 / (600 * 1000))
    assert ev["min_ratio"].iloc[0] == pytest.approx(0.05)


def test_merging_of_nearby_low_seconds():
    df = pd.DataFrame({"t": np.arange(1, 301.0), "tps": 1000.0})
    df.loc[df["t"].isin([100, 102]), "tps"] = 300.0  # one normal second between: one event
    df.loc[df["t"].isin([200, 215]), "tps"] = 30.0  # far apart: two events
    ev = dip_events(df)
    assert ev[["start", "end", "kind"]].values.tolist() == [
        [100, 103, "dip"],
        [200, 201, "floor"],
        [215, 216, "floor"],
    ]
    assert ev["dip_s"].iloc[0] == 2
    assert len(dip_events(df, merge_gap_s=0)) == 4


def test_ten_second_intervals_and_column_names():
    df = pd.DataFrame({"time": np.arange(10, 610.0, 10), "qps": 500.0})
    df.loc[df["time"] == 300, "qps"] = 10.0
    ev = dip_events(df, t_col="time", tps_col="qps")
    assert ev[["start", "end", "duration_s"]].iloc[0].tolist() == [300, 310, 10]


def test_degenerate_series_do_not_crash():
    empty = stability_report(pd.DataFrame({"t": [], "tps": []}))
    assert empty["n"] == 0 and empty["n_events"] == 0 and empty["warnings"]
    flat = stability_report(pd.DataFrame({"t": np.arange(1, 121.0), "tps": 100.0}))
    assert flat["n_events"] == 0 and flat["change_points"] == [] and flat["cv"] == 0
    zero = stability_report(pd.DataFrame({"t": np.arange(1, 31.0), "tps": 0.0}))
    assert zero["n_events"] == 0 and any("median TPS is 0" in w for w in zero["warnings"])
    short = stability_report(pd.DataFrame({"t": [1.0, 2.0], "tps": [5.0, 6.0]}))
    assert short["n_change_points"] == 0


def test_fast_l1_cost_equals_ruptures_cost_l1():
    y = _known_answer(3)["tps"].to_numpy() / 1000
    ref = rpt.costs.CostL1().fit(y)
    fast = stability._CostL1().fit(y)
    rng = np.random.default_rng(0)
    for _ in range(200):
        a = int(rng.integers(0, 590))
        b = int(rng.integers(a + 2, 601))
        assert fast.error(a, b) == pytest.approx(ref.error(a, b), rel=1e-12, abs=1e-12)
    short = y[350:500]
    kw = {"min_size": 10, "jump": 1}
    assert rpt.Pelt(custom_cost=stability._CostL1(), **kw).fit(short).predict(pen=0.5) == (
        rpt.Pelt(model="l1", **kw).fit(short).predict(pen=0.5)
    )


def test_long_series_are_coarsened_not_slow():
    df = _series(5, n=1500)
    df.loc[df["t"].between(700, 999), "tps"] *= 0.6
    t0 = time.process_time()
    seg, warnings = change_points(df, max_points=500)
    assert time.process_time() - t0 < 10
    assert any("blocks of 3" in w for w in warnings)
    cps = seg["start"].iloc[1:].tolist()
    assert len(cps) == 2 and abs(cps[0] - 700) <= 3 and abs(cps[1] - 1000) <= 3


@pytest.mark.slow
def test_stationary_noise_rarely_gives_events():
    """False events (dips or change points) in ≤ 5% of 40 seeded stationary runs.

    Half are white noise, half AR(1) with ρ = 0.5 (successive seconds of a real run are
    correlated); the noise SD is 2%–10% of the mean.
    """
    runs = 40
    false = 0
    for seed in range(runs):
        sd = (0.02, 0.05, 0.10)[seed % 3]
        rho = 0.5 if seed % 2 else 0.0
        rep = stability_report(_series(1000 + seed, sd=sd, rho=rho))
        false += (rep["n_events"] + rep["n_change_points"]) > 0
    assert false <= 0.05 * runs, f"{false} of {runs} stationary runs had events"


def test_stability_by_run_table():
    a = _known_answer().assign(run_id=1)
    b = pd.DataFrame({"t": np.arange(1, 61.0), "tps": 100.0, "run_id": 2})
    tab = stability_by_run(pd.concat([a, b]))
    assert tab["run_id"].tolist() == [1, 2]
    assert tab["n_floor_events"].tolist() == [1, 0]
    assert tab["change_points"].tolist() == ["400,460", ""]


def test_cpu_vs_throughput_flags_the_node_ceiling():
    # Report 000's shape: 4 NUMA nodes of 32 CPUs, tidb-server bound to one node.
    threads = [300, 600, 900]
    cpu = {300: 1500.0, 600: 2950.0, 900: 3050.0}
    tps = {300: 5000.0, 600: 9000.0, 900: 9100.0}
    runs, samples = [], []
    rid = 0
    for th in threads:
        for rep in range(3):
            rid += 1
            runs.append(
                {"run_id": rid, "workload": "oltp_read_write", "threads": th, "tps": tps[th] + rep}
            )
            for t in range(1, 11):
                samples.append(
                    {
                        "run_id": rid,
                        "source": "server",
                        "t": float(t),
                        "cpu_pct": cpu[th],
                        "cores_allowed": 32,
                    }
                )
                samples.append(
                    {
                        "run_id": rid,
                        "source": "client",
                        "t": float(t),
                        "cpu_pct": 50.0,
                        "cores_allowed": 128,
                    }
                )
    out = cpu_vs_throughput(pd.DataFrame(samples), pd.DataFrame(runs), node_cpus=32, host_cpus=128)
    assert out["threads"].tolist() == threads
    assert out["n_runs"].tolist() == [3, 3, 3]
    assert out["host_share"].tolist() == pytest.approx([c / 12800 for c in cpu.values()])
    assert out["node_share"].iloc[2] == pytest.approx(3050 / 3200)
    assert out["node_capacity_reached"].tolist() == [False, True, True]
    assert out["ceiling"].tolist() == [False, False, True]
    assert out["over_guideline"].tolist() == [False, True, True]
    assert "ceiling" in out["note"].iloc[2] and "24% of host" in out["note"].iloc[2]
    # The catalog names runs by run_key.
    keyed = cpu_vs_throughput(
        pd.DataFrame(samples).rename(columns={"run_id": "run_key"}),
        pd.DataFrame(runs).rename(columns={"run_id": "run_key"}),
        node_cpus=32,
        host_cpus=128,
        run_col="run_key",
    )
    assert keyed["ceiling"].tolist() == [False, False, True]


@pytest.mark.slow  # Monte Carlo: several seconds of simulations
def test_autocorrelated_stationary_noise_rarely_gives_a_level_shift():
    """AR(0.8) and AR(0.9) seconds: PELT on independent-seconds penalties called 18% and 87%
    of such runs shifted; the penalty scaled by the long-run deviation keeps it <= 5%."""
    for rho in (0.8, 0.9):
        runs, false = 16, 0
        for seed in range(runs):
            sd = (0.02, 0.05, 0.10)[seed % 3]
            seg, warnings = change_points(_series(7000 + seed, n=240, sd=sd, rho=rho))
            false += len(seg) > 1
            assert any("long-run deviation" in w for w in warnings)
        assert false <= 0.05 * runs + 0.5, f"AR({rho}): {false} of {runs} runs shifted"


def test_level_shifts_are_still_found_in_autocorrelated_noise():
    found = 0
    for seed in range(6):
        df = _series(8000 + seed, n=240, sd=0.03, rho=0.8)
        df.loc[df["t"].between(100, 159), "tps"] *= 0.70
        seg, _ = change_points(df)
        cps = seg["start"].iloc[1:].tolist()
        found += any(abs(c - 100) <= 5 for c in cps) and any(abs(c - 160) <= 5 for c in cps)
    assert found >= 5, f"the 30% drop was found in {found} of 6 runs"


def test_lag1_from_differences_known_values():
    from tibenchlib.stability import _lag1_from_differences

    for rho in (0.0, 0.5, 0.9):
        r = _series(3, n=3000, sd=0.05, rho=rho)["tps"].to_numpy() / 1000
        assert _lag1_from_differences(r) == pytest.approx(rho, abs=0.06)
        shifted = r.copy()
        shifted[1000:1500] *= 0.7  # a level shift barely moves the estimate
        assert _lag1_from_differences(shifted) == pytest.approx(rho, abs=0.08)


@pytest.mark.slow
@pytest.mark.parametrize("rho, white", [(0.95, 0.0), (0.9, 0.03)])
def test_long_memory_and_measurement_noise_rarely_give_a_level_shift(rho, white):
    """AR(0.95) seconds, and AR(0.9) with 3% white measurement noise on top: an AR(1) factor read
    from the first differences (which white noise pulls towards 0) let 11-15 of 100 such
    stationary runs shift. With the long-run deviation from the within-segment variogram, at most
    5% of 200 four-minute runs (10) get a false shift (binomial standard error 1.5% at 5% over
    200; measured at AR 0.95: 6 of 200), and a 30% drop for a minute is still found, both edges
    within 5 s, in >= 70% of 50 runs (measured at AR 0.95: 39 of 50)."""
    false = 0
    for seed in range(200):
        sd = (0.02, 0.05, 0.10)[seed % 3] if not white else 0.03
        seg, _ = change_points(_series(9000 + seed, n=240, sd=sd, rho=rho, white=white))
        false += len(seg) > 1
    assert false <= 10, f"AR({rho}) + {white:.0%} white: {false} of 200 runs shifted"
    found = 0
    for seed in range(50):
        df = _series(19000 + seed, n=240, sd=0.03, rho=rho, white=white)
        df.loc[df["t"].between(100, 159), "tps"] *= 0.70
        cps = change_points(df)[0]["start"].iloc[1:].tolist()
        found += any(abs(c - 100) <= 5 for c in cps) and any(abs(c - 160) <= 5 for c in cps)
    assert found >= 35, f"the 30% drop was found in {found} of 50 runs"


def test_change_points_fall_on_the_second_off_the_search_grid():
    """PELT searches every third second; a shift at 101 s and 187 s (off that grid) is still
    placed on its second by the refinement, as a search on every second places it."""
    df = _series(4242, n=300, sd=0.01)
    df.loc[df["t"].between(101, 186), "tps"] *= 0.6
    seg, _ = change_points(df)
    assert seg["start"].iloc[1:].tolist() == [101.0, 187.0]
