"""CPU and NUMA binding of a local server: policies, the numactl prefix, and proof that it holds.

A policy is written as a short string in the params file (``"unbound"``, ``"node:0"``,
``"interleave:all"``, ``"cpus:0-1"``) and parsed into a :class:`Policy`. The server module starts
the server as ``policy.numactl_prefix() + [server, ...]`` and then calls :func:`verify_binding`,
which reads what the kernel actually applied:

- CPUs from ``Cpus_allowed_list`` in ``/proc/<pid>/status``;
- the memory policy from ``/proc/<pid>/numa_maps``, whose second field is each mapping's policy
  (``default``, ``bind:0``, ``interleave:0-1``, ``prefer:0``...). ``Mems_allowed_list`` is not
  used: it shows the cpuset, which ``numactl --membind`` does not change.

A policy that cannot be applied or verified raises :class:`BindingError`; tibench never falls
back silently to an unbound run.
"""

from __future__ import annotations

import os
import re
import shutil
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pandas as pd

from .cpulist import format_cpulist, parse_cpulist
from .envcapture.host import read_numa_nodes
from .envcapture.record import is_unavailable

PolicyKind = Literal["unbound", "node", "interleave", "cpus"]

__all__ = [
    "BindingError",
    "Policy",
    "numa_nodes",
    "parse_policy",
    "read_binding",
    "check_policy",
    "verify_binding",
]


class BindingError(RuntimeError):
    """A binding policy cannot be applied, or the running process does not show it.

    ``result`` holds the :func:`verify_binding` dict when verification itself ran.
    """

    def __init__(self, message: str, result: dict | None = None):
        super().__init__(message)
        self.result = result


@dataclass(frozen=True)
class Policy:
    """How to bind a server process.

    Parameters
    ----------
    kind
        ``unbound`` (no numactl), ``node`` (CPUs and memory of one node), ``interleave``
        (memory interleaved over ``nodes``; ``None`` means all nodes) or ``cpus`` (an explicit
        CPU list, memory policy left alone).
    node
        The node for ``kind="node"``.
    nodes
        The nodes for ``kind="interleave"``; ``None`` = ``all``.
    cpus
        The CPUs for ``kind="cpus"``.
    """

    kind: PolicyKind = "unbound"
    node: int | None = None
    nodes: tuple[int, ...] | None = None
    cpus: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if self.kind not in ("unbound", "node", "interleave", "cpus"):
            raise ValueError(f"unknown binding kind {self.kind!r}")
        if self.kind == "node" and (self.node is None or self.node < 0):
            raise ValueError("a 'node' policy needs a node number ≥ 0")
        if self.kind == "cpus" and not self.cpus:
            raise ValueError("a 'cpus' policy needs at least one CPU")
        if self.kind == "interleave" and self.nodes is not None and not self.nodes:
            raise ValueError("an 'interleave' policy needs nodes (or None for all)")
        if self.nodes is not None:
            object.__setattr__(self, "nodes", tuple(sorted(set(self.nodes))))
        if self.cpus is not None:
            object.__setattr__(self, "cpus", tuple(sorted(set(self.cpus))))

    @property
    def label(self) -> str:
        """The canonical string form, which :func:`parse_policy` reads back."""
        if self.kind == "node":
            return f"node:{self.node}"
        if self.kind == "interleave":
            return "interleave:" + ("all" if self.nodes is None else format_cpulist(self.nodes))
        if self.kind == "cpus":
            return "cpus:" + format_cpulist(self.cpus or ())
        return "unbound"

    def __str__(self) -> str:
        return self.label

    def numactl_prefix(self) -> list[str]:
        """The command prefix that applies this policy; ``[]`` for ``unbound``."""
        if self.kind == "node":
            return ["numactl", f"--cpunodebind={self.node}", f"--membind={self.node}"]
        if self.kind == "interleave":
            nodes = "all" if self.nodes is None else format_cpulist(self.nodes)
            return ["numactl", f"--interleave={nodes}"]
        if self.kind == "cpus":
            return ["numactl", f"--physcpubind={format_cpulist(self.cpus or ())}"]
        return []


_ALIASES = {"unbound": "unbound", "none": "unbound", "off": "unbound", "default": "unbound"}


def parse_policy(text: str | Policy | None) -> Policy:
    """Parse a policy string from the params file.

    Accepted forms: ``unbound`` (also ``none``, ``off``, empty), ``node:N`` (also ``node=N``,
    ``nodeN``), ``interleave`` / ``interleave:all`` / ``interleave:0,1``, ``cpus:0-1,4``
    (also ``physcpubind=…``).

    Raises
    ------
    ValueError
        On anything else, naming the accepted forms.
    """
    if isinstance(text, Policy):
        return text
    s = (text or "unbound").strip().lower().replace(" ", "")
    if s in _ALIASES:
        return Policy("unbound")
    m = re.fullmatch(r"node[:=]?(\d+)", s)
    if m:
        return Policy("node", node=int(m.group(1)))
    m = re.fullmatch(r"interleave(?:[:=](.+))?", s)
    if m:
        arg = m.group(1)
        if arg in (None, "all"):
            return Policy("interleave")
        return Policy("interleave", nodes=tuple(parse_cpulist(arg)))
    m = re.fullmatch(r"(?:cpus|physcpubind|cpu)[:=](.+)", s)
    if m:
        return Policy("cpus", cpus=tuple(parse_cpulist(m.group(1))))
    raise ValueError(
        f"unknown CPU binding {text!r}: use 'unbound', 'node:N', 'interleave[:all|:0,1]' "
        "or 'cpus:0-1'"
    )


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def numa_nodes(sys_root: str | os.PathLike = "/sys") -> pd.DataFrame:
    """The machine's NUMA nodes from sysfs.

    Returns
    -------
    DataFrame
        One row per node: ``node`` (int), ``cpus`` (list of int; empty for a memory-only node),
        ``mem_total`` (bytes, from the node's ``meminfo``; ``None`` when unreadable). Empty when
        the kernel exposes no nodes (no ``/sys/devices/system/node``).
    """
    nodes = read_numa_nodes(sys_root)
    rows = [
        {
            "node": n["node"],
            "cpus": [] if is_unavailable(n["cpus"]) else n["cpus"],
            "mem_total": None if is_unavailable(n.get("mem_total")) else n.get("mem_total"),
        }
        for n in ([] if is_unavailable(nodes) else nodes)
    ]
    return pd.DataFrame(rows, columns=["node", "cpus", "mem_total"])


def check_policy(
    policy: Policy | str,
    sys_root: str | os.PathLike = "/sys",
    allowed_cpus: set[int] | None = None,
) -> Policy:
    """Check before starting that a policy can be applied on this machine.

    Parameters
    ----------
    policy
        A :class:`Policy` or its string form.
    sys_root
        Where sysfs is mounted (tests point it at a fake tree).
    allowed_cpus
        CPUs this process may use (default: ``os.sched_getaffinity(0)``); numactl cannot bind
        outside them.

    Returns
    -------
    Policy
        The parsed policy.

    Raises
    ------
    BindingError
        When numactl is missing, the node does not exist or has no CPUs, or a CPU is not one
        this process may use.
    """
    policy = parse_policy(policy)
    if policy.kind == "unbound":
        return policy
    if shutil.which("numactl") is None:
        raise BindingError(
            f"binding {policy.label!r} needs numactl, which is not installed "
            "(Debian/Ubuntu: apt-get install numactl)"
        )
    nodes = numa_nodes(sys_root)
    if allowed_cpus is None:
        allowed_cpus = set(os.sched_getaffinity(0))
    known = set(nodes["node"]) if len(nodes) else set()
    if policy.kind == "node":
        if policy.node not in known:
            raise BindingError(
                f"binding {policy.label!r}: NUMA node {policy.node} does not exist "
                f"(nodes here: {format_cpulist(known) or 'none'})"
            )
        cpus = set(nodes.loc[nodes["node"] == policy.node, "cpus"].iloc[0])
        if not cpus & allowed_cpus:
            raise BindingError(
                f"binding {policy.label!r}: none of node {policy.node}'s CPUs "
                f"({format_cpulist(cpus)}) may be used by this process "
                f"(allowed: {format_cpulist(allowed_cpus)})"
            )
    elif policy.kind == "interleave":
        if not known:
            raise BindingError(f"binding {policy.label!r}: the kernel shows no NUMA nodes")
        missing = set(policy.nodes or ()) - known
        if missing:
            raise BindingError(
                f"binding {policy.label!r}: NUMA node(s) {format_cpulist(missing)} do not exist"
            )
    elif policy.kind == "cpus":
        bad = set(policy.cpus or ()) - allowed_cpus
        if bad:
            raise BindingError(
                f"binding {policy.label!r}: CPU(s) {format_cpulist(bad)} are not available to "
                f"this process (allowed: {format_cpulist(allowed_cpus)})"
            )
    return policy


def _parse_mem_policy(text: str) -> tuple[str, list[int]]:
    """``"bind=static:0-1"`` → ``("bind", [0, 1])``; ``"default"`` → ``("default", [])``."""
    head, _, nodes = text.partition(":")
    mode = head.split("=", 1)[0].strip()
    try:
        node_list = parse_cpulist(nodes) if nodes else []
    except ValueError:
        node_list = []
    return mode, node_list


def read_binding(pid: int, proc_root: str | os.PathLike = "/proc") -> dict:
    """What the kernel shows for a process: allowed CPUs and memory policy.

    Returns
    -------
    dict
        ``cpus_allowed`` (list of int), ``mems_allowed`` (list of int, the cpuset's memory
        nodes), ``mem_policy`` (the policy string of most mappings, e.g. ``"bind:0"``) and
        ``mem_policies`` (each distinct policy string and how many mappings carry it) and
        ``thread_cpus`` (the distinct ``Cpus_allowed_list`` values of its threads).

    Raises
    ------
    BindingError
        When ``status`` or ``numa_maps`` cannot be read (process gone, no permission, or a
        kernel without NUMA).
    """
    base = Path(proc_root) / str(pid)
    status = _read(base / "status")
    if status is None:
        raise BindingError(f"cannot read {base / 'status'}: is process {pid} running?")
    m = re.search(r"^Cpus_allowed_list:\s*(\S+)", status, re.M)
    if not m:
        raise BindingError(f"no Cpus_allowed_list in {base / 'status'}")
    cpus = parse_cpulist(m.group(1))
    mm = re.search(r"^Mems_allowed_list:\s*(\S+)", status, re.M)
    mems = parse_cpulist(mm.group(1)) if mm else []
    maps = _read(base / "numa_maps")
    if maps is None:
        raise BindingError(
            f"cannot read {base / 'numa_maps'} (no permission, or a kernel without NUMA): "
            "the memory policy cannot be verified"
        )
    counts: Counter[str] = Counter()
    for line in maps.splitlines():
        # "<address> <policy> [key=value ...]"; "prefer (many):0-1" holds a space.
        parts = line.split(" ", 1)
        if len(parts) < 2:
            continue
        rest = parts[1]
        pol = rest.split(" ", 2)
        policy = pol[0] if not rest.startswith("prefer (many)") else " ".join(pol[:2])
        counts[policy] += 1
    mem_policy = counts.most_common(1)[0][0] if counts else "unknown"
    # A server may re-pin some of its threads; every thread's list is compared, not only the
    # main thread's.
    thread_cpus: set[str] = set()
    for task in (base / "task").glob("[0-9]*"):
        text = _read(task / "status")
        tm = re.search(r"^Cpus_allowed_list:\s*(\S+)", text or "", re.M)
        if tm:
            thread_cpus.add(tm.group(1))
    return {
        "cpus_allowed": cpus,
        "mems_allowed": mems,
        "mem_policy": mem_policy,
        "mem_policies": dict(counts),
        "thread_cpus": sorted(thread_cpus),
    }


def verify_binding(
    pid: int,
    policy: Policy | str,
    proc_root: str | os.PathLike = "/proc",
    sys_root: str | os.PathLike = "/sys",
    reference_cpus: set[int] | None = None,
    raise_on_failure: bool = True,
) -> dict:
    """Verify that a running process carries a binding policy.

    Call it once the server is up: just after ``Popen`` the child may not have exec'd numactl's
    target yet and still shows the parent's binding.

    Parameters
    ----------
    pid
        The server's pid (numactl execs the server, so it is the pid ``Popen`` returned).
    policy
        The policy the process was started under.
    proc_root, sys_root
        Where procfs and sysfs are mounted.
    reference_cpus
        The CPUs an unbound child would get (default: this process's affinity).
    raise_on_failure
        Raise :class:`BindingError` when the process does not show the policy (default), or
        return the dict with ``verified=False``.

    Returns
    -------
    dict
        ``verified`` (bool), ``policy`` (label), ``cpus_allowed`` (kernel list string),
        ``mem_policy`` (string from numa_maps), ``detail`` (a sentence on what was compared,
        including a note when the binding restricts nothing on this machine).
    """
    policy = parse_policy(policy)
    seen = read_binding(pid, proc_root)
    cpus = set(seen["cpus_allowed"])
    mode, mem_nodes = _parse_mem_policy(seen["mem_policy"])
    if reference_cpus is None:
        reference_cpus = set(os.sched_getaffinity(0))
    nodes = numa_nodes(sys_root)
    node_cpus = {int(r.node): set(r.cpus) for r in nodes.itertuples()}
    problems: list[str] = []
    notes: list[str] = []

    if policy.kind == "unbound":
        if cpus != reference_cpus:
            problems.append(
                f"CPUs {format_cpulist(cpus)} differ from the unbound set "
                f"{format_cpulist(reference_cpus)}"
            )
        if mode != "default":
            problems.append(f"memory policy is {seen['mem_policy']!r}, expected 'default'")
    elif policy.kind == "node":
        want = node_cpus.get(policy.node, set()) & reference_cpus
        if not want or cpus != want:
            problems.append(
                f"CPUs {format_cpulist(cpus)} are not node {policy.node}'s "
                f"{format_cpulist(want) or '(none)'}"
            )
        if mode != "bind" or mem_nodes != [policy.node]:
            problems.append(
                f"memory policy is {seen['mem_policy']!r}, expected 'bind:{policy.node}'"
            )
        if len(node_cpus) == 1:
            notes.append("one NUMA node on this machine: node binding restricts nothing visible")
    elif policy.kind == "interleave":
        want_nodes = (
            sorted(policy.nodes)
            if policy.nodes is not None
            else sorted(
                n
                for n in node_cpus
                if _node_has_memory(nodes, n)
                and (not seen["mems_allowed"] or n in seen["mems_allowed"])
            )
        )
        if mode != "interleave" or mem_nodes != want_nodes:
            problems.append(
                f"memory policy is {seen['mem_policy']!r}, expected "
                f"'interleave:{format_cpulist(want_nodes)}'"
            )
        if cpus != reference_cpus:
            problems.append(f"CPUs {format_cpulist(cpus)} changed by an interleave-only policy")
        if len(node_cpus) == 1:
            notes.append("one NUMA node on this machine: interleaving changes nothing")
    elif policy.kind == "cpus":
        want = set(policy.cpus or ())
        if cpus != want:
            problems.append(f"CPUs {format_cpulist(cpus)}, expected {format_cpulist(want)}")
        if mode != "default":
            problems.append(f"memory policy is {seen['mem_policy']!r}, expected 'default'")
        if want != reference_cpus:
            notes.append(f"restricted to {len(want)} of {len(reference_cpus)} CPUs")

    others = [c for c in seen["thread_cpus"] if parse_cpulist(c) != sorted(cpus)]
    if others:
        problems.append(f"some threads run on other CPUs: {', '.join(others)}")

    verified = not problems
    detail = (
        f"pid {pid} under {policy.label!r}: Cpus_allowed_list={format_cpulist(cpus)}, "
        f"numa_maps policy={seen['mem_policy']!r}"
    )
    if len(seen["mem_policies"]) > 1:
        detail += f" (mappings: {seen['mem_policies']})"
    detail += "; " + ("; ".join(problems) if problems else "verified")
    if notes:
        detail += "; " + "; ".join(notes)
    result = {
        "verified": verified,
        "policy": policy.label,
        "cpus_allowed": format_cpulist(cpus),
        "mem_policy": seen["mem_policy"],
        "detail": detail,
    }
    if not verified and raise_on_failure:
        raise BindingError(f"binding not verified: {detail}", result)
    return result


def _node_has_memory(nodes: pd.DataFrame, node: int) -> bool:
    row = nodes.loc[nodes["node"] == node]
    return bool(len(row)) and (row["mem_total"].iloc[0] or 0) > 0
