"""NUMA binding of a TiUP cluster, read from its topology file (read-only).

TiUP binds an instance when its entry carries ``numa_node`` (and optionally ``numa_cores``): the
generated ``run_*.sh`` then starts the server as ``numactl --cpunodebind=N --membind=N [-C
cores]``. This module lists every instance with its binding, checks report 000's block-cache
rule for TiKV, and prints the topology lines that bind each instance, so a user can re-deploy
and label the runs made afterwards with the policy.

The block-cache rule: with one TiKV per NUMA node, each instance's
``storage.block-cache.capacity`` must stay below (host memory × 0.6) / NUMA nodes, or TiKV may
run out of memory on its node (report 000 saw TPS drop to the floor). When the capacity is not
set TiKV sizes the cache from the host's whole memory (45% of it, per TiKV's configuration
docs), which breaks the rule on any host with two or more nodes.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pandas as pd
import yaml

from .cpulist import parse_cpulist

__all__ = [
    "BLOCK_CACHE_KEY",
    "binding_snippet",
    "check_block_cache",
    "load_topology",
    "parse_size",
    "topology_instances",
]

BLOCK_CACHE_KEY = "storage.block-cache.capacity"
TIKV_DEFAULT_BLOCK_CACHE_FRACTION = 0.45
MEMORY_SHARE = 0.6

# Roles whose servers tibench suggests binding; monitoring stays where it is.
_BIND_ROLES = ("tidb", "tikv", "pd", "tiflash")
_DEFAULT_PORTS = {"tidb": 4000, "tikv": 20160, "pd": 2379, "tiflash": 9000}
_PORT_KEYS = ("port", "client_port", "tcp_port", "web_port")
_BINARIES = {
    "tidb": "bin/tidb-server",
    "tikv": "bin/tikv-server",
    "pd": "bin/pd-server",
    "tiflash": "bin/tiflash/tiflash",
}

INSTANCE_COLUMNS = [
    "role",
    "host",
    "port",
    "numa_node",
    "numa_cores",
    "nodes",
    "block_cache_raw",
    "block_cache_bytes",
    "block_cache_source",
]


def load_topology(source: str | os.PathLike | dict) -> dict:
    """Read a topology: a file path, YAML text, or an already-loaded dict.

    A TiUP ``meta.yaml`` (the topology under a ``topology:`` key) is accepted too.
    """
    if isinstance(source, dict):
        topo = source
    else:
        text = str(source)
        if isinstance(source, os.PathLike) or ("\n" not in text and Path(text).exists()):
            text = Path(source).read_text()
        topo = yaml.safe_load(text) or {}
    if not isinstance(topo, dict):
        raise ValueError("a TiUP topology is a YAML mapping")
    if "topology" in topo and isinstance(topo["topology"], dict):
        topo = topo["topology"]
    return topo


_SIZE_UNITS = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50}


def parse_size(value) -> int | None:
    """Parse a TiKV size such as ``"37GB"``, ``"512MiB"`` or ``1073741824`` into bytes.

    TiKV reads KB/MB/GB/TB/PB and their KiB/MiB/… forms alike, as powers of 1024. Returns
    ``None`` when the value is not a size (e.g. a template placeholder).
    """
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return int(value)
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGTP]?)(?:I?B)?\s*", str(value).upper())
    if not m:
        return None
    return int(float(m.group(1)) * _SIZE_UNITS[m.group(2)])


def _lookup(config, dotted: str):
    """A dotted key in a TiUP config mapping, flattened (``a.b.c: v``), nested, or mixed."""
    if not isinstance(config, dict):
        return None
    if dotted in config:
        return config[dotted]
    parts = dotted.split(".")
    for i in range(1, len(parts)):
        head = ".".join(parts[:i])
        if isinstance(config.get(head), dict):
            found = _lookup(config[head], ".".join(parts[i:]))
            if found is not None:
                return found
    return None


def _nodes(value) -> list[int] | None:
    if value is None or value == "":
        return None
    try:
        return parse_cpulist(str(value))
    except ValueError:
        return None


def topology_instances(topology: str | os.PathLike | dict) -> pd.DataFrame:
    """Every instance of a topology with its NUMA binding and, for TiKV, its block cache.

    Returns
    -------
    DataFrame
        :data:`INSTANCE_COLUMNS`: ``role`` (``tidb``, ``tikv``, ``pd``, ``tiflash``, …, from the
        ``*_servers`` keys), ``host``, ``port``, ``numa_node`` and ``numa_cores`` as written
        (``None`` when absent), ``nodes`` (the node numbers, or ``None``), and for TiKV
        ``block_cache_raw`` (as written), ``block_cache_bytes`` and ``block_cache_source``
        (``instance``, ``server_configs`` or ``default``).
    """
    topo = load_topology(topology)
    shared = topo.get("server_configs") or {}
    rows = []
    for key, entries in topo.items():
        if not key.endswith("_servers") or not isinstance(entries, list):
            continue
        role = key[: -len("_servers")]
        for inst in entries:
            if not isinstance(inst, dict):
                continue
            port = next((inst[k] for k in _PORT_KEYS if k in inst), _DEFAULT_PORTS.get(role))
            raw = source = None
            if role == "tikv":
                raw = _lookup(inst.get("config"), BLOCK_CACHE_KEY)
                source = "instance" if raw is not None else None
                if raw is None:
                    raw = _lookup(shared.get("tikv"), BLOCK_CACHE_KEY)
                    source = "server_configs" if raw is not None else "default"
            numa = inst.get("numa_node")
            rows.append(
                {
                    "role": role,
                    "host": inst.get("host"),
                    "port": port,
                    "numa_node": None if numa is None else str(numa),
                    "numa_cores": inst.get("numa_cores"),
                    "nodes": _nodes(numa),
                    "block_cache_raw": raw,
                    "block_cache_bytes": parse_size(raw),
                    "block_cache_source": source,
                }
            )
    df = pd.DataFrame(rows, columns=INSTANCE_COLUMNS)
    return df.astype({"port": "Int64", "block_cache_bytes": "Int64"})


def _given(x) -> bool:
    """Not None/NaN/NA (pandas turns a missing string into NaN)."""
    return x is not None and not (pd.api.types.is_scalar(x) and pd.isna(x))


def _per_host(value, host, what: str, warnings: list[str]):
    if isinstance(value, dict):
        if host not in value:
            warnings.append(f"{what} of host {host} not given: its TiKV instances not checked")
            return None
        return value[host]
    return value


def _gib(x: float) -> str:
    return f"{x / (1 << 30):.1f} GiB"


def check_block_cache(
    instances: pd.DataFrame,
    host_memory: int | dict[str, int],
    numa_nodes: int | dict[str, int],
) -> tuple[pd.DataFrame, list[str]]:
    """Check report 000's rule: block cache per TiKV < (host memory × 0.6) / NUMA nodes.

    Parameters
    ----------
    instances
        :func:`topology_instances` of the cluster.
    host_memory
        Bytes of memory of every host, or per host.
    numa_nodes
        NUMA nodes of every host, or per host.

    Returns
    -------
    (DataFrame, list of str)
        One row per TiKV: ``host``, ``port``, ``numa_node``, ``block_cache_bytes`` (the
        default's estimate when unset), ``limit_bytes``, ``ok``; and the warnings.
    """
    warnings: list[str] = []
    tikv = instances[instances["role"] == "tikv"]
    rows = []
    for r in tikv.itertuples():
        mem = _per_host(host_memory, r.host, "memory", warnings)
        n = _per_host(numa_nodes, r.host, "NUMA node count", warnings)
        where = f"TiKV {r.host}:{r.port}"
        row = {
            "host": r.host,
            "port": r.port,
            "numa_node": r.numa_node,
            "block_cache_bytes": r.block_cache_bytes if _given(r.block_cache_bytes) else None,
            "limit_bytes": None,
            "ok": None,
        }
        if mem is None or n is None:
            rows.append(row)
            continue
        limit = mem * MEMORY_SHARE / max(1, int(n))
        row["limit_bytes"] = limit
        cap = r.block_cache_bytes if _given(r.block_cache_bytes) else None
        if r.block_cache_source == "default":
            cap = mem * TIKV_DEFAULT_BLOCK_CACHE_FRACTION
            row["block_cache_bytes"] = cap
            row["ok"] = cap < limit
            if not row["ok"]:
                warnings.append(
                    f"{where}: {BLOCK_CACHE_KEY} not set, so TiKV sizes it from the whole host "
                    f"(≈{_gib(cap)}), above (memory × 0.6) / {n} nodes = {_gib(limit)}; set it "
                    f"below {_gib(limit)} when TiKV is bound to one node"
                )
        elif cap is None:
            warnings.append(
                f"{where}: {BLOCK_CACHE_KEY} = {r.block_cache_raw!r} is not a size: "
                "rule not checked"
            )
        else:
            row["ok"] = cap < limit
            if not row["ok"]:
                warnings.append(
                    f"{where}: {BLOCK_CACHE_KEY} = {r.block_cache_raw} ({_gib(cap)}) is not below "
                    f"(memory {_gib(mem)} × 0.6) / {n} nodes = {_gib(limit)}: TiKV may run out "
                    "of memory on its node (report 000: TPS to the floor)"
                )
        rows.append(row)
    per_host = tikv.groupby("host").size()
    for host, count in per_host.items():
        n = numa_nodes.get(host) if isinstance(numa_nodes, dict) else numa_nodes
        if n and count > int(n):
            warnings.append(
                f"host {host}: {count} TiKV instances on {n} NUMA node(s); the rule assumes one "
                "instance per node"
            )
    for r in tikv[tikv["numa_node"].isna()].itertuples():
        warnings.append(f"TiKV {r.host}:{r.port} has no numa_node: it runs unbound")
    cols = ["host", "port", "numa_node", "block_cache_bytes", "limit_bytes", "ok"]
    return pd.DataFrame(rows, columns=cols), warnings


def _numactl(nodes: str, cores) -> str:
    cmd = f"numactl --cpunodebind={nodes} --membind={nodes}"
    return cmd + (f" -C {cores}" if cores else "")


def binding_snippet(
    instances: pd.DataFrame,
    numa_nodes: int | dict[str, int] | None = None,
    roles: tuple[str, ...] = _BIND_ROLES,
) -> str:
    """The topology lines that bind each instance, ready to paste into ``tiup cluster edit-config``.

    Instances that already carry ``numa_node`` keep it. When ``numa_nodes`` is given, the others
    get one suggested round-robin over their host's nodes (after the nodes already taken), marked
    ``# suggested``; otherwise they are marked as running unbound. Each bound line carries, as a
    comment, the ``numactl`` prefix TiUP's start script will use.
    """
    lines: list[str] = []
    taken: dict[str, list[int]] = {}
    for r in instances.itertuples():
        if isinstance(r.nodes, list):
            taken.setdefault(r.host, []).extend(r.nodes)
    next_slot: dict[str, int] = {}
    for role in roles:
        sub = instances[instances["role"] == role]
        if sub.empty:
            continue
        lines.append(f"{role}_servers:")
        for r in sub.itertuples():
            port_key = {"pd": "client_port", "tiflash": "tcp_port"}.get(role, "port")
            lines.append(f"  - host: {r.host}")
            if _given(r.port):
                lines.append(f"    {port_key}: {r.port}")
            binary = _BINARIES.get(role, role)
            cores = r.numa_cores if _given(r.numa_cores) else None
            if _given(r.numa_node):
                line = f'    numa_node: "{r.numa_node}"'
                lines.append(f"{line:<32}# {_numactl(r.numa_node, cores)} {binary}")
                if cores:
                    lines.append(f'    numa_cores: "{r.numa_cores}"')
                continue
            n = numa_nodes.get(r.host) if isinstance(numa_nodes, dict) else numa_nodes
            if not n:
                lines.append("    # no numa_node: runs unbound")
                continue
            # Least-used node first, so existing bindings and suggestions spread evenly.
            used = taken.setdefault(r.host, [])
            k = next_slot.get(r.host, 0)
            node = min(range(int(n)), key=lambda x: (used.count(x), (x - k) % int(n)))
            next_slot[r.host] = node + 1
            used.append(node)
            line = f'    numa_node: "{node}"'
            lines.append(f"{line:<32}# suggested: {_numactl(str(node), None)} {binary}")
    return "\n".join(lines) + ("\n" if lines else "")
