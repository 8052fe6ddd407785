"""Parsers: text in, tidy tables out. Pure functions, no I/O beyond reading a path given."""

from .files import NotALog
from .gotpc import (
    TpccResult,
    parse_tpcc_file,
    parse_tpcc_output,
    parse_tpch_output,
    tpcc_series,
    tpch_summary,
)
from .sysbench import (
    HISTOGRAM_BUCKET_RATIO,
    INTERVAL_COLUMNS,
    SysbenchResult,
    histogram_percentiles,
    parse_sysbench,
    parse_sysbench_file,
)
from .tidb import (
    parse_cluster_hardware,
    parse_cluster_info,
    parse_cluster_systeminfo,
    parse_explain,
    parse_pd_stores,
    parse_show_config,
    parse_show_variables,
    parse_tiflash_replica,
    plan_reads_tiflash,
)
from .ycsb import YcsbResult, parse_ycsb, parse_ycsb_file

__all__ = [
    "NotALog",
    "HISTOGRAM_BUCKET_RATIO",
    "INTERVAL_COLUMNS",
    "SysbenchResult",
    "TpccResult",
    "YcsbResult",
    "histogram_percentiles",
    "parse_cluster_hardware",
    "parse_cluster_info",
    "parse_cluster_systeminfo",
    "parse_explain",
    "parse_pd_stores",
    "parse_show_config",
    "parse_show_variables",
    "parse_sysbench",
    "parse_sysbench_file",
    "parse_tiflash_replica",
    "parse_tpcc_file",
    "parse_tpcc_output",
    "parse_tpch_output",
    "parse_ycsb",
    "parse_ycsb_file",
    "plan_reads_tiflash",
    "tpcc_series",
    "tpch_summary",
]
