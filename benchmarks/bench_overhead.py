"""Driving overhead: TPS of a sysbench run driven by tibench ÷ the same command run bare.

Goal (issue 3, section 5): the ratio of mean TPS is at least 0.98, or its 95% interval holds 1.

    .venv/bin/python benchmarks/bench_overhead.py [--pairs 8] [--duration 10] [--threads 2]

Both arms run the same sysbench command (``oltp_point_select``, 4 tables × 10000 rows, 2 threads,
10 s, ``--report-interval=1 --histogram=on --percentile=95 --rand-type=uniform``) against the
same private MariaDB, started under a temporary ``TIBENCH_DATA`` that is removed at the end.

* tibench: :func:`tibenchlib.sysbench.runner.run_one` on an open
  :class:`~tibenchlib.target.ArmContext`, i.e. 0600 config file, log streamed to a file, the
  resource sampler, parse, catalog write.
* bare: :func:`subprocess.run` of the identical argv with its output in a pipe, parsed only
  after sysbench exits. It reads the password from a config file made once, so the two command
  lines differ only in that file's path.

Pairs alternate their order (tibench first, then bare first, ...), so a linear drift of the
shared machine falls equally on both arms. Reported: the ratio of mean TPS with Fieller's 95%
interval (the arms as independent samples), and the per-pair ratios with a Student t interval
(the paired view, which removes drift slower than a pair).

On a shared machine the TPS of a run follows the CPU other people's processes take. Each run
therefore also gets a CPU account over its wall time, in cores: the host's busy time
(``/proc/stat``), the server's, sysbench's, this driver's, and "others" (the rest). The
load average is printed too; note it counts this benchmark's own runnable threads. The driver's
CPU during a run is the mechanism by which driving could cost TPS, so it is printed as an upper
bound on that cost beside the measured ratio.

The other scripts in this folder import the helpers defined here.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tibenchlib import paths  # noqa: E402
from tibenchlib.params import Study, parse_study  # noqa: E402
from tibenchlib.server import EmbeddedServer  # noqa: E402
from tibenchlib.stats import fieller_ratio, t_interval  # noqa: E402

GOAL = 0.98


# -- where and when -------------------------------------------------------------------------------
def loadavg() -> str:
    """The 1, 5 and 15 minute load averages, as ``uptime`` prints them."""
    try:
        return "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
    except OSError:
        return "unavailable"


def header(title: str) -> None:
    """What is measured, when and on what (the load matters: the machine is shared)."""
    print(title)
    print(
        f"date {datetime.now().astimezone().isoformat(timespec='seconds')}   "
        f"cpus {os.cpu_count()}   load average {loadavg()} (before starting anything)"
    )


@contextmanager
def private_data(keep: bool = False) -> Iterator[Path]:
    """A temporary ``TIBENCH_DATA``: catalog, logs and the server live there, not in ``data/``."""
    old = os.environ.get("TIBENCH_DATA")
    d = Path(tempfile.mkdtemp(prefix="tibench-bench-"))
    os.environ["TIBENCH_DATA"] = str(d)
    try:
        yield d
    finally:
        if old is None:
            os.environ.pop("TIBENCH_DATA", None)
        else:
            os.environ["TIBENCH_DATA"] = old
        if keep:
            print(f"kept {d}")
        else:
            shutil.rmtree(d, ignore_errors=True)


@contextmanager
def private_server(study: Study) -> Iterator[EmbeddedServer]:
    """The study's embedded MariaDB, rooted under ``TIBENCH_DATA``; stopped on the way out.

    Built with the options :func:`tibenchlib.target.open_arm` asks for (the first arm's), so
    ``open_arm`` reuses this instance instead of restarting it.
    """
    root = paths.server_dir("embedded")
    if not str(root).startswith(os.environ.get("TIBENCH_DATA", "\0")):
        raise RuntimeError(f"{root} is not under the temporary TIBENCH_DATA")
    t = study.target
    server = EmbeddedServer(
        name="embedded",
        root=root,
        options={**t.server_options, **study.arms[0].server_options},
        database=t.database,
    )
    t0 = time.perf_counter()
    server.ensure()
    print(f"server: pid {server.pid} on 127.0.0.1:{server.port} ({time.perf_counter() - t0:.1f} s)")
    try:
        yield server
    finally:
        server.stop()


# -- the study ------------------------------------------------------------------------------------
def common_args(ap: argparse.ArgumentParser, duration: int = 10) -> None:
    ap.add_argument("--workload", default="oltp_point_select", help="sysbench workload")
    ap.add_argument("--threads", type=int, default=2, help="sysbench --threads")
    ap.add_argument("--tables", type=int, default=4, help="sysbench --tables")
    ap.add_argument("--table-size", type=int, default=10_000, help="sysbench --table-size")
    ap.add_argument("--duration", type=int, default=duration, help="seconds per run (--time)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary TIBENCH_DATA")


def paired_args(argv: list[str] | None, doc: str, warmup_help: str) -> argparse.Namespace:
    """The flags of a benchmark of alternated pairs of runs: :func:`common_args`, ``--pairs``,
    ``--warmup-runs`` (``warmup_help``: what they run) and ``--pause``."""
    ap = argparse.ArgumentParser(
        description=doc.splitlines()[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    common_args(ap)
    ap.add_argument("--pairs", type=int, default=8, help="alternated pairs (≥ 5 for the goal)")
    ap.add_argument("--warmup-runs", type=int, default=1, help=warmup_help)
    ap.add_argument("--pause", type=float, default=1.0, help="seconds between runs")
    return ap.parse_args(argv)


def make_study(name: str, a: argparse.Namespace, **extra) -> Study:
    """A one-arm study on the embedded server from the common command-line flags."""
    return parse_study(
        {
            "study": name,
            "target": {"kind": "embedded"},
            "dataset": {"tables": a.tables, "table_size": a.table_size},
            "workloads": [a.workload],
            "threads": [a.threads],
            "duration_s": a.duration,
            "cooldown_s": 0,
            **extra,
        }
    )


def open_prepared(study: Study, arm: str | None = None):
    """Open an arm (default: the first) and prepare (create, ANALYZE, warm up) its tables."""
    from tibenchlib.sysbench.prepare import prepare
    from tibenchlib.target import open_arm

    ctx = open_arm(study, arm or study.arms[0].label)
    t0 = time.perf_counter()
    prepare(ctx, progress=False)
    ds = study.dataset
    print(
        f"prepared {ds.tables} tables × {ds.table_size} rows on {ctx.info.flavor} "
        f"{ctx.info.version} ({time.perf_counter() - t0:.1f} s)"
    )
    return ctx


def alternating(pairs: int, a: str, b: str) -> list[tuple[int, str]]:
    """``(pair, arm)`` in run order: a b, b a, a b, ... so drift cancels over pairs of pairs."""
    out = []
    for i in range(pairs):
        first, second = (a, b) if i % 2 == 0 else (b, a)
        out += [(i + 1, first), (i + 1, second)]
    return out


@contextmanager
def captured_samplers() -> Iterator[list]:
    """Collect the :class:`~tibenchlib.resources.ProcessSampler` each ``run_one`` creates.

    ``run_one`` keeps its sampler to itself; wrapping the module's factory for the duration
    reads ``overhead_pct`` without changing the library.
    """
    from tibenchlib.sysbench import runner

    made: list = []
    original = runner._sampler

    def keep(ctx):
        s = original(ctx)
        made.append(s)
        return s

    runner._sampler = keep
    try:
        yield made
    finally:
        runner._sampler = original


# -- CPU accounting -------------------------------------------------------------------------------
def _host_busy_s() -> float:
    t = psutil.cpu_times()
    # guest time is already inside user/nice; idle and iowait are the CPU doing nothing
    total = sum(getattr(t, f) for f in t._fields if f not in ("guest", "guest_nice"))
    return total - t.idle - getattr(t, "iowait", 0.0)


def _proc_cpu_s(pid: int | None) -> float:
    if not pid:
        return 0.0
    try:
        ct = psutil.Process(pid).cpu_times()
        return ct.user + ct.system
    except psutil.Error:
        return float("nan")


def _self_cpu_s() -> tuple[float, float]:
    me = resource.getrusage(resource.RUSAGE_SELF)
    ch = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, ch.ru_utime + ch.ru_stime


@dataclass
class Account:
    """CPU over one run's wall time, in cores (1.0 = one core busy for the whole run)."""

    wall_s: float
    host: float
    server: float
    client: float
    driver: float
    load1: float

    @property
    def others(self) -> float:
        return max(0.0, self.host - self.server - self.client - self.driver)


def accounted(fn: Callable[[], float], server_pid: int | None) -> tuple[float, Account]:
    """Call ``fn`` (one run, returning its TPS) and account for the CPU used meanwhile.

    ``client`` is the CPU of child processes reaped during the call (sysbench: both runners
    wait for it), ``driver`` this Python process (sampler thread, parse, catalog write).
    """
    load1 = os.getloadavg()[0]
    h0, s0, (me0, ch0) = _host_busy_s(), _proc_cpu_s(server_pid), _self_cpu_s()
    w0 = time.perf_counter()
    value = fn()
    wall = time.perf_counter() - w0
    h1, s1, (me1, ch1) = _host_busy_s(), _proc_cpu_s(server_pid), _self_cpu_s()
    acc = Account(
        wall_s=wall,
        host=(h1 - h0) / wall,
        server=(s1 - s0) / wall,
        client=(ch1 - ch0) / wall,
        driver=(me1 - me0) / wall,
        load1=load1,
    )
    return value, acc


ACCOUNT_HEAD = " ".join(
    f"{h:>{w}}"
    for h, w in (("wall s", 6), ("host", 5), ("server", 6), ("client", 6), ("driver", 6))
    + (("others", 6), ("load1", 5))
)


def account_cells(a: Account) -> str:
    return (
        f"{a.wall_s:>6.2f} {a.host:>5.2f} {a.server:>6.2f} {a.client:>6.2f} {a.driver:>6.3f} "
        f"{a.others:>6.2f} {a.load1:>5.2f}"
    )


def account_note() -> str:
    return (
        "CPU columns are in cores over each run's wall time (host = all busy CPU from /proc/stat; "
        "others = host − server − client − driver: other people's processes)"
    )


# -- statistics and verdict -----------------------------------------------------------------------
def fmt_iv(d: dict, digits: int = 4) -> str:
    if d.get("ci_low") is None:
        return "no interval"
    return f"[{d['ci_low']:.{digits}f}, {d['ci_high']:.{digits}f}]"


def ratio_report(num: list[float], den: list[float], num_name: str, den_name: str) -> dict:
    """Print the ratio of means (Fieller) and the paired ratios (t); return both."""
    f = fieller_ratio(num, den)
    paired = [x / y for x, y in zip(num, den, strict=True)]
    p = t_interval(paired)
    tn, td = t_interval(num), t_interval(den)
    for name, t in ((num_name, tn), (den_name, td)):
        cv = t["sd"] / t["mean"] if t["sd"] is not None else float("nan")
        print(
            f"mean TPS {name:<8} {t['mean']:9.1f}  95% t {fmt_iv(t, 1)}  CV {cv:.1%} (n={t['n']})"
        )
    warn = f"; {'; '.join(f['warnings'])}" if f["warnings"] else ""
    print(
        f"ratio of means {num_name}/{den_name}: {f['ratio']:.4f}, 95% Fieller {fmt_iv(f)} "
        f"(df {f['df']:.1f}){warn}"
    )
    print(
        f"paired ratios: {' '.join(f'{r:.3f}' for r in paired)}; mean {p['mean']:.4f}, "
        f"95% t {fmt_iv(p)}"
    )
    return {"fieller": f, "paired": p, "paired_ratios": paired}


def paired_reports(rows: list[tuple], arms: tuple[str, str], duration_s: float) -> dict:
    """The TPS ratio of ``arms`` (:func:`ratio_report`, returned) and their efficiency
    (:func:`efficiency_report`), printed from ``rows`` of ``(pair, arm, TPS, Account, ...)``."""
    tps = {arm: [r[2] for r in rows if r[1] == arm] for arm in arms}
    res = ratio_report(tps[arms[0]], tps[arms[1]], *arms)
    efficiency_report(
        *([(r[2], r[3]) for r in rows if r[1] == arm] for arm in arms), *arms, duration_s
    )
    return res


def efficiency_report(
    num: list[tuple[float, Account]],
    den: list[tuple[float, Account]],
    num_name: str,
    den_name: str,
    duration_s: float,
) -> dict:
    """Print the ratio of transactions per CPU-second of server + sysbench (Fieller); return it.

    On a saturated shared host a run's TPS follows the CPU share it gets; transactions per
    CPU-second it used is what a transaction costs, and varies much less. It shows whether an
    arm makes the same work dearer; it cannot show a run slowed by waiting (that lowers TPS and
    CPU together). Transactions are TPS × ``duration_s``; the CPU is counted over the call's
    whole wall time, which for tibench includes parse and catalog write (server idle then).
    """

    def eff(rows: list[tuple[float, Account]]) -> list[float]:
        return [tps * duration_s / ((a.server + a.client) * a.wall_s) for tps, a in rows]

    en, ed = eff(num), eff(den)
    f = fieller_ratio(en, ed)
    tn, td = t_interval(en), t_interval(ed)
    print(
        f"transactions per CPU-second of server + sysbench: {num_name} {tn['mean']:.0f} "
        f"(CV {tn['sd'] / tn['mean']:.1%}), {den_name} {td['mean']:.0f} "
        f"(CV {td['sd'] / td['mean']:.1%}); ratio {f['ratio']:.4f}, 95% Fieller {fmt_iv(f)}"
    )
    return f


def goal_met(f: dict, goal: float = GOAL) -> bool:
    """Goal of issues 3 and 5: ratio ≥ goal, or a 95% interval that holds 1."""
    holds_one = f["ci_low"] is not None and f["ci_low"] <= 1.0 <= f["ci_high"]
    return f["ratio"] >= goal or holds_one


def verdict(f: dict, what: str, goal: float = GOAL) -> str:
    """One line: whether the goal is met, and on what grounds."""
    bounded = f["ci_low"] is not None
    holds = bounded and f["ci_low"] <= 1.0 <= f["ci_high"]
    grounds = [
        f"ratio {f['ratio']:.4f} {'≥' if f['ratio'] >= goal else '<'} {goal}",
        f"95% interval {fmt_iv(f)} {'holds' if holds else 'excludes'} 1",
    ]
    if bounded:
        width = f["ci_high"] - f["ci_low"]
        grounds.append(f"width {width:.3f}")
        if f["ci_low"] >= goal:
            grounds.append(f"lower bound ≥ {goal}: shown")
        elif f["ci_low"] > 0:
            grounds.append(f"not shown: a loss up to {1 - f['ci_low']:.1%} is not excluded")
        else:
            grounds.append("too wide to tell anything")
    state = "MET" if goal_met(f, goal) else "NOT met"
    return f"verdict: {what}: goal (≥ {goal} or interval holding 1) {state} ({'; '.join(grounds)})"


# -- the bare arm ---------------------------------------------------------------------------------
def bare_run(cmd: list[str]) -> float:
    """Run sysbench with its output in a pipe; TPS from its summary after it exits."""
    from tibenchlib.parse.sysbench import parse_sysbench

    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    s = parse_sysbench(r.stdout).summary
    if r.returncode != 0 or s.get("status") != "ok":
        raise RuntimeError(f"bare sysbench failed ({r.returncode}): {r.stdout[-800:]}")
    return float(s["tps"])


def main(argv: list[str] | None = None) -> int:
    a = paired_args(argv, __doc__, "discarded bare runs first")

    from tibenchlib.db import secret_config_file
    from tibenchlib.sysbench.command import study_command
    from tibenchlib.sysbench.runner import RunSpec, run_one
    from tibenchlib.tools import display_command

    header("bench_overhead: TPS driven by tibench (run_one) ÷ the same sysbench command bare")
    with private_data(a.keep):
        study = make_study("bench-overhead", a)
        with private_server(study) as server, captured_samplers() as samplers:
            ctx = open_prepared(study)
            with secret_config_file(ctx.conn) as cfg:
                cmd = study_command(study, ctx.conn, a.workload, a.threads, study.duration_s, cfg)
                print(f"command: {display_command(cmd)}")
                for _ in range(a.warmup_runs):
                    print(f"warm-up run (bare, discarded): {bare_run(cmd):.1f} TPS")

                def tibench_run(pair: int, seq: int) -> float:
                    spec = RunSpec("default", a.workload, a.threads, pair, seq)
                    row = run_one(ctx, spec)
                    if row["status"] != "ok":
                        raise RuntimeError(f"{spec.run_key}: {row['status']}: {row['error']}")
                    if row["command"] != display_command(cmd):
                        raise RuntimeError(f"not the bare command:\n{row['command']}")
                    return float(row["tps"])

                rows = []
                for seq, (pair, arm) in enumerate(alternating(a.pairs, "tibench", "bare")):
                    time.sleep(a.pause)
                    fn = (
                        (lambda p=pair, s=seq: tibench_run(p, s))
                        if arm == "tibench"
                        else (lambda: bare_run(cmd))
                    )
                    value, acc = accounted(fn, server.pid)
                    rows.append((pair, arm, value, acc))

        print()
        print(f"{'pair':>4} {'arm':<8} {'TPS':>9} {ACCOUNT_HEAD}")
        for pair, arm, value, acc in rows:
            print(f"{pair:>4} {arm:<8} {value:>9.1f} {account_cells(acc)}")
        print(account_note())
        print()
        res = paired_reports(rows, ("tibench", "bare"), a.duration)
        for arm in ("tibench", "bare"):
            accs = [r[3] for r in rows if r[1] == arm]
            drv = sum(x.driver * x.wall_s for x in accs) / len(accs)
            oth = sum(x.others for x in accs) / len(accs)
            print(
                f"{arm:<8} driver CPU per run {drv:.3f} s (parse and catalog write included); "
                f"others' CPU {oth:.2f} cores on average"
            )
        own = [s.overhead_pct for s in samplers]
        cores = os.cpu_count() or 1
        print(
            f"sampler thread during the tibench runs: mean {sum(own) / len(own):.3f}% of a core "
            f"(max {max(own):.3f}%) = {sum(own) / len(own) / cores:.3f}% of the host's CPU, "
            "the driver's only work while sysbench runs: the bound on what driving can cost"
        )
        print(f"load average at the end: {loadavg()}")
        print(verdict(res["fieller"], "tibench/bare TPS"))
    return 0 if goal_met(res["fieller"]) else 1


if __name__ == "__main__":
    raise SystemExit(main())
