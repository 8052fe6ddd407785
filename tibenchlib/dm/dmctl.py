"""Parse ``dmctl query-status`` output: what older DM clusters (no OpenAPI) report.

The raw capture of ``tiup dmctl … query-status`` carries tiup's ``Starting component …`` banner
and ANSI colour codes before the JSON; both are stripped. The result is one tidy row per subtask
(:data:`STATUS_COLUMNS`), the same shape :func:`tibenchlib.dm.openapi.parse_task_status` returns.
"""

from __future__ import annotations

import json
import re

import pandas as pd

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")

#: One row per subtask (a task on one source); numbers are numbers, missing ones None.
STATUS_COLUMNS = [
    "task",
    "source",
    "worker",
    "stage",
    "unit",
    "synced",
    "total_events",
    "total_tps",
    "recent_tps",
    "total_rows",
    "total_rps",
    "recent_rps",
    "seconds_behind_master",
    "finished_bytes",
    "total_bytes",
    "progress_pct",
    "bps",
    "error",
]


class DmStatusError(ValueError):
    """Output that is not a DM status (no JSON, or DM answered ``result: false``)."""


def strip_terminal(text: str) -> str:
    """``text`` without ANSI escape codes and without tiup's ``Starting component`` banner."""
    text = _ANSI.sub("", text)
    return "\n".join(
        line for line in text.splitlines() if not line.startswith("Starting component ")
    )


def load_json(text: str) -> dict:
    """The JSON object in ``text`` (banner and colour codes allowed before it)."""
    clean = strip_terminal(text)
    start = clean.find("{")
    if start < 0:
        raise DmStatusError("no JSON object in the dmctl output")
    try:
        obj, _ = json.JSONDecoder().raw_decode(clean[start:])
    except json.JSONDecodeError as e:
        raise DmStatusError(f"dmctl output is not valid JSON: {e}") from None
    return obj


def number(v) -> float | int | None:
    """DM prints numbers as strings (``"13"``, ``"0.00 %"``): int or float, None if absent."""
    if v is None or v == "":
        return None
    if isinstance(v, int | float) and not isinstance(v, bool):
        return v
    s = str(v).strip().rstrip("%").strip()
    try:
        return int(s)
    except ValueError:
        try:
            return float(s)
        except ValueError:
            return None


def error_line(result: dict | None) -> str | None:
    """One line from a subtask's ``result.errors``: ``ErrCode N (class): RawCause`` (or
    ``Message`` when there is no raw cause); None when there is no error."""
    errors = (result or {}).get("errors") or []
    if not errors:
        return None
    parts = []
    for e in errors:
        cause = e.get("RawCause") or e.get("Message") or ""
        parts.append(f"ErrCode {e.get('ErrCode')} ({e.get('ErrClass')}): {' '.join(cause.split())}")
    return "; ".join(parts)


def status_row(
    *, task, source, worker, stage, unit, sync: dict | None, load: dict | None, error
) -> dict:
    """A :data:`STATUS_COLUMNS` row from the camelCase (dmctl) or snake_case (OpenAPI) fields."""

    def get(d, *names):
        for n in names:
            if d and n in d:
                return d[n]
        return None

    return {
        "task": task,
        "source": source,
        "worker": worker,
        "stage": stage,
        "unit": unit.lower() if isinstance(unit, str) else unit,
        "synced": get(sync, "synced"),
        "total_events": number(get(sync, "totalEvents", "total_events")),
        "total_tps": number(get(sync, "totalTps", "total_tps")),
        "recent_tps": number(get(sync, "recentTps", "recent_tps")),
        "total_rows": number(get(sync, "totalRows", "total_rows")),
        "total_rps": number(get(sync, "totalRps", "total_rps")),
        "recent_rps": number(get(sync, "recentRps", "recent_rps")),
        "seconds_behind_master": number(get(sync, "secondsBehindMaster", "seconds_behind_master")),
        "finished_bytes": number(get(load, "finishedBytes", "finished_bytes")),
        "total_bytes": number(get(load, "totalBytes", "total_bytes")),
        "progress_pct": number(get(load, "progress")),
        "bps": number(get(load, "bps")),
        "error": error,
    }


def parse_query_status(text: str) -> pd.DataFrame:
    """``dmctl query-status <task>`` output → one :data:`STATUS_COLUMNS` row per subtask.

    Raises :class:`DmStatusError` when DM answered ``"result": false`` (its ``msg`` is the
    message) or when the text holds no status.
    """
    obj = load_json(text)
    if obj.get("result") is False:
        raise DmStatusError(f"dmctl query-status failed: {' '.join(str(obj.get('msg')).split())}")
    if "sources" not in obj:
        raise DmStatusError("dmctl output has no 'sources': not a query-status of one task")
    rows = []
    for src in obj["sources"] or []:
        ss = src.get("sourceStatus") or {}
        for st in src.get("subTaskStatus") or []:
            rows.append(
                status_row(
                    task=st.get("name"),
                    source=ss.get("source"),
                    worker=ss.get("worker"),
                    stage=st.get("stage"),
                    unit=st.get("unit"),
                    sync=st.get("sync"),
                    load=st.get("load"),
                    error=error_line(st.get("result")),
                )
            )
    return pd.DataFrame(rows, columns=STATUS_COLUMNS)
