"""TiFlash paths without a cluster: the SQL built, replica and plan checks on real outputs."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from tibenchlib.parse.tidb import parse_explain, parse_mysql_tables, parse_tiflash_replica
from tibenchlib.tpch import queries as Q
from tibenchlib.tpch import tiflash as T

FIX = Path(__file__).parent / "fixtures"
TIDB = FIX / "tidb"
EXPLAINS = {
    "explain-analyze-batchcop-tiflash-legacy.txt": ("batchCop", "t1"),
    "explain-cop-tiflash-shuffle-hash-join-legacy.txt": ("cop", "a,b"),
    "explain-mpp-tiflash-runtime-filter-mppversion1.txt": ("mpp", "catalog_sales,date_dim"),
    "explain-mpp-tiflash-tpch-compression-stream-count.txt": ("mpp", "lineitem"),
}


def test_replica_sql():
    assert T.set_replica_sql("lineitem", 1) == "ALTER TABLE `lineitem` SET TIFLASH REPLICA 1"
    assert T.set_replica_sql("orders", 2, "tpch_100") == (
        "ALTER TABLE `tpch_100`.`orders` SET TIFLASH REPLICA 2"
    )
    with pytest.raises(ValueError):
        T.set_replica_sql("orders", -1)
    assert "information_schema.tiflash_replica" in T.replica_status_sql()
    assert T.TIFLASH_SESSION == {"tidb_isolation_read_engines": "tiflash,tidb"}


def test_session_statement_for_read_engines():
    from tibenchlib.tpch._conn import session_sql

    assert session_sql(T.TIFLASH_SESSION) == [
        "SET @@session.tidb_isolation_read_engines = 'tiflash,tidb'"
    ]
    assert session_sql({"join_cache_level": 4, "x": True}) == [
        "SET @@session.join_cache_level = 4",
        "SET @@session.x = ON",
    ]
    with pytest.raises(ValueError):
        session_sql({"a = 1; drop table t; --": 1})


def test_replicas_ready_on_the_real_replica_table():
    status = parse_tiflash_replica((TIDB / "tiflash-replica-select-two-tables.txt").read_text())
    ok, detail = T.replicas_ready(status, 1, ["books", "orders"])
    assert ok, detail
    ok, detail = T.replicas_ready(status, 1, ["books", "orders", "lineitem"])
    assert not ok and "lineitem: no replica" in detail
    ok, detail = T.replicas_ready(status, 2, ["books"])
    assert not ok and "1 replicas, want 2" in detail
    syncing = status.assign(progress=[0.5, 1.0], available=[False, True])
    ok, detail = T.replicas_ready(syncing, 1, ["books", "orders"])
    assert not ok and "books: available=0 progress=0.50" in detail
    assert T.replica_progress(syncing, ["books", "orders"]) == pytest.approx(0.75)


@pytest.mark.parametrize("name", sorted(EXPLAINS))
def test_plan_summary_on_real_plans(name):
    kind, tables = EXPLAINS[name]
    s = T.plan_summary(parse_explain((TIDB / name).read_text()))
    assert s["reads_tiflash"] is True
    assert s["task_kinds"] == kind and s["tiflash_tables"] == tables and s["tikv_tables"] == ""


def test_a_tikv_plan_does_not_read_tiflash():
    text = (TIDB / "explain-cop-tikv-index-range-scan-docs.txt").read_text()
    s = T.plan_summary(parse_explain(text))
    assert s["reads_tiflash"] is False and s["tikv_tables"]


@pytest.mark.parametrize("name", sorted(EXPLAINS))
def test_format_table_round_trips_a_plan(name):
    table = parse_mysql_tables((TIDB / name).read_text(), keep_leading=True)[0]
    text = T.format_table(list(table.columns), table.values.tolist())
    again = parse_explain(text)
    orig = parse_explain((TIDB / name).read_text())
    assert again[["id", "depth", "task", "engine", "table"]].equals(
        orig[["id", "depth", "task", "engine", "table"]]
    )


# ------------------------------------------------------------------ fake DBAPI connections


class FakeCursor:
    def __init__(self, conn):
        self.conn, self.description, self._rows = conn, None, []

    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False

    def execute(self, sql, params=None):
        self.conn.log.append(sql)
        rows, desc = self.conn.respond(sql, params)
        self._rows, self.description = rows, desc

    def fetchall(self):
        return list(self._rows)

    def fetchone(self):
        return self._rows[0]


class FakeConn:
    def __init__(self, respond):
        self.respond, self.log, self.closed = respond, [], False

    def cursor(self):
        return FakeCursor(self)

    def close(self):
        self.closed = True


def test_wait_for_replicas_polls_until_ready():
    progress = iter([0.0, 0.4, 1.0])
    seen = []

    def respond(sql, params):
        if sql == "SELECT DATABASE()":
            return [("tpch",)], [("DATABASE()",)]
        p = next(progress)
        seen.append(params)
        return [("tpch", t, i, 1, "", int(p == 1.0), p) for i, t in enumerate(["orders"])], None

    conn = FakeConn(respond)
    sleeps = []
    status = T.wait_for_replicas(
        lambda: conn, 1, ["orders"], poll_s=5, progress=False, sleep=sleeps.append
    )
    assert status.available.tolist() == [True] and sleeps == [5, 5] and seen == [("tpch",)] * 3
    assert conn.closed


def test_wait_for_replicas_times_out_with_the_status():
    def respond(sql, params):
        if sql == "SELECT DATABASE()":
            return [("tpch",)], None
        return [("tpch", "orders", 1, 1, "", 0, 0.25)], None

    clock = iter(range(0, 1000, 10))
    with pytest.raises(T.TiFlashError, match="orders: available=0 progress=0.25") as e:
        T.wait_for_replicas(
            lambda: FakeConn(respond),
            1,
            ["orders"],
            timeout_s=30,
            progress=False,
            sleep=lambda s: None,
            clock=lambda: next(clock),
        )
    assert e.value.status.progress.tolist() == [0.25]


def test_check_plans_records_engine_and_plan_text():
    fixture = parse_mysql_tables(
        (TIDB / "explain-mpp-tiflash-tpch-compression-stream-count.txt").read_text(),
        keep_leading=True,
    )[0]
    cols = [(c,) for c in fixture.columns]

    def respond(sql, params):
        if sql.startswith("EXPLAIN"):
            return fixture.values.tolist(), cols
        return [], None

    conn = FakeConn(respond)
    out = T.check_plans(lambda: conn, [Q.query(1), Q.query(15, view="revenue_s0")])
    assert out.reads_tiflash.tolist() == [True, True]
    assert out.task_kinds.tolist() == ["mpp", "mpp"]
    assert "mpp[tiflash]" in out.plan[0]
    assert conn.log[0] == "SET @@session.tidb_isolation_read_engines = 'tiflash,tidb'"
    # Q15: stale view dropped, view created, explained, dropped again.
    q15 = [s for s in conn.log if "revenue_s0" in s]
    assert q15[0].startswith("drop view if exists") and q15[1].startswith("create view")
    assert q15[2].startswith("EXPLAIN") and q15[-1] == "drop view revenue_s0"


def test_check_plans_require_raises_for_a_tikv_plan():
    fixture = parse_mysql_tables(
        (TIDB / "explain-cop-tikv-index-range-scan-docs.txt").read_text(), keep_leading=True
    )[0]

    def respond(sql, params):
        if sql.startswith("EXPLAIN"):
            return fixture.values.tolist(), [(c,) for c in fixture.columns]
        return [], None

    with pytest.raises(T.TiFlashError, match="Q6"):
        T.check_plans(lambda: FakeConn(respond), [Q.query(6)], require=True)


def _stores(tiflash_regions: list[int]) -> dict:
    """The real PD v8.1.0 stores response, with extra TiFlash stores / region counts set."""
    base = json.loads(
        (
            FIX / "tidb-cluster" / "pd-api-v1-stores-v8.1.0-tikv-tiflash-tidb-operator-test.json"
        ).read_text()
    )
    tikv = [s for s in base["stores"] if not s["store"].get("labels")]
    flash = next(s for s in base["stores"] if s["store"].get("labels"))
    stores = list(tikv)
    for i, n in enumerate(tiflash_regions):
        s = copy.deepcopy(flash)
        s["store"]["id"] = 1000 + i
        s["status"]["region_count"] = n
        stores.append(s)
    return {"count": len(stores), "stores": stores}


def test_tiflash_region_counts_on_the_real_pd_response():
    from tibenchlib.parse.tidb import parse_pd_stores

    raw = FIX / "tidb-cluster" / "pd-api-v1-stores-v8.1.0-tikv-tiflash-tidb-operator-test.json"
    counts = T.tiflash_region_counts(parse_pd_stores(raw.read_text()))
    assert list(counts.values()) == [0]


def test_wait_regions_stable_after_a_scale_out():
    polls = iter(
        [
            _stores([60, 60, 60]),
            _stores([50, 45, 40, 5]),
            _stores([40, 40, 40, 30]),
            _stores([38, 38, 38, 36]),
            _stores([38, 38, 38, 36]),
            _stores([38, 38, 38, 36]),
        ]
    )
    hist = T.wait_regions_stable(
        lambda: next(polls),
        expected_stores=4,
        stable_polls=3,
        poll_s=1,
        sleep=lambda s: None,
        progress=False,
    )
    assert hist.poll.max() == 5
    assert hist[hist.poll == 5].region_count.tolist() == [38, 38, 38, 36]


def test_wait_regions_stable_times_out():
    clock = iter(range(0, 10_000, 100))
    with pytest.raises(T.TiFlashError, match="stores 3, expected 4"):
        T.wait_regions_stable(
            lambda: _stores([60, 60, 60]),
            expected_stores=4,
            timeout_s=500,
            sleep=lambda s: None,
            clock=lambda: next(clock),
            progress=False,
        )


def test_store_count_sql():
    assert T.tiflash_store_count_sql() == (
        "SELECT COUNT(*) FROM information_schema.cluster_info WHERE TYPE = 'tiflash'"
    )
