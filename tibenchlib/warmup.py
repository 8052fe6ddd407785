"""Warm-up that is measured: run until per-second throughput is steady, and say so.

After a server start (cold buffer pool, empty caches) or an arm switch (what the previous arm
left behind: dirty pages, a full redo log), the first seconds of load run slow or fast. The sweep
runs unrecorded warm-up runs first; this module decides when they may stop and keeps what they
showed in the catalog's ``warmups`` table, so the sweep notebook can show it.

Rule (:func:`steady_after`): a warm-up run reports every second; it is steady when

* its own intervals show no warm-up: dropping the start that MSER-5
  (:func:`tibenchlib.steady.mser5`) cuts moves its mean TPS by at most half the ``tolerance`` -
  this needs at least 20 intervals, so only warm-up runs of 20 s or more can end the warm-up
  alone; or
* its mean TPS is within ``tolerance`` of the previous warm-up run's (two consecutive runs agree).

Warm-up stops at the first steady run or after ``max_runs`` runs (then not steady, and a warning).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .steady import MSER_BATCH, mser5

__all__ = ["TOLERANCE", "steady_after", "warmup_table", "warmup_summary"]

#: Two consecutive warm-up runs whose TPS differ by at most this fraction are steady.
TOLERANCE = 0.10


def steady_after(tps_series: np.ndarray, previous_tps: float | None, tolerance: float = TOLERANCE):
    """Whether throughput is steady after a warm-up run with per-second TPS ``tps_series``.

    Parameters
    ----------
    tps_series : array of float
        The warm-up run's per-second TPS, in time order.
    previous_tps : float or None
        Mean TPS of the previous warm-up run of the same opening (None for the first).
    tolerance : float
        Largest relative change between consecutive warm-up runs that counts as steady.

    Returns
    -------
    dict
        ``steady`` (bool), ``tps`` (mean of the series), ``mser_cut_s`` (None under 20
        intervals), ``change_pct`` (None for the first run) and ``detail`` (the reason, in words).
    """
    x = np.asarray(tps_series, dtype=float)
    x = x[np.isfinite(x)]
    tps = float(x.mean()) if x.size else float("nan")
    cut = None
    reasons = []
    steady = False
    if x.size >= 4 * MSER_BATCH:
        m = mser5(x)
        cut = m["cut_s"]
        # on steady noise MSER-5 still picks some cut; what matters is whether the part it
        # drops moves the run's throughput
        moved = float(x[m["cut_index"] :].mean() / tps - 1) if tps > 0 else float("inf")
        steady = abs(moved) <= tolerance / 2
        state = "steady" if steady else "still warming up"
        reasons.append(
            f"MSER-5 cuts {cut:g} s of {x.size}, which moves the mean by {moved:+.1%}: {state}"
        )
    change = None
    if previous_tps and np.isfinite(tps) and previous_tps > 0:
        change = (tps / previous_tps - 1) * 100
        agree = abs(change) <= tolerance * 100
        # a long run that MSER-5 sees still warming is not steady, whatever the previous run
        steady = agree and (cut is None or steady)
        word = "within" if agree else "beyond"
        reasons.append(
            f"TPS {change:+.1f}% from the previous warm-up run ({word} ±{tolerance:.0%})"
        )
    elif cut is None:
        reasons.append("first short warm-up run: compared with the next one")
    if not x.size:
        steady = False
        reasons.append("no per-second report")
    return {
        "steady": bool(steady),
        "tps": tps,
        "mser_cut_s": cut,
        "change_pct": change,
        "detail": "; ".join(reasons),
    }


def warmup_table(store, study: str) -> pd.DataFrame:
    """The study's warm-up runs from the catalog, in the order they ran."""
    df = store.read("warmups", study)
    return df.sort_values("at").reset_index(drop=True) if len(df) else df


def warmup_summary(warmups: pd.DataFrame) -> pd.DataFrame:
    """One row per arm opening and workload: warm-up runs and seconds it took, whether it
    reached a steady state, and the TPS of its last warm-up run."""
    cols = ["opening", "arm", "workload", "threads", "runs", "seconds", "steady", "last_tps"]
    if not len(warmups):
        return pd.DataFrame(columns=cols)
    g = warmups.sort_values("attempt").groupby(["opening", "arm", "workload", "threads"])
    out = g.agg(
        runs=("attempt", "size"),
        seconds=("seconds", "sum"),
        steady=("steady", "last"),
        last_tps=("tps", "last"),
    ).reset_index()
    return out[cols]
