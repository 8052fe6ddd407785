"""What a phase is: one object per phase, and the run context a phase runs in.

A phase of a study (environment, prepare, sweep, ...) is one :class:`Phase` object living in the
phase's own module or package (``sweep.SWEEP``, ``tpch.phase.TPCH_SCALING``...);
:mod:`tibenchlib.registry` imports them in study order. Everything else asks the object: its
notebook, its title, its arms, its dry-run estimate, its planned runs, what it stored and its
rows read back from the catalog. :func:`tibenchlib.phases.run_phase` runs any of them the same
way: study lock, :meth:`Phase.run` in one :class:`RunContext`, results written, failed runs
checked.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from . import paths
from .params import Study
from .record import RunRecord
from .runloop import Spec, run_plan
from .store import Store

#: ``add(phase, arm, unit, planned, done, failed)``: one row of ``tibench runs``
#: (:func:`tibenchlib.studyplan.progress`).
AddRow = Callable[[str, str, str, "int | None", int, int], None]


@dataclass(frozen=True)
class Tool:
    """How the report's across-tools table (:mod:`tibenchlib.report.tools`) shows a phase whose
    runs are one tool's throughput over a thread ladder."""

    #: the tool's name in the table
    name: str
    #: per language: (unit of the throughput, what the latency is of)
    units: dict[str, tuple[str, str]]


@dataclass
class RunContext:
    """What one run of a phase shares, opened once: the study, its catalog and private folder,
    and how the run was asked for (``yes``: destructive steps allowed; ``progress``: bars)."""

    study: Study
    store: Store
    private_dir: Path
    yes: bool = False
    progress: bool = True
    #: the catalog runs the phase measured, set by :meth:`Phase.run` when the phase counts runs;
    #: the failed-runs rule (:func:`tibenchlib.phases.check_failed_runs`) reads them
    runs: pd.DataFrame | None = field(default=None, repr=False)

    @classmethod
    def open(
        cls,
        study: Study,
        *,
        yes: bool = False,
        progress: bool = True,
        record: bool = True,
        store: Store | None = None,
    ) -> RunContext:
        """Open the study's catalog once (recording its parameters when ``record``), unless
        ``store`` is given."""
        store = store or Store.for_study(study, record=record)
        return cls(study, store, paths.private_dir(study.study), yes=yes, progress=progress)

    def measure(self, run: Callable[..., pd.DataFrame], *, arms, redo: bool) -> pd.DataFrame:
        """``run(context, arms=, redo=)``, a phase's ``run_*_phase`` function, called in this
        context."""
        return run(self, arms=arms, redo=redo)

    def run_plan(self, specs: Sequence[Spec], *, redo: bool, **how) -> list[RunRecord]:
        """:func:`tibenchlib.runloop.run_plan` of ``specs`` with this context's study, catalog,
        ``yes`` and ``progress``; ``how``: the phase's ``open``, ``run`` and the loop's other
        options (``progress`` given there wins)."""
        how.setdefault("progress", self.progress)
        return run_plan(self.study, specs, store=self.store, yes=self.yes, redo=redo, **how)


class Phase:
    """One phase of a study. Subclasses set the class attributes and implement :meth:`run`,
    :meth:`estimate`, :meth:`stored` and :meth:`results`; the rest has defaults."""

    #: the name ``tibench run --phase`` and the study file's ``phases`` use
    name: str = ""
    #: the phase's notebook, in ``notebooks/``
    notebook: str = ""
    #: one line for ``tibench run --help`` and the README
    summary: str = ""
    #: the phase's title in the report: ``{"en": ..., "zh": ...}``
    titles: dict[str, str] = {}
    #: the phase knows its own arms (NUMA policies, TPC-H arms...) rather than the study's
    own_arms: bool = False
    #: the notebook's session passes only the arms its ``arms`` parameter names (None: all the
    #: phase's own arms) rather than the study's selected arms
    runs_given_arms: bool = False
    #: the phase measures or writes (its study parameters are recorded in the catalog)
    measures: bool = True
    #: the phase's runs are one tool's throughput over a thread ladder (None: they are not)
    tool: Tool | None = None
    #: the phase module's ``plan(study)``, set with ``staticmethod``: the runs :meth:`plan`
    #: returns (None: the phase counts no planned runs, or overrides :meth:`plan`)
    plan_runs: Callable[[Study], list] | None = None
    #: the phase module's ``run_*_phase(context, arms=, redo=)``, set
    #: with ``staticmethod``: what :meth:`run` measures with (None: the phase overrides it)
    measure_runs: Callable[..., pd.DataFrame] | None = None

    def __repr__(self) -> str:
        return f"<phase {self.name}>"

    def title(self, lang: str) -> str:
        """The phase's title in ``lang`` (``en`` or ``zh``)."""
        return self.titles["zh" if lang == "zh" else "en"]

    def arms(self, study: Study) -> list[str]:
        """The arm labels the phase runs (by default the study's arms)."""
        return [a.label for a in study.arms]

    def embedded_servers(self, study: Study) -> list[str]:
        """The embedded servers the phase measures on, by name (a run leases them all): the
        embedded server when an arm's target is it."""
        embedded = study.is_embedded() or any(study.is_embedded(a) for a in study.arms)
        return ["embedded"] if embedded else []

    def estimate(self, study: Study, arms: list[str] | None = None) -> dict:
        """Dry-run entry: ``runs, eta_s, disk_bytes, note`` (and the sweep's ``specs``)."""
        raise NotImplementedError

    def plan(self, study: Study, store: Store | None) -> list | None:
        """The planned run specs (``run_key``, ``arm``), or None when the phase does not count
        runs: by default :attr:`plan_runs`'s."""
        return None if self.plan_runs is None else self.plan_runs(study)

    def run(self, ctx: RunContext, *, arms: list[str] | None = None, redo: bool = False):
        """Do the phase's work in ``ctx``; returns the result rows (a DataFrame). By default
        :attr:`measure_runs` measures them (:meth:`measure_counting`)."""
        if self.measure_runs is None:
            raise NotImplementedError(f"phase '{self.name}' has nothing to run")
        return self.measure_counting(ctx, self.measure_runs, arms=arms, redo=redo)

    def stored(self, study: Study, store: Store, arms: list[str]) -> bool:
        """Whether the catalog (or the phase's result file) holds the phase's results: by
        default its runs in the catalog, of one of ``arms`` unless the phase has its own arms
        (the study's arm labels then name none of them)."""
        return self.has_runs(study, store, None if self.own_arms else arms)

    def results(self, study: Study, store: Store, arms: list[str]) -> pd.DataFrame:
        """The rows :meth:`run` returns, read back from the catalog (no server)."""
        raise NotImplementedError

    def measure_counting(self, ctx: RunContext, run, *, arms, redo: bool) -> pd.DataFrame:
        """:meth:`RunContext.measure`, then the catalog's runs of the phase in ``ctx.runs``
        for the failed-runs rule; returns what ``run`` returned."""
        out = ctx.measure(run, arms=arms, redo=redo)
        ctx.runs = ctx.store.runs(ctx.study.study, phase=self.name)
        return out

    def has_runs(self, study: Study, store: Store, arms: list[str] | None = None) -> bool:
        """Whether the catalog holds runs of the phase (of one of ``arms`` when given)."""
        runs = store.runs(study.study, phase=self.name)
        return bool(len(runs)) and (arms is None or bool(runs["arm"].isin(arms).any()))

    def progress(self, study: Study, store: Store, add: AddRow) -> None:
        """The phase's rows of ``tibench runs``: by default its planned runs per arm against
        the catalog's."""
        specs = self.plan(study, store)
        if specs is None:
            raise NotImplementedError(f"phase '{self.name}' has no planned runs to count")
        runs = store.runs(study.study, phase=self.name)
        status = dict(zip(runs["run_key"], runs["status"], strict=True)) if len(runs) else {}
        for a in dict.fromkeys(s.arm for s in specs):
            keys = [s.run_key for s in specs if s.arm == a]
            done = sum(status.get(k) == "ok" for k in keys)
            failed = sum(k in status and status[k] != "ok" for k in keys)
            add(self.name, a, "runs", len(keys), done, failed)

    def cell_workload(self, runs: pd.DataFrame) -> pd.Series:
        """The workload that makes a cell of the phase's ``runs`` (catalog rows): by default
        their ``workload``."""
        return runs["workload"]


# -- result files ------------------------------------------------------------------------------
def write_results(study: Study | str, phase: str, df: pd.DataFrame) -> Path:
    """Write a phase's rows as JSON (records, nulls for missing) and CSV."""
    name = study if isinstance(study, str) else study.study
    p = paths.phase_results(name, phase)
    p.parent.mkdir(parents=True, exist_ok=True)
    records = json.loads(df.replace({np.nan: None}).to_json(orient="records", default_handler=str))
    p.write_text(json.dumps(records, indent=1, ensure_ascii=False))
    df.to_csv(paths.phase_results(name, phase, "csv"), index=False)
    return p


def read_results(study: Study | str, phase: str) -> list[dict]:
    """A phase's rows as :func:`write_results` wrote them."""
    p = paths.phase_results(study if isinstance(study, str) else study.study, phase)
    if not p.exists():
        raise FileNotFoundError(f"{p}: phase '{phase}' has not produced results")
    return json.loads(p.read_text())
