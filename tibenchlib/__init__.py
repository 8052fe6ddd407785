"""tibench: a reproducible, statistically honest benchmark study of TiDB and MySQL-compatible
databases, run as papermill-parameterized notebooks over this library.

The public API is listed here once; modules are named for what they hold (params, server, store,
run, parse, prepare, sweep, stats, compare, plots...).
"""

from . import compare, envcapture, phases, plots, saturation, stats, steady
from .compare import export, load_summary_csv, report_table
from .envcapture import capture_database, capture_host, config_diff, environment_tables
from .params import ParamsError, Study, load_study
from .saturation import usl_fit
from .server import EmbeddedServer, embedded
from .stats import (
    VERDICTS,
    compare_arms,
    fieller_ratio,
    holm,
    summarize_cells,
    summarize_improvement,
    t_interval,
    welch_p,
)
from .steady import mser5, steady_state_table, steady_state_tps
from .store import Store
from .sweep import plan, sweep_table

__version__ = "0.1.0"


__all__ = [
    "VERDICTS",
    "export",
    "load_summary_csv",
    "mser5",
    "report_table",
    "steady_state_table",
    "steady_state_tps",
    "summarize_improvement",
    "usl_fit",
    "EmbeddedServer",
    "capture_database",
    "capture_host",
    "compare",
    "compare_arms",
    "config_diff",
    "envcapture",
    "fieller_ratio",
    "holm",
    "saturation",
    "stats",
    "steady",
    "t_interval",
    "welch_p",
    "ParamsError",
    "Store",
    "Study",
    "embedded",
    "environment_tables",
    "load_study",
    "phases",
    "plan",
    "plots",
    "summarize_cells",
    "sweep_table",
]
