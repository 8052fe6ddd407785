"""Stability of one run's interval throughput, and the server's CPU against throughput.

Everything here is a pure function of DataFrames.

Dips ("TPS 掉底"): each interval's TPS is compared with a rolling median of the run (about 61 s,
centred), the baseline. Seconds below 10% of it are *floor* seconds, below 50% *dip* seconds;
neighbouring low seconds are merged into events, each reported with its duration and the
throughput lost against the baseline.

Level shifts: a drop to 70% for a minute is no dip, yet it is a real change. Change points come
from PELT (``ruptures``) with an L1 cost (segment medians, robust to the dips themselves), searched
on every 3rd second and each change point then moved to the second that fits best, on TPS
relative to the run's median. The penalty is
``beta × σ_LR × ln n``, with σ_LR the long-run deviation of the seconds' noise: PELT assumes
independent seconds, and successive seconds of a real run are correlated (with the marginal
spread alone, 18% of stationary AR(0.8) runs and 87% of AR(0.9) runs got a false level shift).
σ_LR comes from the robust variogram of the run (:func:`_long_run_sd`), fitted as AR(1) noise
plus measurement noise, so white noise on top of slow wander no longer hides the wander (an AR(1)
ρ read from the first differences did: 11-15 false shifts in 100 runs at AR 0.95, or AR 0.9 plus
3% white noise). So stationary noise of any size and memory rarely yields a change point
(``beta`` was set by simulation: see ``tests/test_stability.py``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import ruptures as rpt
from ruptures.base import BaseCost
from scipy import optimize as _opt

__all__ = [
    "EVENT_COLUMNS",
    "baseline",
    "change_points",
    "cpu_vs_throughput",
    "dip_events",
    "stability_by_run",
    "stability_report",
]

EVENT_COLUMNS = [
    "start",
    "end",
    "duration_s",
    "kind",
    "min_ratio",
    "floor_s",
    "dip_s",
    "lost_tx",
    "lost_pct",
]

DEFAULT_BETA = 4.0


def _series(intervals: pd.DataFrame, t_col: str, tps_col: str) -> tuple[np.ndarray, np.ndarray]:
    df = intervals[[t_col, tps_col]].dropna().sort_values(t_col)
    return df[t_col].to_numpy(float), df[tps_col].to_numpy(float)


def _step(t: np.ndarray) -> float:
    return float(np.median(np.diff(t))) if len(t) > 1 else 1.0


def baseline(tps: np.ndarray, step: float = 1.0, window_s: float = 61.0) -> np.ndarray:
    """Centred rolling median of TPS over ``window_s`` seconds (odd number of intervals).

    Near the ends the window is cut short rather than the baseline left undefined.
    """
    w = max(3, int(round(window_s / step)))
    w += 1 - w % 2
    return pd.Series(tps).rolling(w, center=True, min_periods=1).median().to_numpy()


def dip_events(
    intervals: pd.DataFrame,
    window_s: float = 61.0,
    floor: float = 0.10,
    dip: float = 0.50,
    merge_gap_s: float = 2.0,
    t_col: str = "t",
    tps_col: str = "tps",
) -> pd.DataFrame:
    """Dip and floor events of one run.

    Parameters
    ----------
    intervals
        One run's interval rows; ``t`` is the interval's label (sysbench's ``[ 200s ]`` = the
        interval ending at 200 s) and ``tps`` its throughput.
    window_s
        Width of the centred rolling-median baseline.
    floor, dip
        Fractions of the baseline below which an interval is a floor / dip interval.
    merge_gap_s
        Low intervals separated by at most this many seconds of normal ones form one event.

    Returns
    -------
    DataFrame
        One row per event (:data:`EVENT_COLUMNS`): ``start`` (first interval's label), ``end``
        (last label + interval length, exclusive), ``kind`` (``floor`` if any interval is below
        ``floor``, else ``dip``), ``min_ratio`` (lowest TPS / baseline), ``floor_s`` and
        ``dip_s`` (seconds below each threshold), ``lost_tx`` (Σ (baseline − TPS) × interval
        over the event) and ``lost_pct`` (that, as % of the run's baseline transactions).
    """
    t, y = _series(intervals, t_col, tps_col)
    if len(t) == 0:
        return pd.DataFrame(columns=EVENT_COLUMNS)
    step = _step(t)
    base = baseline(y, step, window_s)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(base > 0, y / base, np.nan)
    low = np.nan_to_num(ratio, nan=1.0) < dip
    idx = np.flatnonzero(low)
    if len(idx) == 0:
        return pd.DataFrame(columns=EVENT_COLUMNS)
    gap = int(round(merge_gap_s / step))
    groups: list[list[int]] = [[int(idx[0])]]
    for i in idx[1:]:
        if i - groups[-1][-1] - 1 <= gap:
            groups[-1].append(int(i))
        else:
            groups.append([int(i)])
    total_base = float(np.nansum(base) * step)
    rows = []
    for g in groups:
        a, b = g[0], g[-1]
        seg = slice(a, b + 1)
        r = ratio[seg]
        lost = float(np.nansum(np.clip(base[seg] - y[seg], 0, None)) * step)
        rows.append(
            {
                "start": t[a],
                "end": t[b] + step,
                "duration_s": t[b] + step - t[a],
                "kind": "floor" if np.nanmin(r) < floor else "dip",
                "min_ratio": float(np.nanmin(r)),
                "floor_s": float(np.sum(r < floor) * step),
                "dip_s": float(np.sum(r < dip) * step),
                "lost_tx": lost,
                "lost_pct": 100.0 * lost / total_base if total_base > 0 else float("nan"),
            }
        )
    return pd.DataFrame(rows, columns=EVENT_COLUMNS)


class _CostL1(BaseCost):
    """ruptures' L1 cost (Σ |y − segment median|) for one series, without np.median's overhead.

    For an even-length segment any value between the two middle ones minimises the L1 sum, so
    the upper middle gives the same cost as ruptures' ``CostL1`` (checked in the tests).
    """

    model = "l1_fast"
    min_size = 2

    def fit(self, signal):
        self.y = np.ascontiguousarray(np.asarray(signal, dtype=float).ravel())
        self.signal = self.y.reshape(-1, 1)
        return self

    def error(self, start, end):
        sub = self.y[start:end]
        part = sub.copy()
        part.partition((end - start) // 2)
        return float(np.add.reduce(np.abs(sub - part[(end - start) // 2])))


#: PELT searches every 3rd second (about 9 times fewer segment costs than every second; on the
#: seeded runs of ``tests/test_stability.py`` the same false-shift and detection counts as a
#: search on every second, in a fifth of the time); each change point found is then moved to the
#: second that fits best (:func:`_refine`)
_JUMP = 3


def _refine(r: np.ndarray, bkps: list[int], min_size: int) -> list[int]:
    """Each change point of a search on every ``_JUMP``-th second moved to the second within
    ``±(_JUMP − 1)`` that minimises the L1 cost of its two neighbouring segments (left to right,
    each segment kept at least ``min_size`` long); the last breakpoint (``len(r)``) stays."""
    cost = _CostL1().fit(r)
    out: list[int] = []
    for i, b in enumerate(bkps[:-1]):
        lo, hi = (out[-1] if out else 0), bkps[i + 1]
        near = [c for c in range(b - _JUMP + 1, b + _JUMP) if c - lo >= min_size <= hi - c]
        out.append(min(near or [b], key=lambda c: cost.error(lo, c) + cost.error(c, hi)))
    return [*out, bkps[-1]]


def _lag1_from_differences(r: np.ndarray) -> float:
    """Lag-1 autocorrelation of a series, read from its first differences so that level shifts
    (one large difference each) barely move it: for AR(1) noise the differences have lag-1
    correlation -(1 - rho) / 2, hence rho = 1 + 2 r_d. Robust: r_d comes from Spearman's rank
    correlation, and the result is clipped to [0, 0.98]."""
    d = np.diff(np.asarray(r, float))
    if d.size < 8 or np.ptp(d) == 0:
        return 0.0
    rd = _spearman(d[1:], d[:-1])
    return float(np.clip(1 + 2 * rd, 0.0, 0.98))


def _spearman(a: np.ndarray, b: np.ndarray) -> float:
    ra, rb = a.argsort().argsort().astype(float), b.argsort().argsort().astype(float)
    ra -= ra.mean()
    rb -= rb.mean()
    den = np.sqrt((ra * ra).sum() * (rb * rb).sum())
    return float((ra * rb).sum() / den) if den > 0 else 0.0


def _long_run_sd(
    r: np.ndarray, segment: np.ndarray | None = None, max_lag: int = 20
) -> tuple[float, float]:
    """Long-run standard deviation of a series' noise, robust to level shifts and to white
    measurement noise: ``(σ_LR, ρ)``.

    Estimator: the variogram V(L) = Var(r[t+L] − r[t]) at lags L = 1..K (K = min(``max_lag``,
    n/10)), each from the median absolute lagged difference (1.4826 × median |d|, squared) over
    the pairs within one ``segment`` (labels from a first, rough segmentation), so level shifts
    found there do not count as noise, and one missed spoils only the L pairs straddling it;
    pairs never depend on a segment's level, so a spurious first-pass break costs only a few
    pairs, not an underestimate. It is fitted by least squares as
    AR(1) noise plus white noise, V(L) = 2 σ_w² + 2 σ_a² (1 − ρ^L) (ρ on a grid in [0, 0.98],
    σ_w², σ_a² ≥ 0 by non-negative least squares), and σ_LR² = σ_w² + σ_a² (1 + ρ) / (1 − ρ),
    the variance per second that a segment mean carries in the long run. Batch means or a
    Newey-West sum would need the shifts removed first (a 30% drop inflates them by an order of
    magnitude) and blocks several times longer than ρ's memory (40 s at ρ = 0.95), which a
    4-minute run cannot supply; the variogram needs neither.
    """
    r = np.asarray(r, float)
    seg = np.zeros(r.size) if segment is None else np.asarray(segment)
    k = int(min(max_lag, max(2, r.size // 10)))
    if r.size < 8 or np.ptp(r) == 0:
        return 0.0, 0.0
    lags = np.arange(1, k + 1)
    v = np.empty(k)
    for i, lag in enumerate(lags):
        same = seg[lag:] == seg[:-lag]
        d = (r[lag:] - r[:-lag])[same]
        v[i] = (1.4826 * np.median(np.abs(d))) ** 2 if d.size else np.nan
    lags, v = lags[np.isfinite(v)], v[np.isfinite(v)]
    k = lags.size
    if k < 2:
        return 0.0, 0.0
    best = (np.inf, 0.0, 0.0, 0.0)
    for rho in np.linspace(0.0, 0.98, 99):
        a = np.column_stack([np.full(k, 2.0), 2 * (1 - rho**lags)])
        (w2, a2), res = _opt.nnls(a, v)
        if res < best[0]:
            best = (res, rho, w2, a2)
    _, rho, w2, a2 = best
    return float(np.sqrt(w2 + a2 * (1 + rho) / (1 - rho))), float(rho)


def change_points(
    intervals: pd.DataFrame,
    beta: float = DEFAULT_BETA,
    min_size_s: float = 10.0,
    window_s: float = 61.0,
    max_points: int = 1200,
    t_col: str = "t",
    tps_col: str = "tps",
) -> tuple[pd.DataFrame, list[str]]:
    """Level shifts of one run by PELT with an L1 cost, to the second (:func:`_refine`).

    Parameters
    ----------
    beta
        Penalty multiplier: the penalty per change point is ``beta × σ_LR × ln n`` on TPS
        divided by its median, with σ_LR its noise's long-run deviation (:func:`_long_run_sd`),
        at least the robust spread 1.4826 × MAD of (TPS − rolling baseline) / median; a warning
        says when σ_LR exceeds that spread by more than 1.5 times.
    min_size_s
        Shortest segment. Shorter drops are dips, left to :func:`dip_events`.
    max_points
        Longer series are averaged into blocks first (PELT's work grows about as n²);
        the resolution is then reported in the warnings.

    Returns
    -------
    (DataFrame, list of str)
        One row per segment: ``start``, ``end`` (exclusive), ``level`` (median TPS) and
        ``level_pct`` (% of the run's median); a change point is every ``start`` after the
        first. Warnings say when detection was skipped or coarsened.
    """
    cols = ["start", "end", "level", "level_pct"]
    warnings: list[str] = []
    t, y = _series(intervals, t_col, tps_col)
    step = _step(t)
    if len(t) == 0:
        return pd.DataFrame(columns=cols), ["no intervals: change points not searched"]
    med = float(np.median(y))
    if len(t) < 3 or med <= 0:
        why = "fewer than 3 intervals" if len(t) < 3 else "median TPS is 0"
        warnings.append(f"{why}: change points not searched")
        return pd.DataFrame(
            [{"start": t[0], "end": t[-1] + step, "level": med, "level_pct": 100.0}], columns=cols
        ), warnings
    base = baseline(y, step, window_s)
    resid = (y - base) / med
    sigma = 1.4826 * float(np.median(np.abs(resid - np.median(resid))))
    sigma = max(sigma, 1e-3)
    r = y / med
    block = 1
    if len(r) > max_points:
        block = int(np.ceil(len(r) / max_points))
        n_full = len(r) // block * block
        r = np.concatenate(
            [
                r[:n_full].reshape(-1, block).mean(axis=1),
                [r[n_full:].mean()] if n_full < len(r) else [],
            ]
        )
        warnings.append(
            f"{len(t)} intervals averaged in blocks of {block}: change points to "
            f"±{block * step:g} s"
        )
    min_size = max(2, int(round(min_size_s / (step * block))))
    if len(r) < 2 * min_size:
        bkps = [len(r)]
    else:
        # first pass, rough (every 5th second, twice the penalty the AR(1) factor read from the
        # differences gives): it marks only the clear shifts, so that the long-run deviation is
        # measured within segments; cutting the noise's own wander there would hide it
        rho1 = _lag1_from_differences(r)
        pen1 = beta * sigma * float(np.sqrt((1 + rho1) / (1 - rho1))) * np.log(len(r))
        rough = rpt.Pelt(custom_cost=_CostL1(), min_size=min_size, jump=5).fit(r)
        seg = np.zeros(len(r))
        for b in rough.predict(pen=2 * pen1)[:-1]:
            seg[b:] += 1
        sd_lr, rho = _long_run_sd(r, seg)
        # the first pass's AR(1) factor stays a floor: at rho ~ 0.95 a 4-minute run shows only
        # part of the variogram's rise, and the fit can fall short of it
        sd_lr = max(sd_lr, pen1 / (beta * np.log(len(r))), sigma)
        if sd_lr / sigma > 1.5:
            warnings.append(
                f"successive seconds are correlated (lag-1 r = {rho:.2f}): the change-point "
                f"penalty is scaled by the long-run deviation ({sd_lr / sigma:.1f}x)"
            )
        pen = beta * sd_lr * np.log(len(r))
        coarse = rpt.Pelt(custom_cost=_CostL1(), min_size=min_size, jump=_JUMP).fit(r)
        bkps = _refine(r, coarse.predict(pen=pen), min_size)
    edges = [0] + [min(b * block, len(t)) for b in bkps]
    rows = []
    for a, b in zip(edges[:-1], edges[1:], strict=True):
        level = float(np.median(y[a:b]))
        rows.append(
            {"start": t[a], "end": t[b - 1] + step, "level": level, "level_pct": 100 * level / med}
        )
    return pd.DataFrame(rows, columns=cols), warnings


def stability_report(
    intervals: pd.DataFrame,
    window_s: float = 61.0,
    floor: float = 0.10,
    dip: float = 0.50,
    merge_gap_s: float = 2.0,
    beta: float = DEFAULT_BETA,
    min_size_s: float = 10.0,
    t_col: str = "t",
    tps_col: str = "tps",
) -> dict:
    """Stability of one run: CV, dip/floor events and level shifts.

    The CV is the sample standard deviation of interval TPS over its mean (it mixes noise,
    warm-up drift and dips; the events and change points tell them apart).

    Returns
    -------
    dict
        Scalars ``n``, ``duration_s``, ``mean_tps``, ``cv``, ``n_events``, ``n_floor_events``,
        ``n_dip_events``, ``floor_s``, ``dip_s``, ``longest_event_s``, ``lost_pct``,
        ``change_points`` (list of t), ``n_change_points``; the tables ``events`` and
        ``segments``; and ``warnings`` (list of str).
    """
    t, y = _series(intervals, t_col, tps_col)
    events = dip_events(intervals, window_s, floor, dip, merge_gap_s, t_col, tps_col)
    segments, warnings = change_points(
        intervals, beta, min_size_s, window_s, t_col=t_col, tps_col=tps_col
    )
    mean = float(np.mean(y)) if len(y) else float("nan")
    cv = float(np.std(y, ddof=1) / mean) if len(y) > 1 and mean > 0 else float("nan")
    cps = [float(x) for x in segments["start"].iloc[1:]]
    n_floor = int((events["kind"] == "floor").sum())
    report = {
        "n": len(y),
        "duration_s": float(t[-1] - t[0] + _step(t)) if len(t) else 0.0,
        "mean_tps": mean,
        "cv": cv,
        "n_events": len(events),
        "n_floor_events": n_floor,
        "n_dip_events": len(events) - n_floor,
        "floor_s": float(events["floor_s"].sum()) if len(events) else 0.0,
        "dip_s": float(events["dip_s"].sum()) if len(events) else 0.0,
        "longest_event_s": float(events["duration_s"].max()) if len(events) else 0.0,
        "lost_pct": float(events["lost_pct"].sum()) if len(events) else 0.0,
        "change_points": cps,
        "n_change_points": len(cps),
        "events": events,
        "segments": segments,
        "warnings": list(warnings),
    }
    if len(events):
        worst = events.sort_values("min_ratio").iloc[0]
        report["warnings"].append(
            f"{len(events)} dip event(s) ({n_floor} to the floor); worst at t={worst['start']:g}s "
            f"down to {worst['min_ratio']:.0%} of the baseline for {worst['duration_s']:g}s"
        )
    if cps:
        levels = ", ".join(f"{p:.0f}%" for p in segments["level_pct"])
        report["warnings"].append(
            f"level shifts at t={', '.join(f'{c:g}' for c in cps)}s (segment levels {levels} "
            "of the run median)"
        )
    return report


def stability_by_run(
    intervals: pd.DataFrame, by: str | list[str] = "run_id", **kwargs
) -> pd.DataFrame:
    """:func:`stability_report` scalars for every run, one row per run (for the catalog)."""
    keys = [by] if isinstance(by, str) else list(by)
    rows = []
    for key, g in intervals.groupby(keys, sort=True):
        rep = stability_report(g, **kwargs)
        key = key if isinstance(key, tuple) else (key,)
        row = dict(zip(keys, key, strict=True))
        row.update({k: v for k, v in rep.items() if k not in ("events", "segments", "warnings")})
        row["change_points"] = ",".join(f"{c:g}" for c in rep["change_points"])
        row["warnings"] = "; ".join(rep["warnings"])
        rows.append(row)
    return pd.DataFrame(rows)


def cpu_vs_throughput(
    samples: pd.DataFrame,
    runs: pd.DataFrame,
    node_cpus: int,
    host_cpus: int,
    server_source: str = "server",
    capacity: float = 0.90,
    guideline: float = 0.60,
    flat_gain_pct: float = 5.0,
    run_col: str = "run_id",
) -> pd.DataFrame:
    """The server's CPU against throughput at each thread count.

    Per run, the server's CPU is the mean of its per-second ``cpu_pct`` (100 = one core). Per
    group (``workload``/``policy`` when present) and thread count the medians over runs are
    taken, and expressed as shares of the host (``host_cpus``), of one NUMA node
    (``node_cpus``) and of the CPUs the server may use (``cores_allowed``).

    Parameters
    ----------
    samples
        Sampler rows with the run's key (``run_col``) added.
    runs
        One row per run: the key, ``threads``, ``tps`` (and optionally ``workload``,
        ``policy``).
    capacity
        Node share at which the node counts as full (report 000: 25% of a 4-node host was the
        read-write ceiling).
    guideline
        Share of its CPUs above which the server is busier than the report's advice (keep TiDB
        under 60%).
    flat_gain_pct
        TPS gain from the previous thread count below which throughput counts as flat.
    run_col
        The column naming the run in both tables (the catalog's is ``run_key``).

    Returns
    -------
    DataFrame
        Group keys, ``threads``, ``n_runs``, ``tps``, ``cpu_pct``, ``cores_allowed``,
        ``host_share``, ``node_share``, ``allowed_share``, ``tps_gain_pct``,
        ``node_capacity_reached``, ``over_guideline``, ``ceiling`` (node full and TPS flat) and a
        ``note``.
    """
    s = samples[samples["source"] == server_source]
    per_run = (
        s.groupby(run_col)
        .agg(cpu_pct=("cpu_pct", "mean"), cores_allowed=("cores_allowed", "max"))
        .reset_index()
    )
    keys = [k for k in ("workload", "policy") if k in runs.columns]
    df = runs.merge(per_run, on=run_col, how="left")
    agg = (
        df.groupby([*keys, "threads"], dropna=False)
        .agg(
            n_runs=(run_col, "count"),
            tps=("tps", "median"),
            cpu_pct=("cpu_pct", "median"),
            cores_allowed=("cores_allowed", "max"),
        )
        .reset_index()
        .sort_values([*keys, "threads"])
    )
    agg["host_share"] = agg["cpu_pct"] / (100.0 * host_cpus)
    agg["node_share"] = agg["cpu_pct"] / (100.0 * node_cpus)
    allowed = agg["cores_allowed"].fillna(host_cpus)
    agg["allowed_share"] = agg["cpu_pct"] / (100.0 * allowed)
    prev = agg.groupby(keys)["tps"].shift(1) if keys else agg["tps"].shift(1)
    agg["tps_gain_pct"] = 100.0 * (agg["tps"] / prev - 1.0)
    agg["node_capacity_reached"] = agg["node_share"] >= capacity
    agg["over_guideline"] = agg["allowed_share"] > guideline
    agg["ceiling"] = agg["node_capacity_reached"] & (agg["tps_gain_pct"] < flat_gain_pct)
    notes = []
    for r in agg.itertuples():
        parts = []
        if pd.isna(r.cpu_pct):
            parts.append("no server CPU samples")
        else:
            if r.node_capacity_reached:
                parts.append(
                    f"server at {r.node_share:.0%} of one NUMA node ({r.host_share:.0%} of host)"
                )
            if r.ceiling:
                parts.append(
                    f"TPS {r.tps_gain_pct:+.1f}% vs fewer threads: the node's CPUs are the "
                    "ceiling (add an instance or give it more CPUs)"
                )
            if r.over_guideline:
                parts.append(
                    f"server uses {r.allowed_share:.0%} of its {int(r.cores_allowed or host_cpus)}"
                    f" CPUs, above the {guideline:.0%} guideline"
                )
        notes.append("; ".join(parts))
    agg["note"] = notes
    return agg.reset_index(drop=True)
