"""The study's phases, in one place: name, function, notebook, arms and dry-run estimate.

``params.PHASES`` (what a study file may list), ``phases.PHASE_FUNCS`` (what ``tibench run
--in-process`` and the notebooks call), ``notebook.PHASE_NOTEBOOKS`` (what papermill executes),
the notebooks' session (arm labels, results read back from the catalog), the dry run and
``tibench status`` (:mod:`tibenchlib.studyplan`) and the report's titles all read
:data:`PHASES`; a new phase is one entry here, its module(s) and its notebook: no other module
branches on a phase's name for these decisions.

Functions are named ``"module:attribute"`` and imported when first used, so this module imports
nothing of the library (``params`` can read the names without a cycle).

Every phase function takes the study and exactly the keywords :data:`PHASE_KEYWORDS`, all
explicit: a mistyped keyword raises ``TypeError`` instead of being dropped.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass

#: The keywords every phase function takes (besides the study), and nothing else.
PHASE_KEYWORDS = ("yes", "arms", "redo", "progress")


def _resolve(ref: str) -> Callable:
    module, _, attr = ref.partition(":")
    return getattr(importlib.import_module(module), attr)


@dataclass(frozen=True)
class Phase:
    """One phase of a study."""

    name: str
    #: ``module:function`` run by ``tibench run`` and the notebook: ``f(study, *, yes, arms,
    #: redo, progress) -> DataFrame``
    function_ref: str
    #: the phase's notebook, in ``notebooks/``
    notebook: str
    #: ``module:function``: ``f(study, arms) -> dict`` with ``runs, eta_s, disk_bytes, note``
    estimate_ref: str
    #: ``module:function``: ``f(study) -> list[str]``, the arm labels the phase knows (None: the
    #: study's arms)
    arms_ref: str | None = None
    #: one line for ``tibench run --help`` and the README
    summary: str = ""
    #: ``module:function``: ``f(study, store, arms) -> bool``, the phase's results are in the
    #: catalog (:func:`tibenchlib.notebook.phase_stored`)
    stored_ref: str = ""
    #: ``module:function``: ``f(study, store, arms) -> DataFrame``, the phase's rows read back
    #: from the catalog (:func:`tibenchlib.notebook.stored_results`)
    results_ref: str = ""
    #: ``module:function``: ``f(study, store, add)``, the phase's rows of
    #: :func:`tibenchlib.studyplan.progress` (``add(phase, arm, unit, planned, done, failed)``)
    progress_ref: str = ""
    #: ``module:function``: ``f(study, store) -> list`` of run specs, the planned runs a
    #: run-counting progress compares with the catalog (None: the phase counts otherwise)
    plan_ref: str | None = None
    #: the notebook's session passes only the arms the notebook's ``arms`` parameter names (None:
    #: all the phase's own arms) rather than the study's selected arms
    runs_given_arms: bool = False
    #: the phase's title in the report, in en and zh
    title_en: str = ""
    title_zh: str = ""

    @property
    def refs(self) -> dict[str, str]:
        """Every ``module:function`` the entry names, by field."""
        names = ("function_ref", "estimate_ref", "arms_ref", "stored_ref", "results_ref")
        names += ("progress_ref", "plan_ref")
        return {n: getattr(self, n) for n in names if getattr(self, n) is not None}

    def stored(self, study, store, arms: list[str]) -> bool:
        return bool(_resolve(self.stored_ref)(study, store, arms))

    def results(self, study, store, arms: list[str]):
        return _resolve(self.results_ref)(study, store, arms)

    def progress(self, study, store, add) -> None:
        _resolve(self.progress_ref)(study, store, add)

    def planned_runs(self, study, store) -> list:
        if self.plan_ref is None:
            raise ValueError(f"phase '{self.name}' has no planned runs")
        return list(_resolve(self.plan_ref)(study, store))

    def title(self, lang: str) -> str:
        return self.title_zh if lang == "zh" else self.title_en

    @property
    def function(self) -> Callable:
        return _resolve(self.function_ref)

    def estimate(self, study, arms: list[str] | None = None) -> dict:
        return {"phase": self.name, **_resolve(self.estimate_ref)(study, arms)}

    def arm_labels(self, study) -> list[str]:
        if self.arms_ref is None:
            return [a.label for a in study.arms]
        return list(_resolve(self.arms_ref)(study))


PHASES: tuple[Phase, ...] = (
    Phase(
        "environment",
        "tibenchlib.phases:environment",
        "00_environment.ipynb",
        "tibenchlib.envcapture:estimate",
        summary="client host and database of every arm",
        stored_ref="tibenchlib.stored:environment_stored",
        results_ref="tibenchlib.stored:environment_results",
        progress_ref="tibenchlib.studyplan:environment_progress",
        title_en="Environment",
        title_zh="测试环境",
    ),
    Phase(
        "prepare",
        "tibenchlib.phases:prepare",
        "01_prepare.ipynb",
        "tibenchlib.sysbench.prepare:estimate",
        summary="sysbench tables prepared, analyzed, warmed up and verified",
        stored_ref="tibenchlib.stored:prepare_stored",
        results_ref="tibenchlib.stored:prepare_results",
        progress_ref="tibenchlib.studyplan:prepare_progress",
        title_en="Prepare",
        title_zh="数据准备",
    ),
    Phase(
        "sweep",
        "tibenchlib.phases:sweep",
        "02_sweep.ipynb",
        "tibenchlib.sweep:phase_estimate",
        summary="sysbench workloads × thread ladder × repeats",
        stored_ref="tibenchlib.stored:sweep_stored",
        results_ref="tibenchlib.stored:sweep_results",
        progress_ref="tibenchlib.studyplan:sweep_progress",
        plan_ref="tibenchlib.studyplan:sweep_specs",
        title_en="Sweep",
        title_zh="压测",
    ),
    Phase(
        "compare",
        "tibenchlib.phases:compare",
        "03_compare.ipynb",
        "tibenchlib.phases:compare_estimate",
        summary="A/B comparison of the sweep's arms",
        stored_ref="tibenchlib.stored:sweep_stored",
        results_ref="tibenchlib.stored:compare_results",
        progress_ref="tibenchlib.studyplan:compare_progress",
        title_en="A/B comparison",
        title_zh="A/B 对比",
    ),
    Phase(
        "numa",
        "tibenchlib.phases:numa",
        "04_numa.ipynb",
        "tibenchlib.numa:estimate",
        arms_ref="tibenchlib.numa:policies",
        summary="CPU/NUMA binding policies against unbound",
        stored_ref="tibenchlib.stored:numa_stored",
        results_ref="tibenchlib.stored:numa_results",
        progress_ref="tibenchlib.studyplan:numa_progress",
        plan_ref="tibenchlib.studyplan:numa_specs",
        runs_given_arms=True,
        title_en="NUMA",
        title_zh="NUMA 绑定",
    ),
    Phase(
        "tpch_scaling",
        "tibenchlib.phases:tpch_scaling",
        "05_tiflash_scaling.ipynb",
        "tibenchlib.tpch.phase:estimate",
        arms_ref="tibenchlib.tpch.phase:arm_labels",
        summary="TPC-H queries over scaling arms",
        stored_ref="tibenchlib.stored:tpch_scaling_stored",
        results_ref="tibenchlib.stored:tpch_scaling_results",
        progress_ref="tibenchlib.studyplan:tpch_scaling_progress",
        runs_given_arms=True,
        title_en="TPC-H scaling",
        title_zh="TPC-H 扩展",
    ),
    Phase(
        "dm",
        "tibenchlib.phases:dm",
        "06_dm_load_tuning.ipynb",
        "tibenchlib.dm.plan:estimate",
        arms_ref="tibenchlib.dm.plan:arm_labels",
        summary="DM load tuning: mydumper/myloader knobs and the sync unit's worker-count",
        stored_ref="tibenchlib.stored:dm_stored",
        results_ref="tibenchlib.stored:dm_results",
        progress_ref="tibenchlib.studyplan:dm_progress",
        plan_ref="tibenchlib.studyplan:dm_specs",
        runs_given_arms=True,
        title_en="DM load tuning",
        title_zh="DM 迁移调优",
    ),
    Phase(
        "ycsb",
        "tibenchlib.phases:ycsb",
        "07_ycsb.ipynb",
        "tibenchlib.ycsb.phase:estimate",
        summary="YCSB workloads × thread ladder × repeats (upstream YCSB or go-ycsb)",
        stored_ref="tibenchlib.stored:ycsb_stored",
        results_ref="tibenchlib.stored:ycsb_results",
        progress_ref="tibenchlib.studyplan:ycsb_progress",
        plan_ref="tibenchlib.studyplan:ycsb_specs",
        title_en="YCSB",
        title_zh="YCSB",
    ),
    Phase(
        "tpcc",
        "tibenchlib.phases:tpcc",
        "08_tpcc.ipynb",
        "tibenchlib.tpcc.phase:estimate",
        arms_ref="tibenchlib.tpcc.phase:arm_labels",
        summary="TPC-C (TPC-C-like on the embedded server): tpmC over threads, wait on/off",
        stored_ref="tibenchlib.stored:tpcc_stored",
        results_ref="tibenchlib.stored:tpcc_results",
        progress_ref="tibenchlib.tpcc.phase:progress",
        title_en="TPC-C",
        title_zh="TPC-C",
    ),
)

NAMES: tuple[str, ...] = tuple(p.name for p in PHASES)
_BY_NAME = {p.name: p for p in PHASES}


def get(name: str) -> Phase:
    """The phase called ``name``; an unknown name is a ``ValueError`` listing the phases."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ValueError(f"unknown phase '{name}' (phases: {', '.join(NAMES)})") from None
