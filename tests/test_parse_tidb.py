"""Golden tests for tibenchlib.parse.tidb on real TiDB outputs (tests/fixtures/tidb*/SOURCES.md).

Expected values are typed from the fixture text, not computed by the parser.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from tibenchlib.parse import tidb

CLUSTER = Path(__file__).parent / "fixtures" / "tidb-cluster"
PLANS = Path(__file__).parent / "fixtures" / "tidb"


def text(folder: Path, name: str) -> str:
    return (folder / name).read_text(encoding="utf-8")


# --------------------------------------------------------------------------- generic tables


def test_tables_two_results_back_to_back():
    tables = tidb.parse_mysql_tables(
        text(CLUSTER, "show-variables-tidb-enable-foreign-key-two-results-mysql-e.txt")
    )
    assert [t.columns.tolist() for t in tables] == [["Variable_name", "Value"]] * 2
    assert tables[0].iloc[0].tolist() == ["tidb_enable_foreign_key", "ON"]
    assert tables[1].iloc[0].tolist() == ["foreign_key_checks", "ON"]


def test_tables_rows_in_set_recorded_and_crlf_handled():
    t = tidb.parse_mysql_tables(
        text(CLUSTER, "cluster-hardware-projection-cpu-logical-cores-v4.0-pre-ga.txt")
    )[0]
    assert t.attrs["rows_in_set"] == 10 == len(t)
    assert t.columns.tolist() == ["type", "instance", "name", "value"]
    assert not any(str(v).endswith("\r") for v in t.to_numpy().ravel())


def test_tables_skip_reconnect_noise():
    t = tidb.parse_show_variables(
        text(CLUSTER, "show-variables-tidb-v5.0.0-rc-reconnect-noise-fragment.txt")
    )
    assert t.to_dict("records") == [
        {"variable_name": "tidb_opt_distinct_agg_push_down", "value": "OFF"}
    ]


def test_batch_mode():
    t = tidb.parse_mysql_batch(text(CLUSTER, "select-version-tidb-v8.5.4-batch-tab.txt"))
    assert t.columns.tolist() == ["VERSION()"]
    assert t.iloc[0, 0] == "8.0.11-TiDB-v8.5.4"


def test_split_row_rejects_ambiguous_line():
    with pytest.raises(ValueError, match="cannot split"):
        tidb._split_row("| a | b | c |", [0, 4, 8], keep_leading=False)


# --------------------------------------------------------------------------- SHOW statements


def test_show_variables_unordered_fragment_keeps_printed_order():
    t = tidb.parse_show_variables(
        text(CLUSTER, "show-global-variables-tidb-enable-unordered-issue14542-fragment.txt")
    )
    assert len(t) == 12
    assert t["variable_name"].iloc[0] == "tidb_enable_cascades_planner"
    assert t["variable_name"].iloc[-1] == "tidb_enable_stmt_summary"
    assert (
        dict(zip(t["variable_name"], t["value"], strict=True))["tidb_enable_table_partition"]
        == "auto"
    )


def test_show_variables_docs_example():
    t = tidb.parse_show_variables(text(CLUSTER, "show-global-variables-tidb-stmt-summary-docs.txt"))
    values = dict(zip(t["variable_name"], t["value"], strict=True))
    assert len(values) == 10
    assert values["tidb_stmt_summary_filename"] == "tidb-statements.log"
    assert values["tidb_stmt_summary_max_stmt_count"] == "3000"
    assert values["tidb_stmt_summary_enable_persistent"] == "OFF"


@pytest.mark.parametrize(
    "name, rows, first",
    [
        (
            "show-config-tidb-v5.0.0-rc-three-instances.txt",
            3,
            ("tidb", "192.168.169.42:4000", "performance.agg-push-down-join", "false"),
        ),
        (
            "show-config-pd-log-file-pr16230.txt",
            4,
            ("pd", "127.0.0.1:2379", "log.file.filename", ""),
        ),
        (
            "show-config-tidb-flattened-array-pr16712.txt",
            3,
            ("tidb", "0.0.0.0:4000", "isolation-read.engines.0", "tikv"),
        ),
        (
            "show-config-tikv-docs-three-instances.txt",
            3,
            ("tikv", "172.16.5.37:20163", "gc.enable-compaction-filter", "false"),
        ),
    ],
)
def test_show_config(name, rows, first):
    t = tidb.parse_show_config(text(CLUSTER, name))
    assert t.columns.tolist() == ["type", "instance", "host", "name", "value"]
    assert len(t) == rows
    assert tuple(t.iloc[0][["type", "instance", "name", "value"]]) == first


def test_show_config_flattened_array_values():
    t = tidb.parse_show_config(text(CLUSTER, "show-config-tidb-flattened-array-pr16712.txt"))
    assert t["value"].tolist() == ["tikv", "tiflash", "tidb"]
    assert set(t["host"]) == {"0.0.0.0"}


# --------------------------------------------------------------------------- cluster tables


def test_cluster_info_v659_topology():
    t = tidb.parse_cluster_info(text(CLUSTER, "cluster-info-v6.5.9-tiflash-multi-tikv-mt-tidb.txt"))
    assert len(t) == 11
    assert t["type"].value_counts().to_dict() == {"tikv": 6, "pd": 3, "tidb": 1, "tiflash": 1}
    tiflash = t[t["type"] == "tiflash"].iloc[0]
    assert tiflash["instance"] == "10.0.0.89:3930"
    assert tiflash["status_address"] == "10.0.0.89:20292"
    assert tiflash["version"] == "6.5.9"
    tidb_row = t[t["type"] == "tidb"].iloc[0]
    assert tidb_row["server_id"] == 3889696
    assert tidb_row["start_time"] == "2024-05-05T04:12:51-04:00"
    # 46m53.033874282s
    assert tidb_row["uptime_s"] == pytest.approx(46 * 60 + 53.033874282)
    assert sorted(set(t["host"])) == ["10.0.0.89", "10.0.0.90"]
    assert t["server_id"].dtype == "Int64"


def test_cluster_info_docs_without_server_id():
    t = tidb.parse_cluster_info(text(CLUSTER, "cluster-info-docs-v4.0.0-beta.2-no-server-id.txt"))
    assert "server_id" not in t
    assert t["version"].tolist() == ["4.0.0-beta.2", "4.1.0-alpha", "4.1.0-alpha"]
    # 26h39m4.352862693s
    assert t["uptime_s"].iloc[0] == pytest.approx(26 * 3600 + 39 * 60 + 4.352862693)


def test_cluster_info_projection_lowercase_headers():
    t = tidb.parse_cluster_info(
        text(CLUSTER, "cluster-info-projection-tidb-v4.0-pre-ga-3tidb-3pd-4tikv.txt")
    )
    assert t["type"].value_counts().to_dict() == {"tikv": 4, "tidb": 3, "pd": 3}
    assert t["uptime_s"].iloc[4] == pytest.approx(11 * 60 + 16.20431)


def test_cluster_hardware_misaligned_docs_example():
    t = tidb.parse_cluster_hardware(text(CLUSTER, "cluster-hardware-docs-cpu-cores-misaligned.txt"))
    assert len(t) == 6
    logical = t[t["name"] == "cpu-logical-cores"]
    assert logical["value"].tolist() == ["16", "16", "16"]
    assert logical["value_num"].tolist() == [16, 16, 16]
    assert t[t["name"] == "cpu-physical-cores"]["value_num"].tolist() == [8, 8, 8]
    assert set(t["device_type"]) == {"cpu"}
    assert t["instance"].tolist()[::2] == ["0.0.0.0:4000", "127.0.0.1:2379", "127.0.0.1:20165"]


def test_cluster_hardware_projection():
    t = tidb.parse_cluster_hardware(
        text(CLUSTER, "cluster-hardware-projection-cpu-logical-cores-v4.0-pre-ga.txt")
    )
    assert len(t) == 10
    assert (t["value_num"] == 8).all()
    assert t["instance"].iloc[0] == "127.0.0.1:10080"


def test_cluster_systeminfo():
    t = tidb.parse_cluster_systeminfo(text(CLUSTER, "cluster-systeminfo-docs-kernel-osrelease.txt"))
    assert t["value"].tolist() == ["3.10.0-862.14.4.el7.x86_64"] * 3
    assert t["type"].tolist() == ["tidb", "pd", "tikv"]
    assert t["value_num"].isna().all()
    mac = tidb.parse_cluster_systeminfo(
        text(CLUSTER, "cluster-systeminfo-projection-macos-sysctl-v4.0-pre-ga.txt")
    )
    assert len(mac) == 9
    assert mac[mac["name"] == "net.necp.client_fd_count"]["value_num"].tolist() == [89] * 3


# --------------------------------------------------------------------------- versions


@pytest.mark.parametrize(
    "name, version, mysql, release",
    [
        ("select-version-tidb-v8.5.4-table.txt", "8.0.11-TiDB-v8.5.4", "8.0.11", "v8.5.4"),
        ("select-version-tidb-v8.5.4-batch-tab.txt", "8.0.11-TiDB-v8.5.4", "8.0.11", "v8.5.4"),
        ("select-sysdate-version-tidb-v6.5.9.txt", "5.7.25-TiDB-v6.5.9", "5.7.25", "v6.5.9"),
    ],
)
def test_select_version(name, version, mysql, release):
    t = tidb.parse_select_version(text(CLUSTER, name))
    assert t.to_dict("records") == [
        {"version": version, "mysql_version": mysql, "tidb_version": release}
    ]


def test_split_tidb_version_rejects_other_servers():
    assert tidb.split_tidb_version("10.11.6-MariaDB-0+deb12u1") is None
    assert tidb.split_tidb_version("8.0.11-TiDB-v8.5.4") == ("8.0.11", "v8.5.4")


def _version_info(name: str) -> dict[str, str]:
    v = tidb.parse_tidb_version_info(text(CLUSTER, name))
    return dict(zip(v["name"], v["value"], strict=True))


def test_tidb_version_info_vertical_and_cell():
    d = _version_info("tidb-version-vertical-v8.1.0-docs-tidb-operator.txt")
    assert d["Release Version"] == "v8.1.0"
    assert d["Git Commit Hash"] == "945d07c5d5c7a1ae212f6013adfb187f2de24b23"
    assert d["Store"] == "tikv"
    assert len(d) == 9
    d = _version_info("tidb-version-cell-v5.3.0-issue31100-fragment.txt")
    assert d["Release Version"] == "v5.3.0"
    assert d["TiKV Min Version"] == "v3.0.0-60965b006877ca7234adaced7890d7b029ed1306"
    assert d["Check Table Before Drop"] == "false"


def test_go_duration():
    assert tidb.go_duration_seconds("1h2m8.640973035s") == pytest.approx(3728.640973035)
    assert tidb.go_duration_seconds("36m20.480549971s") == pytest.approx(2180.480549971)
    assert tidb.go_duration_seconds("250ms") == pytest.approx(0.25)
    assert tidb.go_duration_seconds("soon") is None


# --------------------------------------------------------------------------- PD stores


def test_pd_stores_v810_tikv_and_tiflash():
    t = tidb.parse_pd_stores(
        text(CLUSTER, "pd-api-v1-stores-v8.1.0-tikv-tiflash-tidb-operator-test.json")
    )
    assert t["store_id"].tolist() == [4, 20, 1, 5]
    assert t["engine"].tolist() == ["tikv", "tiflash", "tikv", "tikv"]
    assert t["labels"].tolist() == ["", "engine=tiflash", "", ""]
    assert t["version"].tolist() == ["8.1.0", "v8.1.0", "8.1.0", "8.1.0"]
    assert t["region_count"].tolist() == [60, 0, 60, 60]
    assert t["leader_count"].tolist() == [17, 0, 25, 18]
    assert t["capacity_bytes"].iloc[0] == pytest.approx(311.7 * 1024**3)
    assert t["used_size_bytes"].tolist()[1] == 1.0  # "1B"
    assert t["used_size_bytes"].iloc[0] == pytest.approx(290.7 * 1024**2)
    summary = tidb.store_summary(t)
    assert summary.to_dict("records") == [
        {"engine": "tiflash", "stores": 1, "stores_up": 1, "region_count": 0, "leader_count": 0},
        {"engine": "tikv", "stores": 3, "stores_up": 3, "region_count": 180, "leader_count": 60},
    ]


def test_pd_stores_accepts_decoded_json():
    raw = json.loads(text(CLUSTER, "pd-api-v1-stores-v8.1.0-tikv-tiflash-tidb-operator-test.json"))
    assert len(tidb.parse_pd_stores(raw)) == raw["count"] == 4


def test_pd_stores_docs_example_with_comments_and_missing_brace():
    body = text(CLUSTER, "pd-api-v1-stores-docs-v4.0.0-rc.2-hash-comments-not-json.txt")
    with pytest.raises(json.JSONDecodeError):
        json.loads(body)
    t = tidb.parse_pd_stores(body)
    row = t.iloc[0]
    assert (row["store_id"], row["address"], row["status_address"]) == (
        1,
        "127.0.0.1:20160",
        "172.16.5.90:20382",
    )
    assert (row["region_count"], row["leader_count"]) == (531, 174)
    assert row["capacity_bytes"] == pytest.approx(3.581 * 1024**4)
    assert row["uptime_s"] == pytest.approx(7 * 60 + 0.949235439)


def test_pd_ctl_single_store_offline():
    t = tidb.parse_pd_stores(text(CLUSTER, "pd-ctl-store-single-v2.1.0-rc.1-offline-issue523.json"))
    row = t.iloc[0]
    assert row["state_name"] == "Offline"
    assert row["capacity_bytes"] == 197 * 1024**3  # "197 GiB", with a space
    assert row["region_count"] == 671
    assert tidb.store_summary(t)["stores_up"].tolist() == [0]


# --------------------------------------------------------------------------- EXPLAIN


def test_explain_mpp_tiflash_runtime_filter():
    plan = tidb.parse_explain(text(PLANS, "explain-mpp-tiflash-runtime-filter-mppversion1.txt"))
    assert len(plan) == 9
    assert plan["id"].tolist()[:2] == ["TableReader_53", "ExchangeSender_52"]
    assert plan["engine"].tolist() == ["tidb"] + ["tiflash"] * 8
    assert set(plan["task_kind"]) == {"root", "mpp"}
    assert plan["depth"].tolist() == [0, 1, 2, 3, 4, 5, 6, 4, 5]
    assert plan["join_side"].tolist()[4] == "Build"
    assert plan["join_side"].tolist()[7] == "Probe"
    assert plan["id"].tolist()[7] == "Selection_31"
    assert plan["est_rows"].tolist()[-1] == 71997669.00
    assert tidb.plan_reads_tiflash(plan)
    assert tidb.plan_table_engines(plan).to_dict("records") == [
        {
            "table": "date_dim",
            "engine": "tiflash",
            "operator": "TableFullScan",
            "task": "mpp[tiflash]",
        },
        {
            "table": "catalog_sales",
            "engine": "tiflash",
            "operator": "TableFullScan",
            "task": "mpp[tiflash]",
        },
    ]


def test_explain_mpp_wide_operator_info():
    plan = tidb.parse_explain(text(PLANS, "explain-mpp-tiflash-tpch-compression-stream-count.txt"))
    assert len(plan) == 10
    assert plan["engine"].tolist() == ["tidb"] * 3 + ["tiflash"] * 7
    assert plan["operator_info"].iloc[6] == "stream_count: 20"
    assert plan["operator_info"].iloc[5].endswith("stream_count: 20")
    assert plan["est_rows"].iloc[-1] == 600037902.00
    assert plan["table"].iloc[-1] == "lineitem"


def test_explain_legacy_cop_tiflash_join():
    plan = tidb.parse_explain(text(PLANS, "explain-cop-tiflash-shuffle-hash-join-legacy.txt"))
    assert len(plan) == 12
    assert plan["task"].tolist()[2:] == ["cop[tiflash]"] * 10
    assert plan["task_kind"].tolist()[2] == "cop"
    # '│ └─ExchangeSender_18' sits under ExchangeReceiver_19(Build) at depth 4
    assert plan["depth"].tolist() == [0, 1, 2, 3, 4, 5, 6, 7, 4, 5, 6, 7]
    assert tidb.plan_table_engines(plan)["table"].tolist() == ["a", "b"]
    assert tidb.plan_reads_tiflash(plan)


def test_explain_analyze_batchcop():
    plan = tidb.parse_explain(text(PLANS, "explain-analyze-batchcop-tiflash-legacy.txt"))
    assert plan["task_kind"].tolist() == ["root"] + ["batchCop"] * 7
    assert plan["act_rows"].tolist() == [2, 2, 2, 2, 2, 0, 0, 0]
    assert plan["memory"].tolist() == ["N/A"] * 8
    assert plan["execution_info"].iloc[4] == "tiflash_task:{time:14.5ms, loops:1, threads:20}"
    assert plan["table"].iloc[-1] == "t1"


def test_explain_analyze_cop_tikv_only():
    plan = tidb.parse_explain(text(PLANS, "explain-analyze-cop-tikv-bikeshare-docs.txt"))
    assert plan["engine"].tolist() == ["tidb", "tidb", "tikv", "tikv", "tikv"]
    assert plan["act_rows"].tolist() == [1, 56, 56, 11409, 19117643]
    assert plan["memory"].tolist()[:2] == ["632 Bytes", "328 Bytes"]
    assert not tidb.plan_reads_tiflash(plan)
    assert tidb.plan_table_engines(plan).to_dict("records") == [
        {"table": "trips", "engine": "tikv", "operator": "TableFullScan", "task": "cop[tikv]"}
    ]


def test_explain_index_access_object():
    plan = tidb.parse_explain(text(PLANS, "explain-cop-tikv-index-range-scan-docs.txt"))
    assert plan["access_object"].iloc[-1] == "table:trips, index:start_date(start_date)"
    assert plan["table"].iloc[-1] == "trips"
    assert plan["operator"].iloc[-1] == "IndexRangeScan"
    assert not tidb.plan_reads_tiflash(plan)


def test_explain_two_roots_and_na_estimate():
    plan = tidb.parse_explain(text(PLANS, "explain-cop-tikv-scalar-subquery-two-roots-docs.txt"))
    assert plan["depth"].tolist() == [0, 1, 2, 0, 1, 2, 3]
    assert plan["id"].iloc[3] == "ScalarSubQuery_10"
    assert pd.isna(plan["est_rows"].iloc[3])  # printed 'N/A'
    assert plan["table"].dropna().tolist() == ["t2", "t1"]


# --------------------------------------------------------------------------- TiFlash replicas


def test_tiflash_replica_two_results():
    t = tidb.parse_tiflash_replica(text(PLANS, "tiflash-replica-select-two-tables.txt"))
    assert t[["table_schema", "table_name", "table_id", "replica_count"]].values.tolist() == [
        ["bookshop", "books", 143, 1],
        ["bookshop", "orders", 147, 1],
    ]
    assert t["available"].tolist() == [True, True]
    assert t["progress"].tolist() == [1.0, 1.0]
    assert t["location_labels"].tolist() == ["", ""]
