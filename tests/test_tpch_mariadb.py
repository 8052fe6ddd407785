"""TPC-H at SF 0.01 on the session's private MariaDB: load, counts, all 22 answers, timeouts,
errors, streams, session settings and a deliberately altered query."""

from __future__ import annotations

import dataclasses

import pytest

from tibenchlib.tpch import datagen, load
from tibenchlib.tpch import queries as Q
from tibenchlib.tpch.execute import COLUMNS, run_queries

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tpch_engine(mariadb):
    info = mariadb.conninfo()
    admin = info.engine()
    with admin.connect() as c:
        c.exec_driver_sql("CREATE DATABASE IF NOT EXISTS tpch_test")
    admin.dispose()
    eng = dataclasses.replace(info, database="tpch_test").engine()
    yield eng
    eng.dispose()


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return datagen.generate(0.01, tmp_path_factory.mktemp("tpch") / "sf0.01", progress=False)


@pytest.fixture(scope="module")
def loaded(tpch_engine, dataset):
    return load.load(tpch_engine, dataset, progress=False, force=True)


def test_generated_files(dataset):
    assert dataset.rows["lineitem"] == 60_175
    assert dataset.rows["orders"] == 15_000 and dataset.rows["region"] == 5
    again = datagen.generate(0.01, dataset.directory, progress=False)
    assert again.reused and again.rows == dataset.rows


def test_load_and_row_counts(loaded, tpch_engine, dataset):
    assert (loaded.status == "ok").all()
    assert set(loaded.step) >= {"create", "load", "load_total", "analyze", "verify"}
    assert loaded[loaded.step == "load"].rows.sum() == sum(dataset.rows.values())
    state = load.dataset_state(tpch_engine, 0.01, dataset.rows["lineitem"])
    assert state.ok.all()
    assert dict(zip(state.table, state.rows, strict=True)) == {
        "region": 5,
        "nation": 25,
        "supplier": 100,
        "customer": 1500,
        "part": 2000,
        "partsupp": 8000,
        "orders": 15000,
        "lineitem": 60175,
    }


def test_a_verified_data_set_is_reused(loaded, tpch_engine, dataset):
    again = load.load(
        tpch_engine,
        dataset,
        progress=False,
        guard=lambda what: pytest.fail(f"would drop tables: {what}"),
    )
    assert again.step.tolist() == ["reuse"]


def test_all_22_answers_verify(loaded, tpch_engine):
    seen = []
    df = run_queries(
        tpch_engine, repeats=1, timeout_s=60, on_result=seen.append, arm="local", progress=False
    )
    assert list(df.columns) == COLUMNS
    assert len(df) == 44 and len(seen) == 44  # warm-up pass + one repeat
    assert seen[0]["warmup"] and seen[0]["query"] == 1 and seen[-1]["query"] == 22
    measured = df[~df.warmup]
    assert (measured.status == "ok").all(), measured[measured.status != "ok"]
    bad = measured[measured.verified != True]  # noqa: E712
    assert bad.empty, bad[["query", "verify_detail"]].to_string()
    assert measured.set_index("query").loc[13, "rows"] == 33


def test_an_altered_query_fails_verification(loaded, tpch_engine):
    q1 = Q.query(1)
    altered = dataclasses.replace(q1, sql=q1.sql.replace("interval 90 day", "interval 120 day"))
    q13 = Q.query(13)
    altered13 = dataclasses.replace(q13, sql=q13.sql.replace("not like", "like"))
    df = run_queries(
        tpch_engine, [altered, altered13, Q.query(6)], repeats=1, warmup=False, progress=False
    )
    got = df.set_index("query")
    assert got.loc[1, "verified"] == False  # noqa: E712
    assert "column" in got.loc[1, "verify_detail"] and "row" in got.loc[1, "verify_detail"]
    assert got.loc[13, "verified"] == False  # noqa: E712
    assert got.loc[6, "verified"] == True  # noqa: E712


def test_timeout_and_error_are_recorded_and_the_run_goes_on(loaded, tpch_engine):
    broken = Q.Query(98, "broken", "select no_such_column from lineitem", validation=False)
    df = run_queries(
        tpch_engine, [13, broken, 6], repeats=1, warmup=False, timeout_s=0.2, progress=False
    )
    got = df.set_index("query")
    assert got.loc[13, "status"] == "timeout" and "1969" in got.loc[13, "error"]
    assert got.loc[98, "status"] == "error" and "no_such_column" in got.loc[98, "error"]
    assert got.loc[6, "status"] == "ok" and got.loc[6, "verified"] == True  # noqa: E712


def test_throughput_streams_with_their_own_q15_view(loaded, tpch_engine):
    df = run_queries(
        tpch_engine,
        [15, 6, 1],
        repeats=2,
        mode="throughput",
        streams=2,
        warmup=False,
        progress=False,
    )
    assert len(df) == 2 * 2 * 3
    assert sorted(df.stream.unique()) == [0, 1]
    assert (df.status == "ok").all() and (df.verified == True).all()  # noqa: E712
    with tpch_engine.connect() as c:
        views = c.exec_driver_sql(
            "SELECT COUNT(*) FROM information_schema.views WHERE table_schema = DATABASE()"
        ).scalar_one()
    assert views == 0


def test_session_settings_apply_to_every_connection(loaded, tpch_engine):
    probe = Q.Query(
        97, "probe", "select 1 from dual where @@join_cache_level = 4", validation=False
    )
    df = run_queries(
        tpch_engine,
        [probe],
        repeats=1,
        warmup=False,
        progress=False,
        session_settings={"join_cache_level": 4},
    )
    assert df.rows.tolist() == [1]
    df = run_queries(tpch_engine, [probe], repeats=1, warmup=False, progress=False)
    assert df.rows.tolist() == [0]


def test_prepare_reuses_loaded_tables_without_files(loaded, tpch_engine, tmp_path):
    # As after 'tiup bench tpch prepare': no generated files, counts checked against SF 0.01.
    steps = load.prepare(tpch_engine, 0.01, directory=tmp_path / "none", progress=False)
    assert steps.step.tolist() == ["reuse"]
    assert not (tmp_path / "none").exists()
