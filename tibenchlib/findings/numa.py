"""The NUMA phase's findings: each binding policy against ``unbound``, read like an A/B pair,
with what the host lets a policy show (:func:`numa_on_host`)."""

from __future__ import annotations

import dataclasses

import pandas as pd

from ..cpulist import parse_cpulist
from . import caveats as C
from .compare import compare_findings
from .record import Finding

__all__ = ["numa_findings", "numa_on_host"]


def numa_findings(rows: pd.DataFrame, delta_pct: float = 2.0) -> list[Finding]:
    """Findings from :func:`tibenchlib.numa.analyze` rows (policy vs ``unbound`` per workload
    and thread count), with the same claims and wording rules as the A/B comparison."""
    if rows is None or not len(rows):
        return []
    d = rows.rename(columns={"baseline_policy": "baseline", "candidate_policy": "candidate"})
    d = d.assign(method="Fieller")
    return [
        Finding(
            "numa",
            f.key,
            f.values,
            f.figure,
            f.verdict,
            f.reason,
            f"numa: {f.values['cand']} / {f.values['base']}",
            f.topic,
        )
        for f in compare_findings(d, delta_pct)
    ]


def _count(cpus: str | None) -> int | None:
    try:
        return len(parse_cpulist(cpus)) if cpus else None
    except ValueError:
        return None


def numa_on_host(
    found: list[Finding],
    nodes: int | None,
    host_cpus: int | None,
    cpus_seen: dict[str, str] | None = None,
) -> list[Finding]:
    """The NUMA findings with what the host lets each policy show.

    A ``cpus:`` policy carries :func:`~tibenchlib.findings.caveats.numa_pinning` (the CPUs it
    took away); on a one-node host (``nodes == 1``) a ``node:``/``interleave:`` policy carries
    :func:`~tibenchlib.findings.caveats.numa_node_on_one_node`, and a better/worse verdict
    becomes ``info``: binding has nothing to show there, so the difference is a measure (fewer
    CPUs, or the binding tool), never a verdict on binding. ``cpus_seen``: the CPU list each
    policy's server was seen bound to (the ``bindings`` table), by policy.
    """
    one_node = nodes == 1
    seen = cpus_seen or {}
    out = []
    for f in found:
        pol = str(f.values.get("cand", ""))
        cav = None
        if pol.startswith("cpus:"):
            cpus = seen.get(pol) or pol.split(":", 1)[1]
            cav = C.numa_pinning(pol, cpus, _count(cpus), host_cpus, one_node)
        elif one_node and pol != "unbound":
            cav = C.numa_node_on_one_node(pol)
        verdict = "info" if one_node and f.verdict in ("better", "worse") else f.verdict
        have = {c.key for c in f.caveats}
        extra = (cav,) if cav is not None and cav.key not in have else ()
        out.append(dataclasses.replace(f, verdict=verdict, caveats=(*f.caveats, *extra)))
    return out
