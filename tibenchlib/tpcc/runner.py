"""Run TPC-C: the TPC-C-like sysbench Lua driver on any MySQL-compatible server (the embedded
default included), and go-tpc / ``tiup bench tpcc`` on a cluster when installed.

The Lua driver (``lua/tpcc.lua``) is TPC-C-like and not audited: the specification's schema,
population, five transactions and mix, run by sysbench (threads, report intervals, latency
histogram, reconnects, ignorable deadlocks), without terminals, keying and think times.

tpmC, the way go-tpc reports it: New-Order transactions *committed* per minute of measured
time. The driver measures it twice and :func:`run_sysbench_tpcc` keeps both: the growth of the
``orders`` table across the run (every committed New-Order adds exactly one order; the 1%
rolled back add none), which is the figure reported, and the driver's own per-thread
counters (printed by each sysbench thread at its end), which must agree with it. The measured
time is sysbench's ``total time``.

Client hosts (``tpcc.clients: [local, user@host…]``): :func:`run_lua_on_hosts` runs the Lua
driver on each with :mod:`tibenchlib.hosts`' mechanics (pre-flight of ``sysbench``, the start
barrier, the credentials in a 0600 file of the host's private directory, every client killed on
abort); the driver's two Lua files are copied to each host once, and each host's output comes
back as its raw log.

The password reaches sysbench through a 0600 ``--config-file`` (:func:`tibenchlib.db.
secret_config_file`). go-tpc reads it only from its ``-p`` flag, so on a cluster it is
visible in the client host's process list while go-tpc runs; it is never written to the log
or to the command shown (:func:`tibenchlib.tools.display_command`).
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import sqlalchemy as sa

from .. import paths
from ..db import ConnInfo, secret_config_file
from ..hosts.execute import ClientJob, ClientResult, run_clients
from ..hosts.preflight import HostCheck
from ..hosts.runs import open_hosts
from ..hosts.spec import host_labels
from ..hosts.ssh import call, remote_dir
from ..parse.gotpc import TpccResult, parse_tpcc_output
from ..parse.sysbench import SysbenchResult, histogram_percentiles, parse_sysbench_file
from ..sysbench.command import seeded
from ..tools import Outcome, execute, which

__all__ = [
    "LUA_DIR",
    "SCRIPT",
    "TRANSACTIONS",
    "Scale",
    "SysbenchTpccRun",
    "cleanup_sysbench_tpcc",
    "gotpc_command",
    "gotpc_tool",
    "host_logs",
    "open_tpcc_hosts",
    "orders_count",
    "orders_count_after",
    "parse_driver_counts",
    "parse_driver_latency",
    "transaction_latency",
    "prepare_sysbench_tpcc",
    "run_gotpc",
    "run_lua_on_hosts",
    "run_sysbench_tpcc",
    "sysbench_tpcc_command",
]

LUA_DIR = Path(__file__).with_name("lua")
SCRIPT = LUA_DIR / "tpcc.lua"
#: Transaction types, as the Lua driver counts them.
TRANSACTIONS = ("new_order", "payment", "order_status", "delivery", "stock_level")
#: The driver's lines, found wherever they start: the threads of one client print at the end
#: together, and a line can land glued to the end of another thread's
_COUNTS = re.compile(r"tpcc: thread=(\d+)((?: \w+=\d+)+)")
_LATENCY = re.compile(
    r"tpcc-latency: thread=(\d+) type=(\w+) n=(\d+) sum_ms=([\d.]+) max_ms=([\d.]+) "
    r"buckets=((?:\d+:\d+,?)*)"
)
#: sysbench's histogram (sb_histogram.c): 1024 logarithmic buckets from 0.001 to 100000 ms
_H_MIN, _H_MAX, _H_SIZE = 0.001, 100_000.0, 1024


@dataclass(frozen=True)
class Scale:
    """The data set: ``warehouses`` (the scale factor), ``items`` (the item table and the stock
    rows per warehouse; the specification's 100,000) and ``customers`` (customers and initial
    orders per district; the specification's 3,000). Smaller items/customers are for tests."""

    warehouses: int = 1
    items: int = 100_000
    customers: int = 3_000

    def __post_init__(self) -> None:
        for name, low in (("warehouses", 1), ("items", 1000), ("customers", 10)):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < low:
                raise ValueError(f"tpcc scale: {name} must be an integer >= {low}, got {v!r}")

    def args(self) -> list[str]:
        return [
            f"--warehouses={self.warehouses}",
            f"--items={self.items}",
            f"--customers={self.customers}",
        ]


def sysbench_tpcc_command(
    conn: ConnInfo,
    command: str,
    scale: Scale,
    *,
    threads: int = 1,
    time_s: int | None = None,
    report_interval_s: int | None = 1,
    histogram: bool = True,
    percentile: float = 95,
    config_file: str | Path | None = None,
    extra: Sequence[str] = (),
    wait: bool = False,
    wait_scale: float = 1.0,
    script: str | Path = SCRIPT,
) -> list[str]:
    """The sysbench command line for ``prepare``, ``run`` or ``cleanup``, password excluded.
    ``wait`` adds the specification's keying and think times (times ``wait_scale``) to a run;
    ``script``: where the driver is (on a client host, its copy there)."""
    if command not in ("prepare", "run", "cleanup"):
        raise ValueError(f"command must be prepare, run or cleanup, got {command!r}")
    cmd = ["sysbench", str(script)]
    if config_file is not None:
        cmd.append(f"--config-file={config_file}")
    cmd += conn.sysbench_args()
    cmd += [*scale.args(), f"--threads={threads}"]
    if command == "run":
        if time_s is not None:
            cmd.append(f"--time={time_s}")
        if report_interval_s:
            cmd.append(f"--report-interval={report_interval_s}")
        cmd.append(f"--percentile={percentile:g}")
        if histogram:
            cmd.append("--histogram=on")
        if wait:
            cmd += ["--wait=on", f"--wait-scale={wait_scale:g}"]
    cmd += list(extra)
    cmd.append(command)
    return cmd


def _sysbench(conn, command, scale, log_path, private_dir, timeout_s, **kw) -> Outcome:
    with secret_config_file(conn, private_dir) as cfg:
        cmd = sysbench_tpcc_command(conn, command, scale, config_file=cfg, **kw)
        return execute(cmd, log_path, timeout_s=timeout_s)


def prepare_sysbench_tpcc(
    conn: ConnInfo,
    scale: Scale,
    log_path: str | Path,
    *,
    threads: int | None = None,
    private_dir: str | Path | None = None,
    timeout_s: float | None = None,
) -> Outcome:
    """Create the 9 tables and load ``scale`` (one loader thread per warehouse, at most
    ``threads``, default ``min(warehouses, 4)``). The tables must not exist yet."""
    threads = threads or min(scale.warehouses, 4)
    return _sysbench(conn, "prepare", scale, log_path, private_dir, timeout_s, threads=threads)


def cleanup_sysbench_tpcc(
    conn: ConnInfo,
    log_path: str | Path,
    *,
    private_dir: str | Path | None = None,
    timeout_s: float | None = None,
) -> Outcome:
    """Drop the TPC-C tables (those that exist)."""
    return _sysbench(conn, "cleanup", Scale(), log_path, private_dir, timeout_s)


def orders_count(engine: sa.Engine) -> int:
    """Rows in ``orders``: one per committed New-Order plus the initial population."""
    with engine.connect() as c:
        return int(c.execute(sa.text("SELECT COUNT(*) FROM orders")).scalar_one())


def orders_count_after(engine: sa.Engine) -> tuple[int | None, str | None]:
    """:func:`orders_count` after a run: ``(count, None)``, or ``(None, error)`` when the
    server no longer answers (killed during the run). The run then fails with that one line
    and the run loop's alive check restarts an embedded server before the next run."""
    try:
        return orders_count(engine), None
    except sa.exc.DBAPIError as e:
        msg = " ".join(str(getattr(e, "orig", None) or e).split())
        return None, f"the server stopped answering during the run: {msg}"


def parse_driver_counts(text: str) -> dict | None:
    """The Lua driver's end-of-run counters summed over threads: ``new_order``,
    ``new_order_rollback``, ``payment``, ``order_status``, ``delivery``, ``stock_level``
    (committed transactions; rollbacks: New-Orders rolled back on purpose) and ``threads``
    (how many threads reported). None when no thread printed its line (a killed run)."""
    found = _COUNTS.findall(text)
    if not found:
        return None
    total: dict[str, int] = {}
    for _, pairs in found:
        for key, val in re.findall(r"(\w+)=(\d+)", pairs):
            total[key] = total.get(key, 0) + int(val)
    total["threads"] = len({t for t, _ in found})
    return total


def bucket_value_ms(index: int) -> float:
    """The value sysbench gives histogram bucket ``index`` (0..1023), in ms."""
    mult = (_H_SIZE - 1) / (math.log(_H_MAX) - math.log(_H_MIN))
    return math.exp(index / mult + math.log(_H_MIN))


def parse_driver_latency(texts: str | Sequence[str]) -> dict[str, dict]:
    """The Lua driver's per-transaction latency lines, summed over threads and over several
    outputs (several clients of one run).

    Returns transaction type → ``n`` (completed transactions timed), ``sum_ms``, ``max_ms``
    and ``histogram`` (``value_ms``, ``count``: sysbench's bucket values, buckets added
    bucket by bucket, so percentiles read from it are those of all threads' and clients'
    transactions together). Empty when no thread printed its lines.
    """
    if isinstance(texts, str):
        texts = [texts]
    acc: dict[str, dict] = {}
    for text in texts:
        for _, name, n, total, mx, buckets in _LATENCY.findall(text):
            a = acc.setdefault(name, {"n": 0, "sum_ms": 0.0, "max_ms": 0.0, "buckets": {}})
            a["n"] += int(n)
            a["sum_ms"] += float(total)
            a["max_ms"] = max(a["max_ms"], float(mx))
            for pair in filter(None, buckets.split(",")):
                i, c = pair.split(":")
                a["buckets"][int(i)] = a["buckets"].get(int(i), 0) + int(c)
    out = {}
    for name, a in acc.items():
        idx = sorted(a["buckets"])
        hist = pd.DataFrame(
            {
                "value_ms": [round(bucket_value_ms(i), 3) for i in idx],
                "count": np.array([a["buckets"][i] for i in idx], dtype=np.int64),
            }
        )
        out[name] = {"n": a["n"], "sum_ms": a["sum_ms"], "max_ms": a["max_ms"], "histogram": hist}
    return out


def transaction_latency(parsed: dict[str, dict]) -> dict[str, dict]:
    """Per transaction type: ``n``, ``avg`` (sum / n), ``p50``, ``p90``, ``p95``, ``p99``,
    ``p999`` (sysbench's percentile estimator on the merged histogram, exact to one bucket,
    about ±0.9%) and ``max``, in ms; None where no transaction of the type completed."""
    out = {}
    for name in TRANSACTIONS:
        a = parsed.get(name)
        if not a or not a["n"]:
            out[name] = {k: None for k in ("avg", "p50", "p90", "p95", "p99", "p999", "max")}
            out[name]["n"] = 0
            continue
        pct = histogram_percentiles(a["histogram"], (50, 90, 95, 99, 99.9))
        out[name] = {
            "n": a["n"],
            "avg": a["sum_ms"] / a["n"],
            "p50": pct[50],
            "p90": pct[90],
            "p95": pct[95],
            "p99": pct[99],
            "p999": pct[99.9],
            "max": a["max_ms"],
        }
    return out


@dataclass(frozen=True)
class SysbenchTpccRun:
    """One run of the Lua driver.

    ``summary`` (JSON-serialisable): ``status``/``error`` (sysbench's, or a disagreement between
    the two New-Order counts), ``tpmc``, ``tpmc_source`` (``orders``: the orders table's
    growth), ``tpm_total`` (every committed transaction per minute, go-tpc's tpmTotal),
    ``new_orders`` (committed, from the orders table), ``new_order_rollbacks``,
    ``transactions`` (type → committed, from the driver), ``mix_pct`` (type → share of the
    committed transactions and rollbacks), ``runtime_s``, ``threads``, ``tps`` (sysbench's
    events per second: every transaction type), ``latency_ms`` and ``percentile``
    (sysbench's, over all types), ``errors_per_s`` (deadlocks and lock wait timeouts that
    restarted a transaction) and ``reconnects``. ``sysbench`` keeps the parsed output
    (intervals, histogram) for the statistics.
    """

    outcome: Outcome
    summary: dict
    sysbench: SysbenchResult = field(repr=False)


def run_sysbench_tpcc(
    conn: ConnInfo,
    scale: Scale,
    log_path: str | Path,
    *,
    threads: int,
    time_s: int,
    report_interval_s: int = 1,
    histogram: bool = True,
    percentile: float = 95,
    private_dir: str | Path | None = None,
    timeout_s: float | None = None,
    engine: sa.Engine | None = None,
) -> SysbenchTpccRun:
    """Run the five transactions for ``time_s`` seconds on ``threads`` threads and measure
    tpmC (see the module's docstring for how). ``engine`` (default: one made from ``conn``)
    counts the orders before and after."""
    own = engine is None
    engine = engine or conn.engine()
    try:
        before = orders_count(engine)
        outcome = _sysbench(
            conn,
            "run",
            scale,
            log_path,
            private_dir,
            timeout_s,
            threads=threads,
            time_s=time_s,
            report_interval_s=report_interval_s,
            histogram=histogram,
            percentile=percentile,
        )
        after, lost = orders_count_after(engine)
    finally:
        if own:
            engine.dispose()
    sb = parse_sysbench_file(outcome.log_path)
    counts = parse_driver_counts(Path(outcome.log_path).read_text(errors="replace"))
    new_orders = after - before if after is not None else None
    return SysbenchTpccRun(outcome, _run_summary(sb, counts, new_orders, outcome, lost), sb)


def _run_summary(
    sb: SysbenchResult, counts: dict | None, new_orders: int | None, outcome, lost=None
) -> dict:
    s = sb.summary
    runtime = s["total_time_s"]
    minutes = runtime / 60 if runtime else None
    status, error = s["status"], s["error"]
    if lost:  # the server went away: whatever sysbench printed, the run is not measured
        status, error = "failed", lost
    if status == "ok" and outcome.returncode not in (0, None):
        status, error = "failed", f"sysbench exited with status {outcome.returncode}"
    if status == "ok" and counts is None:
        status, error = "failed", "the driver printed no transaction counts"
    if status == "ok" and counts["new_order"] != new_orders:
        status, error = (
            "failed",
            f"New-Order counts disagree: {new_orders} new orders in the table, "
            f"{counts['new_order']} counted by the driver",
        )
    transactions = {t: counts.get(t, 0) for t in TRANSACTIONS} if counts else None
    done = sum(transactions.values()) if transactions else 0
    rollbacks = counts.get("new_order_rollback", 0) if counts else None
    drawn = done + (rollbacks or 0)
    mix = None
    if transactions and drawn:
        mix = {t: 100 * n / drawn for t, n in transactions.items()}
        mix["new_order"] += 100 * rollbacks / drawn
    ok = status == "ok" and minutes
    return {
        "status": status,
        "error": error,
        "tool": "sysbench-tpcc",
        "tpmc": new_orders / minutes if ok else None,
        "tpmc_source": "orders",
        "tpm_total": done / minutes if ok and transactions else None,
        "new_orders": new_orders,
        "new_order_rollbacks": rollbacks,
        "transactions": transactions,
        "mix_pct": mix,
        "runtime_s": runtime,
        "threads": s["threads"],
        "tps": s["tps"],
        "latency_ms": s["latency_ms"],
        "percentile": s["percentile"],
        "errors_per_s": s["errors_per_s"],
        "reconnects": s["reconnects"],
        "intervals": s["intervals"],
    }


# -- the Lua driver on client hosts ------------------------------------------------------------
def open_tpcc_hosts(study, conn, *, store=None, arm: str | None = None) -> list[HostCheck]:
    """Pre-flight of ``tpcc.clients``' hosts for ``sysbench`` (a host's own path: its
    ``sysbench:``); raises :class:`tibenchlib.hosts.ssh.HostError`, one line per problem."""
    return open_hosts(
        study, conn, store=store, arm=arm, clients=study.tpcc.client_hosts,
        report_interval_s=study.tpcc.report_interval_s,
    )  # fmt: skip


def host_logs(study, run_key: str) -> list[Path]:
    """Each client host's raw log of a run: ``raw/tpcc/<run>/<host>.log``."""
    labels = host_labels([c.host for c in study.tpcc.client_hosts])
    return paths.host_run_logs(study.study, "tpcc", run_key, labels)


def run_lua_on_hosts(
    ctx,
    conn: ConnInfo,
    scale: Scale,
    threads: Sequence[int],
    logs: Sequence[Path],
    *,
    name: str,
    seeds: Sequence[int | None] | None = None,
    timeout_s: float | None = None,
    **run_args,
) -> tuple[list[ClientResult], list[list[str]]]:
    """One run of the Lua driver on every client host of ``ctx.study`` (``threads[i]`` on the
    i-th), started together; returns each client's result (``error`` names a host that failed)
    and command. ``run_args``: :func:`sysbench_tpcc_command`'s (``time_s``, ``wait``…);
    ``name`` names the run's files on the hosts; ``seeds``: each client's ``--rand-seed``
    (:func:`tibenchlib.sysbench.command.client_seeds`)."""
    study = ctx.study
    checks = open_tpcc_hosts(study, conn, store=ctx.store, arm=ctx.arm.label)
    lua = sorted(LUA_DIR.glob("*.lua"))
    secret = f"mysql-password={conn.password}\n" if conn.password else ""
    hosts = study.tpcc.client_hosts
    with secret_config_file(conn, paths.private_dir(study.study)) as local_cfg:
        jobs = []
        seeds = list(seeds) if seeds is not None else [None] * len(checks)
        for c, host, n, log, seed in zip(checks, hosts, threads, logs, seeds, strict=True):
            if c.local:
                cfg, script = local_cfg, SCRIPT
            else:
                cfg = f"{remote_dir(study.study, c.label)}/{name}.cfg"
                script = f"{call(c.ssh.aput_files(lua))}/{SCRIPT.name}"
            cmd = seeded(
                sysbench_tpcc_command(
                    conn, "run", scale, threads=n, config_file=cfg, script=script, **run_args
                ),
                seed,
            )
            if host.sysbench:
                cmd[0] = host.sysbench
            jobs.append(ClientJob(c, cmd, Path(log), n, "" if c.local else secret))
        results = run_clients(jobs, study=study.study, name=name, timeout_s=timeout_s)
    return results, [j.argv for j in jobs]


# -- go-tpc / tiup bench tpcc on a cluster -----------------------------------------------------
def gotpc_tool() -> list[str] | None:
    """``["go-tpc"]`` or ``["tiup", "bench"]``, whichever is installed (go-tpc first: tibench's
    own build, :mod:`tibenchlib.gobuild`, or PATH's)."""
    if which("go-tpc"):
        return ["go-tpc"]
    if which("tiup"):
        return ["tiup", "bench"]
    return None


def gotpc_command(
    conn: ConnInfo,
    action: str,
    *,
    warehouses: int,
    threads: int = 1,
    time_s: int | None = None,
    wait: bool = False,
    interval_s: int = 10,
    tool: Sequence[str] = ("go-tpc",),
    extra: Sequence[str] = (),
    prepare_check: bool = True,
) -> list[str]:
    """``go-tpc tpcc … prepare|run|check`` as report 001 runs it (``--warehouses 8 run --wait
    --time 1m --threads 8``), password excluded (:func:`run_gotpc` appends it).

    The action's own flags follow it (go-tpc v1.0.7 refuses ``--wait`` and ``--no-check``
    before it); ``prepare_check=False`` loads without go-tpc's consistency check
    (``prepare --no-check``), for a caller that runs ``check`` itself afterwards.
    """
    if action not in ("prepare", "run", "check", "cleanup"):
        raise ValueError(f"go-tpc tpcc action must be prepare, run, check or cleanup: {action!r}")
    cmd = [*tool, "tpcc", "-H", conn.host, "-P", str(conn.port), "-U", conn.user]
    cmd += ["-D", conn.database, "--warehouses", str(warehouses), action]
    if action == "run":
        if wait:
            cmd.append("--wait")
        if time_s is not None:
            cmd += ["--time", f"{time_s}s"]
        cmd += ["--interval", f"{interval_s}s"]
    if action == "prepare" and not prepare_check:
        cmd.append("--no-check")
    return [*cmd, "-T", str(threads), *extra]


def run_gotpc(
    conn: ConnInfo,
    action: str,
    log_path: str | Path,
    *,
    warehouses: int,
    threads: int = 1,
    time_s: int | None = None,
    wait: bool = False,
    interval_s: int = 10,
    timeout_s: float | None = None,
) -> tuple[Outcome, TpccResult | None]:
    """Run go-tpc (or ``tiup bench``) and, for ``run``, parse its output. The outcome has
    ``missing`` set when neither is installed."""
    tool = gotpc_tool()
    if tool is None:
        log_path = Path(log_path)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        log_path.write_text("FATAL: go-tpc is not installed (nor tiup)\n")
        now = time.time()
        return Outcome(None, log_path, now, now, missing="go-tpc"), None
    cmd = gotpc_command(
        conn,
        action,
        warehouses=warehouses,
        threads=threads,
        time_s=time_s,
        wait=wait,
        interval_s=interval_s,
        tool=tool,
    )
    if conn.password:
        cmd = [*cmd, "-p", conn.password]
    outcome = execute(cmd, log_path, timeout_s=timeout_s)
    if action != "run":
        return outcome, None
    text = Path(outcome.log_path).read_text(errors="replace")
    return outcome, parse_tpcc_output(text, file=str(outcome.log_path))
