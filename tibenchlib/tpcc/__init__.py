"""TPC-C: a TPC-C-like sysbench Lua driver for any MySQL-compatible server, go-tpc on a cluster,
and the specification's consistency checks.

TPC-C-like and not audited: the Lua driver follows the TPC-C specification's schema, population,
five transactions and mix, but has no terminals, keying or think times, and its results are
not TPC-C results.
"""

from .consistency import CONDITIONS, check_consistency
from .runner import (
    SCRIPT,
    Scale,
    SysbenchTpccRun,
    cleanup_sysbench_tpcc,
    gotpc_command,
    orders_count,
    parse_driver_counts,
    prepare_sysbench_tpcc,
    run_gotpc,
    run_sysbench_tpcc,
    sysbench_tpcc_command,
)

__all__ = [
    "CONDITIONS",
    "SCRIPT",
    "Scale",
    "SysbenchTpccRun",
    "check_consistency",
    "cleanup_sysbench_tpcc",
    "gotpc_command",
    "orders_count",
    "parse_driver_counts",
    "prepare_sysbench_tpcc",
    "run_gotpc",
    "run_sysbench_tpcc",
    "sysbench_tpcc_command",
]
