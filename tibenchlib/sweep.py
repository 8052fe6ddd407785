"""Workload sweeps: sysbench workloads × thread ladder × repeats, resumable.

The sweep phase: its plan (:func:`plan`, arms in a balanced order per round), its estimate for
the dry run, and the callables it hands to :func:`tibenchlib.runloop.run_plan` (open and warm an
arm; one run is :func:`tibenchlib.sysbench.runner.run_one`, which keeps its raw log and exact
command, no password). Running the study again skips runs already in the catalog unless
``redo``; a run cut short by a kill is simply run again.
"""

from __future__ import annotations

import pandas as pd

from .adaptive import cell_decisions, describe_rule, open_cells
from .hosts.runs import check_arm
from .params import WRITE_WORKLOADS, Study
from .phase import Phase, RunContext, Tool
from .record import result_rows
from .runorder import PRE_SUFFIX, run_order
from .stats import summarize_cells
from .sysbench.prepare import ensure_ready, prepare
from .sysbench.runner import RunSpec, describe, run_one, warmup_runs
from .target import open_arm

#: Seconds a run costs beyond its configured duration (connect, thread start, report).
RUN_OVERHEAD_S = 1.0
#: The phase's name, the ``phase`` of its compared runs in the catalog.
SWEEP_PHASE = "sweep"


def plan(
    study: Study,
    *,
    arms: list[str] | None = None,
    workloads: list[str] | None = None,
    threads: list[int] | None = None,
    repeats: int | None = None,
) -> list[RunSpec]:
    """The runs of a sweep, in execution order.

    ``interleaved`` (default) runs the whole ladder once per repeat (a round), every arm in each
    round, so slow drift in the machine spreads over every thread count and arm instead of
    biasing one; the arms' order changes from round to round
    (:func:`tibenchlib.runorder.round_design`: balanced for position and for the arm that ran
    just before, across rounds too), so no arm always runs first or always follows the same
    arm, and the rounds can serve as blocks for a paired comparison. With two arms or more it
    begins with a pre-period (repeat 0, phase ``sweep-pre``): one run of the design's first
    predecessor, measured and recorded, never compared. ``random`` shuffles the arms' order
    and the workloads × threads within each round (seeded). ``sequential`` is the reports'
    shell loop: each cell's repeats back to back.
    """
    order = run_order(
        study,
        arms or [a.label for a in study.arms],
        workloads or list(study.workloads),
        lambda w: threads or study.threads_for(w),
        repeats or study.max_rounds,
        pre=True,
        pairs=list(study.compare.pairs) or None,
    )
    pre = SWEEP_PHASE + PRE_SUFFIX
    return [
        RunSpec(a, w, t, r, i, phase=SWEEP_PHASE if r else pre)
        for i, (a, w, t, r) in enumerate(order)
    ]


def compared(specs: list[RunSpec]) -> list[RunSpec]:
    """The runs of ``specs`` that enter comparisons: all but the pre-period's."""
    return [s for s in specs if s.phase == SWEEP_PHASE]


def pre_only_first(specs: list, done: dict[str, str], *, redo: bool = False) -> list:
    """``specs`` without a pre-period run that would come too late: its place is before the
    first round, so once a compared run of the plan is in the catalog (``done``: run key to
    status; a study resumed, or measured before it had one) and the pre-period run is not, it
    is left out rather than run after them. ``redo`` re-measures the whole plan."""
    if redo:
        return specs
    begun = any(s.run_key in done for s in specs if not s.phase.endswith(PRE_SUFFIX))
    return [
        s for s in specs if not (begun and s.phase.endswith(PRE_SUFFIX) and s.run_key not in done)
    ]


def round_of(spec: RunSpec) -> int:
    """A run's round for the run loop, which re-opens the arm at each round's start."""
    return spec.repeat


def adaptive_round(
    study: Study, runs: pd.DataFrame, round_no: int, *, arms: list[str] | None = None
) -> list[RunSpec]:
    """Round ``round_no`` of a sweep with adaptive repeats: the runs of the cells still open.

    The decision is recomputed from the catalog's sweep runs of the earlier rounds
    (:func:`tibenchlib.adaptive.cell_decisions`), so a sweep resumed after a kill plans the same
    rounds; the runs keep the order and ``seq`` they have in the full plan of ``max`` rounds.
    """
    full = [s for s in compared(plan(study, arms=arms)) if s.repeat == round_no]
    if round_no > study.adaptive.min:
        cells = list(dict.fromkeys((s.workload, s.threads) for s in full))
        dec = cell_decisions(study, runs, before_round=round_no, arms=arms, cells=cells)
        wanted = set(open_cells(dec))
        full = [s for s in full if (s.workload, s.threads) in wanted]
    return full


def adaptive_specs(
    study: Study, runs: pd.DataFrame, *, arms: list[str] | None = None
) -> list[RunSpec]:
    """The runs of a sweep with adaptive repeats as far as they are decided: the ``min`` rounds
    of stage 1, every later round the catalog has begun, and the next one (what ``tibench runs``
    counts as planned)."""
    have = set(runs["run_key"]) if len(runs) else set()
    out: list[RunSpec] = []
    for r in range(1, study.max_rounds + 1):
        todo = adaptive_round(study, runs, r, arms=arms)
        out += todo
        begun = any(s.run_key in have for s in todo)
        if r >= study.adaptive.min and (not todo or not begun):
            break
    return out


def openings(specs: list[RunSpec]) -> int:
    """How many times the run loop opens an arm for ``specs``: at the first run, at every arm
    switch and, with several arms, at every round's start."""
    several = len({s.arm for s in specs}) > 1
    return sum(
        1
        for i, s in enumerate(specs)
        if i == 0
        or s.arm != specs[i - 1].arm
        or (several and round_of(s) != round_of(specs[i - 1]))
    )


def estimate(study: Study, specs: list[RunSpec], duration_s: float | None = None) -> dict:
    """ETA and disk estimate of a plan (logs: ~130 bytes a second, histogram ~40 KB a run)."""
    d = duration_s or study.duration_s
    lead = study.clients_job.start_lead_s if study.clients_job else 0  # pods' start barrier
    secs = len(specs) * (d + RUN_OVERHEAD_S + lead) + max(len(specs) - 1, 0) * study.cooldown_s
    if study.warmup_s:
        # unrecorded warm-up runs per workload each time an arm is (re)opened: at least two
        # short ones (they must agree), one of 20 s or more (MSER-5 can judge it alone)
        per = 1 if study.warmup_s >= 20 else min(2, study.warmup_max_runs)
        secs += openings(specs) * len(study.workloads) * per * (study.warmup_s + RUN_OVERHEAD_S)
    per_log = 130 * d / study.report_interval_s + (40_000 if study.histogram else 2_000)
    return {"runs": len(specs), "eta_s": secs, "disk_bytes": int(len(specs) * per_log)}


def phase_estimate(study: Study, arms: list[str] | None = None) -> dict:
    """Dry-run entry of the sweep phase, its planned runs under ``specs`` (with adaptive
    repeats: the most it may run, the least in ``runs_min``/``eta_min_s``)."""
    specs = plan(study, arms=arms)
    est = estimate(study, specs)
    if study.adaptive is not None:
        least = estimate(study, plan(study, arms=arms, repeats=study.adaptive.min))
        return {
            "runs": len(specs),
            "eta_s": est["eta_s"],
            "disk_bytes": est["disk_bytes"],
            "runs_min": least["runs"],
            "eta_min_s": least["eta_s"],
            "note": f"{least['runs']}–{len(specs)} runs of {study.duration_s} s, cooldown "
            f"{study.cooldown_s:g} s, adaptive repeats",
            "rule": describe_rule(study),
            "specs": specs,
        }
    return {
        "runs": len(specs),
        "eta_s": est["eta_s"],
        "disk_bytes": est["disk_bytes"],
        "note": f"{len(specs)} runs of {study.duration_s} s, cooldown {study.cooldown_s:g} s",
        "specs": specs,
    }


def sweep(
    context: RunContext, *, arms: list[str] | None = None, redo: bool = False
) -> pd.DataFrame:
    """Run (or resume) the study's sweep in the catalog ``store`` (opened with the study's
    parameters recorded: :meth:`tibenchlib.store.Store.for_study`); returns the catalog's runs
    of the planned cells.

    Runs already in the catalog are skipped, except failed and degenerate ones, which are run
    again (their logs kept as earlier attempts); ``redo`` re-measures every run (the loop:
    :func:`tibenchlib.runloop.run_plan`).
    """
    study, store, yes = context.study, context.store, context.yes
    specs = pre_only_first(plan(study, arms=arms), store.run_status(study.study), redo=redo)
    several = len({s.arm for s in specs}) > 1

    def open_ready(spec: RunSpec, previous):
        # every round re-opens its arms, the same arm as the round before too: what an arm
        # inherits is then balanced by the order's design, never a continuation of one arm
        ctx = open_arm(study, spec.arm, yes=yes, store=store)
        ensure_ready(ctx)
        check_arm(ctx)  # client hosts' pre-flight, before any warm-up or run
        if study.warmup_s:
            warmup_runs(ctx)
        return ctx

    def reprepare(ctx, spec: RunSpec) -> None:
        if study.dataset.reset == "reprepare" and spec.workload in WRITE_WORKLOADS:
            prepare(ctx, force=True, progress=False)

    def measure(todo: list[RunSpec], desc: str) -> None:
        context.run_plan(
            todo,
            open=open_ready,
            run=run_one,
            before_run=reprepare,
            redo=redo,
            cooldown_s=study.cooldown_s,
            requires=("sysbench",),
            desc=desc,
            describe=describe,
            round_of=round_of if several else None,
        )

    if study.adaptive is None:
        measure(specs, f"sweep {study.study}")
    else:
        pre = [s for s in specs if s.phase != SWEEP_PHASE]
        if pre:
            measure(pre, f"sweep {study.study} pre-period")
        specs = []
        for r in range(1, study.max_rounds + 1):
            todo = adaptive_round(study, store.runs(study.study, phase="sweep"), r, arms=arms)
            if not todo:
                break
            specs += todo
            measure(todo, f"sweep {study.study} round {r}")
    df = store.runs(study.study, phase=SWEEP_PHASE)
    keys = {s.run_key for s in compared(specs)}
    return df[df["run_key"].isin(keys)].reset_index(drop=True) if len(df) else df


def sweep_table(runs: pd.DataFrame) -> pd.DataFrame:
    """The reports' table per workload × arm × threads, each figure with its interval.

    Estimator: the mean over repeated runs of sysbench's own per-run figures (TPS, QPS, average
    latency) and of the histogram p95, each with a Student t 95% interval (df = n − 1) on the
    log scale, back-transformed, so no bound is negative; n = 1 gives no interval. Failed and
    degenerate runs are counted (``n_failed``), never averaged.
    """
    keys = ["workload", "arm", "threads"]
    out = None
    for metric in ("tps", "qps", "lat_avg_ms", "lat_p95_ms"):
        if metric not in runs or runs[metric].isna().all():
            continue
        c = summarize_cells(runs, metric=metric)
        cols = {"mean": metric, "ci_low": f"{metric}_ci_low", "ci_high": f"{metric}_ci_high"}
        keep = keys + list(cols)
        if out is None:
            keep += ["n"] + [k for k in ("n_failed", "cv", "warnings") if k in c]
        c = c[keep].rename(columns=cols)
        out = c if out is None else out.merge(c, on=keys, how="outer")
    if out is None:
        return pd.DataFrame(columns=keys)
    return out.sort_values(keys).reset_index(drop=True)


class Sweep(Phase):
    name = "sweep"
    notebook = "02_sweep.ipynb"
    summary = "sysbench workloads × thread ladder × repeats"
    titles = {"en": "Sweep", "zh": "压测"}
    tool = Tool(
        "sysbench",
        {"en": ("events/s (TPS)", "every event"), "zh": ("事件/秒 (TPS)", "全部事件")},
    )

    estimate = staticmethod(phase_estimate)

    def plan(self, study, store) -> list:
        """The planned runs: with adaptive repeats, the rounds decided so far and the next."""
        if study.adaptive is not None:
            return adaptive_specs(study, store.runs(study.study, phase=self.name))
        return compared(plan(study))

    def run(self, ctx: RunContext, *, arms=None, redo=False) -> pd.DataFrame:
        ctx.runs = ctx.measure(sweep, arms=arms, redo=redo)
        return result_rows(ctx.runs)

    def results(self, study, store, arms) -> pd.DataFrame:
        runs = store.runs(study.study, phase=self.name)
        if not len(runs):
            return result_rows(runs)
        keys = {s.run_key for s in plan(study, arms=arms)}
        return result_rows(runs[runs["run_key"].isin(keys)])


SWEEP = Sweep()
