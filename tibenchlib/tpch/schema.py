"""The TPC-H schema in the MySQL/TiDB dialect, with primary keys only, and the expected row counts.

Report 002 ran its queries on tables with primary keys and no secondary indexes; tibench does the
same so that local results and the report's compare like for like. Column types follow the TPC-H
specification (clause 1.4): identifiers are integers (``o_orderkey`` and ``l_orderkey`` BIGINT,
since they pass 2^31 above SF 300), money and quantities DECIMAL(15,2), dates DATE.
"""

from __future__ import annotations

import math

#: Load order: referenced tables first (there are no foreign keys, but it reads naturally).
TABLES: tuple[str, ...] = (
    "region",
    "nation",
    "supplier",
    "customer",
    "part",
    "partsupp",
    "orders",
    "lineitem",
)

_COLUMNS: dict[str, list[tuple[str, str]]] = {
    "region": [
        ("r_regionkey", "INT NOT NULL"),
        ("r_name", "CHAR(25) NOT NULL"),
        ("r_comment", "VARCHAR(152)"),
    ],
    "nation": [
        ("n_nationkey", "INT NOT NULL"),
        ("n_name", "CHAR(25) NOT NULL"),
        ("n_regionkey", "INT NOT NULL"),
        ("n_comment", "VARCHAR(152)"),
    ],
    "supplier": [
        ("s_suppkey", "INT NOT NULL"),
        ("s_name", "CHAR(25) NOT NULL"),
        ("s_address", "VARCHAR(40) NOT NULL"),
        ("s_nationkey", "INT NOT NULL"),
        ("s_phone", "CHAR(15) NOT NULL"),
        ("s_acctbal", "DECIMAL(15,2) NOT NULL"),
        ("s_comment", "VARCHAR(101) NOT NULL"),
    ],
    "customer": [
        ("c_custkey", "INT NOT NULL"),
        ("c_name", "VARCHAR(25) NOT NULL"),
        ("c_address", "VARCHAR(40) NOT NULL"),
        ("c_nationkey", "INT NOT NULL"),
        ("c_phone", "CHAR(15) NOT NULL"),
        ("c_acctbal", "DECIMAL(15,2) NOT NULL"),
        ("c_mktsegment", "CHAR(10) NOT NULL"),
        ("c_comment", "VARCHAR(117) NOT NULL"),
    ],
    "part": [
        ("p_partkey", "INT NOT NULL"),
        ("p_name", "VARCHAR(55) NOT NULL"),
        ("p_mfgr", "CHAR(25) NOT NULL"),
        ("p_brand", "CHAR(10) NOT NULL"),
        ("p_type", "VARCHAR(25) NOT NULL"),
        ("p_size", "INT NOT NULL"),
        ("p_container", "CHAR(10) NOT NULL"),
        ("p_retailprice", "DECIMAL(15,2) NOT NULL"),
        ("p_comment", "VARCHAR(23) NOT NULL"),
    ],
    "partsupp": [
        ("ps_partkey", "INT NOT NULL"),
        ("ps_suppkey", "INT NOT NULL"),
        ("ps_availqty", "INT NOT NULL"),
        ("ps_supplycost", "DECIMAL(15,2) NOT NULL"),
        ("ps_comment", "VARCHAR(199) NOT NULL"),
    ],
    "orders": [
        ("o_orderkey", "BIGINT NOT NULL"),
        ("o_custkey", "INT NOT NULL"),
        ("o_orderstatus", "CHAR(1) NOT NULL"),
        ("o_totalprice", "DECIMAL(15,2) NOT NULL"),
        ("o_orderdate", "DATE NOT NULL"),
        ("o_orderpriority", "CHAR(15) NOT NULL"),
        ("o_clerk", "CHAR(15) NOT NULL"),
        ("o_shippriority", "INT NOT NULL"),
        ("o_comment", "VARCHAR(79) NOT NULL"),
    ],
    "lineitem": [
        ("l_orderkey", "BIGINT NOT NULL"),
        ("l_partkey", "INT NOT NULL"),
        ("l_suppkey", "INT NOT NULL"),
        ("l_linenumber", "INT NOT NULL"),
        ("l_quantity", "DECIMAL(15,2) NOT NULL"),
        ("l_extendedprice", "DECIMAL(15,2) NOT NULL"),
        ("l_discount", "DECIMAL(15,2) NOT NULL"),
        ("l_tax", "DECIMAL(15,2) NOT NULL"),
        ("l_returnflag", "CHAR(1) NOT NULL"),
        ("l_linestatus", "CHAR(1) NOT NULL"),
        ("l_shipdate", "DATE NOT NULL"),
        ("l_commitdate", "DATE NOT NULL"),
        ("l_receiptdate", "DATE NOT NULL"),
        ("l_shipinstruct", "CHAR(25) NOT NULL"),
        ("l_shipmode", "CHAR(10) NOT NULL"),
        ("l_comment", "VARCHAR(44) NOT NULL"),
    ],
}

PRIMARY_KEYS: dict[str, tuple[str, ...]] = {
    "region": ("r_regionkey",),
    "nation": ("n_nationkey",),
    "supplier": ("s_suppkey",),
    "customer": ("c_custkey",),
    "part": ("p_partkey",),
    "partsupp": ("ps_partkey", "ps_suppkey"),
    "orders": ("o_orderkey",),
    "lineitem": ("l_orderkey", "l_linenumber"),
}

#: Rows per unit of scale factor (clause 4.2.5); region and nation are fixed.
ROWS_PER_SF: dict[str, int] = {
    "supplier": 10_000,
    "customer": 150_000,
    "part": 200_000,
    "partsupp": 800_000,
    "orders": 1_500_000,
}
FIXED_ROWS: dict[str, int] = {"region": 5, "nation": 25}


def columns(table: str) -> list[str]:
    """Column names of ``table`` in file order (the order of the generated ``.tbl`` fields)."""
    return [name for name, _ in _COLUMNS[table]]


def create_table_sql(table: str) -> str:
    """``CREATE TABLE`` for one table: its columns and primary key, no other index."""
    cols = ",\n  ".join(f"`{name}` {typ}" for name, typ in _COLUMNS[table])
    pk = ", ".join(f"`{c}`" for c in PRIMARY_KEYS[table])
    return f"CREATE TABLE `{table}` (\n  {cols},\n  PRIMARY KEY ({pk})\n)"


def drop_table_sql(table: str) -> str:
    return f"DROP TABLE IF EXISTS `{table}`"


def expected_rows(table: str, scale_factor: float) -> int | None:
    """Row count fixed by the specification, or ``None`` for lineitem.

    Lineitem has a random 1–7 lines per order, so its count is not a multiple of SF; it is
    checked against the generated files instead (see :mod:`.datagen`). The other SF-scaled
    tables have ``floor(base × SF)`` rows, as dbgen and tpchgen-cli write them.
    """
    if table in FIXED_ROWS:
        return FIXED_ROWS[table]
    if table == "lineitem":
        return None
    # round() first: 0.1 * 10_000 is 1000.0000000000001 in binary floating point.
    return math.floor(round(ROWS_PER_SF[table] * scale_factor, 6))


def analyze_sql(table: str, flavor: str) -> str:
    """Statistics for one table; MariaDB needs ``PERSISTENT FOR ALL`` to collect
    engine-independent statistics (histograms), which its optimizer uses for join order."""
    if flavor == "mariadb":
        return f"ANALYZE TABLE `{table}` PERSISTENT FOR ALL"
    return f"ANALYZE TABLE `{table}`"
