"""sysbench command lines: the reports' form of a run, a prepare or a cleanup, password excluded.

:func:`sysbench_command` knows sysbench's options; :func:`study_command` fills them from a study.
The password reaches sysbench through a 0600 config file (:func:`tibenchlib.db.secret_config_file`),
never on the command line.

Several clients of one run each get their own ``--rand-seed`` (:func:`client_seeds`): sysbench
seeds from the current second when none is given, so clients started together in the same
second would replay the same rows in the same order, and all but the first would find them in
the server's caches (``benchmarks/bench_client_seeds.py``: 25% more TPS for three clients of
``oltp_point_select`` on tables larger than the embedded server's buffer pool).
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..db import ConnInfo

if TYPE_CHECKING:
    from ..params import Study


def sysbench_command(
    workload: str,
    conn: ConnInfo,
    *,
    action: str = "run",
    tables: int,
    table_size: int,
    threads: int,
    time_s: int | None = None,
    report_interval_s: int | None = None,
    percentile: float | None = None,
    rand_type: str | None = None,
    histogram: bool = False,
    extra: Sequence[str] = (),
    config_file: str | Path | None = None,
) -> list[str]:
    """The sysbench command line, password excluded (it goes in ``config_file``).

    The reports' form: ``sysbench oltp_point_select --tables=16 --table-size=… --threads=…
    --time=600 --report-interval=1 --rand-type=uniform run``.
    """
    cmd = ["sysbench", workload]
    if config_file is not None:
        cmd.append(f"--config-file={config_file}")
    cmd += conn.sysbench_args()
    cmd += [f"--tables={tables}", f"--table-size={table_size}", f"--threads={threads}"]
    if action == "run":
        if time_s is not None:
            cmd.append(f"--time={time_s}")
        if report_interval_s:
            cmd.append(f"--report-interval={report_interval_s}")
        if percentile is not None:
            cmd.append(f"--percentile={percentile:g}")
        if histogram:
            cmd.append("--histogram=on")
    if rand_type:
        cmd.append(f"--rand-type={rand_type}")
    cmd += list(extra)
    cmd.append(action)
    return cmd


def study_command(
    study: Study,
    conn,
    workload: str,
    threads: int,
    time_s: int,
    config_file,
    *,
    report: bool = True,
) -> list[str]:
    """The sysbench command of one run of ``study`` (``report=False``: a warm-up run, reporting
    every second for the steadiness check, without percentile or histogram)."""
    extra = (
        {
            "report_interval_s": study.report_interval_s,
            "percentile": study.percentile,
            "histogram": study.histogram,
        }
        if report
        else {"report_interval_s": 1}
    )
    return sysbench_command(
        workload,
        conn,
        tables=study.dataset.tables,
        table_size=study.dataset.table_size,
        threads=threads,
        time_s=time_s,
        rand_type=study.rand_type,
        extra=study.extra_args,
        config_file=config_file,
        **extra,
    )


#: sysbench's ``--rand-seed`` is a C int; 0 means "seed from the current time".
SEED_MAX = 2**31 - 1


def client_seeds(seed: int, key: str, n: int, argv: Sequence[str] = ()) -> list[int | None]:
    """Each of a run's ``n`` clients' ``--rand-seed`` (``[None]`` for one client: sysbench's own).

    With several clients: the user's ``--rand-seed=S`` in ``argv`` gives ``S``, ``S + 1``, …;
    otherwise each seed is derived from the study's ``seed``, ``key`` (the run without its arm,
    so that the arms of one round replay the same requests) and the client's index. Seeds are
    never 0 (sysbench's "current time").
    """
    if n <= 1:
        return [None]
    user = [a.split("=", 1)[1] for a in argv if a.startswith("--rand-seed=")]
    if user and user[-1].strip().lstrip("-").isdigit() and int(user[-1]) != 0:
        s = int(user[-1])
    else:
        s = zlib.crc32(f"{seed}\0{key}".encode()) % SEED_MAX + 1
    return [(s - 1 + i) % SEED_MAX + 1 for i in range(n)]


def run_seeds(study: Study, spec, n: int) -> list[int | None]:
    """The seeds of the ``n`` clients of the sweep run ``spec`` (:func:`client_seeds`, keyed by
    its workload, threads and round)."""
    key = f"{spec.workload}/t{spec.threads}/r{spec.repeat}"
    return client_seeds(study.seed, key, n, study.extra_args)


def seeded(argv: Sequence[str], seed: int | None) -> list[str]:
    """``argv`` (a sysbench command ending with its action) with ``--rand-seed=seed`` in place
    of any it had; unchanged when ``seed`` is None."""
    if seed is None:
        return list(argv)
    rest = [a for a in argv[:-1] if not a.startswith("--rand-seed=")]
    return [*rest, f"--rand-seed={seed}", argv[-1]]
