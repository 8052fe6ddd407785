"""One benchmark run as a record: the catalog's ``runs`` row, the results' row, the compare's row.

A :class:`RunRecord` is built once, from the parsed output, the exit code and the checks
(:func:`decide_status`: the one status rule), and everything else derives from it: the store's
``runs`` table (:func:`sql_columns`), the ``results/<phase>.json``/``.csv`` columns
(:data:`RESULT_COLUMNS`), ``tibench compare`` over log directories, and the notebooks. Warnings
stay a list until the store writes them (as ``warnings_json``).

The tool-specific builders (sysbench: :mod:`tibenchlib.sysbench.record`) fill the figures; this
module knows no tool.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import pandas as pd

#: Status of a run: measured and trusted, failed (the tool said so, exited non-zero, timed out,
#: was missing), or degenerate (finished, but the figures cannot be trusted).
STATUSES = ("ok", "failed", "degenerate")

#: The percentile every table reports as ``lat_p95_ms`` (see :func:`p95_rule`).
REPORTED_PERCENTILE = 95.0


def _text(**kw) -> Any:
    return field(default=None, metadata={"sql": "text", **kw})


@dataclass
class RunRecord:
    """One run: identity, status, figures, provenance. ``None`` where the tool printed nothing."""

    study: str
    run_key: str
    phase: str = "sweep"
    arm: str | None = None
    workload: str | None = None
    threads: int | None = None
    repeat: int | None = None
    seq: int | None = None
    status: str = "ok"
    error: str | None = _text()
    tps: float | None = None
    qps: float | None = None
    events: float | None = None
    total_time_s: float | None = None
    lat_min_ms: float | None = None
    lat_avg_ms: float | None = None
    lat_max_ms: float | None = None
    percentile: float | None = None
    lat_pct_ms: float | None = None
    lat_p50_ms: float | None = None
    lat_p90_ms: float | None = None
    lat_p95_ms: float | None = None
    lat_p99_ms: float | None = None
    lat_p999_ms: float | None = None
    errors: float | None = None
    reconnects: float | None = None
    n_intervals: int | None = None
    warnings: list[str] = field(default_factory=list, metadata={"sql": "json"})
    command: str | None = _text()
    log_path: str | None = _text()
    started_at: float | None = None
    finished_at: float | None = None
    wall_s: float | None = None
    summary_json: str | None = _text()
    attempts: int | None = None  # 1 + failed attempts whose logs were set aside

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"run {self.run_key}: status {self.status!r} not in {STATUSES}")

    def catalog_row(self) -> dict:
        """The ``runs`` table's row: warnings JSON-encoded, nothing else changed."""
        row = asdict(self)
        row["warnings_json"] = json.dumps(row.pop("warnings"))
        return row

    def __getitem__(self, key: str) -> Any:  # row["tps"], as the loop and tests read rows
        return getattr(self, key)


#: Columns of a phase's ``results/<phase>.json``/``.csv`` runs (``warnings`` as a list).
RESULT_COLUMNS = [
    "run_key", "arm", "workload", "threads", "repeat", "status", "error", "tps", "qps",
    "lat_avg_ms", "percentile", "lat_pct_ms", "lat_p95_ms", "lat_p99_ms", "errors",
    "n_intervals", "warnings", "log_path", "attempts",
]  # fmt: skip

_PY = {"str": "str", "int": "int", "float": "float"}


def sql_columns() -> list[tuple[str, str, bool]]:
    """``(name, kind, primary_key)`` of every catalog column: kind is ``str`` (short text),
    ``text``, ``int`` or ``float``. The store turns them into SQLAlchemy columns."""
    out = []
    for f in fields(RunRecord):
        kind = f.metadata.get("sql")
        name = f.name
        if kind == "json":
            name, kind = f"{f.name}_json", "text"
        elif kind is None:
            kind = _PY[str(f.type).split(" |")[0]]
        out.append((name, kind, f.name in ("study", "run_key")))
    return out


CATALOG_COLUMNS = [name for name, _, _ in sql_columns()]


def from_catalog(df):
    """The catalog's runs with ``warnings`` decoded back into lists (``warnings_json`` gone)."""
    if "warnings_json" in df:
        df = df.copy()
        df["warnings"] = [json.loads(w) if w else [] for w in df.pop("warnings_json")]
    return df


def result_rows(runs):
    """A phase's result table from catalog runs: :data:`RESULT_COLUMNS`, warnings as lists."""
    if not len(runs):
        return pd.DataFrame(columns=RESULT_COLUMNS)
    return from_catalog(runs).reindex(columns=RESULT_COLUMNS).reset_index(drop=True)


def decide_status(
    checked: tuple[str, str | None],
    *,
    returncode: int | None = 0,
    timed_out: bool = False,
    wall_s: float | None = None,
    missing: str | None = None,
    tool: str = "the tool",
) -> tuple[str, str | None]:
    """The one status rule: the tool's checks (``(status, error)``), overruled by how the
    process ended. A timeout or a missing tool fails the run whatever was printed; a non-zero
    exit code fails it too (e.g. a segfault, 139, leaves a log without error and summary) and
    its code is added to the error. ``returncode=None`` with neither: the exit is unknown (a
    log read from disk) and the checks decide."""
    status, error = checked
    if timed_out:
        return "failed", f"timeout after {wall_s or 0:.0f} s"
    if missing:
        return "failed", f"{missing} is not installed"
    if returncode not in (0, None):
        return "failed", f"{error + '; ' if error else ''}{tool} exited {returncode}"
    return status, error


def outcome_status(checked: tuple[str, str | None], outcome, tool: str) -> tuple[str, str | None]:
    """:func:`decide_status` with how ``outcome`` ended (a :class:`tibenchlib.tools.Outcome`:
    exit code, timeout, wall time, missing tool); None for a log read from disk."""
    if outcome is None:
        return decide_status(checked, returncode=None, tool=tool)
    return decide_status(
        checked,
        returncode=outcome.returncode,
        timed_out=outcome.timed_out,
        wall_s=outcome.wall_s,
        missing=outcome.missing,
        tool=tool,
    )


def p95_rule(histogram_pcts: dict, printed_percentile: float | None, printed_value):
    """The one percentile rule: the histogram's p95 when a histogram exists, else the tool's
    printed percentile when it is the 95th, else None."""
    p95 = histogram_pcts.get(REPORTED_PERCENTILE) if histogram_pcts else None
    if p95 is None and printed_percentile is not None:
        if float(printed_percentile) == REPORTED_PERCENTILE:
            p95 = printed_value
    return p95
