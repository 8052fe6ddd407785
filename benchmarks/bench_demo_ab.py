"""The demo's A/B, K times: how often it finds the real effect and how often A-vs-A claims one.

Goal (issue 15, section 1): in at least 9 of 10 demo runs, ``innodb_flush_log_at_trx_commit``
1 -> 2 on the write workload is "better" with a bounded interval in at least 2 of its thread
counts (both, with the demo's two), and the A-vs-A pair (``flush1`` vs ``flush1_again``) makes
no better/worse claim.

    .venv/bin/python benchmarks/bench_demo_ab.py [-k 3] [--params params/demo.yaml]

Each repetition is a whole demo sweep as ``tibench run params/demo.yaml --phase sweep --phase
compare`` runs it: a fresh private MariaDB under a temporary ``TIBENCH_DATA`` (so a server start
and a cold buffer pool every time), ``prepare``, the sweep with its measured warm-ups, then the
compare phase's table. The same runs are also compared unpaired (``paired=False``, the Fieller
interval) to show what the paired design buys. Prints one line per repetition and the rates,
and the A-vs-A pair's lean: how many of its cells came out below and above 0, and the mean of
its estimates with a t 95% interval over the sweeps (each sweep's mean over its cells, the
sweeps independent), which a design that favours neither arm centres on 0.

``--order rotated`` runs the sweep in the former order, for a before-and-after on the same host:
rounds rotated and reversed (abc, cba, bca, acb, cab), no pre-period run, an arm opened only
when the plan moves to another one (so an arm that ends a round carries on unopened into the
next). ``balanced`` (the default) is the product's order
(:func:`tibenchlib.runorder.round_design`).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_overhead import header, loadavg, open_prepared, private_data, private_server  # noqa: E402

from tibenchlib.params import load_study  # noqa: E402
from tibenchlib.stats import t_interval  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def judge(cmp, study) -> dict:
    """Right verdict for the real effect, false claim for the A-vs-A pair (compare table)."""
    base, cand = study.compare.pairs[0] if study.compare.pairs else (None, None)
    real = cmp[(cmp["baseline"] == base) & (cmp["candidate"] == cand)]
    real = real[real["workload"] == "oltp_update_non_index"]
    found = real["verdict"].eq("better") & real["ci_low_pct"].gt(0) & real["ci_high_pct"].notna()
    aa = cmp[(cmp["baseline"] == base) & (cmp["candidate"] != cand)]
    claims = aa["verdict"].isin(["better", "worse"])
    return {
        "found": int(found.sum()),
        "of": len(real),
        "right": bool(found.sum() >= 2),
        "aa_claims": int(claims.sum()),
        "real": "  ".join(
            f"t{r.threads} {r.improvement_pct:+.0f}% [{r.ci_low_pct:+.0f}, {r.ci_high_pct:+.0f}] "
            f"{r.verdict}"
            for r in real.itertuples()
        ),
        "aa_pct": [float(r.improvement_pct) for r in aa.itertuples()],
        "aa": "  ".join(
            f"t{r.threads} {r.improvement_pct:+.1f}% [{r.ci_low_pct:+.1f}, {r.ci_high_pct:+.1f}] "
            f"{r.verdict}"
            for r in aa.itertuples()
        ),
    }


def rotated_plan(study, **kw):
    """The former sweep plan: rounds in :func:`tibenchlib.runorder.arm_order`'s rotated and
    reversed orders, no pre-period run."""
    from tibenchlib.runorder import arm_order
    from tibenchlib.sysbench.runner import RunSpec

    arms = [a.label for a in study.arms]
    order = [
        (a, w, t, r)
        for r in range(1, study.max_rounds + 1)
        for a in arm_order(arms, r)
        for w in study.workloads
        for t in study.threads_for(w)
    ]
    return [RunSpec(a, w, t, r, i) for i, (a, w, t, r) in enumerate(order)]


def one(study_file: Path, k: int, order: str = "balanced") -> dict:
    from unittest import mock

    from tibenchlib import sweep as sweep_module
    from tibenchlib.compare import compare_arms_table
    from tibenchlib.phase import RunContext
    from tibenchlib.store import Store

    study = load_study(study_file, {"study": f"demo-ab-{k}"})
    with private_data(), private_server(study):
        open_prepared(study)
        store = Store.for_study(study, record=True)
        t0 = time.monotonic()
        former = mock.patch.multiple(sweep_module, plan=rotated_plan, round_of=None)
        with former if order == "rotated" else contextlib.nullcontext():
            runs = sweep_module.sweep(RunContext.open(study, progress=False, store=store))
        wall = time.monotonic() - t0
        warm = store.read("warmups", study.study)
    paired = compare_arms_table(runs, study)
    unpaired = compare_arms_table(runs, study, paired=False)
    return {
        "wall": wall,
        "warmup_s": float(warm["seconds"].sum()) if len(warm) else 0.0,
        "warmup_unsteady": int((~warm.groupby("opening")["steady"].last().astype(bool)).sum())
        if len(warm)
        else 0,
        "paired": judge(paired, study),
        "unpaired": judge(unpaired, study),
        "method": str(paired["method"].iloc[0]).split(":")[0],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    ap.add_argument("-k", type=int, default=3, help="demo sweeps to run")
    ap.add_argument("--params", default=str(ROOT / "params" / "demo.yaml"), help="study file")
    ap.add_argument("--order", choices=["balanced", "rotated"], default="balanced")
    a = ap.parse_args(argv)
    header(f"bench_demo_ab: the demo's sweep + compare, {a.k} times ({a.params}, {a.order})")
    os.environ.setdefault("TQDM_DISABLE", "1")
    res = []
    for k in range(1, a.k + 1):
        r = one(Path(a.params), k, a.order)
        res.append(r)
        p, u = r["paired"], r["unpaired"]
        print(
            f"[{k}] sweep {r['wall']:.0f} s (warm-up {r['warmup_s']:.0f} s, "
            f"{r['warmup_unsteady']} openings not steady), load {loadavg()}, {r['method']}\n"
            f"    flush1->flush2: {p['real']}\n"
            f"    A-vs-A:         {p['aa']}\n"
            f"    right verdict: {p['right']} ({p['found']}/{p['of']} better), A-vs-A claims: "
            f"{p['aa_claims']}; unpaired on the same runs: {u['found']}/{u['of']} better, "
            f"{u['aa_claims']} A-vs-A claims",
            flush=True,
        )
    n = len(res)
    right = sum(r["paired"]["right"] for r in res)
    aa = sum(r["paired"]["aa_claims"] > 0 for r in res)
    good = sum(r["paired"]["right"] and r["paired"]["aa_claims"] == 0 for r in res)
    u_right = sum(r["unpaired"]["right"] for r in res)
    u_aa = sum(r["unpaired"]["aa_claims"] > 0 for r in res)
    walls = [r["wall"] for r in res]
    print(
        f"\nright verdicts {right}/{n}, A-vs-A false claims {aa}/{n}, both right {good}/{n}"
        f" (unpaired on the same runs: right {u_right}/{n}, A-vs-A claims {u_aa}/{n});"
        f" sweep {min(walls):.0f}-{max(walls):.0f} s; load average now {loadavg()}"
    )
    cells = [x for r in res for x in r["paired"]["aa_pct"]]
    means = [sum(r["paired"]["aa_pct"]) / len(r["paired"]["aa_pct"]) for r in res]
    lean = t_interval(means)
    print(
        f"A-vs-A lean ({a.order} order): {sum(x < 0 for x in cells)} of {len(cells)} cells below "
        f"0, {sum(x > 0 for x in cells)} above; mean {lean['mean']:+.2f}%"
        + (
            f" [{lean['ci_low']:+.2f}, {lean['ci_high']:+.2f}] (t 95% over {n} sweeps)"
            if lean["ci_low"] is not None
            else f" ({n} sweep: no interval)"
        )
    )
    ok = good >= 0.9 * n
    print(f"goal (>= 9 in 10 both right): {'met' if ok else 'NOT met'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
