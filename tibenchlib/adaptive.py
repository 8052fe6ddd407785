"""Adaptive repeats: how many rounds each cell of a sweep needs, decided from its own data.

``repeats: {min: 5, max: 10, target_halfwidth_pct: 2}`` (or ``repeats: auto``) runs every cell
(workload x threads) ``min`` rounds, then only the cells still undecided, up to ``max`` rounds.
Looking at the data after every round and stopping when the interval "looks decided" inflates
error rates: an interval that is narrow or far from zero by chance stops the cell early, exactly
when it is most likely to miss. The rule here keeps its promised coverage under that optional
stopping:

**A group-sequential design with repeated confidence intervals** (Jennison & Turnbull 1989;
*Group Sequential Methods*, 2000, ch. 9) on the within-round log ratios
d_r = log(candidate_r / baseline_r) of a cell (one run of each arm per round, the arms' order
balanced as :func:`tibenchlib.runorder.arm_order` does; a single-arm study uses
d_r = log(figure_r)).

1. Looks after rounds n = ``min``, ``min`` + 1, ..., ``max``. At look n the interval is the
   paired t interval of the n rounds so far, mean(d) +- c_n s_n / sqrt(n), with the spread s_n
   of those n rounds (df = n - 1, growing with every look).
2. The critical values c_n spend alpha = 1 - level over the looks by the Lan-DeMets
   O'Brien-Fleming-type function alpha(t) = 2 - 2 Phi(z_{1-alpha/2} / sqrt(t)), t = n / max:
   little alpha at the early looks (wide intervals there), nearly all of it at the last one. They
   are calibrated for the t statistics themselves (the usual normal boundaries converted to t
   quantiles miss 5.7% instead of 5% at df 4-9): a seeded simulation of normal log ratios
   (:data:`CALIBRATION_PATHS` paths, seed :data:`CALIBRATION_SEED`) fixes, look by look, the
   value that the first crossings of that look reach exactly alpha(t_n) - alpha(t_{n-1}).
   Deterministic: the same ``min``, ``max`` and level always give the same c_n.
3. The probability that *any* look's interval misses the true ratio is then alpha, so the
   interval reported at the look where a cell stops covers with probability >= 1 - alpha
   whatever rule chose that look (a repeated confidence interval): stopping on a decision, on
   futility or on width never costs coverage.

A cell with a margin delta (``compare.delta_pct``, A/B pairs) stops at the first look where its
interval decides what the comparison reports: *better*/*worse* (the interval excludes 0 and the
estimate lies beyond +-delta; "above/below margin" when the whole interval does), *equivalent*
(the whole interval within +-delta), or where no decision is within reach by ``max`` rounds:
with the spread and estimate so far, the chance that the interval at ``max`` rounds decides is
below ``repeats.futility`` (default :data:`FUTILITY`; "out of reach"). A cell without a margin
(a single arm) stops when its half-width is at most ``target_halfwidth_pct``. Otherwise it runs
to ``max``.

The reported p is the look's paired-t p times alpha / alpha_n (capped at 1), alpha_n the
nominal two-sided level of the look's critical value: it is below alpha exactly when the
reported interval excludes 0; at smaller thresholds (Holm across cells) it is the usual
approximation of a repeated p-value.

Assumptions: rounds are independent blocks; within a cell the d_r are independent and roughly
normal with one variance (lognormal run noise makes them exactly normal); round-level drift that
moves both arms cancels in d_r. The tests check coverage and false verdicts by seeded simulation
through the sweep's own arm order (lognormal and AR(1) run noise, with and without drift), and
``benchmarks/bench_adaptive.py`` prints rounds used and power against fixed designs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pandas as pd
from scipy import stats as _st

from .stats import _interval_verdicts, holm, lower_is_better

__all__ = [
    "ADAPTIVE_METHOD",
    "CALIBRATION_PATHS",
    "CALIBRATION_SEED",
    "DECISION_COLUMNS",
    "FUTILITY",
    "REASONS",
    "boundaries",
    "stopping_rule",
    "round_series",
    "cell_decisions",
    "open_cells",
    "adaptive_comparison",
    "describe_rule",
]

#: A cell stops as "out of reach" when the chance that its interval decides by ``max`` rounds
#: (estimate and spread so far taken as true) is below this.
FUTILITY = 0.10
#: Simulated paths and seed that calibrate the critical values (alpha to +-0.1% at 95%).
CALIBRATION_PATHS = 200_000
CALIBRATION_SEED = 20261125

ADAPTIVE_METHOD = (
    "adaptive rounds: group-sequential paired t on the within-round log ratios, looks after "
    "rounds min..max, O'Brien-Fleming-type alpha spending, df = rounds used - 1; Holm"
)

#: Why a cell stopped (or not): the codes ``reason`` takes.
REASONS = (
    "stage 1",  # fewer than min rounds so far
    "running",  # no decision yet; another round planned
    "target width",  # no margin (single arm): the interval is within +-target
    "above margin",  # the whole interval above +delta
    "below margin",  # the whole interval below -delta
    "estimate above margin",  # the interval above 0 and the estimate above +delta
    "estimate below margin",  # the interval below 0 and the estimate below -delta
    "within margin",  # the whole interval within +-delta
    "out of reach",  # no decision likely by max rounds
    "max rounds",  # reached max undecided
)

DECISION_COLUMNS = [
    "rounds",
    "rounds_used",
    "rounds_needed",
    "open",
    "reason",
    "mean_log",
    "sd",
    "df",
    "level",
    "ratio",
    "ratio_ci_low",
    "ratio_ci_high",
    "halfwidth_pct",
    "p_value",
]


def _compact(d) -> np.ndarray:
    """Rows of valid values first (NaN = no pair that round), order kept."""
    a = np.atleast_2d(np.asarray(d, dtype=float))
    fin = np.isfinite(a)
    order = np.argsort(~fin, axis=1, kind="stable")
    return np.where(np.take_along_axis(fin, order, 1), np.take_along_axis(a, order, 1), np.nan)


def _spent(t: np.ndarray, alpha: float) -> np.ndarray:
    """Lan-DeMets O'Brien-Fleming-type spending: alpha spent by information fraction t."""
    return 2 - 2 * _st.norm.cdf(_st.norm.isf(alpha / 2) / np.sqrt(t))


@lru_cache(maxsize=32)
def _critical(min_rounds: int, max_rounds: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Looks and their critical t values, calibrated by seeded simulation (module docstring)."""
    looks = np.arange(min_rounds, max_rounds + 1)
    cum = _spent(looks / max_rounds, alpha)
    cum[-1] = alpha
    x = np.random.default_rng(CALIBRATION_SEED).standard_normal((CALIBRATION_PATHS, max_rounds))
    # running sums, round by round (not whole cumulative arrays: memory stays one x)
    s1, s2 = x[:, :min_rounds].sum(axis=1), (x[:, :min_rounds] ** 2).sum(axis=1)
    alive = np.ones(CALIBRATION_PATHS, dtype=bool)
    crit = np.empty(len(looks))
    crossed = 0
    for j, n in enumerate(looks):
        if j:
            s1, s2 = s1 + x[:, n - 1], s2 + x[:, n - 1] ** 2
        m = s1 / n
        t = np.abs(m) * np.sqrt(n) / np.sqrt((s2 - n * m * m) / (n - 1))
        tail = np.sort(t[alive])[::-1]
        allowed = int(round(cum[j] * CALIBRATION_PATHS)) - crossed
        if allowed <= 0:
            crit[j] = tail[0] * (1 + 1e-9)
        else:
            crit[j] = 0.5 * (tail[allowed - 1] + tail[allowed])
        hit = alive & (t > crit[j])
        crossed += int(hit.sum())
        alive &= ~hit
    return looks, crit


def boundaries(min_rounds: int, max_rounds: int, level: float = 0.95) -> pd.DataFrame:
    """The looks of the design and the critical value of each.

    Estimator: see the module's docstring (O'Brien-Fleming-type alpha spending over the looks
    after rounds ``min_rounds`` .. ``max_rounds``, critical t values calibrated by a seeded
    simulation of normal log ratios).

    Returns
    -------
    DataFrame
        One row per look: ``rounds`` (n), ``df`` (n - 1), ``alpha_spent`` (cumulative, by the
        spending function), ``critical`` (c_n of the interval mean +- c_n s / sqrt(n)) and
        ``nominal_level`` (1 - the two-sided tail of Student's t beyond c_n).
    """
    if min_rounds < 2:
        raise ValueError(
            f"min_rounds must be at least 2 (the first look needs a spread), not {min_rounds}"
        )
    if max_rounds < min_rounds:
        raise ValueError(f"max_rounds ({max_rounds}) is below min_rounds ({min_rounds})")
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), not {level}")
    alpha = round(1.0 - level, 12)
    looks, crit = _critical(int(min_rounds), int(max_rounds), alpha)
    spent = _spent(looks / max_rounds, alpha)
    spent[-1] = alpha
    return pd.DataFrame(
        {
            "rounds": looks,
            "df": looks - 1,
            "alpha_spent": spent,
            "critical": crit,
            "nominal_level": 1 - 2 * _st.t.sf(crit, looks - 1),
        }
    )


def stopping_rule(
    d,
    *,
    min_rounds: int,
    max_rounds: int,
    target_halfwidth_pct: float,
    delta_pct: float | None = None,
    level: float = 0.95,
    rounds_run: Sequence[int] | np.ndarray | None = None,
    futility: float = FUTILITY,
) -> pd.DataFrame:
    """The group-sequential decision of each cell: stop or run another round, and its interval.

    Estimator: see the module's docstring (repeated paired-t confidence intervals at looks after
    rounds ``min_rounds`` .. ``max_rounds``, O'Brien-Fleming-type alpha spending, df = n - 1 at
    look n; a cell stops at its first decisive look).

    Parameters
    ----------
    d : array-like, shape (cells, rounds) or (rounds,)
        Each cell's within-round log ratios in round order; NaN for a round without a valid
        pair (a failed run). Values after the look where a cell stopped are ignored.
    min_rounds, max_rounds : int
        The first look (>= 2) and the last.
    target_halfwidth_pct : float
        Without a margin: stop when the half-width is at most this, as a factor
        (log(1 + target/100) on the log scale).
    delta_pct : float, optional
        The margin of the decisions (better/worse/equivalent); None: no margin (a single arm).
    level : float
        Confidence level of the repeated intervals (alpha = 1 - level over all looks).
    rounds_run : sequence of int, optional
        Rounds each cell has been given so far (failed ones included); a cell still open once
        it has had ``max_rounds`` is closed with reason ``"max rounds"``.
    futility : float
        The chance of a decision by ``max_rounds`` below which a cell stops "out of reach"
        (0: never).

    Returns
    -------
    DataFrame
        One row per cell, :data:`DECISION_COLUMNS`: ``rounds`` (valid pairs), ``rounds_used`` by
        the interval, ``rounds_needed`` (those used once stopped; while running, the first look
        at which the interval would decide if estimate and spread stayed as they are, at most
        ``max_rounds``), ``open`` (run another round), ``reason`` (:data:`REASONS`),
        ``mean_log``, ``sd`` (of the rounds used), ``df``, ``level`` (nominal level of the
        look's critical value), ``ratio`` and its interval, ``halfwidth_pct`` (exp(half) - 1, in
        percent) and ``p_value`` (scaled for the look, see the module's docstring). An open cell
        reports the repeated interval of its rounds so far.
    """
    bounds = boundaries(min_rounds, max_rounds, level)
    if not 0 <= futility < 1:
        raise ValueError(f"futility must lie in [0, 1), not {futility}")
    D = _compact(d)
    if D.shape[1] < max_rounds:
        D = np.pad(D, ((0, 0), (0, max_rounds - D.shape[1])), constant_values=np.nan)
    L = _Looks(
        D=D[:, :max_rounds],
        looks=bounds["rounds"].to_numpy(),
        crit=bounds["critical"].to_numpy(),
        min_rounds=min_rounds,
        max_rounds=max_rounds,
        h=np.log1p(target_halfwidth_pct / 100),
        up=np.log1p(delta_pct / 100) if delta_pct is not None else np.nan,
        down=np.log1p(-delta_pct / 100) if delta_pct is not None else np.nan,
        margin=delta_pct is not None,
    )
    a_nom = 1 - bounds["nominal_level"].to_numpy()
    k = np.isfinite(L.D).sum(axis=1)
    stop_at, reason = _stop_points(L, k, futility)
    staged = k >= min_rounds
    done = stop_at >= 0  # only a cell that reached a look can have stopped
    open_ = ~done
    # an open cell reports its latest look
    j_rep = np.where(done, stop_at, np.clip(k - min_rounds, 0, len(L.looks) - 1))
    n_used = np.where(staged, L.looks[j_rep], k)
    mean, sd = _reported(L, k, staged, j_rep)
    c = np.where(staged, L.crit[j_rep], np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        half = c * sd / np.sqrt(n_used)
        tstat = mean * np.sqrt(n_used) / sd
        p_raw = 2 * _st.t.sf(np.abs(tstat), n_used - 1)
    p_raw = np.where(sd == 0, np.where(mean == 0, 1.0, 0.0), p_raw)
    p = np.where(staged, np.minimum(1.0, p_raw * (1.0 - level) / a_nom[j_rep]), np.nan)
    needed = _rounds_needed(L, k, staged & ~done, np.where(done, n_used, max_rounds), mean, sd)
    reason = np.where(~staged, "stage 1", np.where(done, reason, "running")).astype(object)
    if rounds_run is not None:
        out_of_rounds = np.asarray(rounds_run, dtype=int) >= max_rounds
        reason = np.where(open_ & out_of_rounds, "max rounds", reason)
        open_ = open_ & ~out_of_rounds
    return pd.DataFrame(
        {
            "rounds": k,
            "rounds_used": n_used,
            "rounds_needed": np.where(staged, needed, np.nan),
            "open": open_,
            "reason": reason,
            "mean_log": mean,
            "sd": sd,
            "df": np.where(staged, n_used - 1, np.nan),
            "level": np.where(staged, 1 - a_nom[j_rep], np.nan),
            "ratio": np.exp(mean),
            "ratio_ci_low": np.exp(mean - half),
            "ratio_ci_high": np.exp(mean + half),
            "halfwidth_pct": np.expm1(half) * 100,
            "p_value": p,
        }
    )[DECISION_COLUMNS]


@dataclass(frozen=True)
class _Looks:
    """The cells' log ratios (cells × ``max_rounds``, NaN-padded) and the design of
    :func:`stopping_rule`: the looks' round counts and critical values, the target half-width
    ``h`` and the margin's bounds ``up``/``down`` on the log scale (NaN without a margin)."""

    D: np.ndarray
    looks: np.ndarray
    crit: np.ndarray
    min_rounds: int
    max_rounds: int
    h: float
    up: float
    down: float
    margin: bool

    def look(self, j: int):
        """Look ``j``: its round count n, and each cell's mean, sd and half-width over n."""
        n = self.looks[j]
        x = self.D[:, :n]
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = x.mean(axis=1)
            sd = x.std(axis=1, ddof=1)
            half = self.crit[j] * sd / np.sqrt(n)
        return n, mean, sd, half

    def decide(self, mean, half) -> np.ndarray:
        """Each cell's reason to stop at an interval ``mean ± half`` ("" to go on)."""
        lo, hi = mean - half, mean + half
        up, down = self.up, self.down
        with np.errstate(invalid="ignore"):
            if not self.margin:
                return np.where(half <= self.h, "target width", "")
            return np.select(
                [lo > up, hi < down, (lo > 0) & (mean > up), (hi < 0) & (mean < down)]
                + [(lo >= down) & (hi <= up)],
                ["above margin", "below margin", "estimate above margin", "estimate below margin"]
                + ["within margin"],
                "",
            )

    def reach(self, n: int, mean, sd) -> np.ndarray:
        """The chance that the interval at ``max_rounds`` decides, estimate and spread as at
        look ``n``."""
        s_K = self.crit[-1] / np.sqrt(self.max_rounds)
        H, spread = s_K * sd, sd * np.sqrt(self.max_rounds - n) / self.max_rounds
        up, down = self.up, self.down
        with np.errstate(invalid="ignore", divide="ignore"):
            return (
                _st.norm.cdf((mean - np.maximum(up, H)) / spread)
                + _st.norm.cdf((np.minimum(down, -H) - mean) / spread)
                + np.clip(
                    _st.norm.cdf((up - H - mean) / spread)
                    - _st.norm.cdf((down + H - mean) / spread),
                    0,
                    1,
                )
            )


def _stop_points(L: _Looks, k: np.ndarray, futility: float) -> tuple[np.ndarray, np.ndarray]:
    """Each cell's first decisive look (index, -1 while open) and its reason."""
    m = L.D.shape[0]
    stop_at = np.full(m, -1)
    reason = np.full(m, "", dtype=object)
    for j in range(len(L.looks)):
        n, mean, sd, half = L.look(j)
        here = (stop_at < 0) & (k >= n)
        why = L.decide(mean, half).astype(object)
        if L.margin and futility > 0 and n < L.max_rounds:
            why = np.where((why == "") & (L.reach(n, mean, sd) < futility), "out of reach", why)
        if n == L.max_rounds:
            why = np.where(why == "", "max rounds", why)
        stopped = here & (why != "")
        stop_at[stopped] = j
        reason[stopped] = why[stopped]
    return stop_at, reason


def _reported(L: _Looks, k, staged, j_rep) -> tuple[np.ndarray, np.ndarray]:
    """Mean and sd each cell reports: at its look ``j_rep`` once staged, the mean of the
    rounds so far before the first look."""
    m = L.D.shape[0]
    mean = np.full(m, np.nan)
    sd = np.full(m, np.nan)
    for j in np.unique(j_rep[staged]):
        _, mj, sj, _ = L.look(j)
        sel = staged & (j_rep == j)
        mean[sel], sd[sel] = mj[sel], sj[sel]
    before = np.nansum(L.D, axis=1) / np.maximum(k, 1)  # the mean of the rounds before look 1
    return np.where(staged, mean, np.where(k > 0, before, np.nan)), sd


def _rounds_needed(L: _Looks, k, running, needed, mean, sd) -> np.ndarray:
    """While running: the first later look at which the interval would decide, all else
    equal (``needed`` where none would, and for the cells not running)."""
    needed = needed.astype(float)
    if running.any():
        for j in range(len(L.looks) - 1, -1, -1):
            n = L.looks[j]
            later = running & (n > k)
            why = L.decide(mean, L.crit[j] * sd / np.sqrt(n))
            needed = np.where(later & (why != ""), n, needed)
    return needed


# --------------------------------------------------------------------------------------------
# from the catalog's runs


def _valid(runs: pd.DataFrame, metric: str) -> pd.DataFrame:
    ok = np.isfinite(pd.to_numeric(runs[metric], errors="coerce"))
    if "status" in runs.columns:
        st = runs["status"]
        ok &= st.isna() | (st.astype(str).str.lower() == "ok")
    v = runs[ok].copy()
    v["tb_y"] = pd.to_numeric(v[metric], errors="coerce")
    return v[v["tb_y"] > 0]


def round_series(
    runs: pd.DataFrame,
    baseline: str,
    candidate: str | None,
    metric: str = "tps",
    before_round: int | None = None,
    cells: Sequence[tuple[str, int]] | None = None,
) -> tuple[list[tuple[str, int]], np.ndarray, np.ndarray]:
    """Each cell's within-round log ratios candidate/baseline, in round order.

    A round (``repeat``) gives a value when it holds exactly one valid, positive run of each
    arm; with ``candidate=None`` the value is log(figure) of ``baseline``'s run. Only rounds
    before ``before_round`` count (what was known when that round was planned).

    Returns
    -------
    cells, d, rounds_run
        The (workload, threads) keys, a (cells x rounds) array (NaN where a round gave no
        value) and the number of rounds each cell was given (any status).
    """
    if not len(runs):
        keys = list(cells or [])
        return keys, np.full((len(keys), 1), np.nan), np.zeros(len(keys), dtype=int)
    for c in ("workload", "threads", "arm", "repeat", metric):
        if c not in runs.columns:
            raise ValueError(f"runs lack column {c!r} needed for adaptive repeats")
    r = runs
    if before_round is not None:
        r = r[r["repeat"] < before_round]
    arms = [baseline] if candidate is None else [baseline, candidate]
    r = r[r["arm"].isin(arms)]
    keys = (
        list(cells)
        if cells is not None
        else sorted({(w, int(t)) for w, t in zip(r["workload"], r["threads"], strict=True)})
    )
    width = int(r["repeat"].max()) if len(r) else 0
    d = np.full((len(keys), max(width, 1)), np.nan)
    given = np.zeros(len(keys), dtype=int)
    if not len(r):
        return keys, d, given
    index = {k: i for i, k in enumerate(keys)}
    ran = r.groupby(["workload", "threads"])["repeat"].max()
    for (w, t), n in ran.items():
        if (w, int(t)) in index:
            given[index[(w, int(t))]] = int(n)
    v = _valid(r, metric)
    g = v.groupby(["workload", "threads", "repeat", "arm"])["tb_y"].agg(["first", "size"])
    g = g[g["size"] == 1]["first"].unstack("arm")
    for (w, t, rep), row in g.iterrows():
        i = index.get((w, int(t)))
        if i is None:
            continue
        if candidate is None:
            y = row.get(baseline, np.nan)
            d[i, int(rep) - 1] = np.log(y)
        else:
            a, b = row.get(baseline, np.nan), row.get(candidate, np.nan)
            d[i, int(rep) - 1] = np.log(b / a)
    return keys, d, given


def compared_pairs(study, arms: Sequence[str] | None = None) -> list[tuple[str, str | None]]:
    """The arm pairs whose intervals decide the stopping: the compare phase's pairs (restricted
    to ``arms``); with no pair, each arm alone (its own figure's interval)."""
    labels = [a.label for a in study.arms]
    chosen = list(arms) if arms else labels
    c = study.compare
    pairs = list(c.pairs) or (
        [(c.baseline or labels[0], c.candidate or labels[1])] if len(labels) > 1 else []
    )
    pairs = [(a, b) for a, b in pairs if a in chosen and b in chosen and a != b]
    return pairs or [(a, None) for a in chosen]


def cell_decisions(
    study,
    runs: pd.DataFrame,
    *,
    before_round: int | None = None,
    arms: Sequence[str] | None = None,
    cells: Sequence[tuple[str, int]] | None = None,
) -> pd.DataFrame:
    """The stopping decision of every cell and compared pair, from the catalog's sweep runs.

    Deterministic: the same runs give the same decisions, so a sweep resumed after a kill plans
    the same rounds. Returns :data:`DECISION_COLUMNS` with ``baseline, candidate, workload,
    threads`` in front.
    """
    rep = study.adaptive
    if rep is None:
        raise ValueError(f"study '{study.study}' has a fixed number of repeats, not adaptive")
    if cells is None:
        cells = [(w, t) for w in study.workloads for t in study.threads_for(w)]
    metric = study.compare.metric
    if "phase" in runs.columns:
        runs = runs[runs["phase"] == "sweep"]
    out = []
    for a, b in compared_pairs(study, arms):
        keys, d, given = round_series(runs, a, b, metric, before_round, cells)
        dec = stopping_rule(
            d,
            min_rounds=rep.min,
            max_rounds=rep.max,
            target_halfwidth_pct=rep.target_halfwidth_pct,
            delta_pct=study.compare.delta_pct if b is not None else None,
            rounds_run=given,
            futility=rep.futility,
        )
        dec.insert(0, "threads", [t for _, t in keys])
        dec.insert(0, "workload", [w for w, _ in keys])
        dec.insert(0, "candidate", b)
        dec.insert(0, "baseline", a)
        out.append(dec)
    return pd.concat(out, ignore_index=True)


def open_cells(decisions: pd.DataFrame) -> list[tuple[str, int]]:
    """The (workload, threads) cells for which any compared pair wants another round."""
    o = decisions[decisions["open"]]
    return list(
        dict.fromkeys((w, int(t)) for w, t in zip(o["workload"], o["threads"], strict=True))
    )


def adaptive_comparison(cmp: pd.DataFrame, runs: pd.DataFrame, study) -> pd.DataFrame:
    """The compare phase's table with each cell's interval from the adaptive design.

    For every row of ``cmp`` (:func:`tibenchlib.compare.compare_arms_table`) the ratio, its
    interval, df, p (Holm across each pair's cells again) and the verdict are replaced by those
    of :func:`stopping_rule` over the same sweep runs; the simultaneous interval is the same
    look at level 1 - alpha_look / m. Adds ``n_rounds`` (rounds the interval used),
    ``rounds_needed``, ``stop_reason``, ``halfwidth_pct`` and ``ci_level``.
    """
    rep = study.adaptive
    c = study.compare
    hib = not lower_is_better(c.metric)
    if "phase" in runs.columns:
        runs = runs[runs["phase"] == "sweep"]
    out = cmp.copy()
    for col in ("n_rounds", "rounds_needed", "stop_reason", "halfwidth_pct", "ci_level"):
        out[col] = None
    level = 0.95
    for (a, b), idx in out.groupby(["baseline", "candidate"], sort=False).groups.items():
        rows = out.loc[idx]
        cells = [(w, int(t)) for w, t in zip(rows["workload"], rows["threads"], strict=True)]
        _, d, given = round_series(runs, a, b, c.metric, cells=cells)
        dec = stopping_rule(
            d,
            min_rounds=rep.min,
            max_rounds=rep.max,
            target_halfwidth_pct=rep.target_halfwidth_pct,
            delta_pct=c.delta_pct,
            level=level,
            rounds_run=given,
            futility=rep.futility,
        )
        staged = dec["df"].notna().to_numpy()
        m = max(int(staged.sum()), 1)
        # the simultaneous interval over the pair's cells: the look's nominal alpha / m
        a_look = 1 - dec["level"].to_numpy(float)
        with np.errstate(invalid="ignore"):
            q_adj = _st.t.ppf(1 - a_look / (2 * m), dec["df"].to_numpy(float))
            half_adj = q_adj * dec["sd"].to_numpy(float) / np.sqrt(dec["rounds_used"])
        mean = dec["mean_log"].to_numpy(float)
        r = dec["ratio"].to_numpy(float)
        lo, hi = dec["ratio_ci_low"].to_numpy(float), dec["ratio_ci_high"].to_numpy(float)
        lo_a, hi_a = np.exp(mean - half_adj), np.exp(mean + half_adj)
        lo = np.where(staged, lo, np.nan)
        hi = np.where(staged, hi, np.nan)

        def pct(r, lo, hi):
            if hib:
                return (r - 1) * 100, (lo - 1) * 100, (hi - 1) * 100
            return (1 - r) * 100, (1 - hi) * 100, (1 - lo) * 100

        imp, lo_p, hi_p = pct(r, lo, hi)
        _, lo_ap, hi_ap = pct(r, np.where(staged, lo_a, np.nan), np.where(staged, hi_a, np.nan))
        p = dec["p_value"].to_numpy(float)
        p_adj = holm(p)
        # the verdict and its size read off the simultaneous interval printed beside it
        verdict, size = _interval_verdicts(lo_ap, hi_ap, staged, c.delta_pct)
        out.loc[idx, "ratio"] = np.where(staged, r, out.loc[idx, "ratio"])
        out.loc[idx, "ratio_ci_low"], out.loc[idx, "ratio_ci_high"] = lo, hi
        out.loc[idx, "improvement_pct"] = np.where(staged, imp, out.loc[idx, "improvement_pct"])
        out.loc[idx, "ci_low_pct"], out.loc[idx, "ci_high_pct"] = lo_p, hi_p
        out.loc[idx, "ci_low_adj_pct"], out.loc[idx, "ci_high_adj_pct"] = lo_ap, hi_ap
        out.loc[idx, "df"] = dec["df"].to_numpy()
        out.loc[idx, "p_value"], out.loc[idx, "p_adjusted"] = p, p_adj
        out.loc[idx, "family_size"] = int(np.isfinite(p).sum())
        out.loc[idx, "verdict"] = np.where(staged, verdict, "n/a")
        if "size" in out.columns:
            out.loc[idx, "size"] = np.where(staged, size, out.loc[idx, "size"])
        out.loc[idx, "method"] = ADAPTIVE_METHOD
        out.loc[idx, "n_pairs"] = dec["rounds_used"].to_numpy()
        out.loc[idx, "n_rounds"] = dec["rounds_used"].to_numpy()
        out.loc[idx, "rounds_needed"] = dec["rounds_needed"].to_numpy()
        out.loc[idx, "stop_reason"] = dec["reason"].to_numpy()
        out.loc[idx, "halfwidth_pct"] = dec["halfwidth_pct"].to_numpy()
        out.loc[idx, "ci_level"] = dec["level"].to_numpy()
        notes = []
        claims = np.isin(verdict, ["better", "worse"])
        for j, (w, row) in enumerate(zip(out.loc[idx, "warnings"], dec.itertuples(), strict=True)):
            w = [x for x in (w if isinstance(w, list) else []) if _still_true(x, a, b)]
            if staged[j] and p_adj[j] < 1 - level and not claims[j]:
                w.append(
                    f"Holm p={p_adj[j]:.3g} < {1 - level:g}, but "
                    + (
                        f"the estimate lies within ±{c.delta_pct:g}%"
                        if abs(imp[j]) <= c.delta_pct
                        else "no bounded interval excludes 0 on its side"
                    )
                    + ": no claim"
                )
            if row.df == row.df:  # the first look is reached
                w.append(
                    f"adaptive: {row.rounds_used} rounds ({row.reason}), group-sequential "
                    f"interval at nominal {row.level:.2%} with {int(row.df)} df (looks after "
                    f"rounds {rep.min}–{rep.max}, 95% over all looks)"
                )
                if row.sd == 0:  # only possible at the first look: it decides at once
                    w.append(
                        f"the first {rep.min} rounds gave identical ratios: a zero-width "
                        "interval, too good to be true (check the runs)"
                    )
            else:
                w.append(f"adaptive: {row.rounds} of the first {rep.min} rounds measured")
            notes.append(w)
        out.loc[idx, "warnings"] = pd.Series(notes, index=idx, dtype=object)
    return out


def _still_true(note: str, baseline: str, candidate: str) -> bool:
    """Whether a note of the fixed-n comparison still holds under the adaptive interval: the
    arms' own run notes, the run counts and the round notes do; notes on the fixed-n interval,
    its p or its pairing do not."""
    keep = (f"{baseline}: ", f"{candidate}: ", "n=", "round", "rounds ")
    return note.startswith(keep)


def describe_rule(study) -> str:
    """The stopping rule in one sentence, for the dry run and the notebook."""
    rep = study.adaptive
    margin = study.compare.delta_pct
    return (
        f"at most {rep.max} rounds; from round {rep.min} on, each cell stops at the first "
        f"round where its interval decides against ±{margin:g}% (better, worse or "
        f"equivalent) or no decision is within reach by round {rep.max} (group-sequential "
        f"repeated intervals, O'Brien-Fleming-type alpha spending, 95% over all looks); "
        f"without a margin, once the interval is within ±{rep.target_halfwidth_pct:g}%"
    )
