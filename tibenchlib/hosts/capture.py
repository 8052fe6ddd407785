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

__all__ = ["capture_client_hosts", "parse_sections", "section_capture"]


def _script(tool: str) -> str:
    t = shlex.quote(tool)
    return (
        "echo @@hostname; hostname; echo @@uname; uname -srm; echo @@cpuinfo; cat /proc/cpuinfo; "
        "echo @@meminfo; cat /proc/meminfo; echo @@os-release; cat /etc/os-release; "
        "echo @@online; cat /sys/devices/system/cpu/online; "
        "echo @@nodes; ls -d /sys/devices/system/node/node[0-9]* 2>/dev/null; "
        "echo @@numactl; numactl --hardware 2>/dev/null; "
        f"echo @@tool; {t} --version 2>&1 | head -n 1"
    )


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


def section_capture(sec: dict[str, str], check: HostCheck) -> dict:
    """A client host's capture from its sections and its pre-flight figures."""
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
                check.tool.rsplit("/", 1)[-1]: {
                    "path": check.tool,
                    "version": tool_version(sec.get("tool", "")),
                    "first_line": sec.get("tool") or None,
                }
            },
            "clock_offset_ms": check.offset_s * 1000,
            "clock_rtt_ms": check.rtt_s * 1000,
        }
    )


def capture_client_hosts(study, conn) -> dict:
    """Every SSH client host of ``study`` (label → capture); an unavailable value, naming the
    problems, when pre-flight fails. None of the local machine: the host capture has it."""
    try:
        checks = open_hosts(study, conn)
    except HostError as e:
        return unavailable(str(e).replace("\n", "; "))
    out = {}
    for c in checks:
        if c.local:
            continue
        try:
            r = call(c.ssh.arun(_script(c.tool), timeout=30), timeout=40)
            out[c.label] = section_capture(parse_sections(str(r.stdout)), c)
        except (HostError, TimeoutError) as e:
            out[c.label] = unavailable(str(e))
    return out
