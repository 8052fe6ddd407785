"""sysbench command lines: the reports' form of a run, a prepare or a cleanup, password excluded.

:func:`sysbench_command` knows sysbench's options; :func:`study_command` fills them from a study.
The password reaches sysbench through a 0600 config file (:func:`tibenchlib.db.secret_config_file`),
never on the command line.
"""

from __future__ import annotations

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
