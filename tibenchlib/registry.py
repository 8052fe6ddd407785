"""The study's phases, in one place: name, function, notebook, arms and dry-run estimate.

``params.PHASES`` (what a study file may list), ``phases.PHASE_FUNCS`` (what ``tibench run
--in-process`` and the notebooks call), ``notebook.PHASE_NOTEBOOKS`` (what papermill executes)
and the dry run (:mod:`tibenchlib.studyplan`) all read :data:`PHASES`; a new phase is one entry
here, its function in :mod:`tibenchlib.phases` and its notebook.

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
    ),
    Phase(
        "prepare",
        "tibenchlib.phases:prepare",
        "01_prepare.ipynb",
        "tibenchlib.sysbench.prepare:estimate",
        summary="sysbench tables prepared, analyzed, warmed up and verified",
    ),
    Phase(
        "sweep",
        "tibenchlib.phases:sweep",
        "02_sweep.ipynb",
        "tibenchlib.sweep:phase_estimate",
        summary="sysbench workloads × thread ladder × repeats",
    ),
    Phase(
        "compare",
        "tibenchlib.phases:compare",
        "03_compare.ipynb",
        "tibenchlib.phases:compare_estimate",
        summary="A/B comparison of the sweep's arms",
    ),
    Phase(
        "numa",
        "tibenchlib.phases:numa",
        "04_numa.ipynb",
        "tibenchlib.numa:estimate",
        arms_ref="tibenchlib.numa:policies",
        summary="CPU/NUMA binding policies against unbound",
    ),
    Phase(
        "tpch_scaling",
        "tibenchlib.phases:tpch_scaling",
        "05_tiflash_scaling.ipynb",
        "tibenchlib.tpch.phase:estimate",
        arms_ref="tibenchlib.tpch.phase:arm_labels",
        summary="TPC-H queries over scaling arms",
    ),
    Phase(
        "dm",
        "tibenchlib.phases:dm",
        "06_dm_load_tuning.ipynb",
        "tibenchlib.dm.plan:estimate",
        arms_ref="tibenchlib.dm.plan:arm_labels",
        summary="DM load tuning: mydumper/myloader knobs and the sync unit's worker-count",
    ),
    Phase(
        "ycsb",
        "tibenchlib.phases:ycsb",
        "07_ycsb.ipynb",
        "tibenchlib.ycsb.phase:estimate",
        summary="YCSB workloads × thread ladder × repeats (upstream YCSB or go-ycsb)",
    ),
    Phase(
        "tpcc",
        "tibenchlib.phases:tpcc",
        "08_tpcc.ipynb",
        "tibenchlib.tpcc.phase:estimate",
        arms_ref="tibenchlib.tpcc.phase:arm_labels",
        summary="TPC-C (TPC-C-like on the embedded server): tpmC over threads, wait on/off",
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
