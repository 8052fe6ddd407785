"""tibench: a reproducible, statistically honest benchmark study of TiDB and MySQL-compatible
databases, run as papermill-parameterized notebooks over this library.

The public API is listed here once; modules are named for what they hold (params, server, store,
tools, parse, sysbench, sweep, stats, compare, report...). Names are imported on first use, so the
command line starts without loading pandas, SciPy and matplotlib it may not need.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

__version__ = "0.1.0"

#: public name → module that defines it ("" for a submodule of that name)
_API = {
    # parameters, servers, catalog
    "ParamsError": "params",
    "Study": "params",
    "load_study": "params",
    "EmbeddedServer": "server",
    "embedded": "server",
    "Store": "store",
    # phases and sweeps
    "phases": "",
    "plan": "sweep",
    "sweep_table": "sweep",
    # environment
    "envcapture": "",
    "capture_database": "envcapture",
    "capture_host": "envcapture",
    "config_diff": "envcapture",
    "environment_tables": "envcapture",
    # statistics
    "stats": "",
    "VERDICTS": "stats",
    "compare_arms": "stats",
    "fieller_ratio": "stats",
    "holm": "stats",
    "paired_ratio": "stats",
    "summarize_cells": "stats",
    "summarize_improvement": "stats",
    "t_interval": "stats",
    "welch_p": "stats",
    "rounds": "",
    "round_effects": "rounds",
    "round_notes": "rounds",
    "warmup": "",
    "warmup_summary": "warmup",
    "warmup_table": "warmup",
    "steady": "",
    "mser5": "steady",
    "steady_state_table": "steady",
    "steady_state_tps": "steady",
    "saturation": "",
    "usl_fit": "saturation",
    "adaptive": "",
    "stopping_rule": "adaptive",
    # comparison tables and plots
    "compare": "",
    "export": "report.comparison",
    "load_summary_csv": "compare",
    "report_table": "report.comparison",
    "plots": "report.plots",
    # the seeds' published tables recomputed; the HTML report of a study
    "published": "",
    "build_report": "report.html",
    # NUMA, TPC-H
    "binding": "",
    "numa": "",
    "stability": "",
    "tpch": "",
    "ycsb": "",
    # TPC-C and several clients per run
    "tpcc": "",
    "multiclient": "",
    "clients": "",
    # bottleneck diagnosis of a sweep
    "diagnose": "",
    "cpu_per_run": "diagnose",
}
__all__ = sorted(_API)


def __getattr__(name: str):
    if name not in _API:
        raise AttributeError(f"module 'tibenchlib' has no attribute {name!r}")
    mod = importlib.import_module(f".{_API[name] or name}", __name__)
    value = mod if mod.__name__.rsplit(".", 1)[-1] == name else getattr(mod, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_API))


if TYPE_CHECKING:  # for type checkers and IDEs: the same names, eagerly
    from . import (
        binding,
        clients,
        compare,
        diagnose,
        envcapture,
        multiclient,
        numa,
        phases,
        published,
        rounds,
        saturation,
        stability,
        stats,
        steady,
        tpcc,
        tpch,
        warmup,
        ycsb,
    )
    from .compare import load_summary_csv
    from .diagnose import cpu_per_run
    from .envcapture import capture_database, capture_host, config_diff, environment_tables
    from .params import ParamsError, Study, load_study
    from .report import plots
    from .report.comparison import export, report_table
    from .report.html import build_report
    from .rounds import round_effects, round_notes
    from .saturation import usl_fit
    from .server import EmbeddedServer, embedded
    from .stats import (
        VERDICTS,
        compare_arms,
        fieller_ratio,
        holm,
        paired_ratio,
        summarize_cells,
        summarize_improvement,
        t_interval,
        welch_p,
    )
    from .steady import mser5, steady_state_table, steady_state_tps
    from .store import Store
    from .sweep import plan, sweep_table
    from .warmup import warmup_summary, warmup_table
