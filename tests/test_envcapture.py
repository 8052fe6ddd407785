"""Environment capture: this machine, a fake /proc and /sys with files missing, no tools, a real
MariaDB, a TiDB fed with real outputs, and secrets that must never reach a capture."""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import socket
import subprocess
from pathlib import Path

import pandas as pd
import pytest
from sqlalchemy.engine import make_url

from tibenchlib import envcapture as ec
from tibenchlib.cpulist import parse_cpulist
from tibenchlib.parse import tidb

CLUSTER = Path(__file__).parent / "fixtures" / "tidb-cluster"


def no_tools(_name: str) -> None:
    return None


# --------------------------------------------------------------------------- this machine


@pytest.fixture(scope="module")
def host(tmp_path_factory):
    return ec.capture_host(data_dir=tmp_path_factory.mktemp("data") / "study" / "not-yet")


def test_host_cpu_matches_the_kernel(host):
    cpu = host["cpu"]
    assert cpu["logical"] == os.cpu_count()
    online = Path("/sys/devices/system/cpu/online").read_text().strip()
    assert cpu["online"] == online
    assert set(os.sched_getaffinity(0)) <= set(parse_cpulist(online))
    assert isinstance(cpu["model"], str) and cpu["model"]
    if isinstance(cpu["physical_cores"], int):
        assert cpu["sockets"] * cpu["cores_per_socket"] == cpu["physical_cores"]
        assert cpu["physical_cores"] * cpu["threads_per_core"] == cpu["logical"]


def test_host_numa_nodes_cover_the_online_cpus(host):
    nodes = host["numa"]["nodes"]
    if not Path("/sys/devices/system/node").is_dir():
        assert ec.is_unavailable(nodes)
        return
    online = set(parse_cpulist(Path("/sys/devices/system/cpu/online").read_text()))
    assert set().union(*(set(n["cpus"]) for n in nodes)) == online
    assert host["numa"]["node_count"] == len(nodes)
    assert all(n["mem_total"] > 0 for n in nodes if n["cpus"])
    if shutil.which("numactl"):
        from_numactl = {n["node"]: n["cpus"] for n in host["numa"]["numactl"]["nodes"]}
        assert from_numactl == {n["node"]: n["cpus"] for n in nodes}


def test_host_memory_disk_os_python(host, tmp_path_factory):
    assert host["memory"]["total"] == os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    dd = host["disks"]["data_dir"]
    assert dd["exists"] is False and dd["path"].endswith("study/not-yet")
    st = os.statvfs(Path(dd["path"]).parents[1])
    assert dd["total"] == st.f_blocks * st.f_frsize
    assert isinstance(dd["fstype"], str) and dd["fstype"]
    assert host["hostname"] == socket.gethostname()
    assert host["os"]["kernel"] == os.uname().release
    assert host["python"]["version"] == platform.python_version()
    assert host["packages"]["pandas"] == pd.__version__
    json.dumps(host)  # plain JSON types only


@pytest.mark.skipif(not shutil.which("sysbench"), reason="sysbench is not installed")
def test_host_sysbench_version_is_what_sysbench_prints(host):
    printed = subprocess.run(["sysbench", "--version"], capture_output=True, text=True).stdout
    assert host["tools"]["sysbench"]["output"] == printed.strip()
    assert printed.split()[1] == host["tools"]["sysbench"]["version"]


def test_host_tables(host):
    tables = ec.environment_tables(host)
    hw = tables["hardware"]
    assert hw.columns.tolist() == ["server", "CPU", "memory", "NUMA nodes", "disks"]
    assert hw["server"].tolist() == [f"{socket.gethostname()} (client)"]
    assert str(os.cpu_count()) in hw["CPU"].iloc[0]
    sw = tables["software"]
    assert {"Python", "Linux kernel", "tibench"} <= set(sw["name"])
    assert set(tables["unavailable"]["item"]) == {f"host.{p}" for p, _ in ec.list_unavailable(host)}


# --------------------------------------------------------------------------- missing files/tools


def test_empty_fake_roots_and_no_tools_never_crash(tmp_path):
    (tmp_path / "proc").mkdir()
    (tmp_path / "sys").mkdir()
    cap = ec.capture_host(
        data_dir=None,
        proc_root=tmp_path / "proc",
        sys_root=tmp_path / "sys",
        which=no_tools,
        os_release=tmp_path / "etc" / "os-release",
    )
    missing = dict(ec.list_unavailable(cap))
    assert "cpuinfo" in missing["cpu.source"]
    assert "cpu.model" in missing
    assert "cpu.lscpu" in missing
    assert "cannot list" in missing["numa.nodes"]
    assert missing["numa.numactl"] == "numactl not found on PATH"
    assert missing["disks.data_dir"] == "no data directory given"
    assert "cannot list" in missing["disks.block_devices"]
    assert "os-release" in missing["os.pretty_name"]
    for tool in ("sysbench", "mariadbd", "go-ycsb", "go-tpc", "tiup", "numactl"):
        assert missing[f"tools.{tool}"] == f"{tool} not found on PATH"
    # What does not depend on those files is still there.
    assert cap["cpu"]["logical"] == os.cpu_count()
    assert cap["memory"]["total"] > 0
    json.dumps(cap)
    tables = ec.environment_tables(cap)
    assert "unavailable" in tables["hardware"]["NUMA nodes"].iloc[0]
    assert len(tables["unavailable"]) == len(missing)


def test_partial_fake_sys_tree(tmp_path):
    """Real cpuinfo and node cpulist copied in; the node's meminfo and the disk queue missing."""
    proc, sys_ = tmp_path / "proc", tmp_path / "sys"
    proc.mkdir()
    shutil.copy("/proc/cpuinfo", proc / "cpuinfo")
    node0 = sys_ / "devices/system/node/node0"
    node0.mkdir(parents=True)
    real = Path("/sys/devices/system/node/node0/cpulist")
    cpulist = real.read_text() if real.exists() else "0\n"
    (node0 / "cpulist").write_text(cpulist)
    (sys_ / "block" / "vdz").mkdir(parents=True)  # a disk whose queue/ and size are missing
    cap = ec.capture_host(data_dir=tmp_path, proc_root=proc, sys_root=sys_, which=no_tools)
    assert cap["cpu"]["source"] == "cpuinfo"
    assert cap["cpu"]["logical"] == os.cpu_count()
    node = cap["numa"]["nodes"][0]
    assert node["cpus"] == parse_cpulist(cpulist)
    assert ec.is_unavailable(node["mem_total"])
    disk = cap["disks"]["block_devices"][0]
    assert disk["name"] == "vdz"
    assert ec.is_unavailable(disk["rotational"]) and ec.is_unavailable(disk["size_bytes"])
    assert cap["disks"]["data_dir"]["exists"] is True


def test_numa_nodes_have_one_reader(tmp_path):
    """binding.numa_nodes reads through read_numa_nodes: same nodes, CPUs and memory."""
    from tibenchlib import binding

    base = tmp_path / "devices/system/node"
    for name, cpus, mem in (
        ("node0", "0-1\n", "Node 0 MemTotal: 1024 kB\n"),
        ("node1", "\n", None),
    ):
        (base / name).mkdir(parents=True)
        (base / name / "cpulist").write_text(cpus)
        if mem:
            (base / name / "meminfo").write_text(mem)
    (base / "possible").write_text("0-1\n")  # not a node folder
    nodes = ec.read_numa_nodes(tmp_path)
    assert [(n["node"], n["cpus"]) for n in nodes] == [(0, [0, 1]), (1, [])]
    assert nodes[0]["mem_total"] == 1 << 20 and ec.is_unavailable(nodes[1]["mem_total"])
    df = binding.numa_nodes(tmp_path)
    assert df["node"].tolist() == [0, 1] and df["cpus"].tolist() == [[0, 1], []]
    assert df["mem_total"].iloc[0] == 1 << 20 and pd.isna(df["mem_total"].iloc[1])
    assert "cannot list" in ec.read_numa_nodes(tmp_path / "nowhere")["unavailable"]
    assert binding.numa_nodes(tmp_path / "nowhere").empty
    real = ec.read_numa_nodes()
    if not ec.is_unavailable(real):
        assert [n["cpus"] for n in real] == binding.numa_nodes()["cpus"].tolist()


def test_a_failing_collector_costs_only_its_section(monkeypatch):
    def boom(_host):
        raise RuntimeError("simulated bug")

    monkeypatch.setitem(ec._HOST_COLLECTORS, "numa", boom)
    cap = ec.capture_host(which=no_tools)
    assert cap["numa"] == {"unavailable": "RuntimeError: simulated bug"}
    assert cap["cpu"]["logical"] == os.cpu_count()


def test_tool_that_fails_to_run_is_unavailable(tmp_path):
    cap = ec.capture_host(which=lambda name: str(tmp_path / name))  # paths that do not exist
    assert ec.is_unavailable(cap["tools"]["sysbench"]["version"])
    assert cap["tools"]["sysbench"]["path"] == str(tmp_path / "sysbench")


def test_tool_version_patterns():
    assert ec.tool_version("sysbench 1.0.20") == "1.0.20"
    printed = "mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64 (Debian 12)"
    assert ec.tool_version(printed) == "10.11.19-MariaDB-0+deb12u1"
    assert ec.tool_version("no digits here") is None


@pytest.mark.skipif(not shutil.which("numactl"), reason="numactl is not installed")
def test_parse_numactl_hardware_on_this_machine():
    out = subprocess.run(["numactl", "--hardware"], capture_output=True, text=True).stdout
    parsed = ec.parse_numactl_hardware(out)
    first = out.splitlines()[0]  # 'available: N nodes (...)'
    assert len(parsed["nodes"]) == int(first.split()[1])
    assert set(parsed["distances"]) == {n["node"] for n in parsed["nodes"]}


# --------------------------------------------------------------------------- secrets


def test_redact_urls_keys_and_records():
    obj = {
        "url": "mysql+pymysql://bench:hunter22@db.example:4000/sbtest",
        "password": "hunter22",
        "api_token": "abc123xyz",
        "ssl_key": "/etc/ssl/private/client.key",
        "tidb_enable_foreign_key": "ON",
        "default_password_lifetime": "0",
        "key_buffer_size": "134217728",
        "nested": [{"name": "security.cluster-ssl-key", "value": "/path/k.pem"}],
        "note": "connect with hunter22",
    }
    out = ec.redact(obj, secrets=["hunter22"])
    assert out["url"] == "mysql+pymysql://bench:***@db.example:4000/sbtest"
    assert out["password"] == out["api_token"] == out["ssl_key"] == "***"
    assert out["tidb_enable_foreign_key"] == "ON"  # a setting, not a secret
    assert out["default_password_lifetime"] == "0"
    assert out["key_buffer_size"] == "134217728"
    assert out["nested"][0] == {"name": "security.cluster-ssl-key", "value": "***"}
    assert out["note"] == "connect with ***"
    assert "hunter22" not in json.dumps(out)
    assert obj["password"] == "hunter22"  # the input is not modified


def test_redact_keeps_settings_about_secrets():
    settings = {
        "max_password_errors": "4294967295",
        "max_seeks_for_key": "4294967295",
        "innodb_force_primary_key": "OFF",
        "labels": [{"key": "engine", "value": "tiflash"}],  # PD store labels
    }
    assert ec.redact(settings) == settings
    assert ec.redact({"wsrep_sst_auth": "sst:s3cr3tpw", "report_password": "x9y8z7"}) == {
        "wsrep_sst_auth": "***",
        "report_password": "***",
    }


def test_redact_ignores_short_known_secrets():
    assert ec.redact({"a": "abc"}, secrets=["a", None, ""]) == {"a": "abc"}


def test_detect_flavor():
    version = tidb.parse_select_version(
        (CLUSTER / "select-version-tidb-v8.5.4-table.txt").read_text()
    )["version"][0]
    assert ec.detect_flavor(version) == ("tidb", "v8.5.4")
    assert ec.detect_flavor("5.7.25-TiDB-v6.5.9") == ("tidb", "v6.5.9")
    assert ec.detect_flavor("10.11.6-MariaDB-0+deb12u1") == ("mariadb", "10.11.6")


# --------------------------------------------------------------------------- real MariaDB


@pytest.mark.slow
def test_capture_mariadb(mariadb, mariadb_engine, tmp_path):
    cap = ec.capture_database(mariadb_engine, "mariadb")
    with mariadb_engine.connect() as conn:
        version = conn.exec_driver_sql("SELECT VERSION()").scalar_one()
        n_vars = len(conn.exec_driver_sql("SHOW GLOBAL VARIABLES").all())
        pool = conn.exec_driver_sql("SELECT @@innodb_buffer_pool_size").scalar_one()
    assert cap["flavor"] == "mariadb"
    assert cap["version_string"] == version
    assert version.startswith(cap["version"])
    assert len(cap["global_variables"]) == n_vars
    assert cap["global_variables"]["innodb_buffer_pool_size"] == str(pool)
    curated = {r["name"]: r["value"] for r in cap["curated"]}
    assert curated["innodb_buffer_pool_size"] == str(pool)
    assert {"max_connections", "sync_binlog", "innodb_flush_log_at_trx_commit"} <= set(curated)
    assert "tidb" not in cap and cap["warnings"] == []
    assert ec.list_unavailable(cap) == []

    password = mariadb.conninfo().password
    assert password and mariadb_engine.url.password == password
    saved = ec.save_capture({"database": cap}, tmp_path / "env.json")
    assert password not in saved.read_text()
    assert password not in json.dumps(cap)
    assert "***" in cap["url"]

    tables = ec.environment_tables({"database": cap})
    mariadb_row = tables["software"][tables["software"]["name"] == "MariaDB"]
    assert mariadb_row["version"].tolist() == [cap["version"]]
    assert "max_connections" in set(tables["configuration"]["name"])


@pytest.mark.slow
def test_capture_mariadb_told_it_is_tidb(mariadb_engine):
    cap = ec.capture_database(mariadb_engine, "tidb")
    assert cap["flavor"] == "mariadb"
    assert "tidb" not in cap  # TiDB-only statements never ran
    assert cap["warnings"] == ["flavor given as 'tidb' but the server reports 'mariadb'"]


@pytest.mark.slow
def test_host_and_database_tables_together(mariadb_engine, host):
    cap = {"arm": "baseline", "host": host, "database": ec.capture_database(mariadb_engine)}
    hw = ec.environment_tables(cap)["hardware"]
    assert hw["server"].tolist() == [f"{socket.gethostname()} (client, MariaDB)"]


# --------------------------------------------------------------------------- TiDB from real outputs


class _Rows:
    def __init__(self, rows):
        self._rows = rows

    def __iter__(self):
        return (type("Row", (), {"_mapping": r})() for r in self._rows)


class _FakeTiDB:
    """Answers the statements capture_database sends with real TiDB outputs from fixtures."""

    def __init__(self, answers, password):
        self.answers = answers
        self.url = make_url(f"mysql+pymysql://bench:{password}@10.0.0.1:4000/sbtest")
        self.sent: list[str] = []

    def connect(self):
        return self

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def exec_driver_sql(self, sql):
        self.sent.append(sql)
        answer = self.answers.get(sql)
        if answer is None or isinstance(answer, Exception):
            raise answer or RuntimeError(f"(1105, 'unexpected statement {sql}')")
        return _Rows(answer)


def _records(frame: pd.DataFrame, upper: bool = False) -> list[dict]:
    return [
        {(k.upper() if upper else k): v for k, v in r.items()}
        for r in frame.drop(columns=["host", "value_num", "uptime_s"], errors="ignore").to_dict(
            "records"
        )
    ]


@pytest.fixture
def fake_tidb():
    read = lambda name: (CLUSTER / name).read_text(encoding="utf-8")  # noqa: E731
    version = tidb.parse_select_version(read("select-version-tidb-v8.5.4-table.txt"))["version"][0]
    variables = tidb.parse_show_variables(read("show-global-variables-tidb-stmt-summary-docs.txt"))
    info = tidb.parse_cluster_info(read("cluster-info-docs-v4.0.0-beta.2-no-server-id.txt"))
    hardware = tidb.parse_cluster_hardware(read("cluster-hardware-docs-cpu-cores-misaligned.txt"))
    config = tidb.parse_show_config(read("show-config-tikv-docs-three-instances.txt"))
    answers = {
        "SELECT VERSION() AS version, @@version_comment AS version_comment": [
            {"version": version, "version_comment": None}
        ],
        "SHOW GLOBAL VARIABLES": [
            {"Variable_name": n, "Value": v}
            for n, v in zip(variables["variable_name"], variables["value"], strict=True)
        ],
        "SHOW CONFIG": [{k.capitalize(): v for k, v in r.items()} for r in _records(config)],
        "SELECT * FROM information_schema.cluster_info": _records(info, upper=True),
        "SELECT * FROM information_schema.cluster_hardware": _records(hardware, upper=True),
        "SELECT * FROM information_schema.cluster_systeminfo": RuntimeError(
            "(1227, 'Access denied; you need (at least one of) the PROCESS privilege(s)')"
        ),
    }
    return _FakeTiDB(answers, password="Kn0wn-Pa55word")


def test_capture_tidb_from_real_outputs(fake_tidb, tmp_path):
    cap = ec.capture_database(fake_tidb, "tidb")
    assert (cap["flavor"], cap["version"]) == ("tidb", "v8.5.4")
    assert cap["global_variables"]["tidb_stmt_summary_max_stmt_count"] == "3000"
    t = cap["tidb"]
    assert [r["instance"] for r in t["config"]] == [
        "172.16.5.37:20163",
        "172.16.5.36:20163",
        "172.16.5.35:20163",
    ]
    assert [(r["type"], r["version"]) for r in t["cluster_info"]] == [
        ("tidb", "4.0.0-beta.2"),
        ("pd", "4.1.0-alpha"),
        ("tikv", "4.1.0-alpha"),
    ]
    assert len(t["cluster_hardware"]) == 6
    # Each failing statement is recorded on its own; the rest of the capture goes on.
    missing = dict(ec.list_unavailable(cap))
    assert set(missing) == {"tidb.cluster_systeminfo", "tidb.tidb_version"}
    assert "PROCESS privilege" in missing["tidb.cluster_systeminfo"]

    text = ec.save_capture(cap, tmp_path / "tidb.json").read_text()
    assert "Kn0wn-Pa55word" not in text
    assert json.loads(text)["url"] == "mysql+pymysql://bench:***@10.0.0.1:4000/sbtest"
    assert text == json.dumps(json.loads(text), sort_keys=True, indent=2) + "\n"


def test_tidb_environment_tables(fake_tidb, host):
    cap = {"host": host, "database": ec.capture_database(fake_tidb)}
    tables = ec.environment_tables(cap)
    hw = tables["hardware"].set_index("server")
    assert hw.loc["0.0.0.0 (tidb)", "CPU"] == "16 logical cores, 8 physical cores"
    assert hw.loc["127.0.0.1 (pd, tikv)", "CPU"] == "16 logical cores, 8 physical cores"
    assert f"{socket.gethostname()} (client)" in hw.index  # 10.0.0.1 is not this host
    sw = tables["software"].set_index("name")["version"]
    assert (sw["TiDB"], sw["TiDB server"], sw["PD"]) == ("v8.5.4", "4.0.0-beta.2", "4.1.0-alpha")
    cfg = tables["configuration"]
    assert cfg.columns.tolist() == ["scope", "name", "value"]
    assert "database.tidb.cluster_systeminfo" in set(tables["unavailable"]["item"])


def test_tables_for_several_arms(fake_tidb, host):
    db = ec.capture_database(fake_tidb)
    cap = {
        "host": host,
        "arms": {
            "v1": {"arm": "v1", "host": host, "database": db},
            "v2": {"arm": "v2", "host": host, "database": db},
        },
    }
    tables = ec.environment_tables(cap)
    assert tables["configuration"].columns.tolist() == ["arm", "scope", "name", "value"]
    assert {"TiDB (v1)", "TiDB (v2)"} <= set(tables["software"]["name"])
    assert (tables["hardware"]["server"] == f"{socket.gethostname()} (client)").sum() == 1


def test_tables_in_chinese(fake_tidb, host):
    """The zh report's environment tables: Chinese headers, and every word this module writes
    (purposes, scopes, placeholders, the hardware phrases) in Chinese; names stay."""
    from tibenchlib.envcapture import tables as et

    cap = {"host": host, "database": ec.capture_database(fake_tidb)}
    zh = ec.environment_tables(cap, "zh")
    assert zh["hardware"].columns.tolist() == ["主机", "CPU", "内存", "NUMA 节点", "磁盘"]
    assert zh["software"].columns.tolist() == ["名称", "用途", "版本"]
    assert zh["configuration"].columns.tolist() == ["范围", "参数", "取值"]
    assert zh["unavailable"].columns.tolist() == ["项目", "原因"]
    hw = zh["hardware"].set_index("主机")
    assert hw.loc["0.0.0.0（tidb）", "CPU"] == "16 个逻辑核，8 个物理核"
    me = hw.loc[f"{socket.gethostname()}（客户端）", "CPU"]
    assert f"{os.cpu_count()} 个逻辑 CPU" in me and "logical" not in me
    # every purpose the module can write has its Chinese, and no English word is left in them
    purposes = [p for _, p in et._TOOLS.values()] + [p for _, p in et._COMPONENTS.values()]
    assert all(p in et._ZH_CELLS for p in purposes), [p for p in purposes if p not in et._ZH_CELLS]
    words = re.compile(r"\b(?!CPU|SQL|OLTP|YCSB|TPC|TiDB|MySQL|Python|Linux|notebook)[A-Za-z]{3,}")
    assert not [v for v in zh["software"]["用途"] if words.search(v)]
    scopes = set(zh["configuration"]["范围"])
    assert "客户端主机" in scopes, scopes
    assert all(v in ("客户端主机", "全局变量") or v.endswith(" 配置项") for v in scopes), scopes
    cfg = pd.DataFrame({"scope": ["global variable", "tikv config"], "name": "x", "value": "1"})
    assert et.in_chinese("configuration", cfg)["范围"].tolist() == ["全局变量", "tikv 配置项"]
    # the English tables are unchanged
    assert ec.environment_tables(cap)["software"].columns.tolist() == ["name", "purpose", "version"]
