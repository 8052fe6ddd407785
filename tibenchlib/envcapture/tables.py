"""The reports' environment tables (hardware, software, configuration, unavailable) from saved
captures: :func:`environment_tables`. Pure: dicts in, DataFrames out."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import pandas as pd

from .record import is_unavailable, list_unavailable
from .software import _TOOLS

_COMPONENTS = {
    "tidb": ("TiDB server", "SQL layer (stateless)"),
    "pd": ("PD", "placement driver: metadata, scheduling, timestamps"),
    "tikv": ("TiKV", "row store"),
    "tiflash": ("TiFlash", "column store"),
    "tiproxy": ("TiProxy", "SQL proxy"),
    "ticdc": ("TiCDC", "change data capture"),
}
_FLAVOR_NAMES = {"tidb": "TiDB", "mariadb": "MariaDB", "mysql": "MySQL"}
_LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


def _human_bytes(n: Any) -> str:
    if not isinstance(n, int | float) or isinstance(n, bool):
        return ""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return ""


def _text(v: Any) -> str:
    if is_unavailable(v):
        return "unavailable"
    return "" if v is None else str(v)


def _captures(capture: Mapping[str, Any]) -> list[tuple[str | None, dict | None, dict | None]]:
    """(label, host, database) triples in any of the shapes the phases save."""
    if capture.get("kind") == "host":
        return [(None, dict(capture), None)]
    if capture.get("kind") == "database":
        return [(None, None, dict(capture))]
    out = []
    if "host" in capture or "database" in capture:
        out.append((capture.get("arm"), capture.get("host"), capture.get("database")))
    for label, sub in (capture.get("arms") or {}).items():
        if isinstance(sub, Mapping):
            out.append((sub.get("arm", label), sub.get("host"), sub.get("database")))
    return out


def _host_row(host: Mapping, roles: list[str]) -> dict:
    cpu, mem, numa = host.get("cpu", {}), host.get("memory", {}), host.get("numa", {})
    cpu = cpu if isinstance(cpu, Mapping) else {}
    topo = []
    if isinstance(cpu.get("sockets"), int):
        topo.append(f"{cpu['sockets']} socket(s)")
    if isinstance(cpu.get("cores_per_socket"), int):
        topo.append(f"{cpu['cores_per_socket']} cores/socket")
    if isinstance(cpu.get("threads_per_core"), int):
        topo.append(f"{cpu['threads_per_core']} threads/core")
    cpu_text = f"{_text(cpu.get('model'))}, {_text(cpu.get('logical'))} logical CPUs"
    if topo:
        cpu_text += f" ({', '.join(topo)})"
    nodes = numa.get("nodes") if isinstance(numa, Mapping) else None
    if isinstance(nodes, list):
        numa_text = f"{len(nodes)}: " + "; ".join(
            f"node{n['node']} cpus {_text(n.get('cpulist'))} {_human_bytes(n.get('mem_total'))}"
            for n in nodes
        )
    else:
        numa_text = "unavailable"
    dd = host.get("disks", {}).get("data_dir") if isinstance(host.get("disks"), Mapping) else None
    if isinstance(dd, Mapping) and not is_unavailable(dd):
        kind = {True: "rotational", False: "non-rotational"}.get(dd.get("rotational"), "")
        disk_text = ", ".join(
            x
            for x in (
                _text(dd.get("device")),
                _text(dd.get("fstype")),
                _human_bytes(dd.get("total")),
                kind,
                f"data dir on {_text(dd.get('mountpoint'))}",
            )
            if x
        )
    else:
        disk_text = _text(dd) if dd is not None else ""
    name = _text(host.get("hostname"))
    return {
        "server": f"{name} ({', '.join(roles)})" if roles else name,
        "CPU": cpu_text,
        "memory": _human_bytes(mem.get("total")) if isinstance(mem, Mapping) else "unavailable",
        "NUMA nodes": numa_text,
        "disks": disk_text,
    }


def _cluster_rows(tidb: Mapping) -> list[dict]:
    info, hw = tidb.get("cluster_info"), tidb.get("cluster_hardware")
    roles: dict[str, set[str]] = {}
    if isinstance(info, list):
        for r in info:
            host = str(r.get("instance", "")).rsplit(":", 1)[0]
            roles.setdefault(host, set()).add(str(r.get("type")))
    facts: dict[str, dict[str, Any]] = {}
    if isinstance(hw, list):
        for r in hw:
            host = str(r.get("instance", "")).rsplit(":", 1)[0]
            f = facts.setdefault(host, {"disks": {}})
            dev, name, value = r.get("device_type"), r.get("name"), r.get("value")
            if dev == "cpu" and name in ("cpu-logical-cores", "cpu-physical-cores"):
                f[name] = value
            elif dev == "memory" and name == "capacity":
                f["memory"] = value
            elif dev == "disk":
                f["disks"].setdefault(r.get("device_name"), {})[name] = value
    rows = []
    for host in sorted(set(roles) | set(facts)):
        f = facts.get(host, {"disks": {}})
        cpu = ", ".join(
            f"{f[k]} {k.split('-')[1]} cores"
            for k in ("cpu-logical-cores", "cpu-physical-cores")
            if k in f
        )
        mem = f.get("memory")
        mem_text = _human_bytes(int(mem)) if str(mem or "").isdigit() else _text(mem)
        disks = "; ".join(
            " ".join(
                x
                for x in (
                    str(dev),
                    _human_bytes(int(d["total"])) if str(d.get("total", "")).isdigit() else "",
                    str(d.get("fstype", "")),
                    str(d.get("path", "")),
                )
                if x
            )
            for dev, d in sorted(f["disks"].items(), key=lambda kv: str(kv[0]))
        )
        missing = "unavailable" if not isinstance(hw, list) else ""
        rows.append(
            {
                "server": f"{host} ({', '.join(sorted(roles.get(host, [])))})",
                "CPU": cpu or missing,
                "memory": mem_text or missing,
                "NUMA nodes": "",
                "disks": disks or missing,
            }
        )
    return rows


def _section(d: Mapping, key: str) -> Mapping:
    v = d.get(key)
    return v if isinstance(v, Mapping) and not is_unavailable(v) else {}


def _host_software(host: Mapping) -> list[tuple[str, str, str]]:
    os_, tools, pkgs = _section(host, "os"), _section(host, "tools"), _section(host, "packages")
    rows = [
        (_text(os_.get("pretty_name")), "operating system", _text(os_.get("version_id"))),
        ("Linux kernel", "operating system kernel", _text(os_.get("kernel"))),
        ("Python", "notebooks and analysis", _text(_section(host, "python").get("version"))),
    ]
    rows += [
        (
            name,
            _TOOLS.get(name, (None, ""))[1],
            "installed, version unknown"
            if is_unavailable(t.get("version"))
            else _text(t.get("version")),
        )
        for name, t in tools.items()
        if isinstance(t, Mapping) and not is_unavailable(t)
    ]
    rows += [
        (name, "Python package", _text(pkgs[name]))
        for name in ("tibench", "pandas", "numpy", "scipy", "statsmodels", "sqlalchemy")
        if name in pkgs
    ]
    return rows


def _host_config(host: Mapping) -> list[tuple[str, str, str]]:
    os_ = _section(host, "os")
    return [
        ("client host", "transparent_hugepage", _text(os_.get("transparent_hugepage"))),
        ("client host", "swappiness", _text(os_.get("swappiness"))),
        ("client host", "cpu governor", _text(_section(host, "cpu").get("governor"))),
    ]


def _db_software(db: Mapping, tag: str) -> list[tuple[str, str, str]]:
    flavor = db.get("flavor")
    rows = [
        (
            _FLAVOR_NAMES.get(flavor, _text(flavor)) + tag,
            "database under test",
            _text(db.get("version")),
        )
    ]
    info = _section(db, "tidb").get("cluster_info")
    if isinstance(info, list):
        versions: dict[str, set[str]] = {}
        for r in info:
            versions.setdefault(str(r.get("type")), set()).add(str(r.get("version")))
        for typ, vs in sorted(versions.items()):
            name, purpose = _COMPONENTS.get(typ, (typ, "cluster component"))
            rows.append((name + tag, purpose, " / ".join(sorted(vs))))
    return rows


def environment_tables(capture: Mapping[str, Any], lang: str = "en") -> dict[str, pd.DataFrame]:
    """The reports' environment tables, for display.

    Parameters
    ----------
    capture
        A :func:`capture_host` or :func:`capture_database` dict, or a dict holding ``host``
        and/or ``database`` (and optionally ``arm``), or one with ``arms`` mapping labels to
        such dicts.

    Returns
    -------
    dict of DataFrame
        ``hardware`` (server | CPU | memory | NUMA nodes | disks; the client host, and each
        TiDB cluster host from ``CLUSTER_HARDWARE``), ``software`` (name | purpose | version),
        ``configuration`` (scope | name | value, with ``arm`` first when there are several
        arms) and ``unavailable`` (item | reason). With ``lang="zh"``, headers and the words
        this module writes are Chinese (:func:`in_chinese`); names, versions, values and the
        tools' own messages stay as they are.
    """
    triples = _captures(capture)
    several = len({label for label, _, _ in triples}) > 1
    hardware: list[dict] = []
    software: list[tuple] = []
    config: list[tuple] = []
    missing: list[tuple] = []
    seen_hosts: set[str] = set()
    for label, host, db in triples:
        where = f"{label}: " if label else ""
        if host:
            flavor = db.get("flavor") if db else None
            local = bool(db) and any(h in str(db.get("url", "")) for h in _LOCAL_HOSTS)
            roles = ["client"] + ([_FLAVOR_NAMES.get(flavor, str(flavor))] if local else [])
            row = _host_row(host, roles)
            if row["server"] not in seen_hosts:
                seen_hosts.add(row["server"])
                hardware.append(row)
                software += _host_software(host)
                config += [(label, *r) for r in _host_config(host)]
            missing += [(f"{where}host.{p}", r) for p, r in list_unavailable(host)]
        if db:
            software += _db_software(db, f" ({label})" if several and label else "")
            tidb = _section(db, "tidb")
            if tidb:
                hardware += _cluster_rows(tidb)
            curated = db.get("curated") if isinstance(db.get("curated"), list) else []
            config += [(label, r["scope"], r["name"], _text(r["value"])) for r in curated]
            missing += [(f"{where}database.{p}", r) for p, r in list_unavailable(db)]
    cfg = pd.DataFrame(config, columns=["arm", "scope", "name", "value"])
    if not several:
        cfg = cfg.drop(columns="arm")
    hw_columns = ["server", "CPU", "memory", "NUMA nodes", "disks"]
    tables = {
        "hardware": pd.DataFrame(hardware, columns=hw_columns),
        "software": pd.DataFrame(software, columns=["name", "purpose", "version"]),
        "configuration": cfg,
        "unavailable": pd.DataFrame(missing, columns=["item", "reason"]),
    }
    return {k: in_chinese(k, t) for k, t in tables.items()} if lang == "zh" else tables


#: the tables' headers in Chinese, by table
_ZH_COLUMNS = {
    "hardware": {"server": "主机", "memory": "内存", "NUMA nodes": "NUMA 节点", "disks": "磁盘"},
    "software": {"name": "名称", "purpose": "用途", "version": "版本"},
    "configuration": {"arm": "测试组", "scope": "范围", "name": "参数", "value": "取值"},
    "unavailable": {"item": "项目", "reason": "原因"},
}

#: whole cells this module writes (purposes, scopes, placeholders), in Chinese
_ZH_CELLS = {
    "unavailable": "无法获取",
    "installed, version unknown": "已安装，版本未知",
    "operating system": "操作系统",
    "Linux kernel": "Linux 内核",
    "operating system kernel": "操作系统内核",
    "notebooks and analysis": "notebook 与数据分析",
    "Python package": "Python 包",
    "database under test": "被测数据库",
    "cluster component": "集群组件",
    "OLTP benchmark driver": "OLTP 压测工具",
    "embedded database server": "内置数据库服务器",
    "MySQL server": "MySQL 服务器",
    "CPU and memory binding": "CPU 与内存绑定",
    "YCSB benchmark driver": "YCSB 压测工具",
    "TPC-C / TPC-H benchmark driver": "TPC-C / TPC-H 压测工具",
    "TiDB cluster management": "TiDB 集群管理",
    "SQL layer (stateless)": "SQL 层（无状态）",
    "placement driver: metadata, scheduling, timestamps": "调度中心：元数据、调度、时间戳",
    "row store": "行存储",
    "column store": "列存储",
    "SQL proxy": "SQL 代理",
    "change data capture": "数据变更捕获",
    "client host": "客户端主机",
    "global variable": "全局变量",
    "cpu governor": "CPU 调频策略",
}

#: the phrases inside hardware cells, in Chinese (regular expression, replacement), in order
_ZH_PHRASES = [
    (r"(\d+) logical CPUs", r"\1 个逻辑 CPU"),
    (r"(\d+) socket\(s\)", r"\1 路"),
    (r"(\d+) cores/socket", r"每路 \1 核"),
    (r"(\d+) threads/core", r"每核 \1 线程"),
    (r"(\d+) logical cores", r"\1 个逻辑核"),
    (r"(\d+) physical cores", r"\1 个物理核"),
    (r"^(\d+): ", r"\1 个："),
    (r" cpus ", " CPU "),
    (r"\bnon-rotational\b", "非机械盘"),
    (r"\brotational\b", "机械盘"),
    (r"data dir on ", "数据目录所在 "),
    (r"\bunavailable\b", "无法获取"),
    (r"\(client", "(客户端"),
    (r" config$", " 配置项"),
    (r", ", "，"),
    (r"; ", "；"),
    (r" \(", "（"),
    (r"\(", "（"),
    (r"\)", "）"),
]


#: why an item is unavailable (the capture's own reasons), in Chinese; what follows a colon is
#: the system's or the tool's message and stays as it is, the commonest system ones translated
_ZH_REASONS = [
    (r"^(.+) not found on PATH$", r"PATH 中找不到 \1"),
    (r"^(\S+) prints no version$", r"\1 不输出版本号"),
    (r"^cannot read (.+?): ", r"无法读取 \1："),
    (r"^cannot list (.+?): ", r"无法列出 \1："),
    (r"^not installed$", "未安装"),
    (r"^no data directory given$", "未指定数据目录"),
    (r"^no mounted filesystem holds the data directory$", "数据目录不在任何已挂载的文件系统上"),
    (r"^(\S+) is not a block device$", r"\1 不是块设备"),
    (r"^no model name in cpuinfo or lscpu$", "cpuinfo 和 lscpu 中均无 CPU 型号"),
    (r"^no topology in cpuinfo and no lscpu$", "cpuinfo 中无 CPU 拓扑，且没有 lscpu"),
    (r"^cpu count unknown$", "CPU 数未知"),
    (
        r"^os.sched_getaffinity is not available on this platform$",
        "此平台不支持 os.sched_getaffinity",
    ),
    (r"^no version in: ", "输出中没有版本号："),
    (r"^(.+) exited with (-?\d+) and printed nothing$", r"\1 退出码 \2，无输出"),
    (r"^VERSION\(\) failed and no flavor was given$", "VERSION() 失败，且未指定数据库类型"),
    (r"No such file or directory$", "文件或目录不存在"),
    (r"Permission denied$", "权限不足"),
]


def in_chinese(name: str, table: pd.DataFrame) -> pd.DataFrame:
    """One of :func:`environment_tables`' tables (``name``) with Chinese headers, and the
    cells this module writes in Chinese: purposes, scopes and placeholders whole, and the
    hardware cells' phrases ("2 logical CPUs (1 socket(s)…)" → "2 个逻辑 CPU（1 路…）")."""
    t = table.rename(columns=_ZH_COLUMNS.get(name, {})).copy()
    for col in t.columns:
        rules = (
            _ZH_REASONS
            if col == "原因"
            else _ZH_PHRASES
            if name == "hardware" or col == "范围"
            else []
        )
        t[col] = [_zh_cell(v, rules) for v in t[col]]
    return t


def _zh_cell(v: Any, rules: list[tuple[str, str]]) -> Any:
    if not isinstance(v, str):
        return v
    if v in _ZH_CELLS:
        return _ZH_CELLS[v]
    for pattern, repl in rules:
        v = re.sub(pattern, repl, v)
    return v
