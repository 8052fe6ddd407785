"""Running a phase: :func:`run_phase` runs any phase of :mod:`tibenchlib.registry` the same way.

Under the study's lock it opens one :class:`~tibenchlib.phase.RunContext` (the catalog, opened
once), calls the phase's :meth:`~tibenchlib.phase.Phase.run`, writes its rows to
``data/<study>/results/<phase>.json`` (and ``.csv``: what ``tibench run --json`` prints) and
applies the failed-runs rule (:func:`check_failed_runs`) to the runs the phase measured.
"""

from __future__ import annotations

import logging

import pandas as pd

from . import registry
from .lock import study_lock
from .params import Study
from .phase import RunContext, read_results, write_results

__all__ = [
    "FAILED_SHARE_LIMIT",
    "PhaseFailed",
    "check_failed_runs",
    "failed_runs_summary",
    "read_results",
    "run_phase",
    "write_results",
]

log = logging.getLogger(__name__)

#: A phase fails (:class:`PhaseFailed`) when more than this share of its planned runs failed;
#: below it the failed runs are logged and the phase's results stand on the runs that worked.
FAILED_SHARE_LIMIT = 0.2


class PhaseFailed(RuntimeError):
    """Too many runs of a phase failed; the message says how many, the first error and the
    command that retries them."""


def failed_runs_summary(study: Study, phase: str, runs: pd.DataFrame) -> str | None:
    """One sentence on a phase's failed and degenerate runs, or None when every run was ok."""
    if not len(runs) or "status" not in runs:
        return None
    bad = runs[runs["status"] != "ok"]
    if not len(bad):
        return None
    first = bad.iloc[0]
    params = study._source or "PARAMS.yaml"
    return (
        f"{phase}: {len(bad)} of {len(runs)} runs failed or were degenerate; first: "
        f"{first['run_key']}: {first['error'] or first['status']} (log {first['log_path']}); "
        f"retry them with: tibench run {params} --phase {phase}"
    )


def check_failed_runs(study: Study, phase: str, runs: pd.DataFrame) -> str | None:
    """Log the failed-runs summary, or raise :class:`PhaseFailed` past the limit."""
    msg = failed_runs_summary(study, phase, runs)
    if msg is None:
        return None
    if (runs["status"] != "ok").mean() > FAILED_SHARE_LIMIT:
        raise PhaseFailed(msg)
    log.warning("%s", msg)
    return msg


def run_phase(
    study: Study,
    name: str,
    *,
    yes: bool = False,
    arms: list[str] | None = None,
    redo: bool = False,
    progress: bool = True,
) -> pd.DataFrame:
    """Run phase ``name`` of ``study``: lock, run, write its results, check its failed runs.

    Parameters
    ----------
    study : Study
        The validated study.
    name : str
        A phase of :data:`tibenchlib.registry.NAMES` (else a ``ValueError`` listing them).
    yes : bool
        Destructive steps (dropping and re-creating tables) are allowed.
    arms : list of str, optional
        The arms to run (None: all the phase's arms).
    redo : bool
        Measure again what the catalog already holds.
    progress : bool
        Progress bars (else one line per run).

    Returns
    -------
    pandas.DataFrame
        The phase's result rows, as written to ``results/<phase>.json``.
    """
    phase = registry.get(name)
    # re-entrant: ``tibench run`` holds the same lock around its phases
    with study_lock(study.study):
        ctx = RunContext.open(study, yes=yes, progress=progress, record=phase.measures)
        df = phase.run(ctx, arms=arms, redo=redo)
        write_results(study, name, df)
        if ctx.runs is not None:
            check_failed_runs(study, name, ctx.runs)
    return df
