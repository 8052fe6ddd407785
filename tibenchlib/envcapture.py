"""Environment capture: what the client host and the database server were when a study ran.

Small collectors each fill one section of a plain dict, which is saved as JSON beside the
results. A collector never raises: a missing ``/proc`` or ``/sys`` file, a tool that is not
installed, a statement the server refuses, all become ``{"unavailable": "<reason>"}`` in place of
the value, and capture goes on. :func:`list_unavailable` lists them.

Secrets never reach a capture: :func:`redact` replaces values whose key names a secret and the
password part of URLs, and both capture functions apply it before returning.

Only :func:`save_capture` writes a file.
"""

from __future__ import annotations

import datetime as _dt
import importlib.metadata
import json
import os
import platform
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pandas as pd

from .binding import format_cpulist, parse_cpulist

__all__ = [
    "CURATED_CONFIG",
    "CURATED_VARIABLES",
    "capture_database",
    "capture_host",
    "detect_flavor",
    "environment_tables",
    "host_summary",
    "is_unavailable",
    "list_unavailable",
    "parse_numactl_hardware",
    "redact",
    "save_capture",
    "tool_version",
    "unavailable",
]

#: Version of the capture's layout; bump when a key moves.
SCHEMA_VERSION = 1

#: Global variables shown in the configuration table when the server has them. The tidb_* ones
#: are those the reference reports set (TiDB v5.1.4 vs v6.0.0 report, §3.3.3; TiFlash report).
CURATED_VARIABLES = tuple(
    """
    innodb_buffer_pool_size innodb_flush_log_at_trx_commit innodb_log_file_size
    innodb_flush_method sync_binlog log_bin binlog_format max_connections transaction_isolation
    tx_isolation thread_handling thread_pool_size performance_schema character_set_server
    tidb_hashagg_final_concurrency tidb_hashagg_partial_concurrency tidb_enable_async_commit
    tidb_enable_1pc tidb_guarantee_linearizability tidb_enable_clustered_index
    tidb_isolation_read_engines tidb_txn_mode tidb_enable_prepared_plan_cache
    tidb_mem_quota_query
    """.split()
)

#: ``SHOW CONFIG`` items shown on TiDB: those the reference reports tuned (§3.3.1–3.3.2 of the
#: v5.1.4 vs v6.0.0 report, the v3.0.5 baseline's max-procs and coprocessor pools).
CURATED_CONFIG = tuple(
    """
    prepared-plan-cache.enabled tikv-client.max-batch-wait-time performance.max-procs
    raftstore.store-pool-size raftstore.apply-pool-size rocksdb.max-background-jobs
    raftdb.max-background-jobs raftdb.allow-concurrent-memtable-write server.grpc-concurrency
    server.enable-request-batch pessimistic-txn.pipelined storage.block-cache.capacity
    readpool.coprocessor.high-concurrency readpool.coprocessor.normal-concurrency
    readpool.coprocessor.low-concurrency
    """.split()
)

# (arguments that print the version or None when the tool has none, purpose shown in tables)
_TOOLS: dict[str, tuple[list[str] | None, str]] = {
    "sysbench": (["--version"], "OLTP benchmark driver"),
    "mariadbd": (["--version"], "embedded database server"),
    "mysqld": (["--version"], "MySQL server"),
    "numactl": (None, "CPU and memory binding"),
    "go-ycsb": (None, "YCSB benchmark driver"),
    "go-tpc": (["version"], "TPC-C / TPC-H benchmark driver"),
    "tiup": (["--version"], "TiDB cluster management"),
}

_FALLBACK_PACKAGES = ("pandas", "numpy", "scipy", "statsmodels", "sqlalchemy", "pymysql", "psutil")


# --------------------------------------------------------------------------- unavailable values


def unavailable(reason: str) -> dict[str, str]:
    """The value recorded in place of a fact that could not be read."""
    return {"unavailable": str(reason)}


def is_unavailable(value: Any) -> bool:
    """True for a value made by :func:`unavailable`."""
    return isinstance(value, Mapping) and set(value) == {"unavailable"}


def list_unavailable(capture: Any, prefix: str = "") -> list[tuple[str, str]]:
    """Every unavailable value in a capture as ``(dotted.path, reason)``, in key order."""
    out: list[tuple[str, str]] = []
    if is_unavailable(capture):
        return [(prefix, capture["unavailable"])]
    if isinstance(capture, Mapping):
        for k in sorted(capture, key=str):
            out += list_unavailable(capture[k], f"{prefix}.{k}" if prefix else str(k))
    elif isinstance(capture, list | tuple):
        for i, v in enumerate(capture):
            out += list_unavailable(v, f"{prefix}[{i}]")
    return out


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")


def _read_or_unavailable(path: Path) -> str | dict:
    try:
        return _read(path).strip()
    except OSError as e:
        return unavailable(f"cannot read {path}: {e.strerror or e}")


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


# --------------------------------------------------------------------------- secrets

# Judged on the name's last word, so that settings *about* secrets keep their values
# (max_password_errors, max_seeks_for_key, default_password_lifetime).
_SECRET_LAST = set(
    "password passwd pwd secret token auth credential credentials passphrase".split()
)
_KEY_QUALIFIERS = set(
    "ssl tls api private access secret encryption master client file sign".split()
)
# A boolean-looking value under a secret-sounding name is a setting, not a secret
# (tidb_enable_foreign_key = ON, disconnect_on_expired_password = OFF).
_HARMLESS = {"", "on", "off", "true", "false", "yes", "no", "0", "1", "none", "null"}
_URL_PASSWORD = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*://[^/\s:@]*:)([^@\s/]+)(@)")
_NAME_KEYS = ("name", "variable_name", "Variable_name", "NAME")


def _secret_name(name: str) -> bool:
    tokens = [t for t in re.split(r"[^a-z0-9]+", name.lower()) if t]
    if not tokens:
        return False
    last = tokens[-1]
    if last in _SECRET_LAST or last.endswith(("password", "passwd", "secret", "token")):
        return True
    if last == "key":
        # ssl_key, api-key, security.cluster-ssl-key; not primary_key or seeks_for_key.
        return len(tokens) > 1 and tokens[-2] in _KEY_QUALIFIERS
    return last.endswith("key")  # apikey, filekey, secretaccesskey


def _harmless(value: Any) -> bool:
    return (
        value is None
        or isinstance(value, bool)
        or (isinstance(value, str) and value.strip().lower() in _HARMLESS)
    )


def redact(obj: Any, secrets: Iterable[str | None] = ()) -> Any:
    """A copy of ``obj`` with secrets replaced by ``***``.

    Replaced: the value under any key whose last word names a secret (password, passwd,
    pwd, secret, token, auth, credential(s), passphrase; key after ssl, tls, api, private,
    access and the like; a word ending in key such as apikey), unless the value is empty or
    boolean-like; in a ``{name: ..., value: ...}`` record (``SHOW CONFIG`` rows) the ``name``
    is judged the same way; the password in any URL (``scheme://user:pw@host`` →
    ``scheme://user:***@host``); and every occurrence of the strings in ``secrets`` that are at
    least 4 characters long (shorter ones would blank out ordinary text).
    """
    known = sorted({s for s in secrets if s and len(s) >= 4}, key=len, reverse=True)

    def scrub(s: str) -> str:
        s = _URL_PASSWORD.sub(r"\1***\3", s)
        for secret in known:
            s = s.replace(secret, "***")
        return s

    def walk(x: Any) -> Any:
        if isinstance(x, str):
            return scrub(x)
        if isinstance(x, Mapping):
            named = next((x[k] for k in _NAME_KEYS if k in x), None)
            secret_record = "value" in x and isinstance(named, str) and _secret_name(named)
            out = {}
            for k, v in x.items():
                hide = _secret_name(str(k)) or (secret_record and k == "value")
                out[k] = "***" if hide and not _harmless(v) and not is_unavailable(v) else walk(v)
            return out
        if isinstance(x, list | tuple):
            return [walk(v) for v in x]
        return x

    return walk(obj)


# --------------------------------------------------------------------------- host collectors


@dataclass(frozen=True)
class _Host:
    proc: Path
    sys: Path
    os_release: Path
    which: Callable[[str], str | None]
    data_dir: Path | None


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


def _collect_numa(h: _Host) -> dict:
    base = h.sys / "devices/system/node"
    numa: dict[str, Any] = {}
    try:
        dirs = sorted(
            (d for d in base.iterdir() if re.fullmatch(r"node\d+", d.name)),
            key=lambda d: int(d.name[4:]),
        )
    except OSError as e:
        dirs = None
        numa["nodes"] = unavailable(f"cannot list {base}: {e.strerror or e}")
    if dirs is not None:
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
        numa["nodes"] = nodes
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
    try:
        import psutil
    except ImportError:
        psutil = None
    if psutil is not None:
        vm, swap = psutil.virtual_memory(), psutil.swap_memory()
        return {
            "source": "psutil",
            "total": vm.total,
            "available": vm.available,
            "swap_total": swap.total,
        }
    try:
        info = _read(h.proc / "meminfo")
    except OSError as e:
        return unavailable(f"no psutil and cannot read {h.proc / 'meminfo'}: {e.strerror or e}")
    m = re.search(r"MemTotal:\s+(\d+)\s*kB", info)
    return {"source": "meminfo", "total": int(m.group(1)) * 1024 if m else None}


def _block_parent(sys_root: Path, name: str) -> str:
    # A partition's sysfs entry sits inside its disk's: class/block/vda1 -> .../block/vda/vda1.
    entry = sys_root / "class/block" / name
    if (entry / "partition").exists():
        return entry.resolve().parent.name
    return name


def _block_device(sys_root: Path, name: str) -> dict:
    base = sys_root / "block" / name
    rot = _read_or_unavailable(base / "queue/rotational")
    size = _read_or_unavailable(base / "size")
    return {
        "name": name,
        "rotational": rot == "1" if isinstance(rot, str) else rot,
        # sysfs counts 512-byte sectors whatever the device's own sector size.
        "size_bytes": int(size) * 512 if isinstance(size, str) and size.isdigit() else size,
        "model": _read_or_unavailable(base / "device/model"),
    }


def _collect_disks(h: _Host) -> dict:
    import psutil

    disks: dict[str, Any] = {}
    if h.data_dir is None:
        disks["data_dir"] = unavailable("no data directory given")
    else:
        path = h.data_dir.expanduser().absolute()
        existing = path
        # The study's folder may not exist before its first run; its parent's disk is the one.
        while not existing.exists() and existing != existing.parent:
            existing = existing.parent
        usage = psutil.disk_usage(str(existing))
        parts = [
            p
            for p in psutil.disk_partitions(all=True)
            if str(existing) == p.mountpoint
            or str(existing).startswith(p.mountpoint.rstrip("/") + "/")
        ]
        part = max(parts, key=lambda p: len(p.mountpoint), default=None)
        info: dict[str, Any] = {
            "path": str(path),
            "exists": path.exists(),
            "total": usage.total,
            "used": usage.used,
            "free": usage.free,
        }
        if part is None:
            info["mountpoint"] = unavailable("no mounted filesystem holds the data directory")
        else:
            info.update(
                mountpoint=part.mountpoint,
                device=part.device,
                fstype=part.fstype,
                options=part.opts,
            )
            if part.device.startswith("/dev/"):
                name = os.path.basename(os.path.realpath(part.device))
                disk = _block_parent(h.sys, name)
                info["block_device"] = disk
                info["rotational"] = _block_device(h.sys, disk)["rotational"]
            else:
                info["block_device"] = unavailable(f"{part.device} is not a block device")
        disks["data_dir"] = info
    try:
        names = sorted(p.name for p in (h.sys / "block").iterdir())
        disks["block_devices"] = [
            _block_device(h.sys, n) for n in names if not n.startswith(("loop", "ram"))
        ]
    except OSError as e:
        disks["block_devices"] = unavailable(f"cannot list {h.sys / 'block'}: {e.strerror or e}")
    return disks


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


def _run(argv: list[str], timeout: float = 15) -> dict:
    try:
        res = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, "LC_ALL": "C"},
        )
    except (OSError, subprocess.SubprocessError) as e:
        return unavailable(f"{' '.join(argv)}: {e}")
    out = res.stdout if res.stdout.strip() else res.stderr
    if res.returncode != 0 and not out.strip():
        return unavailable(f"{' '.join(argv)} exited with {res.returncode} and printed nothing")
    return {"stdout": out, "returncode": res.returncode}


def tool_version(output: str) -> str | None:
    """The version in a tool's ``--version`` output, or None.

    Tries, in order: a ``Release version:`` line (go-tpc), a ``Ver X`` word (mariadbd,
    mysqld), the first token that starts like a version number (sysbench, tiup).
    """
    for pattern in (
        r"(?im)^\s*release version:\s*(\S+)",
        r"\bVer\s+(v?\d[\w.+\-]*)",
        r"(?<![\w.])(v?\d+\.\d+[\w.+\-]*)",
    ):
        m = re.search(pattern, output)
        if m:
            return m.group(1)
    return None


def _collect_tools(h: _Host) -> dict:
    tools = {}
    for name, (args, _purpose) in _TOOLS.items():
        path = h.which(name)
        if not path:
            tools[name] = unavailable(f"{name} not found on PATH")
            continue
        if args is None:
            tools[name] = {"path": path, "version": unavailable(f"{name} prints no version")}
            continue
        out = _run([path, *args])
        if is_unavailable(out):
            tools[name] = {"path": path, "version": out}
            continue
        first = next((ln.strip() for ln in out["stdout"].splitlines() if ln.strip()), "")
        version = tool_version(out["stdout"])
        tools[name] = {
            "path": path,
            "output": first,
            "version": version or unavailable(f"no version in: {first!r}"),
        }
    return tools


def _project_packages() -> list[str]:
    try:
        reqs = importlib.metadata.requires("tibench") or []
    except importlib.metadata.PackageNotFoundError:
        return list(_FALLBACK_PACKAGES)
    names = []
    for req in reqs:
        if "extra ==" in req:
            continue
        m = re.match(r"[A-Za-z0-9][A-Za-z0-9._\-]*", req)
        if m:
            names.append(m.group(0))
    return names


def _collect_packages(h: _Host) -> dict:
    out: dict[str, Any] = {}
    for name in ["tibench", *_project_packages()]:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = unavailable("not installed")
    return out


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
    which: Callable[[str], str | None] = shutil.which,
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
        Finds a tool on PATH (``shutil.which``); a stub returning None simulates none installed.

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


# --------------------------------------------------------------------------- database


def detect_flavor(version_string: str, version_comment: str | None = None) -> tuple[str, str]:
    """``(flavor, version)`` from ``SELECT VERSION()`` and optionally ``@@version_comment``.

    ``'8.0.11-TiDB-v8.5.4'`` → ``('tidb', 'v8.5.4')``; ``'10.11.6-MariaDB-0+deb12u1'`` →
    ``('mariadb', '10.11.6')``; anything else is ``mysql``. Delegates to
    :func:`tibenchlib.db.classify_version`, the one place that knows the rule.
    """
    from .db import classify_version

    info = classify_version(version_string, version_comment)
    return info.flavor, info.version


def _jsonable(v: Any) -> Any:
    if isinstance(v, bytes | bytearray):
        return bytes(v).decode("utf-8", "replace")
    if isinstance(v, Decimal):
        return int(v) if v == v.to_integral_value() else float(v)
    if isinstance(v, _dt.datetime | _dt.date | _dt.time):
        return v.isoformat()
    if isinstance(v, _dt.timedelta):
        return v.total_seconds()
    return v


def _query(engine, sql: str) -> list[dict] | dict:
    """Rows of one statement as dicts with lower-case keys; unavailable when it fails."""
    try:
        with engine.connect() as conn:
            result = conn.exec_driver_sql(sql)
            return [
                {str(k).lower(): _jsonable(v) for k, v in row._mapping.items()} for row in result
            ]
    except Exception as e:  # every driver and server error means the same here: not available
        reason = str(getattr(e, "orig", None) or e).splitlines()[0]
        return unavailable(f"{sql}: {type(e).__name__}: {reason}")


def _curated(variables: Mapping[str, Any], config: list[dict] | dict) -> list[dict]:
    rows = [
        {"scope": "global variable", "name": n, "value": variables[n]}
        for n in CURATED_VARIABLES
        if n in variables
    ]
    if isinstance(config, list):
        for name in CURATED_CONFIG:
            by_type: dict[str, list[str]] = {}
            for r in config:
                if r.get("name") == name:
                    by_type.setdefault(str(r.get("type")), []).append(str(r.get("value")))
            for typ, values in sorted(by_type.items()):
                distinct = sorted(set(values))
                rows.append(
                    {
                        "scope": f"{typ} config",
                        "name": name,
                        "value": " / ".join(distinct),
                        "instances": len(values),
                    }
                )
    return rows


def capture_database(engine, flavor: str | None = None) -> dict:
    """Describe the database server behind ``engine`` (a SQLAlchemy engine).

    Parameters
    ----------
    engine
        Connected to the server under test; every statement gets its own connection, so one
        refused statement cannot spoil the next.
    flavor
        What the caller believes the server is (``tidb``, ``mysql``, ``mariadb``). The flavor
        detected from ``VERSION()`` wins when they differ, and the difference is recorded in
        ``warnings``; TiDB-only statements run only when the server is TiDB.

    Returns
    -------
    dict
        ``kind``, ``schema_version``, ``captured_at``, ``url`` (password hidden), ``flavor``,
        ``version``, ``version_string``, ``version_comment``, ``global_variables`` (name →
        value), ``curated`` (rows ``scope``/``name``/``value`` for display), ``warnings``, and on
        TiDB ``tidb`` with ``tidb_version``, ``config`` (``SHOW CONFIG`` rows),
        ``cluster_info``, ``cluster_hardware``, ``cluster_systeminfo`` (rows with lower-case
        keys). Each failed statement is ``{"unavailable": reason}``. Secrets are redacted.
    """
    password = getattr(getattr(engine, "url", None), "password", None)
    try:
        url = engine.url.render_as_string(hide_password=True)
    except Exception as e:
        url = unavailable(f"{type(e).__name__}: {e}")
    cap: dict[str, Any] = {
        "kind": "database",
        "schema_version": SCHEMA_VERSION,
        "captured_at": _now(),
        "url": url,
        "warnings": [],
    }
    rows = _query(engine, "SELECT VERSION() AS version, @@version_comment AS version_comment")
    detected = None
    if is_unavailable(rows):
        cap["version_string"] = rows
    else:
        cap["version_string"] = rows[0]["version"]
        cap["version_comment"] = rows[0].get("version_comment")
        detected, cap["version"] = detect_flavor(str(rows[0]["version"]), cap["version_comment"])
    if detected and flavor and detected != flavor:
        cap["warnings"].append(f"flavor given as {flavor!r} but the server reports {detected!r}")
    cap["flavor"] = detected or flavor or unavailable("VERSION() failed and no flavor was given")

    variables = _query(engine, "SHOW GLOBAL VARIABLES")
    if not is_unavailable(variables):
        variables = {r["variable_name"]: r["value"] for r in variables}
    cap["global_variables"] = variables
    config: list[dict] | dict = []
    if cap["flavor"] == "tidb":
        config = _query(engine, "SHOW CONFIG")
        cap["tidb"] = {
            "tidb_version": _query(engine, "SELECT tidb_version() AS tidb_version"),
            "config": config,
            "cluster_info": _query(engine, "SELECT * FROM information_schema.cluster_info"),
            "cluster_hardware": _query(engine, "SELECT * FROM information_schema.cluster_hardware"),
            "cluster_systeminfo": _query(
                engine, "SELECT * FROM information_schema.cluster_systeminfo"
            ),
        }
    cap["curated"] = _curated(variables if isinstance(variables, dict) else {}, config)
    return redact(cap, secrets=[password])


# --------------------------------------------------------------------------- display tables

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


def environment_tables(capture: Mapping[str, Any]) -> dict[str, pd.DataFrame]:
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
        arms) and ``unavailable`` (item | reason).
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
    return {
        "hardware": pd.DataFrame(hardware, columns=hw_columns),
        "software": pd.DataFrame(software, columns=["name", "purpose", "version"]),
        "configuration": cfg,
        "unavailable": pd.DataFrame(missing, columns=["item", "reason"]),
    }


# --------------------------------------------------------------------------- saving


def save_capture(capture: Mapping[str, Any], path: str | Path) -> Path:
    """Write a capture as JSON (sorted keys, indented, redacted once more); returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(redact(capture), sort_keys=True, indent=2, default=str)
    path.write_text(text + "\n", encoding="utf-8")
    return path


# Variables that differ between any two captures without being configuration.
_VOLATILE = frozenset(
    {
        "gtid_binlog_pos",
        "gtid_binlog_state",
        "gtid_current_pos",
        "gtid_slave_pos",
        "timestamp",
        "pid_file",
        "port",
        "socket",
        "server_uid",
        "server_id",
        "hostname",
        "log_error",
        "general_log_file",
        "slow_query_log_file",
        "innodb_buffer_pool_load_at_startup",
    }
)


def config_diff(captures: dict, baseline: str, candidate: str) -> pd.DataFrame:
    """What differs between two arms' database captures: version and global variables.

    Parameters
    ----------
    captures
        Arm label → environment capture (``{"database": {...}, ...}``), as the catalog keeps.

    Returns
    -------
    DataFrame ``setting, <baseline>, <candidate>``: one row per differing setting (volatile
    values such as ports, sockets and GTID positions left out).
    """
    rows = []
    a = (captures.get(baseline) or {}).get("database") or {}
    b = (captures.get(candidate) or {}).get("database") or {}
    for key in ("flavor", "version_string"):
        if a.get(key) != b.get(key):
            rows.append({"setting": key, baseline: a.get(key), candidate: b.get(key)})
    va = a.get("global_variables") if isinstance(a.get("global_variables"), dict) else {}
    vb = b.get("global_variables") if isinstance(b.get("global_variables"), dict) else {}
    for k in sorted(set(va) | set(vb)):
        if k.lower() in _VOLATILE or va.get(k) == vb.get(k):
            continue
        rows.append({"setting": k, baseline: va.get(k), candidate: vb.get(k)})
    return pd.DataFrame(rows, columns=["setting", baseline, candidate])


# -- dry run -----------------------------------------------------------------------------------
#: Rough cost of one arm's capture: starting its server if needed, reading every global variable
#: (and on TiDB the config and cluster tables). Not measured per host: a planning figure.
CAPTURE_S = 10.0
#: Rough size of one capture's JSON on disk.
CAPTURE_BYTES = 100_000


def estimate(study, arms: list[str] | None = None) -> dict:
    """Dry-run entry of the environment phase: one capture per arm."""
    n = len(arms or study.arms)
    return {
        "phase": "environment",
        "runs": n,
        "eta_s": n * CAPTURE_S,
        "disk_bytes": n * CAPTURE_BYTES,
        "note": f"{n} environment capture{'s' if n != 1 else ''} (rough)",
    }
