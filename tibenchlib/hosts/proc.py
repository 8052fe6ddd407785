"""A client host's CPU demand, read from its ``/proc`` over the run's own SSH connection.

Once a second a long-lived shell loop on the host (:func:`sampler_script`) prints its clock,
the ``cpu`` line of ``/proc/stat`` (how busy all its CPUs were), ``/proc/<pid>/stat`` of the
run's client process (its user and system CPU time, its RSS) and each of its threads'
``schedstat`` (time spent runnable but waiting for a CPU, as
:class:`tibenchlib.resources.ProcessSampler` reads it locally). :func:`sample_rows` turns those
readings into rows with the columns of :data:`tibenchlib.resources.SAMPLE_COLUMNS`
(+ ``SCHED_COLUMNS``), so a remote client is stored and judged
(:func:`tibenchlib.resources.client_bottleneck`) like the
local one; its source is ``client:<host>``.
"""

from __future__ import annotations

import math
import shlex

import pandas as pd

from ..resources import SAMPLE_COLUMNS, SCHED_COLUMNS

__all__ = ["parse_readings", "sample_rows", "sampler_script"]


def sampler_script(directory: str, pid_file: str, interval_s: float = 1.0) -> str:
    """The host's sampling loop (its pid in ``<pid_file>.sampler.pid`` of ``directory``, so
    :func:`tibenchlib.hosts.ssh.stop_script` stops it): one block ``T <epoch>`` / ``cpu …`` /
    ``<pid stat>`` / ``S <schedstat>``… / ``E`` per ``interval_s``; it ends when its session's
    standard input is closed, ``directory`` is removed or it is killed.

    One long-lived ``bash`` that starts no process while it samples: the clock from
    ``$EPOCHREALTIME`` (bash 5), the ``/proc`` files read by the ``read`` builtin, the pause a
    ``read -t`` on the session's standard input (which tibench never writes to). A loop that
    forked ``date``, ``head``, ``cat`` and ``sleep`` every second cost the client host CPU
    beside its client (on loopback hosts, the server's own CPUs). Without bash, a POSIX
    shell loop that does fork them."""
    d = shlex.quote(directory)
    p = shlex.quote(f"{directory}/{pid_file}")
    iv = f"{interval_s:g}"
    head = f"echo $$ > {p}.sampler.pid; P={p}; "
    builtins = (
        head + f"while [ -d {d} ]; do "
        "t=${EPOCHREALTIME:-$(date +%s.%N)}; printf 'T %s\\n' \"${t/,/.}\"; "
        "read -r l < /proc/stat && printf '%s\\n' \"$l\"; "
        'if [ -f "$P" ] && read -r c < "$P"; then '
        'read -r l 2>/dev/null < "/proc/$c/stat" && printf \'%s\\n\' "$l"; '
        "for f in /proc/$c/task/*/schedstat; do "
        'read -r l 2>/dev/null < "$f" && printf \'S %s\\n\' "$l"; done; '
        "fi; echo E; "
        f"read -r -t {iv} _; [ $? -gt 128 ] || break; done"
    )
    forking = (
        head + f"while [ -d {d} ]; do "
        """printf 'T %s\\n' "$(date +%s.%N)"; head -n 1 /proc/stat; """
        'if [ -f "$P" ]; then c=$(cat "$P"); cat "/proc/$c/stat" 2>/dev/null; '
        'for f in /proc/$c/task/*/schedstat; do printf "S %s\\n" "$(cat "$f" 2>/dev/null)"; done; '
        "fi; echo E; "
        f"sleep {iv}; done"
    )
    return (
        f"if command -v bash >/dev/null 2>&1; then exec bash -c {shlex.quote(builtins)}; fi; "
        + forking
    )


def parse_readings(text: str) -> list[dict]:
    """The blocks a sampling loop printed: ``ts`` (host clock), ``busy``/``total`` (jiffies of
    all CPUs), ``utime``/``stime`` (jiffies of the client), ``rss_pages`` and ``wait`` (seconds
    its threads waited for a CPU; None without a client process yet). An incomplete last
    block is dropped."""
    out, cur = [], None
    for line in text.splitlines():
        if line.startswith("T "):
            cur = {"ts": float(line[2:]), "busy": None, "total": None, "utime": None, "wait": None}
        elif cur is None:
            continue
        elif line.startswith("cpu "):
            v = [int(x) for x in line.split()[1:]]
            idle = v[3] + (v[4] if len(v) > 4 else 0)
            total = sum(v[:8])  # guest time is already in user
            cur.update(busy=total - idle, total=total)
        elif line.startswith("S "):
            f = line.split()
            if len(f) >= 3 and f[2].isdigit():  # run delay (ns) of one thread of the client
                cur["wait"] = (cur["wait"] or 0) + int(f[2]) / 1e9
        elif line == "E":
            if cur.get("total") is not None:
                out.append(cur)
            cur = None
        elif ")" in line:
            rest = line.rsplit(")", 1)[1].split()
            cur.update(utime=int(rest[11]), stime=int(rest[12]), rss_pages=int(rest[21]))
    return out


def sample_rows(
    readings: list[dict],
    *,
    source: str,
    t0: float,
    offset_s: float,
    cores: int,
    clk_tck: int = 100,
    pagesize: int = 4096,
) -> pd.DataFrame:
    """Per-interval rows of one host from consecutive readings: ``t`` = end of the interval
    in seconds after ``t0`` (this machine's clock: the host's minus ``offset_s``); CPU % of
    the client process (100 = one core), ``cpus_busy_pct`` = the host's CPUs' busy share."""
    rows = []
    for a, b in zip(readings, readings[1:], strict=False):
        dt = b["ts"] - a["ts"]
        if dt <= 0 or a.get("utime") is None or b.get("utime") is None:
            continue
        user = (b["utime"] - a["utime"]) / clk_tck / dt * 100.0
        system = (b["stime"] - a["stime"]) / clk_tck / dt * 100.0
        dtot = b["total"] - a["total"]
        # threads that ended take their delay with them: never a negative wait
        wait = (
            max(0.0, b["wait"] - a["wait"]) / dt * 100.0
            if a.get("wait") is not None and b.get("wait") is not None
            else math.nan
        )
        busy = 100.0 * (b["busy"] - a["busy"]) / dtot if dtot > 0 else math.nan
        rows.append(
            (
                source,
                round(b["ts"] - offset_s - t0, 3),
                max(user, 0.0),
                max(system, 0.0),
                max(user, 0.0) + max(system, 0.0),
                int(b["rss_pages"]) * pagesize,
                cores,
                wait,
                busy,
            )
        )
    df = pd.DataFrame(rows, columns=SAMPLE_COLUMNS + SCHED_COLUMNS)
    return df.astype({"rss_bytes": "int64", "cores_allowed": "int64"})
