"""What a reader must know to read a finding right, in English and Chinese.

Each function returns one :class:`~tibenchlib.findings.record.Caveat` (or ``None`` when the
design needs none): a stand-in (CPU pinning for NUMA node binding on a one-node host, MariaDB
parallel replication for DM's syncer), a scaled design (TPC-C keying and think times shortened,
a TPC-C-like driver that is not audited) or an arm whose name hides what it is
(``flush2`` = ``innodb_flush_log_at_trx_commit=2``, not durable). The findings attach them where
they are made (:mod:`tibenchlib.findings`); the terminal, the report, the notebooks and
``findings.json`` show them with the finding. Pure: values in, caveats out.
"""

from __future__ import annotations

from collections.abc import Mapping

from .record import Caveat

__all__ = [
    "TPMC_PER_WAREHOUSE",
    "arm_meaning",
    "dm_stand_in",
    "numa_node_on_one_node",
    "numa_pinning",
    "tpcc_not_audited",
    "tpcc_wait_scaled",
]

#: The specification's ceiling on a warehouse's ten terminals under its keying and think times
#: (about 12.86 New-Order transactions per minute), which go-tpc's efficiency divides by.
TPMC_PER_WAREHOUSE = 12.86
#: The TPC-C specification's table sizes the Lua driver may scale down (items; customers per
#: district).
SPEC_ITEMS, SPEC_CUSTOMERS = 100_000, 3_000

#: Server options whose value decides what a commit promises, by option and value: what a
#: reader must know (en, zh).
_DURABILITY: dict[str, dict[str, tuple[str, str]]] = {
    "innodb_flush_log_at_trx_commit": {
        "1": (
            "each commit's redo log is flushed to disk before the commit returns (durable)",
            "每次提交返回前都把重做日志刷到磁盘（持久化）",
        ),
        "2": (
            "the redo log is written at each commit but flushed to disk about once a second, "
            "so a crash of the host or a power loss can lose the last second of commits (not "
            "durable)",
            "每次提交只写入重做日志、约每秒刷盘一次，主机崩溃或断电可能丢失最后约 1 秒的已提交"
            "事务（非持久化）",
        ),
        "0": (
            "the redo log is written and flushed about once a second, so even a crash of the "
            "server alone can lose the last second of commits (not durable)",
            "重做日志约每秒写入并刷盘一次，即使只是数据库进程崩溃也可能丢失最后约 1 秒的已提交"
            "事务（非持久化）",
        ),
    },
    "sync_binlog": {
        "0": (
            "the binary log is never synced by the server (the operating system decides), so a "
            "crash can lose binary-log events that replicas and point-in-time recovery need",
            "二进制日志不由数据库主动刷盘（由操作系统决定），崩溃可能丢失复制和按时间点恢复所需"
            "的 binlog 事件",
        ),
    },
    "innodb_doublewrite": {
        "0": (
            "the doublewrite buffer is off, so a page torn by a crash cannot be repaired",
            "关闭了双写缓冲，崩溃时写坏的数据页无法修复",
        ),
        "off": (
            "the doublewrite buffer is off, so a page torn by a crash cannot be repaired",
            "关闭了双写缓冲，崩溃时写坏的数据页无法修复",
        ),
    },
}


def _value(v) -> str:
    if isinstance(v, bool):
        return "ON" if v else "OFF"
    return str(v)


def arm_meaning(
    label: str,
    server_options: Mapping | None = None,
    cpu_binding: str | None = None,
    target_kind: str | None = None,
) -> Caveat | None:
    """What an arm is, when its name does not say it: its server options (with what a
    non-durable setting gives up), its CPU binding, its target. ``None`` for an arm that is
    only its name (nothing set)."""
    opts = dict(server_options or {})
    if not opts and not cpu_binding and not target_kind:
        return None
    en_parts = [f"{k}={_value(v)}" for k, v in opts.items()]
    zh_parts = list(en_parts)
    if cpu_binding:
        en_parts.append(f"server bound to {cpu_binding}")
        zh_parts.append(f"数据库绑定到 {cpu_binding}")
    if target_kind:
        en_parts.append(f"target {target_kind}")
        zh_parts.append(f"测试目标 {target_kind}")
    en = f"`{label}` means {', '.join(en_parts)}"
    zh = f"测试组 `{label}` 即 {'，'.join(zh_parts)}"
    risks = [
        _DURABILITY[k.lower()][_value(v).lower()]
        for k, v in opts.items()
        if k.lower() in _DURABILITY and _value(v).lower() in _DURABILITY[k.lower()]
    ]
    if risks:
        en += ": " + "; ".join(r[0] for r in risks) + "."
        zh += "：" + "；".join(r[1] for r in risks) + "。"
    else:
        en += "."
        zh += "。"
    return Caveat(f"arm_{label}", {"en": en, "zh": zh})


def numa_pinning(
    policy: str, cpus: str | None, n_cpus: int | None, host_cpus: int | None, one_node: bool
) -> Caveat:
    """A ``cpus:`` policy: the server pinned to fewer CPUs than the host has, so its throughput
    measures the CPUs taken away; on a one-node host it stands in for node binding.

    Parameters
    ----------
    policy
        The policy's label (``cpus:0``).
    cpus, n_cpus
        The CPU list the server was seen bound to, and how many CPUs that is (None: unknown).
    host_cpus
        The host's logical CPUs (None: unknown).
    one_node
        The host has one NUMA node (nothing remote to avoid).
    """
    if n_cpus and host_cpus:
        en_of = f" to CPU {cpus}, {n_cpus} of the host's {host_cpus} CPUs"
        zh_of = f"到 CPU {cpus}（本机 {host_cpus} 个 CPU 中的 {n_cpus} 个）"
    else:
        en_of, zh_of = " to a subset of the host's CPUs", "到本机的部分 CPU 上"
    en = f"`{policy}` pins the server{en_of}: a lower throughput against `unbound` measures "
    en += "the CPUs taken away, not a cost of binding."
    zh = f"`{policy}` 把数据库固定{zh_of}：相对 `unbound` 的吞吐下降反映的是可用 CPU 变少，"
    zh += "而不是绑定本身的代价。"
    if one_node:
        en += (
            " This host has one NUMA node: CPU pinning stands in for node binding, and there is "
            "no remote memory whose avoidance binding could show."
        )
        zh += "本机只有 1 个 NUMA 节点：这里用 CPU 绑定代替节点绑定，不存在可避免的跨节点内存访问。"
    return Caveat("numa_cpu_pinning", {"en": en, "zh": zh})


def numa_node_on_one_node(policy: str) -> Caveat:
    """A ``node:`` or ``interleave:`` policy on a one-node host: every CPU and all memory, the
    same as ``unbound``; a difference is noise or the binding tool, not NUMA."""
    return Caveat(
        "numa_one_node",
        {
            "en": f"This host has one NUMA node: `{policy}` gives the server every CPU and all "
            "memory, the same as `unbound`; what it can show is the cost of the binding tool, "
            "not a NUMA effect.",
            "zh": f"本机只有 1 个 NUMA 节点：`{policy}` 下数据库仍可使用全部 CPU 和内存，与 "
            "`unbound` 相同；它能反映的只是绑定工具本身的开销，而不是 NUMA 效应。",
        },
    )


def dm_stand_in(unit: str) -> Caveat | None:
    """The embedded DM phase's stand-ins: MariaDB parallel replication for DM's syncer
    (``sync``); mydumper and myloader between two MariaDB servers for DM's dump and load
    units (``dump``, ``load``)."""
    if unit == "sync":
        return Caveat(
            "dm_sync_stand_in",
            {
                "en": "DM's sync unit is stood in for by MariaDB's parallel replication between "
                "two MariaDB servers on this host (workers = slave_parallel_threads): the "
                "figures rank the settings of that replica, not of DM's syncer writing to TiDB.",
                "zh": "DM 的增量同步单元在这里由本机两个 MariaDB 之间的并行复制代替（worker "
                "数 = slave_parallel_threads）：结果比较的是该复制的各项设置，而不是 DM "
                "同步到 TiDB 时的表现。",
            },
        )
    if unit in ("dump", "load", "full"):
        return Caveat(
            "dm_full_stand_in",
            {
                "en": "DM's full migration is stood in for by mydumper and myloader between two "
                "MariaDB servers on this host: the figures rank those tools' settings, not DM's "
                "dump and load units writing to TiDB.",
                "zh": "DM 的全量迁移在这里由本机两个 MariaDB 之间的 mydumper 和 myloader 代替："
                "结果比较的是这两个工具的设置，而不是 DM 全量导出、导入到 TiDB 时的表现。",
            },
        )
    return None


def tpcc_wait_scaled(wait_scale: float, tpmc: float | None, warehouses: int) -> Caveat:
    """Keying and think times shortened by ``wait_scale``: the specification's ceiling of
    about :data:`TPMC_PER_WAREHOUSE` tpmC per warehouse no longer holds, and the measured tpmC
    is said against it."""
    ceiling = TPMC_PER_WAREHOUSE * warehouses
    on_en = f" ({ceiling:,.2f} on {warehouses})" if warehouses != 1 else ""
    on_zh = f"（{warehouses} 个仓库为 {ceiling:,.2f}）" if warehouses != 1 else ""
    en = (
        f"Keying and think times run at {wait_scale:g} of the specification's: its ceiling of "
        f"about {TPMC_PER_WAREHOUSE} tpmC per warehouse{on_en} does not hold"
    )
    zh = (
        f"键入时间和思考时间按规范的 {wait_scale:g} 倍运行：规范规定的每仓库约 "
        f"{TPMC_PER_WAREHOUSE} tpmC 上限{on_zh}不再适用"
    )
    if tpmc is not None and tpmc == tpmc and tpmc > ceiling:
        en += f", and the measured {tpmc:,.0f} tpmC is {tpmc / ceiling:,.0f}× it"
        zh += f"，实测 {tpmc:,.0f} tpmC 是该上限的 {tpmc / ceiling:,.0f} 倍"
    en += "; these figures are not comparable with a TPC-C result."
    zh += "；这些结果不能与 TPC-C 结果相比较。"
    return Caveat("tpcc_wait_scaled", {"en": en, "zh": zh})


def tpcc_not_audited(tool: str, items: int | None = None, customers: int | None = None) -> Caveat:
    """TPC-C-like, not audited: the driver that ran it, and the table sizes scaled below the
    specification's when they were."""
    driver = {"en": "the sysbench Lua driver", "zh": " sysbench Lua 驱动"}
    if tool == "go-tpc":
        driver = {"en": "go-tpc", "zh": " go-tpc "}
    en = f"TPC-C-like, measured with {driver['en']}: not an audited TPC-C result"
    zh = f"类 TPC-C 测试，使用{driver['zh']}测得：不是经过审计的 TPC-C 结果"
    scaled_en, scaled_zh = [], []
    if items is not None and items < SPEC_ITEMS:
        scaled_en.append(f"{items:,} items of the specification's {SPEC_ITEMS:,}")
        scaled_zh.append(f"商品数 {items:,}（规范为 {SPEC_ITEMS:,}）")
    if customers is not None and customers < SPEC_CUSTOMERS:
        scaled_en.append(f"{customers:,} customers per district of {SPEC_CUSTOMERS:,}")
        scaled_zh.append(f"每区客户数 {customers:,}（规范为 {SPEC_CUSTOMERS:,}）")
    if scaled_en:
        en += f"; its tables are scaled down: {', '.join(scaled_en)}"
        zh += f"；数据表按比例缩小：{'，'.join(scaled_zh)}"
    return Caveat("tpcc_not_audited", {"en": en + ".", "zh": zh + "。"})
