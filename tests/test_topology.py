"""TiUP topology: instances and their numa_node, the block-cache rule, the binding snippet."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tibenchlib.topology import (
    binding_snippet,
    check_block_cache,
    load_topology,
    parse_size,
    topology_instances,
)

FIX = Path(__file__).parent / "fixtures" / "topology"
DOCS = FIX / "tiup-topology-docs-cn-simple-multi-instance-numa.yaml"
PD_FRAGMENT = FIX / "tiup-topology-pd-numa-node-arm64-issue1563-fragment.yaml"
OURS = FIX / "tibench-report000-like-numa.yaml"
GB = 1 << 30


def test_docs_template_instances_and_numa_nodes():
    inst = topology_instances(DOCS)
    counts = inst["role"].value_counts().to_dict()
    assert counts == {
        "tidb": 6,
        "tikv": 6,
        "pd": 3,
        "monitoring": 1,
        "grafana": 1,
        "alertmanager": 1,
    }
    tidb = inst[inst["role"] == "tidb"]
    assert tidb["numa_node"].tolist() == ["0", "1"] * 3
    assert tidb["port"].tolist() == [4000, 4001] * 3
    assert inst[inst["role"] == "pd"]["numa_node"].isna().all()
    assert inst[inst["role"] == "pd"]["port"].tolist() == [2379] * 3  # default client port
    tikv = inst[inst["role"] == "tikv"]
    assert tikv["nodes"].tolist() == [[0], [1]] * 3
    # The template's placeholder is no size.
    assert tikv["block_cache_source"].eq("server_configs").all()
    assert tikv["block_cache_bytes"].isna().all()


def test_pd_fragment_numa_node_and_client_port():
    inst = topology_instances(PD_FRAGMENT)
    assert inst[["role", "host", "port", "numa_node"]].values.tolist() == [
        ["pd", "10.9.20.28", 22389, "1"]
    ]


def test_sizes():
    assert parse_size("37GB") == 37 * GB
    assert parse_size("37GiB") == 37 * GB
    assert parse_size("512MB") == 512 << 20
    assert parse_size("1.5G") == int(1.5 * GB)
    assert parse_size(1024) == 1024
    assert parse_size("<The value refers to the calculation formula result>") is None
    assert parse_size(None) is None


def test_block_cache_rule_on_report_like_cluster():
    inst = topology_instances(OURS)
    tikv = inst[inst["role"] == "tikv"]
    assert tikv["block_cache_source"].tolist() == [
        "server_configs",
        "instance",
        "server_configs",
        "server_configs",
    ]
    assert tikv["block_cache_bytes"].tolist() == [37 * GB, 48 * GB, 37 * GB, 37 * GB]
    table, warnings = check_block_cache(inst, host_memory=256 * GB, numa_nodes=4)
    # (256 GB × 0.6) / 4 = 38.4 GB: 37 GB passes, 48 GB does not.
    assert table["limit_bytes"].iloc[0] == pytest.approx(256 * GB * 0.6 / 4)
    assert table["ok"].tolist() == [True, False, True, True]
    assert any("192.168.1.4:20161" in w and "48GB" in w for w in warnings)
    assert any("192.168.1.5:20161 has no numa_node" in w for w in warnings)


def test_unset_block_cache_breaks_rule_on_multi_node_hosts():
    topo = {
        "server_configs": {"tikv": {"storage": {"block-cache": {"shared": True}}}},
        "tikv_servers": [
            {"host": "h1", "port": 20160, "numa_node": "0"},
            {"host": "h1", "port": 20161, "numa_node": "1"},
            {"host": "h2", "port": 20160, "numa_node": "0"},
        ],
    }
    inst = topology_instances({"topology": topo})  # meta.yaml shape
    assert inst["block_cache_source"].eq("default").all()
    table, warnings = check_block_cache(
        inst, host_memory={"h1": 64 * GB, "h2": 64 * GB}, numa_nodes={"h1": 2, "h2": 1}
    )
    # Default ≈ 45% of the host: above 30% on a 2-node host, fine on a 1-node host.
    assert table["ok"].tolist() == [False, False, True]
    assert sum("not set" in w for w in warnings) == 2


def test_nested_and_mixed_config_forms():
    text = """
server_configs:
  tikv:
    storage:
      block-cache:
        capacity: "10GB"
tikv_servers:
  - host: h1
    numa_node: 0
  - host: h1
    port: 20161
    numa_node: 1
    config:
      storage.block-cache:
        capacity: 2GiB
"""
    inst = topology_instances(text)
    assert inst["block_cache_bytes"].tolist() == [10 * GB, 2 * GB]
    assert inst["port"].tolist() == [20160, 20161]
    assert inst["numa_node"].tolist() == ["0", "1"]
    table, warnings = check_block_cache(inst, {"other": 1}, 2)
    assert table["ok"].isna().all() and "memory of host h1 not given" in warnings[0]


def test_binding_snippet_keeps_existing_and_suggests_the_rest():
    inst = topology_instances(OURS)
    text = binding_snippet(inst, numa_nodes=4)
    # It is valid YAML in the topology's own shape.
    parsed = yaml.safe_load(text)
    assert set(parsed) == {"tidb_servers", "tikv_servers", "pd_servers"}
    tidb = parsed["tidb_servers"]
    assert tidb[0] == {"host": "192.168.1.1", "port": 4000, "numa_node": "0"}
    assert tidb[1]["numa_cores"] == "0-15"
    assert "numactl --cpunodebind=0 --membind=0 -C 0-15 bin/tidb-server" in text
    # Host 192.168.1.5 has node 0 taken by its first TiKV: the second is suggested node 1.
    tikv5 = [t for t in parsed["tikv_servers"] if t["host"] == "192.168.1.5"]
    assert [t["numa_node"] for t in tikv5] == ["0", "1"]
    assert "# suggested: numactl --cpunodebind=1 --membind=1 bin/tikv-server" in text
    # 192.168.1.3 has nothing bound: its TiDB gets node 0, its PD the next one.
    assert parsed["tidb_servers"][2]["numa_node"] == "0"
    assert parsed["pd_servers"][2]["numa_node"] == "1"
    unbound = binding_snippet(inst)
    assert "# no numa_node: runs unbound" in unbound
    assert "monitoring" not in text


def test_load_topology_rejects_non_mapping():
    with pytest.raises(ValueError):
        load_topology("- just\n- a list\n")
