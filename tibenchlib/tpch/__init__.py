"""TPC-H for tibench: data, the 22 verified queries, execution, TiFlash paths, scaling statistics.

The modules, in the order a phase uses them:

- :mod:`.schema` — tables with primary keys only, expected row counts, ANALYZE per flavor;
- :mod:`.datagen` — ``tpchgen-cli`` into chunked ``.tbl`` files with a manifest, reused when
  it matches;
- :mod:`.load` — parallel ``LOAD DATA LOCAL INFILE``, ANALYZE, row-count verification, reuse
  of a verified data set (also one loaded by ``tiup bench tpch prepare``);
- :mod:`.queries` — the 22 query templates with the specification's validation parameters;
- :mod:`.verify` — answers checked cell by cell against stored reference answer sets;
- :mod:`.execute` — warm-up, repeats, power/throughput streams, per-query timeouts, every
  execution delivered to a callback as it finishes;
- :mod:`.tiflash` — TiFlash replicas, the read-engine session setting, EXPLAIN checks, waiting
  for replicas and for regions to settle after a scale-out;
- :mod:`.scaling` — per-query mean with t interval, improvement with Fieller interval,
  speedup, efficiency, geometric mean and total time; report 002's table.

The functions named like their modules (``load.load``, ``queries.queries``, ``verify.verify``)
are reached through the module, so that ``tpch.load`` stays the module.
"""

from __future__ import annotations

from .datagen import DatagenError, DataSet, generate
from .execute import run_queries
from .load import LoadError, dataset_state
from .queries import QUERY_NUMBERS, Query, query
from .scaling import (
    CLI_COLUMNS,
    cli_rows,
    load_seed002,
    overall_summary,
    query_summary,
    run_elapsed,
    seed002_runs,
)
from .schema import TABLES
from .tiflash import (
    TIFLASH_SESSION,
    TiFlashError,
    check_plans,
    pd_stores_fetcher,
    set_replicas,
    tiflash_store_count,
    wait_for_replicas,
    wait_regions_stable,
)
from .verify import Verification

__all__ = [
    "CLI_COLUMNS",
    "DataSet",
    "DatagenError",
    "LoadError",
    "QUERY_NUMBERS",
    "Query",
    "TABLES",
    "TIFLASH_SESSION",
    "TiFlashError",
    "Verification",
    "check_plans",
    "cli_rows",
    "dataset_state",
    "generate",
    "load_seed002",
    "overall_summary",
    "pd_stores_fetcher",
    "query",
    "query_summary",
    "run_elapsed",
    "run_queries",
    "seed002_runs",
    "set_replicas",
    "tiflash_store_count",
    "wait_for_replicas",
    "wait_regions_stable",
]
