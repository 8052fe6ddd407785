"""Verification after a load or a sync: every table's row count and ``CHECKSUM TABLE`` on the
target equal the source's. A run that does not verify is failed and enters no statistic."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd
import sqlalchemy as sa


@dataclass(frozen=True)
class Verification:
    ok: bool
    tables: pd.DataFrame  # table, source_rows, target_rows, source_checksum, target_checksum, ok
    message: str

    def __bool__(self) -> bool:
        return self.ok


def table_checksums(
    engine: sa.Engine, database: str, tables: Sequence[str] | None = None
) -> pd.DataFrame:
    """``table, rows, checksum`` of every base table of ``database`` (or of ``tables``);
    ``checksum`` is None for a table that does not exist."""
    with engine.connect() as c:
        if tables is None:
            tables = [
                r[0]
                for r in c.exec_driver_sql(
                    "SELECT TABLE_NAME FROM information_schema.TABLES"
                    " WHERE TABLE_SCHEMA = %s AND TABLE_TYPE = 'BASE TABLE' ORDER BY TABLE_NAME",
                    (database,),
                )
            ]
        rows = []
        for t in tables:
            q = f"`{database}`.`{t}`"
            try:
                n = c.exec_driver_sql(f"SELECT COUNT(*) FROM {q}").scalar_one()
            except sa.exc.DBAPIError:
                rows.append({"table": t, "rows": None, "checksum": None})
                continue
            cs = c.exec_driver_sql(f"CHECKSUM TABLE {q}").one()[1]
            rows.append({"table": t, "rows": int(n), "checksum": None if cs is None else int(cs)})
    return pd.DataFrame(rows, columns=["table", "rows", "checksum"])


def verify(
    source: sa.Engine,
    target: sa.Engine,
    database: str,
    tables: Sequence[str] | None = None,
    target_database: str | None = None,
) -> Verification:
    """Compare every table of ``database`` on the source with the target's copy.

    Tables are those of the source (or ``tables``); a table missing on the target, a different
    row count or a different checksum fails the verification, named in :attr:`message`.
    """
    src = table_checksums(source, database, tables)
    if tables is None:
        tables = list(src["table"])
    dst = table_checksums(target, target_database or database, tables)
    df = src.merge(dst, on="table", how="left", suffixes=("_source", "_target"))
    df = df.rename(
        columns={
            "rows_source": "source_rows",
            "rows_target": "target_rows",
            "checksum_source": "source_checksum",
            "checksum_target": "target_checksum",
        }
    )
    df["ok"] = (
        df["target_rows"].notna()
        & (df["source_rows"] == df["target_rows"])
        & (df["source_checksum"] == df["target_checksum"])
    )
    if not len(df):
        return Verification(False, df, f"no tables in `{database}` on the source to verify")
    bad = df[~df["ok"]]
    if bad.empty:
        return Verification(True, df, f"{len(df)} tables: row counts and checksums agree")
    parts = []
    for r in bad.itertuples():
        if pd.isna(r.target_rows):
            parts.append(f"{r.table} missing on the target")
        elif r.source_rows != r.target_rows:
            parts.append(f"{r.table} rows {r.source_rows} ≠ {int(r.target_rows)}")
        else:
            parts.append(f"{r.table} checksum {r.source_checksum} ≠ {r.target_checksum}")
    return Verification(False, df, "verification failed: " + "; ".join(parts))
