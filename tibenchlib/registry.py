"""The study's phases, in study order: one object each, imported from the phase's own module.

``params.PHASES`` (what a study file may list, from the leaf :mod:`tibenchlib.phasenames`),
``tibench run``, the notebooks' session, the dry run and ``tibench runs``
(:mod:`tibenchlib.studyplan`) and the report's titles all read :data:`PHASES`; a new phase is
one :class:`~tibenchlib.phase.Phase` object in its module, one entry here and its notebook.

The registry sits at the top of the import graph: it imports the phases, and nothing a phase
imports imports it.
"""

from __future__ import annotations

from .compare_phase import COMPARE
from .dm.phase import DM
from .envcapture.phase import ENVIRONMENT
from .numa import NUMA
from .phase import Phase
from .prepare import PREPARE
from .sweep import SWEEP
from .tpcc.phase import TPCC
from .tpch.phase import TPCH_SCALING
from .ycsb.phase import YCSB

PHASES: tuple[Phase, ...] = (
    ENVIRONMENT,
    PREPARE,
    SWEEP,
    COMPARE,
    NUMA,
    TPCH_SCALING,
    DM,
    YCSB,
    TPCC,
)

NAMES: tuple[str, ...] = tuple(p.name for p in PHASES)
_BY_NAME = {p.name: p for p in PHASES}


def get(name: str) -> Phase:
    """The phase called ``name``; an unknown name is a ``ValueError`` listing the phases."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ValueError(f"unknown phase '{name}' (phases: {', '.join(NAMES)})") from None
