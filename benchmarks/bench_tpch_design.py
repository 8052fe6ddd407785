"""TPC-H designs under drift, and the per-query tests' family-wise rate and power.

Seeded simulations through the product's own planning and statistics: the pass order comes from
:func:`tibenchlib.tpch.phase.plan` (alternated on the embedded server, blocks with a return on
a cluster; the old "arm after arm" order is the block plan without its return), the verdicts
from :func:`tibenchlib.tpch.scaling.query_summary`,
:func:`~tibenchlib.tpch.scaling.overall_summary`, :func:`tibenchlib.tpch.passes.compare_passes`
and :func:`tibenchlib.findings.tpch.tpch_findings`.

Model: 22 queries with base times spread over two decades; each execution's time is the
query's base time × the arm's effect × (1 + drift × position of its pass in the phase) ×
lognormal noise with the query's CV. A false verdict is a finding that claims a change (better
or worse, overall or any one query) where the arms do not differ.

Run::

    python benchmarks/bench_tpch_design.py            # full sizes (about 20 minutes)
    python benchmarks/bench_tpch_design.py --sims 200  # quicker
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
import pandas as pd
from scipy import stats as st

from tibenchlib.findings.tpch import tpch_findings
from tibenchlib.params import parse_study
from tibenchlib.tpch import passes, phase, scaling

ARMS = ["cpus:0", "unbound"]
QUERIES = list(range(1, 23))


def study(repeats: int, design: str = "alternated"):
    """A study whose plan is the design's: the embedded server alternates, a cluster blocks."""
    raw = {
        "study": "sim",
        "tpch_scaling": {"repeats": repeats, "arms": ARMS, "modes": ["power"], "queries": QUERIES},
    }
    if design != "alternated":
        raw["target"] = {"kind": "url", "url": "mysql+pymysql://root@127.0.0.1:4000/sbtest"}
    return parse_study(raw)


def order(repeats: int, design: str) -> list[tuple[str, int]]:
    """``(arm, pass)`` in execution order: ``alternated`` and ``blocks`` from the phase's plan;
    ``arm_after_arm`` the earlier plan (every pass of an arm, arm after arm, no return)."""
    s = study(repeats, "alternated" if design == "alternated" else "blocks")
    blocks = [(b.arm, b.rep) for b in phase.plan(s)]
    if design == "arm_after_arm":
        blocks = [(a, r) for a, r in blocks if r <= repeats]
    return blocks


def simulate_runs(
    rng: np.random.Generator,
    plan: list[tuple[str, int]],
    *,
    effect: dict[str, float] | None = None,
    query_effect: dict[int, float] | None = None,
    drift: float = 0.10,
    cv: float | np.ndarray = 0.03,
) -> pd.DataFrame:
    """Execution rows of one simulated phase (power mode, one stream), in the phase's order.

    ``effect``: time multiplier per arm; ``query_effect``: an extra multiplier per query on the
    second arm; ``drift``: the linear growth of every time from the first pass to the last.
    """
    effect = effect or {}
    query_effect = query_effect or {}
    base = np.exp(np.linspace(np.log(0.01), np.log(1.0), len(QUERIES)))
    cvs = np.broadcast_to(np.asarray(cv, float), base.shape)
    rows, clock = [], 0.0
    k = len(plan)
    for i, (arm, rep) in enumerate(plan):
        grow = 1 + drift * i / max(k - 1, 1)
        for j, q in enumerate(QUERIES):
            t = base[j] * effect.get(arm, 1.0) * grow * np.exp(rng.normal(0, cvs[j]))
            if arm == ARMS[1]:
                t *= query_effect.get(q, 1.0)
            rows.append((arm, "power", 0, rep, False, q, "ok", t, True, clock))
            clock += t
    cols = ["arm", "mode", "stream", "rep", "warmup", "query", "status", "seconds", "verified",
            "started_at"]  # fmt: skip
    return pd.DataFrame(rows, columns=cols)


def verdicts(runs: pd.DataFrame) -> dict:
    """What the product concludes from ``runs``: the finding's overall claim, the per-query
    claims (the report's and the findings' whole path)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        summary = scaling.query_summary(runs, ARMS)
        overall = scaling.overall_summary(runs, ARMS)
        compared = passes.compare_passes(passes.pass_table(runs, ARMS), ARMS)
    (f,) = tpch_findings(summary, overall, ARMS[0], compared, stand_in=True)
    cand = summary[summary["arm"] == ARMS[1]].set_index("query")["scaling"]
    return {
        "overall": f.key not in ("f_tpch_counts_nochange",),
        "longer": f.key.startswith("f_tpch_counts_longer"),
        "queries": cand,
    }


def quick_verdicts(runs: pd.DataFrame) -> dict:
    """The same conclusions from the same functions without the tables around them (the
    simulated runs are one stream, so they are their own per-pass observations): the overall
    claim from :func:`~tibenchlib.tpch.passes.compare_passes` (an interval clear of no change,
    beyond the blocks' drift), the per-query verdicts from the summary's own tests. The test
    module checks that both paths agree."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = passes.pass_table(runs, ARMS)
        c = passes.compare_passes(table, ARMS).iloc[0]
        tests = scaling._tests(runs, ARMS, 0.95, in_rounds=passes.rounds_ordered(table))
    lo, hi = c["ci_low"], c["ci_high"]
    bounded = pd.notna(lo) and pd.notna(hi)
    drifted = bool(c["within_drift"]) if pd.notna(c["within_drift"]) else False
    claimed = bounded and (lo > 1 or hi < 1) and not drifted
    cand = pd.Series({q: t["scaling"] for (_, q, _), t in tests.items()}, name="scaling")
    return {"overall": bool(claimed), "longer": bool(claimed and lo > 1), "queries": cand}


def false_verdict_rate(
    design: str, repeats: int, sims: int, seed: int = 1, drift=0.10, judge=quick_verdicts
) -> dict:
    """Share of studies with no arm effect in which a change is claimed."""
    rng = np.random.default_rng(seed)
    plan = order(repeats, design)
    overall = anyq = 0
    for _ in range(sims):
        v = judge(simulate_runs(rng, plan, drift=drift))
        overall += v["overall"]
        anyq += bool((v["queries"] != "no detectable change").any())
    return {"overall": overall / sims, "any_query": anyq / sims, "sims": sims}


def detection_rate(
    design: str, repeats: int, sims: int, effect: float, seed: int = 2, judge=quick_verdicts
) -> float:
    """Share of studies in which a real overall change (``effect``: time multiplier of the
    second arm) is found, with the same drift."""
    rng = np.random.default_rng(seed)
    plan = order(repeats, design)
    found = 0
    for _ in range(sims):
        v = judge(simulate_runs(rng, plan, effect={ARMS[1]: effect}))
        found += v["overall"] and (v["longer"] == (effect > 1))
    return found / sims


def per_query(repeats: int, sims: int, *, change: float = 1.0, seed: int = 3, cv=0.03) -> dict:
    """Family-wise false claims over the 22 queries and the power to call one query (Q9)
    slower by ``change``: the product's verdicts (alternated design, no drift), and on the same
    within-round log ratios the moderated t of :func:`tibenchlib.tpch.passes.query_tests`."""
    rng = np.random.default_rng(seed)
    plan = order(repeats, "alternated")
    qe = {9: change} if change != 1.0 else {}
    fw = hit = mfw = mhit = 0
    for _ in range(sims):
        runs = simulate_runs(rng, plan, query_effect=qe, drift=0.0, cv=cv)
        v = quick_verdicts(runs)
        called = v["queries"][v["queries"] != "no detectable change"]
        fw += bool(len(called.drop(index=9, errors="ignore"))) if qe else bool(len(called))
        hit += v["queries"].get(9) == "slower"
        d = passes.round_log_ratios(runs, ARMS[0], ARMS[1])
        m = passes.query_tests(d, moderated=True).set_index("query")["p_adjusted"] < 0.05
        mfw += bool(m.drop(index=9).any()) if qe else bool(m.any())
        mhit += bool(m.get(9))
    return {"familywise": fw / sims, "power": hit / sims, "moderated_familywise": mfw / sims,
            "moderated_power": mhit / sims, "sims": sims}  # fmt: skip


def wilson(k: float, n: int) -> tuple[float, float]:
    """95% Wilson interval of a proportion k (a share) of n."""
    z = st.norm.ppf(0.975)
    p = k
    c = (p + z * z / (2 * n)) / (1 + z * z / n)
    h = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, c - h), min(1.0, c + h)


def _pct(p: float, n: int) -> str:
    lo, hi = wilson(p, n)
    return f"{100 * p:5.1f}% [{100 * lo:.1f}, {100 * hi:.1f}]"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sims", type=int, default=400)
    ap.add_argument("--part", choices=["all", "designs", "queries"], default="all")
    a = ap.parse_args()
    n = a.sims
    if a.part != "queries":
        designs(n)
    if a.part != "designs":
        queries(n)


def designs(n: int) -> None:
    print(f"TPC-H, 22 queries, CV 3% per execution, 10% linear drift over the phase; {n} studies")
    print("false verdict (no arm effect): overall claim | any query claimed")
    for design in ("arm_after_arm", "alternated", "blocks"):
        for reps in (3, 5):
            r = false_verdict_rate(design, reps, n)
            print(f"  {design:14s} n={reps}: {_pct(r['overall'], n)} | {_pct(r['any_query'], n)}")
    print("real effect found (time +10% on the second arm, same drift):")
    for design in ("alternated", "blocks"):
        for reps in (3, 5):
            p = detection_rate(design, reps, n, 1.10)
            print(f"  {design:14s} n={reps}: {_pct(p, n)}")


def queries(n: int) -> None:
    print("per query, alternated, no drift: family-wise false claims over 22 | power, Q9 +10%")
    for label, cv in (("CV 3% each", 0.03), ("CVs 2-6%", np.linspace(0.02, 0.06, 22))):
        for reps in (3, 5):
            f = per_query(reps, n, cv=cv)
            p = per_query(reps, n, change=1.10, seed=4, cv=cv)
            print(f"  {label:10s} n={reps}: paired t {_pct(f['familywise'], n)} | "
                  f"{_pct(p['power'], n)};  moderated t {_pct(f['moderated_familywise'], n)} | "
                  f"{_pct(p['moderated_power'], n)}")  # fmt: skip


if __name__ == "__main__":
    main()
