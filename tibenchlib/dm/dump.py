"""Dump the source with mydumper (DM's dump unit) and describe what it wrote.

The runner builds the command from the swept knobs (``threads``, ``rows`` = single-table
concurrency on/off, ``statement_size``), runs it through :func:`tibenchlib.tools.execute` with the
password in a 0600 option file, keeps mydumper's ``--verbose 3`` log as the raw output, and
measures seconds and MB/s over the bytes of the dump directory. :func:`dump_files` counts the
INSERT statements and rows actually written, file by file (rows per statement is a result of
``statement_size``, not a setting).
"""

from __future__ import annotations

import dataclasses
import gzip
import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pandas as pd

from ..db import ConnInfo
from ..tools import Outcome, display_command, execute
from .options import client_defaults_file, connection_args

MB = 1_000_000

#: mydumper 0.10 data files: ``<db>.<table>.<chunk>.sql`` (schema files end in ``-schema.sql``).
_DATA_FILE = re.compile(r"^(?P<db>[^.]+)\.(?P<table>[^.]+)(?:\.(?P<chunk>\d+))?\.sql(?:\.gz)?$")


#: One row per data file of a dump (:func:`dump_files`).
FILE_COLUMNS = ["database", "table", "chunk", "statements", "rows", "bytes"]


@dataclass(frozen=True)
class DumpSettings:
    """The dump unit's knobs as report 003 swept them (``-t``, ``-r``, ``-s``)."""

    threads: int = 4
    rows: int | None = None  # None: one chunk per table (no single-table concurrency)
    statement_size: int = 1_000_000

    def __post_init__(self) -> None:
        if self.threads < 1:
            raise ValueError(f"dump threads must be ≥ 1, got {self.threads}")
        if self.rows is not None and self.rows < 1:
            raise ValueError(f"dump rows must be ≥ 1 or None (off), got {self.rows}")
        if self.statement_size < 1000:
            raise ValueError(
                f"dump statement_size must be ≥ 1000 bytes (1 KB), got {self.statement_size}"
            )


class ToolTransfer:
    """What a dump or a load run has in common: it ran (``outcome``, ``command``) and moved
    ``bytes``."""

    #: the unit's name in :meth:`record`
    unit: ClassVar[str] = ""
    outcome: Outcome
    command: str
    bytes: int

    def measures(self) -> dict:
        """The unit's own measures in :meth:`record`."""
        return {}

    def record(self) -> dict:
        """The flat measures of this run, for a result row."""
        return {
            "unit": self.unit,
            "ok": self.ok,
            "returncode": self.outcome.returncode,
            "seconds": self.seconds,
            "bytes": self.bytes,
            "mb_s": self.mb_s,
            **self.measures(),
            "command": self.command,
            "log": str(self.outcome.log_path),
        }

    @property
    def ok(self) -> bool:
        return self.outcome.returncode == 0 and not self.outcome.timed_out

    @property
    def seconds(self) -> float:
        return self.outcome.wall_s

    @property
    def mb_s(self) -> float:
        return self.bytes / MB / self.seconds if self.seconds > 0 else float("nan")


@dataclass(frozen=True)
class DumpResult(ToolTransfer):
    unit = "dump"
    outcome: Outcome
    command: str  # as displayed: no password anywhere
    directory: Path
    bytes: int
    files: pd.DataFrame  # one row per data file: table, chunk, statements, rows, bytes
    gtid: str | None  # the source's GTID position the dump is consistent with

    @property
    def rows(self) -> int:
        return int(self.files["rows"].sum()) if len(self.files) else 0

    @property
    def statements(self) -> int:
        return int(self.files["statements"].sum()) if len(self.files) else 0

    @property
    def rows_per_statement(self) -> float:
        return self.rows / self.statements if self.statements else float("nan")

    def counted(self) -> DumpResult:
        """This result with its files counted (:func:`dump_files`), for a dump made with
        ``count=False``."""
        return dataclasses.replace(self, files=dump_files(self.directory))

    def measures(self) -> dict:
        return {
            "rows": self.rows,
            "statements": self.statements,
            "rows_per_statement": self.rows_per_statement,
            "gtid": self.gtid,
        }


def mydumper_command(
    conn: ConnInfo,
    outdir: str | Path,
    settings: DumpSettings,
    *,
    defaults_file: str | Path | None = None,
    database: str | None = None,
    tables: Sequence[str] = (),
    verbose: int = 3,
) -> list[str]:
    """The mydumper command line, password excluded (it is in ``defaults_file``)."""
    cmd = ["mydumper", *connection_args(conn, defaults_file)]
    cmd += [
        f"--database={database or conn.database}",
        f"--outputdir={outdir}",
        f"--threads={settings.threads}",
        f"--statement-size={settings.statement_size}",
    ]
    if settings.rows is not None:
        cmd.append(f"--rows={settings.rows}")
    if tables:
        cmd.append(f"--tables-list={','.join(tables)}")
    cmd.append(f"--verbose={verbose}")
    return cmd


def shown(cmd: Sequence[str]) -> str:
    """The command as logged: the option file's path is elided as sysbench's config file is."""
    return display_command(
        [
            "--defaults-file=<0600 credentials file>" if a.startswith("--defaults-file=") else a
            for a in cmd
        ]
    )


def dump(
    conn: ConnInfo,
    outdir: str | Path,
    settings: DumpSettings,
    *,
    log_path: str | Path,
    private_dir: str | Path,
    database: str | None = None,
    tables: Sequence[str] = (),
    timeout_s: float | None = None,
    on_start=None,
    count: bool = True,
) -> DumpResult:
    """Run mydumper into ``outdir`` (emptied first) and measure it.

    ``on_start(pid)`` is called once mydumper runs (for
    :class:`tibenchlib.resources.ProcessSampler`).
    A missing tool, an error or a timeout come back in :attr:`DumpResult.outcome`, not raised.
    Without ``count`` the files are not read (reading them costs about 40% of mydumper's own
    time): call :meth:`DumpResult.counted` once the timed part of a run is over.
    """
    outdir = Path(outdir)
    shutil.rmtree(outdir, ignore_errors=True)
    outdir.mkdir(parents=True)
    with client_defaults_file(conn, private_dir) as cnf:
        cmd = mydumper_command(
            conn, outdir, settings, defaults_file=cnf, database=database, tables=tables
        )
        outcome = execute(cmd, log_path, timeout_s=timeout_s, on_start=on_start)
    files = dump_files(outdir) if count else pd.DataFrame(columns=FILE_COLUMNS)
    return DumpResult(
        outcome=outcome,
        command=shown(cmd),
        directory=outdir,
        bytes=directory_bytes(outdir),
        files=files,
        gtid=metadata_gtid(outdir),
    )


def directory_bytes(directory: str | Path) -> int:
    """Bytes of every file under ``directory`` (what MB/s is computed over, as report 003)."""
    return sum(p.stat().st_size for p in Path(directory).rglob("*") if p.is_file())


def count_statements(data: bytes) -> tuple[int, int]:
    """``(INSERT statements, rows)`` in one mydumper data file's bytes.

    mydumper 0.10 writes ``INSERT INTO `t` VALUES`` at the start of a line, then one row per
    line starting with ``(``; values never hold a raw line break (mydumper escapes it as
    ``\\n``), so counting line starts is exact, and done at C speed on the bytes.
    """
    statements = data.count(b"\nINSERT ") + data.startswith(b"INSERT ")
    return statements, data.count(b"\n(") + data.startswith(b"(")


def dump_files(directory: str | Path) -> pd.DataFrame:
    """One row per data file of a mydumper dump: ``database, table, chunk, statements, rows,
    bytes``. Schema and metadata files are not data; compressed (``.gz``) dumps are read too."""
    out = []
    for p in sorted(Path(directory).iterdir()):
        m = _DATA_FILE.match(p.name)
        if not m or p.name.endswith(("-schema.sql", "-schema.sql.gz", "-schema-create.sql")):
            continue
        opener = gzip.open if p.suffix == ".gz" else open
        with opener(p, "rb") as f:
            statements, rows = count_statements(f.read())
        out.append(
            {
                "database": m["db"],
                "table": m["table"],
                "chunk": int(m["chunk"]) if m["chunk"] is not None else 0,
                "statements": statements,
                "rows": rows,
                "bytes": p.stat().st_size,
            }
        )
    return pd.DataFrame(out, columns=FILE_COLUMNS)


def metadata_gtid(directory: str | Path) -> str | None:
    """The source's GTID position from mydumper's ``metadata`` file (``GTID:0-1-30``), or None
    when the source has no binary log (mydumper then writes no ``SHOW MASTER STATUS``)."""
    p = Path(directory) / "metadata"
    try:
        text = p.read_text(errors="replace")
    except OSError:
        return None
    m = re.search(r"SHOW MASTER STATUS:.*?GTID:\s*(\S*)", text, re.S)
    return m.group(1) or None if m else None
