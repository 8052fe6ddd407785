"""Adaptive repeats: how many rounds each cell of a sweep needs, decided from its own spread.

``repeats: {min: 3, max: 10, target_halfwidth_pct: 2}`` runs every cell (workload x threads)
``min`` rounds, then only the cells that still need it, up to ``max`` rounds. Looking at the
data and stopping when the interval "looks narrow enough" inflates error rates: an interval that
is narrow by chance stops the cell early, exactly when it is most likely to miss. The rule here
keeps its promised coverage under that optional stopping:

**Stein's two-stage procedure** (Stein 1945) on the within-round log ratios
d_r = log(candidate_r / baseline_r) of a cell (one run of each arm per round, the arms' order
varied as :func:`tibenchlib.sweep.arm_order` does; a single-arm study uses d_r = log(figure_r)).

1. Stage 1 is the first ``min`` = n0 rounds. Their standard deviation s0 (df = n0 - 1) fixes the
   number of rounds the cell needs, N = max(n0, ceil((t s0 / h)^2)), capped at ``max``, where
   h = log(1 + target/100) is the target half-width on the log scale and t the
   1 - alpha_final/2 quantile of Student's t with n0 - 1 df. N depends on s0 only.
2. The interval is exp(mean(d_1..d_N) +- t s0 / sqrt(N)), still with n0 - 1 df. Because the
   mean of normal data is independent of s0 and N is a function of s0 alone,
   (mean_N - mu) sqrt(N) / s0 has exactly Student's t distribution with n0 - 1 df whatever N
   turned out to be: the coverage is exact for normal d_r, and the half-width is at most h
   unless the cap ``max`` bound.

One early look: after stage 1, a cell whose interval at the stricter level 1 - alpha_early
already lies beyond +-delta (``compare.delta_pct``) on one side, or entirely within +-delta,
stops there. The study's alpha is split between the two looks, alpha_early = alpha x
``early_share`` and alpha_final = alpha - alpha_early, so by Bonferroni the probability that the
reported interval misses is at most alpha_early + alpha_final = alpha whichever look stopped the
cell. The reported p-value is the look's own p times alpha / alpha_look (capped at 1): it is below
alpha exactly when that look's interval excludes 0, and it is a valid p-value for Holm across
cells.

Assumptions: rounds are independent blocks; within a cell the d_r are independent and roughly
normal with one variance (lognormal run noise makes them exactly normal); round-level drift that
moves both arms cancels in d_r. The price of exactness is the df: the final interval keeps
n0 - 1 df however many rounds ran, so ``min: 2`` (df 1) needs many rounds; ``min`` 3 to 5 is a
good range. The tests check coverage and false verdicts by seeded simulation (lognormal and
AR(1) run noise, with and without round drift) next to the fixed-n paired design.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats as _st

__all__ = [
    "ADAPTIVE_METHOD",
    "DECISION_COLUMNS",
    "EARLY_SHARE",
    "REASONS",
    "stopping_rule",
    "round_series",
    "cell_decisions",
    "open_cells",
    "adaptive_comparison",
    "describe_rule",
]

#: Share of the study's alpha spent on the early look after stage 1.
EARLY_SHARE = 0.2

ADAPTIVE_METHOD = (
    "adaptive rounds: Stein's two-stage t on the within-round log ratios, df = min - 1; "
    "alpha split between the early look and the final interval; Holm"
)

#: Why a cell stopped (or not): the codes ``reason`` takes.
REASONS = (
    "stage 1",  # fewer than min rounds so far
    "running",  # stage 1 fixed the rounds it needs; not there yet
    "target width",  # the interval is within +-target
    "above margin",  # early look: the whole interval above +delta
    "below margin",  # early look: the whole interval below -delta
    "within margin",  # early look: the whole interval within +-delta
    "max rounds",  # needed more rounds than max allows
)

DECISION_COLUMNS = [
    "rounds",
    "rounds_used",
    "rounds_needed",
    "open",
    "reason",
    "mean_log",
    "sd_stage1",
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


def stopping_rule(
    d,
    *,
    min_rounds: int,
    max_rounds: int,
    target_halfwidth_pct: float,
    delta_pct: float | None = None,
    level: float = 0.95,
    early_share: float = EARLY_SHARE,
    rounds_run: Sequence[int] | np.ndarray | None = None,
) -> pd.DataFrame:
    """Stein's two-stage decision for each cell: stop or run another round, and its interval.

    Estimator: see the module's docstring (Stein's two-stage t with one early look after stage
    1; alpha split ``early_share`` : 1 - ``early_share`` between the looks).

    Parameters
    ----------
    d : array-like, shape (cells, rounds) or (rounds,)
        Each cell's within-round log ratios in round order; NaN for a round without a valid
        pair (a failed run). Values after a cell's ``rounds_needed`` are ignored.
    min_rounds, max_rounds : int
        Stage 1 (n0 >= 2) and the cap.
    target_halfwidth_pct : float
        The half-width wanted, as a factor: h = log(1 + target/100).
    delta_pct : float, optional
        The equivalence margin of the early look (None: no early look).
    level : float
        Confidence level of the reported interval (alpha = 1 - level over both looks).
    rounds_run : sequence of int, optional
        Rounds each cell has been given so far (failed ones included); a cell still open once
        it has had ``max_rounds`` is closed with reason ``"max rounds"``.

    Returns
    -------
    DataFrame
        One row per cell, :data:`DECISION_COLUMNS`: ``rounds`` (valid pairs), ``rounds_used`` by
        the interval, ``rounds_needed`` (N, from stage 1), ``open`` (run another round),
        ``reason`` (:data:`REASONS`), ``mean_log``, ``sd_stage1``, ``df``, ``level`` (of the
        look that reported), ``ratio`` and its interval, ``halfwidth_pct`` (exp(half) - 1, in
        percent) and ``p_value`` (already scaled for the look, see the module's docstring).
        An open cell reports the interval of the rounds so far at the final level.
    """
    if min_rounds < 2:
        raise ValueError(
            f"min_rounds must be at least 2 (stage 1 needs a spread), not {min_rounds}"
        )
    if max_rounds < min_rounds:
        raise ValueError(f"max_rounds ({max_rounds}) is below min_rounds ({min_rounds})")
    if not 0 < early_share < 1:
        raise ValueError(f"early_share must lie in (0, 1), not {early_share}")
    D = _compact(d)
    m = D.shape[0]
    if D.shape[1] < max_rounds:
        D = np.pad(D, ((0, 0), (0, max_rounds - D.shape[1])), constant_values=np.nan)
    k = np.isfinite(D).sum(axis=1)
    n0, df = int(min_rounds), int(min_rounds) - 1
    alpha = 1.0 - level
    a_early = alpha * early_share
    a_final = alpha - a_early
    q_final = _st.t.ppf(1 - a_final / 2, df)
    q_early = _st.t.ppf(1 - a_early / 2, df)
    h = np.log1p(target_halfwidth_pct / 100)

    staged = k >= n0
    with np.errstate(invalid="ignore", divide="ignore"):
        s0 = np.where(staged, np.nanstd(D[:, :n0], axis=1, ddof=1), np.nan)
        need = np.ceil((q_final * s0 / h) ** 2)
    need = np.where(np.isfinite(need), need, n0)
    capped = need > max_rounds
    n_plan = np.clip(need, n0, max_rounds).astype(int)

    csum = np.nancumsum(D, axis=1)

    def mean_of(n):
        n = np.clip(np.asarray(n, dtype=int), 1, D.shape[1])
        return np.take_along_axis(csum, (n - 1)[:, None], 1)[:, 0] / n

    early = np.zeros(m, dtype=bool)
    early_reason = np.full(m, "", dtype=object)
    if delta_pct is not None:
        up, down = np.log1p(delta_pct / 100), np.log1p(-delta_pct / 100)
        mean0 = mean_of(np.full(m, n0))
        with np.errstate(invalid="ignore"):
            lo1 = mean0 - q_early * s0 / np.sqrt(n0)
            hi1 = mean0 + q_early * s0 / np.sqrt(n0)
            above, below = lo1 > up, hi1 < down
            within = (lo1 >= down) & (hi1 <= up)
        early = staged & (n_plan > n0) & (above | below | within)
        early_reason = np.select(
            [above, below, within], ["above margin", "below margin", "within margin"], ""
        )
    done = staged & (early | (k >= n_plan))
    n_used = np.where(early, n0, np.where(done, n_plan, np.minimum(k, n_plan)))
    n_used = np.where(staged, n_used, k)
    q_look = np.where(early, q_early, q_final)
    a_look = np.where(early, a_early, a_final)
    mean = np.where(n_used >= 1, mean_of(np.maximum(n_used, 1)), np.nan)
    # before stage 1 ends there is no s0: the interval of the rounds so far is shown as none
    with np.errstate(invalid="ignore", divide="ignore"):
        half = q_look * s0 / np.sqrt(n_used)
        tstat = mean * np.sqrt(n_used) / s0
        p_raw = 2 * _st.t.sf(np.abs(tstat), df)
    p_raw = np.where(s0 == 0, np.where(mean == 0, 1.0, 0.0), p_raw)
    p = np.where(staged, np.minimum(1.0, p_raw * alpha / a_look), np.nan)

    reason = np.where(
        ~staged,
        "stage 1",
        np.where(
            early,
            early_reason,
            np.where(done, np.where(capped, "max rounds", "target width"), "running"),
        ),
    ).astype(object)
    open_ = ~done
    if rounds_run is not None:
        out_of_rounds = np.asarray(rounds_run, dtype=int) >= max_rounds
        reason = np.where(open_ & out_of_rounds, "max rounds", reason)
        open_ = open_ & ~out_of_rounds
    return pd.DataFrame(
        {
            "rounds": k,
            "rounds_used": n_used,
            "rounds_needed": np.where(staged, n_plan, np.nan),
            "open": open_,
            "reason": reason,
            "mean_log": mean,
            "sd_stage1": s0,
            "df": np.where(staged, df, np.nan),
            "level": np.where(staged, 1 - a_look, np.nan),
            "ratio": np.exp(mean),
            "ratio_ci_low": np.exp(mean - half),
            "ratio_ci_high": np.exp(mean + half),
            "halfwidth_pct": np.expm1(half) * 100,
            "p_value": p,
        }
    )[DECISION_COLUMNS]


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
    from .stats import _verdicts, holm, lower_is_better

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
        )
        staged = dec["df"].notna().to_numpy()
        m = max(int(staged.sum()), 1)
        # the simultaneous interval over the pair's cells: the same look at alpha_look / m
        a_look = 1 - dec["level"].to_numpy(float)
        with np.errstate(invalid="ignore"):
            q_adj = _st.t.ppf(1 - a_look / (2 * m), dec["df"].to_numpy(float))
            half_adj = q_adj * dec["sd_stage1"].to_numpy(float) / np.sqrt(dec["rounds_used"])
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
        verdict = _verdicts(imp, lo_p, hi_p, p_adj, c.delta_pct, 1 - level)
        out.loc[idx, "ratio"] = np.where(staged, r, out.loc[idx, "ratio"])
        out.loc[idx, "ratio_ci_low"], out.loc[idx, "ratio_ci_high"] = lo, hi
        out.loc[idx, "improvement_pct"] = np.where(staged, imp, out.loc[idx, "improvement_pct"])
        out.loc[idx, "ci_low_pct"], out.loc[idx, "ci_high_pct"] = lo_p, hi_p
        out.loc[idx, "ci_low_adj_pct"], out.loc[idx, "ci_high_adj_pct"] = lo_ap, hi_ap
        out.loc[idx, "df"] = dec["df"].to_numpy()
        out.loc[idx, "p_value"], out.loc[idx, "p_adjusted"] = p, p_adj
        out.loc[idx, "family_size"] = int(np.isfinite(p).sum())
        out.loc[idx, "verdict"] = np.where(staged, verdict, "n/a")
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
            if row.df == row.df:  # stage 1 complete
                w.append(
                    f"adaptive: {row.rounds_used} rounds ({row.reason}), Stein's two-stage "
                    f"interval at {row.level:.0%} with {int(row.df)} df from the first "
                    f"{rep.min} rounds"
                )
                if row.sd_stage1 == 0:
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
        f"at most {rep.max} rounds; after {rep.min} rounds each cell's spread fixes the rounds "
        f"it needs for an interval of ±{rep.target_halfwidth_pct:g}% (Stein's two-stage "
        f"procedure); a cell stops early when its interval already lies beyond or within "
        f"±{margin:g}%"
    )
