"""CPU seconds spent by every process of this machine over a stretch of time, by role.

:class:`CpuAccount` reads every process's CPU times (its own, and its waited-for children's)
when started, every ``interval`` while running, and when stopped. :func:`cpu_seconds` turns the
readings into CPU seconds per process: a process's own time over the stretch, plus the time of
children that lived too briefly to be seen (their parent's children-time minus what the seen
children that ended account for; a seen child's last moments after its last reading are in
it too). Over a process that lived through the whole stretch, its own seconds and those of all
its descendants add up exactly to the growth of its own plus children time. :func:`by_role`
sums them by role (mariadbd, each sysbench by where it was started, sshd, what SSH sessions
run besides the clients, this Python process, everything else on the machine), which is what
``benchmarks/bench_hosts.py`` prints beside its ratio.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import psutil

__all__ = ["CpuAccount", "Seen", "by_role", "cpu_seconds", "role_of", "snapshot"]

Key = tuple[int, float]  # pid and start time: a pid reused by another process is another key


@dataclass(frozen=True)
class Seen:
    """One reading of one process: CPU seconds of its own (user + system) and of its children
    it has waited for."""

    pid: int
    ppid: int
    name: str
    own: float
    kids: float


def snapshot() -> dict[Key, Seen]:
    """Every process of this machine now (processes that vanish while read are left out)."""
    out: dict[Key, Seen] = {}
    for p in psutil.process_iter(["ppid", "name", "create_time", "cpu_times"]):
        i = p.info
        ct = i["cpu_times"]
        if ct is None or i["create_time"] is None:
            continue
        out[(p.pid, i["create_time"])] = Seen(
            p.pid,
            i["ppid"] or 0,
            i["name"] or "?",
            ct.user + ct.system,
            ct.children_user + ct.children_system,
        )
    return out


def cpu_seconds(
    first: Mapping[Key, Seen], last: Mapping[Key, Seen], final: Mapping[Key, Seen]
) -> tuple[dict[Key, float], dict[Key, float]]:
    """``(own, unseen)`` CPU seconds per process over the stretch from the readings ``first``
    (at its start), ``last`` (each process's latest reading) and ``final`` (at its end).

    ``own``: the process's own time after ``first``. ``unseen``: its children's that no
    reading of theirs accounts for (short-lived ones, the tails of those that ended)."""
    own: dict[Key, float] = {}
    kids: dict[Key, float] = {}
    last = {**last, **final}
    for k, s in last.items():
        f = first.get(k)
        own[k] = s.own - (f.own if f else 0.0)
        kids[k] = s.kids - (f.kids if f else 0.0)
    ended_by_parent: dict[int, float] = {}
    for k, s in last.items():
        if k in final:
            continue
        # its whole life (up to its last reading) is in its parent's children-time; its
        # seconds after ``first`` are counted as its own
        ended_by_parent[s.ppid] = ended_by_parent.get(s.ppid, 0.0) + s.own + s.kids
    unseen = {
        k: kids[k] - ended_by_parent.get(s.pid, 0.0)
        for k, s in last.items()
        if kids[k] or s.pid in ended_by_parent
    }
    return own, unseen


def role_of(key: Key, procs: Mapping[Key, Seen], *, me: int | None = None) -> str:
    """The role of a process: ``mariadbd``, ``sysbench (local)`` / ``sysbench (ssh)`` (started
    under an sshd or not), ``sshd``, ``ssh session: other`` (what an SSH session runs besides a
    client: shells, the sampling loop), ``tibench (python)`` (``me``, default this process), or
    ``other``."""
    me = os.getpid() if me is None else me
    s = procs[key]
    if s.pid == me:
        return "tibench (python)"
    if s.name.startswith("mariadbd") or s.name.startswith("mysqld"):
        return "mariadbd"
    if s.name.startswith("sshd"):
        return "sshd"
    by_pid = {v.pid: v for v in procs.values()}
    under_sshd, seen, p = False, set(), s.ppid
    while p and p not in seen:
        seen.add(p)
        parent = by_pid.get(p)
        if parent is None:
            break
        if parent.name.startswith("sshd"):
            under_sshd = True
            break
        p = parent.ppid
    if s.name == "sysbench":
        return "sysbench (ssh)" if under_sshd else "sysbench (local)"
    return "ssh session: other" if under_sshd else "other"


def by_role(
    first: Mapping[Key, Seen],
    last: Mapping[Key, Seen],
    final: Mapping[Key, Seen],
    *,
    role: Callable[[Key, Mapping[Key, Seen]], str] = role_of,
) -> dict[str, float]:
    """CPU seconds by role over the stretch. A process's unseen children count in
    ``<its role>: short-lived children``, except under an sshd: every process an SSH session
    ran that was not a client is ``ssh session: other``."""
    own, unseen = cpu_seconds(first, last, final)
    out: dict[str, float] = {}
    for k, v in own.items():
        r = role(k, last)
        out[r] = out.get(r, 0.0) + v
    for k, v in unseen.items():
        r = role(k, last)
        r = "ssh session: other" if r in ("sshd", "ssh session: other") else f"{r}: children"
        out[r] = out.get(r, 0.0) + v
    return out


class CpuAccount:
    """:func:`snapshot` when started, every ``interval`` seconds in a thread, and when stopped;
    :meth:`roles` is :func:`by_role` over that stretch, or over the part of it between two
    instants (the readings taken within it)."""

    def __init__(self, interval: float = 0.25):
        self.interval = interval
        self.polls: list[tuple[float, dict[Key, Seen]]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _poll(self) -> None:
        self.polls.append((time.time(), snapshot()))

    def start(self) -> CpuAccount:
        self.polls = []
        self._poll()
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="cpu-account", daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self._poll()

    def stop(self) -> CpuAccount:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._poll()
        return self

    def roles(self, since: float | None = None, until: float | None = None) -> tuple[float, dict]:
        """``(seconds, CPU seconds by role)`` between the first reading at or after ``since``
        and the last at or before ``until`` (default: all of them); ``(0.0, {})`` with fewer
        than two readings there."""
        sel = [
            (t, snap)
            for t, snap in self.polls
            if (since is None or t >= since) and (until is None or t <= until)
        ]
        if len(sel) < 2:
            return 0.0, {}
        last: dict[Key, Seen] = {}
        for _, snap in sel:
            last.update(snap)
        return sel[-1][0] - sel[0][0], by_role(sel[0][1], last, sel[-1][1])

    def __enter__(self) -> CpuAccount:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
