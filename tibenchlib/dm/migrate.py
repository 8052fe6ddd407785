"""One full-migration run of the DM study: dump the source, load the target, verify, with the CPU
of both servers and of each tool sampled. This is what the ``dm`` phase calls once per arm and
repeat; it returns a flat record and the samples, and never raises for a failed tool or a
mismatch (``status`` says what happened)."""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..resources import ProcessSampler
from ..server import EmbeddedServer
from .dump import DumpSettings, dump
from .load import LoadSettings, load
from .verify import verify


@dataclass(frozen=True)
class MigrationRun:
    record: dict  # flat measures: dump_*, load_*, verified, status, message
    samples: pd.DataFrame  # ProcessSampler rows: source, target, mydumper, myloader
    verification: pd.DataFrame | None


def _cpu(samples: pd.DataFrame, t0: float, t1: float, t_base: float) -> dict:
    """Mean CPU % per watched process over the window [t0, t1] (epoch seconds)."""
    if samples.empty:
        return {}
    w = samples[(samples["t"] > t0 - t_base) & (samples["t"] <= t1 - t_base + 1)]
    return {f"cpu_{k}_pct": float(v) for k, v in w.groupby("source")["cpu_pct"].mean().items()}


def _failure(tool: str, outcome, server: EmbeddedServer, unit: str) -> str:
    """One line for a failed dump or load: a server that died under the tool is named first
    (its error log is where to look), then the tool's own log."""
    if outcome.missing:
        return f"{tool} is not installed: see {outcome.log_path}"
    if server.pid is None:
        return (
            f"the {server.name} MariaDB stopped during the {unit} ({tool} failed): see "
            f"{server.error_log} and {outcome.log_path}"
        )
    return f"{tool} failed: see {outcome.log_path}"


def migrate_once(
    source: EmbeddedServer,
    target: EmbeddedServer,
    dump_settings: DumpSettings,
    load_settings: LoadSettings,
    *,
    run_dir: str | Path,
    private_dir: str | Path,
    database: str = "sbtest",
    timeout_s: float | None = None,
    sample_interval: float = 0.5,
    keep_dump: bool = False,
) -> MigrationRun:
    """Dump ``source`` with ``dump_settings``, load into ``target`` with ``load_settings``, verify.

    Raw logs go to ``run_dir/mydumper.log`` and ``run_dir/myloader.log``; the dump to
    ``run_dir/dump`` (removed after a verified run unless ``keep_dump``: it can be large).
    ``status`` is ``ok``, ``dump failed``, ``load failed`` or ``verification failed``; a failed
    run is never to enter a statistic. The dump files are counted (rows, statements) after the
    load and the verification, outside every timed window.
    """
    run_dir = Path(run_dir)
    si, ti = source.conninfo(), target.conninfo()
    t_base = time.time()
    pids = {"source": source.pid, "target": target.pid}
    rec: dict = {"database": database}
    check = None
    with ProcessSampler({k: v for k, v in pids.items() if v}, interval=sample_interval) as s:
        d = dump(
            si,
            run_dir / "dump",
            dump_settings,
            log_path=run_dir / "mydumper.log",
            private_dir=private_dir,
            database=database,
            timeout_s=timeout_s,
            on_start=lambda pid: s.watch("mydumper", pid),
            count=False,  # counted below, once the timed part is over
        )
        rec.update({f"dump_{k}": v for k, v in d.record().items() if k != "unit"})
        rec.update(
            {
                f"dump_{k}": v
                for k, v in _cpu(
                    s.samples, d.outcome.started_at, d.outcome.finished_at, t_base
                ).items()
            }
        )
        if not d.ok:
            rec.update(
                status="dump failed",
                verified=False,
                message=_failure("mydumper", d.outcome, source, "dump"),
            )
            return MigrationRun(rec, s.samples, None)
        ld = load(
            ti,
            d.directory,
            load_settings,
            log_path=run_dir / "myloader.log",
            private_dir=private_dir,
            timeout_s=timeout_s,
            on_start=lambda pid: s.watch("myloader", pid),
        )
        rec.update({f"load_{k}": v for k, v in ld.record().items() if k != "unit"})
    samples = s.samples
    rec.update(
        {
            f"load_{k}": v
            for k, v in _cpu(samples, ld.outcome.started_at, ld.outcome.finished_at, t_base).items()
        }
    )
    if not ld.ok:
        rec.update(
            status="load failed",
            verified=False,
            message=_failure("myloader", ld.outcome, target, "load"),
        )
        return MigrationRun(rec, samples, None)
    se, te = si.engine(), ti.engine()
    try:
        v = verify(se, te, database)
    finally:
        se.dispose()
        te.dispose()
    check = v.tables
    d = d.counted()
    rec.update(
        dump_rows=d.rows, dump_statements=d.statements, dump_rows_per_statement=d.rows_per_statement
    )
    if v.ok and not keep_dump:
        shutil.rmtree(d.directory, ignore_errors=True)
    rec.update(verified=v.ok, status="ok" if v.ok else "verification failed", message=v.message)
    return MigrationRun(rec, samples, check)
