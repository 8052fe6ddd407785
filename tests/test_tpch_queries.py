"""TPC-H schema and query templates: DDL with primary keys only, counts, parameters, Q15's view."""

from __future__ import annotations

import re

import pytest

from tibenchlib.tpch import queries as Q
from tibenchlib.tpch import schema


def test_ddl_has_primary_keys_and_no_other_index():
    for t in schema.TABLES:
        ddl = schema.create_table_sql(t)
        assert ddl.count("PRIMARY KEY") == 1
        assert not re.search(r"\b(UNIQUE|INDEX|KEY\s+`)", ddl.replace("PRIMARY KEY", ""))
    assert "PRIMARY KEY (`l_orderkey`, `l_linenumber`)" in schema.create_table_sql("lineitem")
    assert "`o_orderkey` BIGINT" in schema.create_table_sql("orders")


def test_expected_rows():
    assert schema.expected_rows("region", 100) == 5
    assert schema.expected_rows("nation", 0.01) == 25
    assert schema.expected_rows("supplier", 0.1) == 1000
    assert schema.expected_rows("customer", 0.01) == 1500
    assert schema.expected_rows("partsupp", 0.1) == 80_000
    assert schema.expected_rows("orders", 100) == 150_000_000
    assert schema.expected_rows("lineitem", 1) is None


def test_analyze_sql_per_flavor():
    assert schema.analyze_sql("lineitem", "mariadb").endswith("PERSISTENT FOR ALL")
    assert schema.analyze_sql("lineitem", "tidb") == "ANALYZE TABLE `lineitem`"


def test_all_22_queries_load_with_validation_values():
    qs = Q.queries()
    assert [q.number for q in qs] == list(range(1, 23))
    for q in qs:
        assert q.validation
        assert "{" not in q.sql and "}" not in q.sql, q.name
        assert q.title
    assert "interval 90 day" in Q.query(1).sql
    assert Q.validation_params(2) == {"SIZE": "15", "TYPE": "BRASS", "REGION": "EUROPE"}
    assert "'%BRASS'" in Q.query(2).sql
    assert Q.validation_params(11)["FRACTION"] == "0.0001"
    assert "('13', '31', '23', '29', '30', '18', '17')" in Q.query(22).sql
    assert Q.query(21).sql.rstrip().endswith("limit 100")


def test_parameter_override_clears_validation_flag():
    q = Q.query(1, {"DELTA": 60})
    assert "interval 60 day" in q.sql and not q.validation
    assert Q.query(1, {"DELTA": "90"}).validation
    with pytest.raises(ValueError, match="no parameter"):
        Q.query(1, {"DELTAX": 1})
    with pytest.raises(ValueError, match="contains"):
        Q.query(3, {"SEGMENT": "x'; drop table lineitem; --"})


def test_q15_view_is_named_per_stream_and_dropped():
    q = Q.query(15, view="revenue_s3")
    assert len(q.setup) == 1 and len(q.teardown) == 1
    assert q.setup[0].startswith("create view revenue_s3 (supplier_no, total_revenue)")
    assert "from\n    supplier,\n    revenue_s3" in q.sql
    assert q.teardown == ("drop view revenue_s3",)
    assert Q.with_view(q, "revenue_s1").teardown == ("drop view revenue_s1",)
    assert Q.with_view(Q.query(1), "x") == Q.query(1)
    with pytest.raises(ValueError):
        Q.query(15, view="a b")
    # Overrides survive a view rename.
    renamed = Q.with_view(Q.query(15, {"DATE": "1997-01-01"}, view="v0"), "v9")
    assert "1997-01-01" in renamed.setup[0] and not renamed.validation


def test_only_q15_has_several_statements():
    for q in Q.queries():
        assert bool(q.setup) == (q.number == 15)
        assert ";" not in q.sql


def test_check_counts():
    from tibenchlib.tpch.load import check_counts

    good = {
        "region": 5,
        "nation": 25,
        "supplier": 1000,
        "customer": 15000,
        "part": 20000,
        "partsupp": 80000,
        "orders": 150000,
        "lineitem": 600572,
    }
    assert check_counts(good, 0.1).ok.all()
    bad = check_counts({**good, "lineitem": 600571}, 0.1)
    assert bad.set_index("table").loc["lineitem", "detail"] == "600571 rows, 600572 expected"
    assert not check_counts({**good, "orders": None}, 0.1).set_index("table").loc["orders", "ok"]
    # An SF without a known lineitem count: lines per order must be plausible (1-7, mean 4).
    sf2 = {k: (v if k in ("region", "nation") else v * 20) for k, v in good.items()}
    state = check_counts(sf2, 2).set_index("table")
    assert state.ok.all() and "lines/order" in state.loc["lineitem", "detail"]
    assert not check_counts({**sf2, "lineitem": 3_000_000}, 2).ok.all()
    assert check_counts(good, 0.1, lineitem_rows=600_000).ok.sum() == 7


def test_benchmark_params_scale_q11_fraction():
    p = Q.benchmark_params(100)
    assert p == {11: {"FRACTION": "1e-06"}}
    q = Q.queries([11], p)[0]
    assert "* 1e-06" in q.sql and not q.validation
    assert Q.queries([11], Q.benchmark_params(1))[0].validation
