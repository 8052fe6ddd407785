"""Phase ``numa``: the same sysbench cells under several CPU/NUMA binding policies.

On the embedded server tibench starts MariaDB under each policy (``numactl`` prefix), verifies
from ``/proc`` that the binding holds (a policy that cannot be applied or verified is an error,
never a silent unbound run), records ``numastat -p`` before and after each policy block, and
samples CPU and RSS of server and client every second. On a real cluster the policies are labels
of runs made after the user re-deploys (``tibench run --phase numa --arm node:0``); the TiUP
topology, when given, is checked against report 000's block-cache rule.

Each policy is compared with ``unbound``: TPS and p95 ratios with Fieller intervals, Welch p,
Holm, verdicts; and every run's stability (dips, floors, level shifts).
"""

from __future__ import annotations

import json
import logging
import os
import time

import pandas as pd

from .binding import (
    BindingError,
    check_policy,
    numa_nodes,
    parse_policy,
    verify_binding,
)
from .params import Arm, Study
from .phase import Phase, RunContext
from .resources import numastat_per_node
from .runorder import PRE_SUFFIX, round_design
from .stability import cpu_vs_throughput, stability_by_run
from .stats import compare_arms
from .store import Store
from .sweep import estimate as runs_estimate
from .sweep import openings, pre_only_first, round_of
from .sysbench.prepare import ensure_ready
from .sysbench.runner import RunSpec, describe, run_one
from .target import open_arm

log = logging.getLogger(__name__)

BASELINE = "unbound"
PHASE = "numa"
ROW_COLUMNS = [
    "workload", "threads", "baseline_policy", "candidate_policy", "n_baseline", "n_candidate",
    "baseline_tps", "candidate_tps", "improvement_pct", "ci_low_pct", "ci_high_pct", "p_value",
    "p_adjusted", "verdict", "baseline_p95_ms", "candidate_p95_ms", "p95_improvement_pct",
    "p95_ci_low_pct", "p95_ci_high_pct", "p95_verdict", "binding_verified", "dips_baseline",
    "dips_candidate", "warnings",
]  # fmt: skip


def policies(study: Study) -> list[str]:
    """Canonical policy labels, ``unbound`` first (it is every comparison's baseline)."""
    labels = [parse_policy(p).label for p in study.numa.policies]
    labels = list(dict.fromkeys(labels))
    if BASELINE not in labels:
        labels.insert(0, BASELINE)
    return [BASELINE] + [x for x in labels if x != BASELINE]


def plan(study: Study, only: list[str] | None = None) -> list[RunSpec]:
    """Every policy once per repeat (a round), in the balanced orders of
    :func:`tibenchlib.runorder.round_design`, so drift spreads over all of them and no policy
    always runs first or after the same one; with two policies or more a pre-period run (repeat
    0, phase ``numa-pre``) of the design's first predecessor comes first, measured, never
    compared."""
    n = study.numa
    labels = [p for p in policies(study) if not only or p in only]
    out: list[RunSpec] = []

    design = round_design(labels, n.repeats, [(BASELINE, p) for p in labels if p != BASELINE])
    if len(labels) > 1:
        # one run of the first predecessor's last cell, the one the first round inherits
        out.append(RunSpec(design.pre, n.workloads[-1], n.threads[-1], 0, 0, PHASE + PRE_SUFFIX))
    for r, in_round in enumerate(design.rounds, start=1):
        for pol in in_round:
            for w in n.workloads:
                for t in n.threads:
                    out.append(RunSpec(pol, w, t, r, len(out), phase=PHASE))
    return out


def compared_plan(study: Study, only: list[str] | None = None) -> list[RunSpec]:
    """The runs of :func:`plan` that enter comparisons: all but the pre-period's."""
    return [s for s in plan(study, only) if s.phase == PHASE]


def _phase_study(study: Study, label: str) -> Study:
    """The study seen by one policy block: numa durations, the policy as the arm's binding."""
    arm = Arm(label=label, cpu_binding=None if label == BASELINE else label)
    return study.model_copy(update={"arms": [arm], "duration_s": study.numa.duration_s})


def _binding_row(study: Study, label: str, pid: int | None, res: dict | None, **extra) -> dict:
    return {
        "study": study.study,
        "policy": label,
        "pid": pid,
        "verified": None if res is None else bool(res.get("verified")),
        "cpus_allowed": None if res is None else str(res.get("cpus_allowed")),
        "mem_policy": None if res is None else str(res.get("mem_policy")),
        "detail": None if res is None else str(res.get("detail")),
        "at": time.time(),
        **{k: json.dumps(v, default=str) for k, v in extra.items()},
    }


def run_numa_phase(
    context: RunContext, *, arms: list[str] | None = None, redo: bool = False
) -> pd.DataFrame:
    """Run (or resume) the NUMA cells and return one row per policy × workload × threads."""
    study, store, yes = context.study, context.store, context.yes
    only = [parse_policy(a).label for a in arms] if arms else None
    embedded = study.target.kind == "embedded"
    if not embedded and not only:
        raise ValueError(
            "on a real cluster tibench cannot re-bind the servers: re-deploy with the policy, "
            "then run one policy at a time: tibench run PARAMS --phase numa --arm node:0"
        )
    for label in only or policies(study):
        if embedded:
            check_policy(parse_policy(label))  # before any run: a clear error, nothing wasted
    specs = pre_only_first(plan(study, only), store.run_status(study.study), redo=redo)
    several = len({s.arm for s in specs}) > 1

    def open_block(spec: RunSpec, _previous):
        ctx = open_arm(_phase_study(study, spec.arm), spec.arm, yes=yes, store=store)
        if ctx.server:
            pid = ctx.server.pid
            try:
                res = verify_binding(pid, parse_policy(spec.arm))
            except BindingError as e:
                store.append("bindings", [_binding_row(study, spec.arm, pid, e.result)])
                raise
            store.append("bindings", [_binding_row(study, spec.arm, pid, res)])
        ensure_ready(ctx)
        if ctx.server:
            _numastat(store, study, ctx, "before")
        return ctx

    def close_block(ctx) -> None:
        if ctx.server:
            _numastat(store, study, ctx, "after")

    context.run_plan(
        specs,
        open=open_block,
        run=lambda ctx, spec: run_one(ctx, spec, duration_s=study.numa.duration_s),
        close=close_block,
        redo=redo,
        requires=("sysbench",),
        desc="numa",
        describe=describe,
        round_of=round_of if several else None,
    )
    return analyze(study, store)


def _numastat(store: Store, study: Study, ctx, when: str) -> None:
    df, warns = numastat_per_node(ctx.server.pid)
    store.append(
        "numa_memory",
        [
            {
                "study": study.study,
                "policy": ctx.arm.label,
                "when": when,
                "at": time.time(),
                "table_json": df.to_json(orient="records"),
                "warnings_json": json.dumps(warns),
            }
        ],
    )


def analyze(study: Study, store: Store | None = None) -> pd.DataFrame:
    """Each policy against ``unbound`` per workload × threads, from the catalog."""
    store = store or Store.for_study(study)
    runs = store.runs(study.study, phase="numa")
    if not len(runs):
        return pd.DataFrame(columns=ROW_COLUMNS)
    iv = store.intervals(study.study, list(runs["run_key"]))
    dips = pd.Series(dtype=float)
    if len(iv):
        stab = stability_by_run(iv, by="run_key")
        dips = stab.set_index("run_key")["n_events"]
    runs = runs.assign(dips=runs["run_key"].map(dips).fillna(0))
    binds = store.read("bindings", study.study)
    verified = (
        binds.groupby("policy")["verified"].agg(
            lambda s: None if s.isna().all() else bool(s.fillna(False).all())
        )
        if len(binds)
        else pd.Series(dtype=object)
    )
    out = []
    labels = [p for p in policies(study) if p in set(runs["arm"])]
    for cand in labels:
        if cand == BASELINE or BASELINE not in labels:
            continue
        tps = compare_arms(runs, BASELINE, cand, metric="tps", delta=study.compare.delta_pct / 100)
        p95 = compare_arms(
            runs, BASELINE, cand, metric="lat_p95_ms", delta=study.compare.delta_pct / 100
        )
        p95 = p95.set_index(["workload", "threads"])
        for r in tps.itertuples():
            key = (r.workload, r.threads)
            q = p95.loc[key] if key in p95.index else None
            cell = runs[(runs["workload"] == r.workload) & (runs["threads"] == r.threads)]
            vb, vc = verified.get(BASELINE), verified.get(cand)
            out.append(
                {
                    "workload": r.workload,
                    "threads": int(r.threads),
                    "baseline_policy": BASELINE,
                    "candidate_policy": cand,
                    "n_baseline": r.n_baseline,
                    "n_candidate": r.n_candidate,
                    "baseline_tps": r.baseline_tps,
                    "candidate_tps": r.candidate_tps,
                    "improvement_pct": r.improvement_pct,
                    "ci_low_pct": r.ci_low_pct,
                    "ci_high_pct": r.ci_high_pct,
                    "p_value": r.p_value,
                    "p_adjusted": r.p_adjusted,
                    "verdict": r.verdict,
                    "baseline_p95_ms": None if q is None else q["baseline_value"],
                    "candidate_p95_ms": None if q is None else q["candidate_value"],
                    "p95_improvement_pct": None if q is None else q["improvement_pct"],
                    "p95_ci_low_pct": None if q is None else q["ci_low_pct"],
                    "p95_ci_high_pct": None if q is None else q["ci_high_pct"],
                    "p95_verdict": None if q is None else q["verdict"],
                    "binding_verified": None if vb is None or vc is None else bool(vb and vc),
                    "dips_baseline": int(cell.loc[cell["arm"] == BASELINE, "dips"].sum()),
                    "dips_candidate": int(cell.loc[cell["arm"] == cand, "dips"].sum()),
                    "warnings": r.warnings,
                }
            )
    return pd.DataFrame(out, columns=ROW_COLUMNS)


def cpu_counts(sys_root: str = "/sys") -> tuple[int, int]:
    """(CPUs of the largest NUMA node, CPUs of the host); one node of all CPUs when unknown."""
    nodes = numa_nodes(sys_root)
    host = os.cpu_count() or 1
    if not len(nodes):
        return host, host
    sizes = [len(c) for c in nodes["cpus"]]
    return max(sizes), sum(sizes) or host


def memory_table(store: Store, study: Study) -> pd.DataFrame:
    """``numastat -p`` totals per node, before and after each policy block, one row each."""
    mem = store.read("numa_memory", study.study)
    rows = []
    for r in mem.itertuples():
        table = pd.DataFrame(json.loads(r.table_json))
        row = {"policy": r.policy, "when": r.when, "warnings": json.loads(r.warnings_json)}
        if len(table) and {"category", "node", "mb"} <= set(table.columns):
            total = table[table["category"] == "Total"]
            row.update({f"MB node {n}": v for n, v in zip(total["node"], total["mb"], strict=True)})
        rows.append(row)
    return pd.DataFrame(rows)


def cpu_table(store: Store, study: Study) -> pd.DataFrame:
    """:func:`~tibenchlib.stability.cpu_vs_throughput` per policy, from the catalog."""
    runs = store.runs(study.study, phase="numa")
    samples = store.read("samples", study.study, run_key=list(runs["run_key"]))
    node_cpus, host_cpus = cpu_counts()
    out = [
        cpu_vs_throughput(
            samples, g, node_cpus=node_cpus, host_cpus=host_cpus, run_col="run_key"
        ).assign(policy=pol)
        for pol, g in runs.groupby("arm", sort=False)
    ]
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame()


# -- dry run -----------------------------------------------------------------------------------
#: Rough seconds to restart the embedded server under another policy and check its binding
#: (the demo's 6 runs of 2 s, alternating policies, took 22 s on a loaded 2-core host).
RESTART_S = 1.5


def estimate(study: Study, arms: list[str] | None = None) -> dict:
    """Dry-run entry of the numa phase: its runs (no warm-up, no cooldown) and server restarts."""
    only = [parse_policy(a).label for a in arms] if arms else None
    specs = plan(study, only)
    bare = study.model_copy(update={"warmup_s": 0, "cooldown_s": 0})
    est = runs_estimate(bare, specs, duration_s=study.numa.duration_s)
    restarts = openings(specs) if study.target.kind == "embedded" else 0
    return {
        "phase": "numa",
        "runs": len(specs),
        "eta_s": est["eta_s"] + restarts * RESTART_S,
        "disk_bytes": est["disk_bytes"],
        "note": f"{len(specs)} runs of {study.numa.duration_s} s over "
        f"{len(set(s.arm for s in specs))} policies",
    }


class Numa(Phase):
    name = "numa"
    notebook = "04_numa.ipynb"
    summary = "CPU/NUMA binding policies against unbound"
    titles = {"en": "NUMA", "zh": "NUMA 绑定"}
    own_arms = True
    runs_given_arms = True
    arms = staticmethod(policies)
    estimate = staticmethod(estimate)
    plan_runs = staticmethod(compared_plan)
    measure_runs = staticmethod(run_numa_phase)

    def results(self, study, store, arms) -> pd.DataFrame:
        return analyze(study, store)


NUMA = Numa()
