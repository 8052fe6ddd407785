"""The environment of each client host, read over its SSH connection: CPU, NUMA, memory,
kernel and OS, the tool's version, and the clock offset pre-flight measured.

One shell script prints the sources (``/proc/cpuinfo``, ``/proc/meminfo``, ``/etc/os-release``,
``uname``, ``numactl --hardware``, the NUMA nodes in sysfs), each after a ``@@<name>`` line;
they are parsed by the environment capture's own parsers, so a client host's section has the
shape of the local host's (:func:`tibenchlib.envcapture.host_summary` reads both). A source
that cannot be read is an unavailable value; nothing here raises.
"""

from __future__ import annotations

import re
import shlex

from ..envcapture.host import _cpuinfo_blocks, _parse_os_release, parse_numactl_hardware
from ..envcapture.record import SCHEMA_VERSION, _now, unavailable
from ..envcapture.redaction import redact
from ..envcapture.software import tool_version
from .preflight import HostCheck
from .runs import open_hosts
from .ssh import HostError, call

__all__ = ["capture_client_hosts", "client_host_sections", "parse_sections", "section_capture"]


def _script(tools: list[str]) -> str:
    versions = "".join(
        f"echo @@tool{i}; {shlex.quote(t)} --version 2>&1 | head -n 1; "
        for i, t in enumerate(tools)
    )
    return (
        "echo @@hostname; hostname; echo @@uname; uname -srm; echo @@cpuinfo; cat /proc/cpuinfo; "
        "echo @@meminfo; cat /proc/meminfo; echo @@os-release; cat /etc/os-release; "
        "echo @@online; cat /sys/devices/system/cpu/online; "
        "echo @@nodes; ls -d /sys/devices/system/node/node[0-9]* 2>/dev/null; "
        "echo @@numactl; numactl --hardware 2>/dev/null; " + versions
    )


def client_host_sections(study) -> list[tuple[list, str, str]]:
    """The study's client hosts by section, each with its tool and the entry's key for the
    tool's path: the sweep's and TPC-C's run sysbench, YCSB's java. Empty without hosts."""
    sections = [
        (study.client_hosts, "sysbench", "sysbench"),
        (study.ycsb.client_hosts, "java", "java"),
        (study.tpcc.client_hosts, "sysbench", "sysbench"),
    ]
    return [(hosts, tool, field) for hosts, tool, field in sections if hosts]


def parse_sections(text: str) -> dict[str, str]:
    """``@@name`` headed sections of the capture script's output."""
    out: dict[str, list[str]] = {}
    cur = None
    for line in text.splitlines():
        if line.startswith("@@"):
            cur = line[2:].strip()
            out[cur] = []
        elif cur is not None:
            out[cur].append(line)
    return {k: "\n".join(v).strip() for k, v in out.items()}


def section_capture(sec: dict[str, str], check: HostCheck, tools: list[str] | None = None) -> dict:
    """A client host's capture from its sections and its pre-flight figures (``tools``: the
    tools whose versions the script printed, default the pre-flight's one)."""
    tools = tools or [check.tool]
    blocks = _cpuinfo_blocks(sec.get("cpuinfo", ""))
    first = blocks[0] if blocks else {}
    cpu: dict = {
        "model": first.get("model name") or first.get("Processor") or first.get("cpu")
        or unavailable("no model name in /proc/cpuinfo"),
        "logical": len(blocks) or check.cores,
        "online": sec.get("online") or unavailable("cannot read cpu/online"),
    }  # fmt: skip
    if blocks and all("physical id" in b and "core id" in b for b in blocks):
        cpu["sockets"] = len({b["physical id"] for b in blocks})
        cpu["physical_cores"] = len({(b["physical id"], b["core id"]) for b in blocks})
    m = re.search(r"MemTotal:\s+(\d+)\s*kB", sec.get("meminfo", ""))
    memory = (
        {"source": "meminfo", "total": int(m.group(1)) * 1024}
        if m
        else unavailable("no MemTotal in /proc/meminfo")
    )
    uname = sec.get("uname", "").split()
    rel = _parse_os_release(sec.get("os-release", ""))
    nodes = [p.rsplit("node", 1)[1] for p in sec.get("nodes", "").split() if "node" in p]
    numactl = sec.get("numactl", "")
    return redact(
        {
            "kind": "client_host",
            "schema_version": SCHEMA_VERSION,
            "captured_at": _now(),
            "destination": check.host,
            "hostname": sec.get("hostname") or unavailable("hostname printed nothing"),
            "cpu": cpu,
            "numa": {
                "nodes": [{"node": int(n)} for n in nodes if n.isdigit()]
                or unavailable("no NUMA nodes in sysfs"),
                "numactl": {"output": numactl, **parse_numactl_hardware(numactl)}
                if numactl
                else unavailable("numactl not installed there"),
            },
            "memory": memory,
            "os": {
                "system": uname[0] if uname else None,
                "kernel": uname[1] if len(uname) > 1 else unavailable("uname printed nothing"),
                "machine": uname[2] if len(uname) > 2 else None,
                "pretty_name": rel.get("PRETTY_NAME") or unavailable("no /etc/os-release"),
            },
            "tools": {
                tool.rsplit("/", 1)[-1]: {
                    "path": tool,
                    "version": tool_version(sec.get(f"tool{i}", "")),
                    "first_line": sec.get(f"tool{i}") or None,
                }
                for i, tool in enumerate(tools)
            },
            "clock_offset_ms": check.offset_s * 1000,
            "clock_rtt_ms": check.rtt_s * 1000,
        }
    )


def capture_client_hosts(study, conn) -> dict:
    """Every SSH client host of ``study``, of the sweep, YCSB and TPC-C alike (label →
    capture, each with the versions of the tools it runs); an unavailable value, naming the
    problems, when pre-flight fails. None of the local machine: the host capture has it."""
    hosts: dict[str, tuple[HostCheck, list[str]]] = {}
    try:
        for clients, tool, field in client_host_sections(study):
            checks = open_hosts(study, conn, clients=clients, tool=tool, field=field)
            for c in checks:
                if not c.local and c.tool not in hosts.setdefault(c.label, (c, []))[1]:
                    hosts[c.label][1].append(c.tool)
    except HostError as e:
        return unavailable(str(e).replace("\n", "; "))
    out = {}
    for label, (c, tools) in hosts.items():
        try:
            r = call(c.ssh.arun(_script(tools), timeout=30), timeout=40)
            out[label] = section_capture(parse_sections(str(r.stdout)), c, tools)
        except (HostError, TimeoutError) as e:
            out[label] = unavailable(str(e))
    return out
