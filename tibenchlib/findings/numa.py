"""The NUMA phase's findings: each binding policy against ``unbound``, read like an A/B pair."""

from __future__ import annotations

import pandas as pd

from .compare import compare_findings
from .record import Finding

__all__ = ["numa_findings"]


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
