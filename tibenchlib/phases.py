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
from .store import Store

__all__ = [
    "FAILED_SHARE_LIMIT",
    "PhaseFailed",
    "check_failed_runs",
    "failed_runs_summary",
    "failed_runs_verdict",
    "phase_runs",
    "read_results",
    "run_phase",
    "too_many_failed",
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


def too_many_failed(runs: pd.DataFrame) -> bool:
    """Whether more than :data:`FAILED_SHARE_LIMIT` of a phase's ``runs`` (catalog rows with a
    ``status``) failed or were degenerate: the phase's one rule, applied by :func:`run_phase`
    and by the checks of the phase's notebook."""
    if not len(runs) or "status" not in runs:
        return False
    return bool((runs["status"] != "ok").mean() > FAILED_SHARE_LIMIT)


def check_failed_runs(study: Study, phase: str, runs: pd.DataFrame) -> str | None:
    """Log the failed-runs summary, or raise :class:`PhaseFailed` past the limit."""
    msg = failed_runs_summary(study, phase, runs)
    if msg is None:
        return None
    if too_many_failed(runs):
        raise PhaseFailed(msg)
    log.warning("%s", msg)
    return msg


def phase_runs(study: Study, phase: str, store: Store | None = None) -> pd.DataFrame:
    """The catalog's runs of ``phase`` (every arm), the rows the failed-runs rule reads."""
    store = store or Store.for_study(study, record=False)
    return store.runs(study.study, phase=phase)


def failed_runs_verdict(study: Study, phase: str) -> tuple[bool, str | None]:
    """The failed-runs rule on the catalog's runs of ``phase``, for the phase's notebook to
    assert what :func:`run_phase` applies: whether the phase fails (:func:`too_many_failed`)
    and the failed-runs line (:func:`failed_runs_summary`, None when every run was ok)."""
    runs = phase_runs(study, phase)
    return too_many_failed(runs), failed_runs_summary(study, phase, runs)


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
        # a phase that does not hand over its runs is held to the rule on the catalog's
        # (a TPC-H block, a NUMA run that failed counts as much as a sweep run)
        runs = ctx.runs if ctx.runs is not None else phase_runs(study, name, ctx.store)
        check_failed_runs(study, name, runs)
    return df
