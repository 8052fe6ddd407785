"""The client host: CPU, NUMA, memory, OS and Python collectors, and :func:`capture_host`, which
runs every host collector (disks and software from their own modules) and redacts the result.

A collector takes the roots to read (:class:`~tibenchlib.envcapture.sources._Host`) and returns
its section; a missing ``/proc`` or ``/sys`` file or tool becomes an unavailable value.
"""

from __future__ import annotations

import json
import os
import platform
import re
import socket
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import psutil

from ..cpulist import format_cpulist, parse_cpulist
from ..tools import which as tool_which
from .disks import _collect_disks
from .record import SCHEMA_VERSION, _now, is_unavailable, unavailable
from .redaction import redact
from .software import _collect_packages, _collect_tools
from .sources import _Host, _read, _read_or_unavailable, _run


def _cpuinfo_blocks(text: str) -> list[dict[str, str]]:
    blocks = []
    for chunk in re.split(r"\n\s*\n", text):
        fields = {}
        for line in chunk.splitlines():
            if ":" in line:
                k, v = line.split(":", 1)
                fields[k.strip()] = v.strip()
        if "processor" in fields:
            blocks.append(fields)
    return blocks


def _lscpu(which: Callable[[str], str | None]) -> dict:
    path = which("lscpu")
    if not path:
        return unavailable("lscpu not found on PATH")
    out = _run([path, "-J"])
    if is_unavailable(out):
        return out
    fields: dict[str, str] = {}

    def flatten(items):
        for it in items:
            fields[it.get("field", "").rstrip(":")] = it.get("data")
            flatten(it.get("children", []))

    flatten(json.loads(out["stdout"]).get("lscpu", []))
    return fields


def _collect_cpu(h: _Host) -> dict:
    cpu: dict[str, Any] = {}
    try:
        blocks = _cpuinfo_blocks(_read(h.proc / "cpuinfo"))
        cpu["source"] = "cpuinfo"
    except OSError as e:
        blocks = []
        cpu["source"] = unavailable(f"cannot read {h.proc / 'cpuinfo'}: {e.strerror or e}")
    first = blocks[0] if blocks else {}
    # x86 says 'model name'; older ARM kernels 'Processor'; POWER 'cpu'.
    model = first.get("model name") or first.get("Processor") or first.get("cpu")
    cpu["vendor"] = first.get("vendor_id")
    cpu["logical"] = len(blocks) or None
    if blocks and all("physical id" in b and "core id" in b for b in blocks):
        cpu["sockets"] = len({b["physical id"] for b in blocks})
        cpu["physical_cores"] = len({(b["physical id"], b["core id"]) for b in blocks})
    lscpu = _lscpu(h.which)
    cpu["lscpu"] = lscpu
    if not is_unavailable(lscpu):
        model = model or lscpu.get("Model name")
        if cpu["logical"] is None and lscpu.get("CPU(s)", "").isdigit():
            cpu["logical"] = int(lscpu["CPU(s)"])
        if "sockets" not in cpu and str(lscpu.get("Socket(s)", "")).isdigit():
            sockets, per = int(lscpu["Socket(s)"]), lscpu.get("Core(s) per socket", "")
            cpu["sockets"] = sockets
            if str(per).isdigit():
                cpu["physical_cores"] = sockets * int(per)
    cpu["model"] = model or unavailable("no model name in cpuinfo or lscpu")
    for key in ("sockets", "physical_cores"):
        cpu.setdefault(key, unavailable("no topology in cpuinfo and no lscpu"))
    if isinstance(cpu.get("physical_cores"), int) and isinstance(cpu["sockets"], int):
        cpu["cores_per_socket"] = cpu["physical_cores"] // max(cpu["sockets"], 1)
        if cpu["logical"]:
            cpu["threads_per_core"] = cpu["logical"] // max(cpu["physical_cores"], 1)
    if cpu["logical"] is None:
        cpu["logical"] = os.cpu_count() or unavailable("cpu count unknown")
    online = _read_or_unavailable(h.sys / "devices/system/cpu/online")
    cpu["online"] = online
    cpu["affinity"] = (
        format_cpulist(os.sched_getaffinity(0))
        if hasattr(os, "sched_getaffinity")
        else unavailable("os.sched_getaffinity is not available on this platform")
    )
    cpu["governor"] = _read_or_unavailable(
        h.sys / "devices/system/cpu/cpu0/cpufreq/scaling_governor"
    )
    return cpu


def _node_meminfo(text: str) -> dict[str, int]:
    out = {}
    for key, name in (("MemTotal", "mem_total"), ("MemFree", "mem_free")):
        m = re.search(rf"{key}:\s+(\d+)\s*kB", text)
        if m:
            out[name] = int(m.group(1)) * 1024
    return out


def parse_numactl_hardware(text: str) -> dict:
    """``numactl --hardware`` → ``{"nodes": [{node, cpus, size_mb, free_mb}], "distances": …}``."""
    nodes: dict[int, dict] = {}
    distances: dict[int, list[int]] = {}
    in_distances = False
    for line in text.splitlines():
        m = re.match(r"node (\d+) (cpus|size|free):\s*(.*)$", line.strip())
        if m:
            node = nodes.setdefault(int(m.group(1)), {"node": int(m.group(1))})
            key, value = m.group(2), m.group(3).strip()
            if key == "cpus":
                node["cpus"] = [int(x) for x in value.split()]
            else:
                num = re.match(r"(\d+)\s*MB", value)
                node[f"{key}_mb"] = int(num.group(1)) if num else value
            continue
        if line.strip() == "node distances:":
            in_distances = True
            continue
        m = re.match(r"\s*(\d+):\s+([\d\s]+)$", line)
        if in_distances and m:
            distances[int(m.group(1))] = [int(x) for x in m.group(2).split()]
    return {"nodes": [nodes[k] for k in sorted(nodes)], "distances": distances}


def read_numa_nodes(sys_root: str | os.PathLike = "/sys") -> list[dict] | dict:
    """The machine's NUMA nodes from sysfs: the one place tibench reads them.

    Parameters
    ----------
    sys_root
        Where ``/sys`` is read; tests point it at a fake tree.

    Returns
    -------
    list of dict or dict
        One dict per node, in node order: ``node`` (int), ``cpulist`` (the kernel's text),
        ``cpus`` (list of int; empty for a memory-only node), ``mem_total`` and ``mem_free``
        (bytes, from the node's ``meminfo``). A file that cannot be read makes its value
        unavailable; a ``devices/system/node`` folder that cannot be listed makes the whole
        answer unavailable.
    """
    base = Path(sys_root) / "devices/system/node"
    try:
        dirs = sorted(
            (d for d in base.iterdir() if re.fullmatch(r"node\d+", d.name)),
            key=lambda d: int(d.name[4:]),
        )
    except OSError as e:
        return unavailable(f"cannot list {base}: {e.strerror or e}")
    nodes = []
    for d in dirs:
        node: dict[str, Any] = {"node": int(d.name[4:])}
        cpulist = _read_or_unavailable(d / "cpulist")
        node["cpulist"] = cpulist
        node["cpus"] = parse_cpulist(cpulist) if isinstance(cpulist, str) else cpulist
        try:
            node.update(_node_meminfo(_read(d / "meminfo")))
        except OSError as e:
            node["mem_total"] = unavailable(f"cannot read {d / 'meminfo'}: {e.strerror or e}")
        nodes.append(node)
    return nodes


def _collect_numa(h: _Host) -> dict:
    numa: dict[str, Any] = {}
    nodes = read_numa_nodes(h.sys)
    numa["nodes"] = nodes
    if not is_unavailable(nodes):
        numa["node_count"] = len(nodes)
    path = h.which("numactl")
    if not path:
        numa["numactl"] = unavailable("numactl not found on PATH")
    else:
        out = _run([path, "--hardware"])
        numa["numactl"] = (
            out
            if is_unavailable(out)
            else {
                "output": out["stdout"],
                **parse_numactl_hardware(out["stdout"]),
            }
        )
    return numa


def _collect_memory(h: _Host) -> dict:
    vm, swap = psutil.virtual_memory(), psutil.swap_memory()
    return {
        "source": "psutil",
        "total": vm.total,
        "available": vm.available,
        "swap_total": swap.total,
    }


def _parse_os_release(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        m = re.match(r"^([A-Z0-9_]+)=(.*)$", line.strip())
        if m:
            value = m.group(2).strip()
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
                value = value[1:-1]
            out[m.group(1)] = value
    return out


def _collect_os(h: _Host) -> dict:
    uname = platform.uname()
    out: dict[str, Any] = {
        "system": uname.system,
        "kernel": uname.release,
        "kernel_version": uname.version,
        "machine": uname.machine,
    }
    try:
        rel = _parse_os_release(_read(h.os_release))
        out.update(
            pretty_name=rel.get("PRETTY_NAME") or rel.get("NAME"),
            id=rel.get("ID"),
            version_id=rel.get("VERSION_ID"),
        )
    except OSError as e:
        out["pretty_name"] = unavailable(f"cannot read {h.os_release}: {e.strerror or e}")
    thp = _read_or_unavailable(h.sys / "kernel/mm/transparent_hugepage/enabled")
    if isinstance(thp, str):
        # 'always [madvise] never': the bracketed word is the active setting.
        m = re.search(r"\[(\w+)\]", thp)
        thp = m.group(1) if m else thp
    out["transparent_hugepage"] = thp
    out["swappiness"] = _read_or_unavailable(h.proc / "sys/vm/swappiness")
    return out


def _collect_python(h: _Host) -> dict:
    return {
        "version": platform.python_version(),
        "implementation": platform.python_implementation(),
        "executable": sys.executable,
    }


_HOST_COLLECTORS: dict[str, Callable[[_Host], Any]] = {
    "cpu": _collect_cpu,
    "numa": _collect_numa,
    "memory": _collect_memory,
    "disks": _collect_disks,
    "os": _collect_os,
    "python": _collect_python,
    "tools": _collect_tools,
    "packages": _collect_packages,
}


def _guarded(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except Exception as e:  # a collector's bug must cost its section, not the capture
        return unavailable(f"{type(e).__name__}: {e}")


def capture_host(
    data_dir: str | Path | None = None,
    proc_root: str | Path = "/proc",
    sys_root: str | Path = "/sys",
    which: Callable[[str], str | None] = tool_which,
    *,
    os_release: str | Path = "/etc/os-release",
) -> dict:
    """Describe the client host: CPU, NUMA, memory, disks, OS, Python, tools, packages.

    Parameters
    ----------
    data_dir
        Directory whose disk and filesystem are described (the study's or the server's data
        directory). It may not exist yet: its nearest existing parent is used.
    proc_root, sys_root, os_release
        Where ``/proc``, ``/sys`` and ``/etc/os-release`` are read; tests point them at a fake
        tree. Memory and disk usage come from psutil, which reads the real system.
    which
        Finds a tool (:func:`tibenchlib.tools.which`: tibench's own go-ycsb and go-tpc builds,
        else PATH); a stub returning None simulates none installed.

    Returns
    -------
    dict
        Sections ``cpu``, ``numa``, ``memory``, ``disks``, ``os``, ``python``, ``tools``,
        ``packages`` plus ``kind``, ``schema_version``, ``captured_at``, ``hostname``. Anything
        that could not be read is ``{"unavailable": reason}`` (see :func:`list_unavailable`).
        Secrets are redacted.
    """
    host = _Host(
        proc=Path(proc_root),
        sys=Path(sys_root),
        os_release=Path(os_release),
        which=which,
        data_dir=Path(data_dir) if data_dir is not None else None,
    )
    cap: dict[str, Any] = {
        "kind": "host",
        "schema_version": SCHEMA_VERSION,
        "captured_at": _now(),
        "hostname": _guarded(socket.gethostname),
    }
    for key, collector in _HOST_COLLECTORS.items():
        cap[key] = _guarded(lambda c=collector: c(host))
    return redact(cap)


def host_summary(host: Mapping[str, Any]) -> dict[str, Any]:
    """One flat row from a :func:`capture_host` dict (None where unavailable), for catalogs."""

    def get(*keys):
        d: Any = host
        for k in keys:
            d = d.get(k) if isinstance(d, Mapping) else None
        return None if is_unavailable(d) else d

    nodes = get("numa", "nodes")
    return {
        "hostname": get("hostname"),
        "cpu_model": get("cpu", "model"),
        "logical_cpus": get("cpu", "logical"),
        "sockets": get("cpu", "sockets"),
        "physical_cores": get("cpu", "physical_cores"),
        "numa_nodes": len(nodes) if isinstance(nodes, list) else None,
        "memory_bytes": get("memory", "total"),
        "os": get("os", "pretty_name"),
        "kernel": get("os", "kernel"),
        "data_dir_fstype": get("disks", "data_dir", "fstype"),
        "sysbench": get("tools", "sysbench", "version"),
    }
