"""Per-second CPU and memory of the server and the benchmark client while a run goes on.

:class:`ProcessSampler` is a background thread that reads each watched process's CPU times and
RSS with psutil on a fixed grid of ``interval`` seconds counted from a start time ``t0`` the caller
gives (the moment it launched sysbench), so that sample ``t = k`` covers ``(k - 1, k]`` as
sysbench's ``[ ks ]`` line does. CPU % is CPU seconds over wall seconds × 100 for the whole
process, all threads: 100 = one core busy.

Warnings are data: a process that vanished, ``numastat`` missing, a client using most of the
cores it may use — each comes back as a string next to the result, never printed.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Mapping

import pandas as pd
import psutil

__all__ = [
    "SAMPLE_COLUMNS",
    "SCHED_COLUMNS",
    "ProcessSampler",
    "client_bottleneck",
    "numastat_per_node",
    "parse_numastat_p",
]

SAMPLE_COLUMNS = [
    "source",
    "t",
    "cpu_user_pct",
    "cpu_system_pct",
    "cpu_pct",
    "rss_bytes",
    "cores_allowed",
]
#: Scheduler figures per sample, after :data:`SAMPLE_COLUMNS`: ``cpu_wait_pct`` is the time the
#: process's threads spent runnable but waiting for a CPU (run-queue delay from
#: ``/proc/PID/task/*/schedstat``, % of one core: 100 = one thread waiting all the time);
#: ``cpus_busy_pct`` is how busy the CPUs it may use were, whoever used them (``/proc/stat``,
#: mean over those CPUs, 100 = all full). A process with little CPU of its own but a full CPU
#: set and a long run queue is held back by the CPU it shares, not by something else.
SCHED_COLUMNS = ["cpu_wait_pct", "cpus_busy_pct"]


def _run_delay_s(pid: int) -> float:
    """Seconds the threads of ``pid`` alive now have waited on a run queue (NaN if unknown)."""
    total, seen = 0.0, False
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return float("nan")
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[1]) / 1e9
                seen = True
        except (OSError, IndexError, ValueError):
            continue  # a thread that ended between listdir and open
    return total if seen else float("nan")


def _cpu_busy() -> dict[int, tuple[float, float]]:
    """Per CPU: (busy seconds, total seconds) since boot, from psutil's /proc/stat reading."""
    out = {}
    for i, t in enumerate(psutil.cpu_times(percpu=True)):
        total = sum(t)
        idle = t.idle + getattr(t, "iowait", 0.0)
        out[i] = (total - idle, total)
    return out


class ProcessSampler:
    """Sample CPU % and RSS of named processes once per ``interval`` in a background thread.

    Parameters
    ----------
    pids
        Source name → pid, e.g. ``{"server": 1234, "client": 5678}``. A pid may be added later
        with :meth:`watch` (the client is often started after the sampler).
    interval
        Seconds between samples.
    t0
        The start of the run as a ``time.time()`` epoch; sample times are seconds after it.
        Default: when :meth:`start` is called.

    Notes
    -----
    Use as a context manager::

        with ProcessSampler({"server": server_pid}, t0=t_start) as s:
            client = subprocess.Popen(...)
            s.watch("client", client.pid)
            client.wait()
        s.samples, s.warnings, s.overhead_pct

    The first reading of each process is a baseline and yields no row; the last partial interval
    is sampled at :meth:`stop` only when it is at least half an interval long.
    """

    def __init__(
        self,
        pids: Mapping[str, int] | None = None,
        interval: float = 1.0,
        t0: float | None = None,
    ):
        if interval <= 0:
            raise ValueError("interval must be positive")
        self.interval = float(interval)
        self.t0 = t0
        self.warnings: list[str] = []
        self._rows: list[tuple] = []
        self._procs: dict[str, psutil.Process] = {}
        self._last: dict[str, tuple[float, float, float]] = {}
        self._cores: dict[str, int] = {}
        self._cpuset: dict[str, list[int]] = {}
        self._wait: dict[str, float] = {}
        self._busy0: dict[int, tuple[float, float]] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._own_cpu = 0.0
        self._wall = 0.0
        self._mono0 = 0.0
        for name, pid in (pids or {}).items():
            self.watch(name, pid)

    # -- set-up -------------------------------------------------------------------------------

    def watch(self, source: str, pid: int) -> None:
        """Start sampling another process (takes its baseline reading now)."""
        try:
            proc = psutil.Process(pid)
            with proc.oneshot():
                ct = proc.cpu_times()
                cpuset = list(proc.cpu_affinity())
        except (psutil.NoSuchProcess, psutil.AccessDenied) as e:
            self.warnings.append(f"{source} (pid {pid}) cannot be sampled: {e}")
            return
        with self._lock:
            self._procs[source] = proc
            self._cores[source] = len(cpuset)
            self._cpuset[source] = cpuset
            self._wait[source] = _run_delay_s(pid)
            self._last[source] = (time.monotonic(), ct.user, ct.system)

    def unwatch(self, source: str) -> None:
        """Stop sampling a process that ended on purpose (no "stopped being sampled" warning)."""
        with self._lock:
            self._procs.pop(source, None)
            self._last.pop(source, None)

    def start(self) -> ProcessSampler:
        """Start the sampling thread."""
        now_wall, now_mono = time.time(), time.monotonic()
        if self.t0 is None:
            self.t0 = now_wall
        # Monotonic clock from here on; t0 maps onto it once.
        self._mono0 = now_mono - (now_wall - self.t0)
        # Fresh baselines, so the first row of a process watched long before covers one
        # interval, like everyone else's.
        with self._lock:
            items = list(self._procs.items())
        for source, proc in items:
            try:
                ct = proc.cpu_times()
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
            self._last[source] = (time.monotonic(), ct.user, ct.system)
            self._wait[source] = _run_delay_s(proc.pid)
        self._busy0 = _cpu_busy()
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="tibench-sampler", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop the thread; takes a final sample if the last interval is long enough."""
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join()
        self._thread = None

    def __enter__(self) -> ProcessSampler:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- the loop -----------------------------------------------------------------------------

    def _loop(self) -> None:
        cpu0, wall0 = time.thread_time(), time.monotonic()
        elapsed = time.monotonic() - self._mono0
        k = max(1, int(elapsed // self.interval) + 1)
        while True:
            due = self._mono0 + k * self.interval
            if self._stop.wait(max(0.0, due - time.monotonic())):
                break
            self._sample_all()
            k += 1
            # After a stall (suspended machine, overloaded host) skip missed ticks, don't burst.
            behind = time.monotonic() - self._mono0
            k = max(k, int(behind // self.interval) + 1)
        # Final partial interval, when long enough to be worth a row.
        with self._lock:
            lasts = [v[0] for v in self._last.values()]
        if lasts and time.monotonic() - max(lasts) >= self.interval / 2:
            self._sample_all()
        self._own_cpu += time.thread_time() - cpu0
        self._wall += time.monotonic() - wall0

    def _sample_all(self) -> None:
        with self._lock:
            items = list(self._procs.items())
        busy1 = _cpu_busy()
        busy0, self._busy0 = self._busy0, busy1
        for source, proc in items:
            try:
                with proc.oneshot():
                    ct = proc.cpu_times()
                    rss = proc.memory_info().rss
                now = time.monotonic()
            except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied) as e:
                with self._lock:
                    self._procs.pop(source, None)
                    self._last.pop(source, None)
                t = time.monotonic() - self._mono0
                self.warnings.append(
                    f"{source} (pid {proc.pid}) stopped being sampled at t={t:.1f}s: "
                    f"{type(e).__name__}"
                )
                continue
            with self._lock:  # unwatched meanwhile (its process ended on purpose): no row
                last = self._last.get(source)
            if last is None:
                continue
            last_mono, last_user, last_sys = last
            dt = now - last_mono
            if dt <= 0:
                continue
            user = max(0.0, ct.user - last_user) / dt * 100.0
            system = max(0.0, ct.system - last_sys) / dt * 100.0
            with self._lock:
                if source not in self._last:
                    continue
                self._last[source] = (now, ct.user, ct.system)
            wait = _run_delay_s(proc.pid)
            # threads that ended take their delay with them: never a negative wait
            wait_pct = max(0.0, wait - self._wait.get(source, math.nan)) / dt * 100.0
            self._wait[source] = wait
            shares = [
                (busy1[c][0] - busy0[c][0]) / (busy1[c][1] - busy0[c][1])
                for c in self._cpuset.get(source, [])
                if c in busy0 and c in busy1 and busy1[c][1] > busy0[c][1]
            ]
            cpus_busy = 100.0 * sum(shares) / len(shares) if shares else math.nan
            self._rows.append(
                (
                    source,
                    round(now - self._mono0, 3),
                    user,
                    system,
                    user + system,
                    int(rss),
                    self._cores[source],
                    wait_pct,
                    cpus_busy,
                )
            )

    # -- results ------------------------------------------------------------------------------

    @property
    def samples(self) -> pd.DataFrame:
        """The samples so far: one row per source and tick, columns :data:`SAMPLE_COLUMNS`."""
        df = pd.DataFrame(self._rows, columns=SAMPLE_COLUMNS + SCHED_COLUMNS)
        return df.astype({"rss_bytes": "int64", "cores_allowed": "int64"})

    @property
    def overhead_pct(self) -> float:
        """The sampler thread's own CPU time as % of one core over its lifetime."""
        return 100.0 * self._own_cpu / self._wall if self._wall > 0 else float("nan")


def client_bottleneck(
    samples: pd.DataFrame,
    source: str = "client",
    threshold: float = 0.90,
    host_cpus: int | None = None,
) -> dict:
    """Tell whether the benchmark client was CPU-bound.

    The estimator is the mean of the per-second CPU % of ``source`` over the run divided by
    100 × the cores it may use (its affinity, ``cores_allowed``). A mean at or above
    ``threshold`` means the client, not the server, set the pace: the run measures the client.

    Parameters
    ----------
    samples
        :attr:`ProcessSampler.samples` of one run.
    source
        The client's source name.
    threshold
        Share of the allowed cores that counts as a bottleneck (0.90 in issue 5).
    host_cpus
        When given, the client + server share of the host is added (``host_share``), since on a
        small machine they compete for the same cores.

    Returns
    -------
    dict
        ``source``, ``n``, ``cores_allowed``, ``mean_cpu_pct``, ``share`` (of its allowed cores),
        ``bottleneck`` (bool), ``host_share`` (or None) and ``warning`` (str or None).
    """
    s = samples[samples["source"] == source]
    out = {
        "source": source,
        "n": len(s),
        "cores_allowed": None,
        "mean_cpu_pct": None,
        "share": None,
        "bottleneck": False,
        "host_share": None,
        "warning": None,
    }
    if s.empty:
        out["warning"] = f"no CPU samples for {source!r}: client bottleneck not checked"
        return out
    cores = int(s["cores_allowed"].max())
    mean = float(s["cpu_pct"].mean())
    share = mean / (100.0 * cores)
    out.update(cores_allowed=cores, mean_cpu_pct=mean, share=share, bottleneck=share >= threshold)
    if host_cpus:
        per_t = samples.groupby("t")["cpu_pct"].sum()
        out["host_share"] = float(per_t.mean()) / (100.0 * host_cpus)
    if out["bottleneck"]:
        out["warning"] = (
            f"{source} used {mean:.0f}% CPU = {share:.0%} of the {cores} core(s) it may use "
            f"(≥ {threshold:.0%}): the client may be the bottleneck, not the server"
        )
    return out


def parse_numastat_p(text: str) -> pd.DataFrame:
    """Parse the output of ``numastat -p PID`` (one process) into a long table.

    Returns
    -------
    DataFrame
        ``category`` (Huge, Heap, Stack, Private, Total), ``node`` (int, or ``"total"`` for the
        Total column) and ``mb``.

    Raises
    ------
    ValueError
        When no ``Node N`` header is found.
    """
    lines = text.splitlines()
    header_idx = next((i for i, ln in enumerate(lines) if re.match(r"^\s+Node \d+", ln)), None)
    if header_idx is None:
        raise ValueError("no 'Node N' header in numastat output")
    columns: list[int | str] = [int(n) for n in re.findall(r"Node (\d+)", lines[header_idx])]
    if "Total" in lines[header_idx]:
        columns.append("total")
    rows = []
    for ln in lines[header_idx + 1 :]:
        parts = ln.split()
        if not parts or set(parts[0]) == {"-"}:
            continue
        values = parts[1:]
        if len(values) != len(columns):
            continue
        try:
            nums = [float(v) for v in values]
        except ValueError:
            continue
        rows += [
            {"category": parts[0], "node": c, "mb": v} for c, v in zip(columns, nums, strict=True)
        ]
    return pd.DataFrame(rows, columns=["category", "node", "mb"])


def numastat_per_node(pid: int, timeout: float = 10.0) -> tuple[pd.DataFrame, list[str]]:
    """Memory of one process per NUMA node, from ``numastat -p PID``.

    Returns
    -------
    (DataFrame, list of str)
        The :func:`parse_numastat_p` table, and warnings. When ``numastat`` is missing, fails
        or prints something unexpected, the table is empty and the reason is the warning.
    """
    cols = ["category", "node", "mb"]
    exe = shutil.which("numastat")
    if exe is None:
        return pd.DataFrame(columns=cols), [
            "numastat unavailable (not installed; Debian: apt-get install numactl)"
        ]
    try:
        res = subprocess.run(
            [exe, "-p", str(int(pid))], capture_output=True, text=True, timeout=timeout
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return pd.DataFrame(columns=cols), [f"numastat -p {pid} unavailable: {e}"]
    if res.returncode != 0:
        msg = (res.stderr or res.stdout).strip().splitlines()
        return pd.DataFrame(columns=cols), [
            f"numastat -p {pid} failed (exit {res.returncode}): {msg[0] if msg else ''}"
        ]
    try:
        return parse_numastat_p(res.stdout), []
    except ValueError as e:
        # numastat exits 0 even when it cannot read numa_maps; the reason is on stderr.
        why = res.stderr.strip().splitlines()
        return pd.DataFrame(columns=cols), [f"numastat -p {pid}: {why[0] if why else e}"]
