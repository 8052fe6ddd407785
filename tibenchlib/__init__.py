"""tibench: a reproducible, statistically honest benchmark study of TiDB and MySQL-compatible
databases, run as papermill-parameterized notebooks over this library.

The public API is listed here once; modules are named for what they hold (params, server, store,
run, parse, prepare, sweep, stats, compare, plots...).
"""

from . import phases, plots
from .params import ParamsError, Study, load_study
from .server import EmbeddedServer, embedded
from .store import Store
from .sweep import plan, sweep_table

__version__ = "0.1.0"


def summarize_cells(*args, **kwargs):
    """Per-cell mean with a Student t interval: see :func:`tibenchlib.stats.summarize_cells`."""
    from .stats import summarize_cells as f

    return f(*args, **kwargs)


def environment_tables(*args, **kwargs):
    """The reports' environment tables: see :func:`tibenchlib.envcapture.environment_tables`."""
    from .envcapture import environment_tables as f

    return f(*args, **kwargs)


__all__ = [
    "EmbeddedServer",
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
