"""The query runner's pure parts: timeouts per flavor, error classes, stream orders."""

from __future__ import annotations

import pymysql
import pytest

from tibenchlib.tpch import execute as E


def test_timeout_per_flavor():
    assert E.wrap_timeout("select 1", "mariadb", 60) == (
        "SET STATEMENT max_statement_time=60 FOR select 1"
    )
    short = E.wrap_timeout("select 1", "mariadb", 0.5)
    assert short.startswith("SET STATEMENT max_statement_time=0.5 ")
    assert E.wrap_timeout("select 1", "tidb", 60) == "select 1"
    assert E.timeout_statements("tidb", 60) == ["SET @@session.max_execution_time = 60000"]
    assert E.timeout_statements("mysql", 1.5) == ["SET @@session.max_execution_time = 1500"]
    assert E.timeout_statements("mariadb", 60) == []
    assert E.timeout_statements("tidb", None) == []
    assert E.wrap_timeout("select 1", "mariadb", None) == "select 1"


def test_kill_statement():
    assert E.kill_statement("tidb", 42) == "KILL TIDB QUERY 42"
    assert E.kill_statement("mariadb", 42) == "KILL QUERY 42"


def test_classify_error():
    mariadb = pymysql.err.OperationalError(
        1969, "Query execution was interrupted (max_statement_time exceeded)"
    )
    tidb = pymysql.err.OperationalError(
        3024, "Query execution was interrupted, maximum statement execution time exceeded"
    )
    killed = pymysql.err.OperationalError(1317, "Query execution was interrupted")
    lost = pymysql.err.OperationalError(2013, "Lost connection to MySQL server during query")
    syntax = pymysql.err.ProgrammingError(1064, "You have an error in your SQL syntax")
    assert E.classify_error(mariadb) == ("timeout", False)
    assert E.classify_error(tidb) == ("timeout", False)
    assert E.classify_error(killed) == ("error", False)  # someone else's KILL
    assert E.classify_error(killed, watchdog_fired=True) == ("timeout", False)
    assert E.classify_error(lost) == ("error", True)
    assert E.classify_error(lost, watchdog_fired=True) == ("timeout", True)
    assert E.classify_error(syntax) == ("error", False)


def test_stream_orders_are_permutations_and_reproducible():
    qs = list(range(1, 23))
    assert E.stream_order(qs, 0) == qs
    one = E.stream_order(qs, 1)
    assert sorted(one) == qs and one != qs
    assert E.stream_order(qs, 1) == one
    assert E.stream_order(qs, 2) != one
    assert E.stream_order(qs, 1, seed=2) != one


def test_view_names_differ_per_stream():
    assert len({E.view_name(s) for s in range(8)}) == 8


def test_bad_mode_is_refused():
    with pytest.raises(ValueError, match="mode"):
        E.run_queries(lambda: None, [1], mode="batch")
