"""The sweep's findings: where throughput levels off and what limits it, per workload × arm.

Both statements read one row of :func:`tibenchlib.diagnose.diagnose` (the diagnosis calls
:func:`tibenchlib.saturation.saturation` once): the saturation finding and the bottleneck
finding therefore cannot contradict each other. Round effects (warm-up, drift) are a finding of
their own, each with its signed interval.
"""

from __future__ import annotations

import pandas as pd

from ..diagnose import LEVEL_PCT, ONE_THREAD_COUNT
from .record import Figure, Finding

#: LEVEL_PCT is decided in the diagnosis, and named here for the findings' readers
__all__ = ["LEVEL_PCT", "sweep_findings", "round_findings"]

EVIDENCE = "sweep: diagnosis table"
_BOUND = {"client_cpu", "server_cpu", "host_cpu", "not_cpu"}


def _n(x) -> int | None:
    return None if x is None or pd.isna(x) else int(x)


def _saturation(r) -> Finding:
    """The saturation finding, read off the diagnosis's one decision (``r.saturation``): the
    finding, ``tibench diagnose`` and the report's table cannot say two things."""
    topic = f"{r.workload} · {r.arm}"
    ev = r.evidence if isinstance(r.evidence, dict) else {}
    step = ev.get("last_step")
    vals = {"workload": r.workload, "arm": r.arm, "n_max": _n(r.n_max), "n_sat": _n(r.n_sat)}
    fig = None
    if step:
        vals["threads_from"] = step["from"]
        fig = Figure(
            step["change_pct"],
            step.get("ci_low_pct"),
            step.get("ci_high_pct"),
            "%",
            _n(r.n_runs),
            "Fieller ratio of mean TPS",
        )
    state = getattr(r, "saturation", None)
    if state == "one_count" or r.reason == ONE_THREAD_COUNT:
        return Finding(
            "sweep", "f_sat_one", vals, None, "inconclusive", "one_thread_count", EVIDENCE, topic
        )
    if state == "not_reached" or r.verdict == "not_saturated":
        return Finding("sweep", "f_sat_rising", vals, fig, "rising", "", EVIDENCE, topic)
    ratio = None
    if r.tps_ratio is not None and not pd.isna(r.tps_ratio):
        # throughput from the saturation point to the top of the ladder, as a change in percent
        ratio = Figure(
            100 * (r.tps_ratio - 1),
            _pct(r.tps_ratio_ci_low),
            _pct(r.tps_ratio_ci_high),
            "%",
            _n(r.n_runs),
            "Fieller ratio of mean TPS",
        )
    if _n(r.n_sat) is None:
        wide = ev.get("n_sat_means")
        if wide is not None and ratio is not None:
            # the 95%-of-peak point of the means, whose gain to the top the interval leaves
            # open: said with that gain, as the diagnosis's warning says it
            vals["threads_from"] = int(wide)
            return Finding("sweep", "f_sat_unclear", vals, ratio, "inconclusive",
                           "last_step_wide", EVIDENCE, topic)  # fmt: skip
        return Finding(
            "sweep", "f_sat_unclear", vals, fig, "inconclusive", "last_step_wide", EVIDENCE, topic
        )
    return Finding("sweep", "f_sat_levels", vals, ratio, "saturated", "", EVIDENCE, topic)


def _pct(x):
    return None if x is None or pd.isna(x) else 100 * (x - 1)


def _bottleneck(r) -> Finding | None:
    topic = f"{r.workload} · {r.arm}"
    vals = {
        "workload": r.workload,
        "arm": r.arm,
        "threads": _n(r.threads_at),
        "resource": r.resource or r.cpu_source or "",
    }
    fig = None
    if r.cpu_demand is not None and not pd.isna(r.cpu_demand):
        fig = Figure(
            100 * r.cpu_demand,
            _scale(r.cpu_demand_ci_low),
            _scale(r.cpu_demand_ci_high),
            "% CPU",
            _n(r.n_runs),
            "geometric mean, t on the log scale",
        )
    if r.verdict in _BOUND:
        return Finding("sweep", f"f_diag_{r.verdict}", vals, fig, "bottleneck", "", EVIDENCE, topic)
    if r.verdict == "not_saturated" or r.reason == ONE_THREAD_COUNT:
        return None  # the saturation finding already says why nothing is limiting yet
    ev = r.evidence if isinstance(r.evidence, dict) else {}
    if _n(r.n_sat) is None and not ev.get("between"):
        return None  # the saturation finding already says the curve is unclear
    reason = "cpu_between" if ev.get("between") else "cpu_unmeasured"
    return Finding(
        "sweep", "f_diag_undetermined", vals, fig, "inconclusive", reason, EVIDENCE, topic
    )


def _scale(x):
    return None if x is None or pd.isna(x) else 100 * x


def sweep_findings(diagnosis: pd.DataFrame) -> list[Finding]:
    """Findings of a sweep from its diagnosis (:func:`tibenchlib.report.diagnosis.study_diagnosis`).

    Parameters
    ----------
    diagnosis
        One row per workload × arm, as :func:`tibenchlib.diagnose.diagnose` returns it.

    Returns
    -------
    list of Finding
        Per workload × arm: the saturation finding (``rising``, ``saturated`` or
        ``inconclusive``), then the bottleneck finding when the curve allows one.
    """
    out: list[Finding] = []
    for r in diagnosis.itertuples():
        out.append(_saturation(r))
        b = _bottleneck(r)
        if b is not None:
            out.append(b)
    return out


def round_findings(effects: pd.DataFrame) -> list[Finding]:
    """Rounds that sit significantly above or below the others (Holm p < 0.05), largest first,
    each with its signed interval (:func:`tibenchlib.rounds.round_effects`)."""
    if effects is None or not len(effects):
        return []
    sig = effects[effects["significant"].astype(bool)]
    sig = sig.reindex(sig["effect_pct"].abs().sort_values(ascending=False).index)
    out = []
    for r in sig.itertuples():
        others = [int(x) for x in effects["round"] if int(x) != int(r.round)]
        fig = Figure(
            r.effect_pct,
            r.ci_low_pct,
            r.ci_high_pct,
            "%",
            int(r.n_runs),
            "OLS on log TPS, cell and round factors",
        )
        vals = {"round": int(r.round), "others": others, "p": float(r.p_adjusted)}
        out.append(
            Finding("sweep", "f_round", vals, fig, "info", "", "sweep: round effects", "rounds")
        )
    return out
