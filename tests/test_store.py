"""The results catalog: round trip, atomic replace, written as runs arrive, clear errors."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from tibenchlib.store import Store


@pytest.fixture
def store(tmp_path):
    return Store(f"sqlite:///{tmp_path / 'sub' / 'results.sqlite'}")


def _run(key, tps, status="ok"):
    return {
        "study": "s",
        "run_key": key,
        "arm": "a",
        "workload": "oltp_point_select",
        "threads": 4,
        "repeat": 1,
        "seq": 0,
        "status": status,
        "tps": tps,
        "warnings_json": json.dumps(["w"]),
        "lat_p95_ms": float("nan"),
    }


def test_run_round_trip_and_replace(store):
    iv = pd.DataFrame({"t": [1.0, 2.0], "tps": [10.0, 12.0], "lat_ms": [1.1, 1.2]})
    store.record_run(_run("a/x/t4/r1", 11.0), iv)
    df = store.runs("s")
    assert df.loc[0, "tps"] == 11.0 and df.loc[0, "status"] == "ok"
    assert pd.isna(df.loc[0, "lat_p95_ms"])  # NaN stored as NULL
    got = store.intervals("s")
    assert list(got["tps"]) == [10.0, 12.0] and set(got["run_key"]) == {"a/x/t4/r1"}
    # replacing a run replaces its intervals too
    store.record_run(_run("a/x/t4/r1", 13.0), iv.iloc[:1])
    assert list(store.runs("s")["tps"]) == [13.0]
    assert len(store.intervals("s")) == 1
    assert store.run_status("s") == {"a/x/t4/r1": "ok"}


def test_catalog_is_readable_by_a_second_connection_while_written(store):
    store.record_run(_run("k1", 1.0))
    other = Store(store.url)
    assert list(other.runs("s")["run_key"]) == ["k1"]
    store.record_run(_run("k2", 2.0, "failed"))
    assert other.run_status("s") == {"k1": "ok", "k2": "failed"}


def test_study_arm_environment(store):
    store.record_study("s", {"study": "s", "threads": [1, 2]})
    store.record_study("s", {"study": "s", "threads": [1, 2, 4]})
    st = store.read("studies", "s")
    assert len(st) == 1 and json.loads(st.loc[0, "params_json"])["threads"] == [1, 2, 4]
    store.record_arm(
        "s",
        "a",
        options={"x": 1},
        target="mysql+pymysql://u:***@h/db",
        flavor="mariadb",
        version="10.11",
    )
    assert store.read("arms", "s").loc[0, "flavor"] == "mariadb"
    store.record_environment("s", "a", {"host": {"cpu": {"model": "X"}}})
    assert store.environment_captures("s") == {"a": {"host": {"cpu": {"model": "X"}}}}


def test_append_rejects_unknown_columns(store):
    assert (
        store.append("samples", [{"study": "s", "run_key": "k", "source": "server", "t": 1}]) == 1
    )
    with pytest.raises(KeyError, match="no column.*bogus"):
        store.append("samples", [{"study": "s", "bogus": 1}])
    assert store.append("samples", []) == 0


def test_delete_runs(store):
    store.record_run(_run("k1", 1.0), pd.DataFrame({"t": [1.0], "tps": [1.0]}))
    store.record_run(_run("k2", 2.0))
    store.delete_runs("s", ["k1"])
    assert list(store.runs("s")["run_key"]) == ["k2"]
    assert store.intervals("s").empty
