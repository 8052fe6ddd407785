"""YCSB on MySQL-compatible targets: tibench's JDBC binding for the upstream YCSB, and go-ycsb.

:mod:`.build` builds the binding with Maven on first use; :mod:`.runner` creates the table,
loads and verifies it, and runs workloads (several clients together with :func:`run_together`);
:mod:`.hdr` reads and merges YCSB's HdrHistogram logs; :mod:`.phase` is the ``ycsb`` phase.
Parsing lives in :mod:`tibenchlib.parse.ycsb`.
"""

from .build import BuildError, build_binding, ycsb_home
from .runner import (
    Workload,
    YcsbError,
    YcsbRun,
    choose_tool,
    create_table,
    load,
    row_count,
    run,
    run_together,
)

__all__ = [
    "BuildError",
    "Workload",
    "YcsbError",
    "YcsbRun",
    "build_binding",
    "choose_tool",
    "create_table",
    "load",
    "row_count",
    "run",
    "run_together",
    "ycsb_home",
]
