"""Parsers for what a TiDB cluster prints: mysql-client tables, PD's stores API, EXPLAIN plans.

Every function here is pure: text (or an already-decoded JSON object) in, a tidy
:class:`pandas.DataFrame` out, one row per observation and lower-case snake_case columns.
Values keep their printed text unless a column is documented as typed.

The mysql client prints results in three ways, all handled:

- table mode (``+---+`` borders), possibly several tables back to back and mixed with
  noise such as ``ERROR 2006``, ``N rows in set`` or ``Query OK`` lines;
- batch mode (``mysql -B`` or ``-e`` into a pipe): a tab-separated header line and rows;
- vertical mode (``\\G``), only for ``tidb_version()`` (:func:`parse_tidb_version_info`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import pandas as pd

__all__ = [
    "go_duration_seconds",
    "parse_cluster_hardware",
    "parse_cluster_info",
    "parse_cluster_systeminfo",
    "parse_explain",
    "parse_mysql_batch",
    "parse_mysql_tables",
    "parse_pd_stores",
    "parse_select_version",
    "parse_show_config",
    "parse_show_variables",
    "parse_size_bytes",
    "parse_tidb_version_info",
    "parse_tiflash_replica",
    "plan_reads_tiflash",
    "plan_table_engines",
    "split_tidb_version",
    "store_summary",
]

_BORDER = re.compile(r"^\+(?:-+\+)+$")
_ROWS_IN_SET = re.compile(r"^(\d+) rows? in set")


# --------------------------------------------------------------------------- mysql client text


def _snake(name: str) -> str:
    return re.sub(r"\s+", "_", name.strip()).lower()


def _cell(raw: str, keep_leading: bool) -> str:
    # The client pads every cell with one space on the left; anything beyond it is content
    # (EXPLAIN's tree indentation) or right-alignment of numbers.
    if raw.startswith(" "):
        raw = raw[1:]
    raw = raw.rstrip()
    return raw if keep_leading else raw.strip()


def _split_row(line: str, bounds: list[int], keep_leading: bool) -> list[str]:
    ncols = len(bounds) - 1
    # Column edges from the border line are exact, even when a value holds a '|'.
    if len(line) == bounds[-1] + 1 and all(line[p] == "|" for p in bounds):
        return [
            _cell(line[a + 1 : b], keep_leading)
            for a, b in zip(bounds[:-1], bounds[1:], strict=True)
        ]
    # Some client builds pad by bytes, not characters: box-drawing characters in EXPLAIN
    # trees or non-ASCII names then shift the '|' by two bytes each.
    data = line.encode("utf-8")
    if len(data) == bounds[-1] + 1 and all(data[p] == ord("|") for p in bounds):
        return [
            _cell(data[a + 1 : b].decode("utf-8", "replace"), keep_leading)
            for a, b in zip(bounds[:-1], bounds[1:], strict=True)
        ]
    # Hand-edited text (docs) may be off by a column; splitting on '|' still works when no
    # value contains one.
    inner = line.strip()
    if inner.startswith("|"):
        inner = inner[1:]
    if inner.endswith("|"):
        inner = inner[:-1]
    parts = inner.split("|")
    if len(parts) == ncols:
        return [_cell(p, keep_leading) for p in parts]
    raise ValueError(f"cannot split table row into {ncols} columns: {line!r}")


def parse_mysql_tables(text: str, *, keep_leading: bool = False) -> list[pd.DataFrame]:
    """Every result table printed by the mysql (or MariaDB) client in table mode.

    Parameters
    ----------
    text
        Client output; may hold several tables and lines that belong to none (errors,
        reconnect notices, ``N rows in set`` lines), which are skipped.
    keep_leading
        Keep each cell's leading spaces beyond the client's one-space padding (EXPLAIN
        trees encode depth in them).

    Returns
    -------
    list of DataFrame
        One frame per table, columns named as printed, all values ``str``. When the table
        is followed by ``N rows in set``, ``frame.attrs["rows_in_set"]`` holds N.
    """
    lines = text.splitlines()
    tables: list[pd.DataFrame] = []
    i = 0
    while i < len(lines):
        line = lines[i].rstrip()
        if not _BORDER.match(line) or i + 2 >= len(lines):
            i += 1
            continue
        bounds = [p for p, ch in enumerate(line) if ch == "+"]
        header_line = lines[i + 1].rstrip()
        if not header_line.startswith("|") or not _BORDER.match(lines[i + 2].rstrip()):
            i += 1
            continue
        header = _split_row(header_line, bounds, keep_leading=False)
        rows: list[list[str]] = []
        j = i + 3
        pending: str | None = None
        while j < len(lines):
            cur = lines[j].rstrip()
            if pending is None and _BORDER.match(cur):
                break
            # A cell with newlines (tidb_version()) spreads one row over several lines.
            pending = cur if pending is None else pending + "\n" + cur
            j += 1
            if pending.startswith("|") and pending.endswith("|"):
                if "\n" in pending:
                    parts = pending.strip()[1:-1].split("|")
                    rows.append([_cell(p, keep_leading) for p in parts])
                else:
                    rows.append(_split_row(pending, bounds, keep_leading))
                pending = None
        frame = pd.DataFrame(rows, columns=header, dtype=object)
        # j is the closing border (or the end of the text); a rows line may follow it.
        if j + 1 < len(lines):
            m = _ROWS_IN_SET.match(lines[j + 1].strip())
            if m:
                frame.attrs["rows_in_set"] = int(m.group(1))
        tables.append(frame)
        i = j + 1
    return tables


def parse_mysql_batch(text: str) -> pd.DataFrame:
    """A batch-mode (tab-separated) result: the first non-empty line is the header.

    Returns
    -------
    DataFrame
        Columns as printed, values ``str``. Batch mode prints NULL as ``NULL``.
    """
    lines = [ln.rstrip("\r\n") for ln in text.splitlines() if ln.strip()]
    if not lines:
        return pd.DataFrame()
    header = lines[0].split("\t")
    rows = [ln.split("\t") for ln in lines[1:]]
    return pd.DataFrame(rows, columns=header, dtype=object)


def _frames(text: str, keep_leading: bool = False) -> list[pd.DataFrame]:
    tables = parse_mysql_tables(text, keep_leading=keep_leading)
    return tables if tables else [parse_mysql_batch(text)]


def _tidy(text: str, required: tuple[str, ...], what: str) -> pd.DataFrame:
    """All tables in ``text`` holding the ``required`` columns, stacked, snake_case names."""
    picked = []
    for frame in _frames(text):
        frame = frame.rename(columns=_snake)
        if all(c in frame.columns for c in required):
            picked.append(frame)
    if not picked:
        raise ValueError(f"no {what} table (columns {', '.join(required)}) in the text")
    return pd.concat(picked, ignore_index=True)


def _host(instance: str) -> str:
    return instance.rsplit(":", 1)[0] if ":" in instance else instance


# --------------------------------------------------------------------------- SHOW statements


def parse_show_variables(text: str) -> pd.DataFrame:
    """``SHOW [GLOBAL] VARIABLES`` output → columns ``variable_name``, ``value``.

    Several result tables (``mysql -e "SHOW ...; SHOW ..."``) are stacked in printed order.
    """
    frame = _tidy(text, ("variable_name", "value"), "SHOW VARIABLES")
    return frame[["variable_name", "value"]]


def parse_show_config(text: str) -> pd.DataFrame:
    """TiDB ``SHOW CONFIG`` output → ``type``, ``instance``, ``host``, ``name``, ``value``.

    Old (4.0 dev) builds split array settings into ``name.0``, ``name.1`` rows; they are
    kept as printed.
    """
    frame = _tidy(text, ("type", "instance", "name", "value"), "SHOW CONFIG")
    frame["host"] = frame["instance"].map(_host)
    return frame[["type", "instance", "host", "name", "value"]]


def go_duration_seconds(text: str) -> float | None:
    """Seconds in a Go ``time.Duration`` string such as ``26h39m4.352862693s``; None if not one."""
    if not isinstance(text, str) or not text.strip():
        return None
    units = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
    parts = re.findall(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|h|m|s)", text.strip())
    if not parts or "".join(n + u for n, u in parts) != text.strip():
        return None
    return sum(float(n) * units[u] for n, u in parts)


def parse_cluster_info(text: str) -> pd.DataFrame:
    """``information_schema.cluster_info`` → one row per component instance.

    Columns are those printed, snake_case (``type``, ``instance``, ``status_address``,
    ``version``, ``git_hash``, ``start_time``, ``uptime``, ``server_id`` when present), plus
    ``host`` and, when ``uptime`` is present, ``uptime_s`` (float seconds). ``server_id`` is
    an integer column; ``start_time`` stays as printed (it carries the server's UTC offset).
    """
    frame = _tidy(text, ("type", "instance"), "cluster_info")
    frame["host"] = frame["instance"].map(_host)
    if "uptime" in frame:
        frame["uptime_s"] = frame["uptime"].map(go_duration_seconds).astype(float)
    if "server_id" in frame:
        frame["server_id"] = pd.to_numeric(frame["server_id"]).astype("Int64")
    return frame


def _name_value(text: str, what: str) -> pd.DataFrame:
    frame = _tidy(text, ("type", "instance", "name", "value"), what)
    frame["host"] = frame["instance"].map(_host)
    frame["value_num"] = pd.to_numeric(frame["value"], errors="coerce")
    return frame


def parse_cluster_hardware(text: str) -> pd.DataFrame:
    """``information_schema.cluster_hardware`` → one row per (instance, device, name).

    Columns as printed (``type``, ``instance``, ``device_type``, ``device_name``, ``name``,
    ``value``; projections may hold fewer), plus ``host`` and ``value_num`` (the value as a
    number, NaN when it is not one).
    """
    return _name_value(text, "cluster_hardware")


def parse_cluster_systeminfo(text: str) -> pd.DataFrame:
    """``information_schema.cluster_systeminfo`` → one row per (instance, sysctl name).

    Columns as printed (``type``, ``instance``, ``system_type``, ``system_name``, ``name``,
    ``value``), plus ``host`` and ``value_num``.
    """
    return _name_value(text, "cluster_systeminfo")


# --------------------------------------------------------------------------- versions

_TIDB_VERSION = re.compile(r"^(?P<mysql>\d+\.\d+\.\d+)-TiDB-(?P<tidb>v?\d[\w.+\-]*)")


def split_tidb_version(version: str) -> tuple[str, str] | None:
    """``'8.0.11-TiDB-v8.5.4'`` → ``('8.0.11', 'v8.5.4')``: MySQL protocol version, TiDB release.

    Returns None for a string that is not a TiDB ``VERSION()``.
    """
    m = _TIDB_VERSION.match(version.strip()) if isinstance(version, str) else None
    return (m.group("mysql"), m.group("tidb")) if m else None


def parse_select_version(text: str) -> pd.DataFrame:
    """``SELECT VERSION()`` output (table or batch mode, other columns allowed).

    Returns
    -------
    DataFrame
        ``version`` (as printed), ``mysql_version`` and ``tidb_version`` (None unless the
        server is TiDB).
    """
    for frame in _frames(text):
        cols = [c for c in frame.columns if str(c).strip().lower() == "version()"]
        if cols:
            versions = frame[cols[0]].tolist()
            split = [split_tidb_version(v) for v in versions]
            return pd.DataFrame(
                {
                    "version": versions,
                    "mysql_version": [s[0] if s else None for s in split],
                    "tidb_version": [s[1] if s else None for s in split],
                }
            )
    raise ValueError("no VERSION() column in the text")


def parse_tidb_version_info(text: str) -> pd.DataFrame:
    """``SELECT tidb_version()`` (vertical ``\\G`` output or the bare cell) → ``name``, ``value``.

    Lines look like ``Release Version: v8.1.0``; row separators, ``N row in set`` and the
    ``tidb_version(): `` prefix of the first line are dropped.
    """
    pairs = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("|"):
            line = line[1:]
        if line.endswith("|"):
            line = line[:-1]
        line = line.strip()
        if not line or line.startswith("***") or _ROWS_IN_SET.match(line):
            continue
        if line.lower().startswith("tidb_version():"):
            line = line.split(":", 1)[1].strip()
        if ":" in line:
            name, value = line.split(":", 1)
            pairs.append((name.strip(), value.strip()))
    return pd.DataFrame(pairs, columns=["name", "value"])


# --------------------------------------------------------------------------- PD stores API

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGTPE]?i?B)\s*$")
_SIZE_POW = {"": 0, "K": 1, "M": 2, "G": 3, "T": 4, "P": 5, "E": 6}


def parse_size_bytes(text: Any) -> float | None:
    """PD's human sizes (``'311.7GiB'``, ``'197 GiB'``, ``'1B'``) → bytes; None if not a size.

    PD prints binary units; a plain ``KB``/``MB`` is read as decimal.
    """
    if not isinstance(text, str):
        return None
    m = _SIZE.match(text)
    if not m:
        return None
    unit = m.group(2)
    base = 1024.0 if "i" in unit else 1000.0
    return float(m.group(1)) * base ** _SIZE_POW[unit[0] if unit[0] != "B" else ""]


def _outside_strings(text: str):
    """``(index, char)`` of each character of JSON-like text outside its string literals
    (quotes and escapes themselves left out)."""
    in_str = esc = False
    for k, ch in enumerate(text):
        if esc:
            esc = False
        elif ch == "\\":
            esc = True
        elif ch == '"':
            in_str = not in_str
        elif not in_str:
            yield k, ch


def _strip_hash_comments(text: str) -> str:
    # Docs examples annotate JSON with '# ...' comments; drop them outside string literals.
    out = []
    for line in text.splitlines():
        cut = next((k for k, ch in _outside_strings(line) if ch == "#"), len(line))
        out.append(line[:cut])
    return "\n".join(out)


def _close_brackets(text: str) -> str:
    stack = []
    for _, ch in _outside_strings(text):
        if ch in "[{":
            stack.append("]" if ch == "[" else "}")
        elif ch in "]}" and stack:
            stack.pop()
    return text + "".join(reversed(stack))


def _load_json_tolerant(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    # Docs pages show annotated and truncated bodies: accept them, but only these two repairs.
    return json.loads(_close_brackets(_strip_hash_comments(text)))


def parse_pd_stores(data: str | Mapping[str, Any]) -> pd.DataFrame:
    """PD ``GET /pd/api/v1/stores`` (or pd-ctl ``store [id]``) → one row per store.

    Parameters
    ----------
    data
        The response text or its decoded JSON. ``#`` comments and missing closing brackets
        (docs examples) are tolerated. A single store object is accepted too.

    Returns
    -------
    DataFrame
        ``store_id``, ``address``, ``status_address``, ``version``, ``state_name``,
        ``engine`` (``tiflash`` when the store has the label ``engine=tiflash``, else
        ``tikv``), ``labels`` (``k=v`` joined by commas), ``capacity_bytes``,
        ``available_bytes``, ``used_size_bytes``, ``leader_count``, ``region_count``,
        ``leader_size``, ``region_size``, ``region_score``, ``uptime_s``.
    """
    obj = _load_json_tolerant(data) if isinstance(data, str) else data
    stores = obj.get("stores") if "stores" in obj else [obj]
    rows = []
    for entry in stores or []:
        store = entry.get("store", {})
        status = entry.get("status", {})
        labels = {lb.get("key"): lb.get("value") for lb in store.get("labels") or []}
        rows.append(
            {
                "store_id": store.get("id"),
                "address": store.get("address"),
                "status_address": store.get("status_address"),
                "version": store.get("version"),
                "state_name": store.get("state_name"),
                "engine": "tiflash" if labels.get("engine") == "tiflash" else "tikv",
                "labels": ",".join(f"{k}={v}" for k, v in sorted(labels.items())),
                "capacity_bytes": parse_size_bytes(status.get("capacity")),
                "available_bytes": parse_size_bytes(status.get("available")),
                "used_size_bytes": parse_size_bytes(status.get("used_size")),
                "leader_count": status.get("leader_count"),
                "region_count": status.get("region_count"),
                "leader_size": status.get("leader_size"),
                "region_size": status.get("region_size"),
                "region_score": status.get("region_score"),
                "uptime_s": go_duration_seconds(status.get("uptime")),
            }
        )
    frame = pd.DataFrame(rows)
    for col in ("store_id", "leader_count", "region_count", "leader_size", "region_size"):
        if col in frame:
            frame[col] = frame[col].astype("Int64")
    return frame


def store_summary(stores: pd.DataFrame) -> pd.DataFrame:
    """Per engine (``tikv``/``tiflash``): ``stores``, ``stores_up``, ``region_count``,
    ``leader_count`` (sums over the engine's stores), from :func:`parse_pd_stores`."""
    grouped = stores.assign(up=stores["state_name"].eq("Up")).groupby("engine", sort=True)
    return grouped.agg(
        stores=("store_id", "size"),
        stores_up=("up", "sum"),
        region_count=("region_count", "sum"),
        leader_count=("leader_count", "sum"),
    ).reset_index()


# --------------------------------------------------------------------------- EXPLAIN

_TASK = re.compile(r"^(?P<kind>[A-Za-z]+)(?:\[(?P<engine>\w+)\])?$")
_TREE_CHARS = "│├└─ "
_COLUMN_ALIASES = {
    "estrows": "est_rows",
    "count": "est_rows",  # TiDB before 4.0 printed 'count'
    "actrows": "act_rows",
    "access_object": "access_object",
    "operator_info": "operator_info",
    "execution_info": "execution_info",
}


def _task_engine(task: str) -> tuple[str | None, str | None]:
    m = _TASK.match(task.strip())
    if not m:
        return None, None
    kind, engine = m.group("kind"), m.group("engine")
    if kind == "root":
        return kind, "tidb"
    # Before 4.0 the task was a bare 'cop', and only TiKV ran coprocessor tasks.
    return kind, engine or ("tikv" if kind == "cop" else None)


def parse_explain(text: str) -> pd.DataFrame:
    """An ``EXPLAIN`` / ``EXPLAIN ANALYZE`` table → one row per operator, in plan order.

    Returns
    -------
    DataFrame
        ``row`` (0-based order), ``depth`` (0 for the root), ``id`` (e.g.
        ``ExchangeReceiver_19``), ``operator`` (``ExchangeReceiver``), ``join_side``
        (``Build``/``Probe`` or None), ``task`` as printed, ``task_kind`` (``root``, ``cop``,
        ``batchCop``, ``mpp``), ``engine`` (``tidb`` for root tasks, else the engine in
        brackets: ``tikv`` or ``tiflash``), ``est_rows`` (float), ``table`` (from an access
        object ``table:NAME``), then the remaining printed columns snake_cased
        (``access_object``, ``operator_info``, and with ANALYZE ``act_rows`` (int),
        ``execution_info``, ``memory``, ``disk``).
    """
    tables = [t for t in _frames(text, keep_leading=True) if "id" in t.columns]
    if not tables:
        raise ValueError("no EXPLAIN table (an 'id' column) in the text")
    raw = tables[0]
    raw = raw.rename(columns=lambda c: _COLUMN_ALIASES.get(_snake(c), _snake(c)))
    out = pd.DataFrame({"row": range(len(raw))})
    ids = raw["id"].astype(str)
    names = ids.str.lstrip(_TREE_CHARS)
    # Each tree level adds two characters ('└─', '│ ' or two spaces) before the name.
    out["depth"] = ((ids.str.len() - names.str.len()) // 2).astype(int)
    parts = names.str.extract(r"^(?P<id>[^()]+?)(?:\((?P<join_side>[^)]*)\))?$")
    out["id"] = parts["id"]
    out["operator"] = parts["id"].str.replace(r"_\d+$", "", regex=True)
    out["join_side"] = [v if isinstance(v, str) else None for v in parts["join_side"]]
    task = raw["task"].astype(str).str.strip() if "task" in raw else pd.Series([""] * len(raw))
    kinds_engines = task.map(_task_engine)
    out["task"] = task
    out["task_kind"] = kinds_engines.map(lambda t: t[0])
    out["engine"] = kinds_engines.map(lambda t: t[1])
    if "est_rows" in raw:
        out["est_rows"] = pd.to_numeric(raw["est_rows"].str.strip(), errors="coerce")
    access = raw["access_object"].str.strip() if "access_object" in raw else None
    tables = access.str.extract(r"(?:^|,\s*)table:([^,\s]+)")[0] if access is not None else []
    out["table"] = [v if isinstance(v, str) else None for v in tables] or None
    for col in raw.columns:
        if col in ("id", "task", "est_rows"):
            continue
        values = raw[col].astype(str).str.strip()
        out[col] = pd.to_numeric(values).astype("Int64") if col == "act_rows" else values
    return out


def plan_reads_tiflash(plan: pd.DataFrame) -> bool:
    """True when any operator of a :func:`parse_explain` plan runs on TiFlash."""
    return bool((plan["engine"] == "tiflash").any())


def plan_table_engines(plan: pd.DataFrame) -> pd.DataFrame:
    """Which engine reads each table: ``table``, ``engine``, ``operator``, ``task`` for every
    operator with a ``table:`` access object, in plan order."""
    scans = plan[plan["table"].notna()]
    return scans[["table", "engine", "operator", "task"]].reset_index(drop=True)


# --------------------------------------------------------------------------- TiFlash replicas


def parse_tiflash_replica(text: str) -> pd.DataFrame:
    """``SELECT * FROM information_schema.tiflash_replica`` → one row per table.

    Columns snake_case as printed; ``table_id`` and ``replica_count`` integers,
    ``available`` boolean, ``progress`` float (0–1). Several result tables are stacked.
    """
    frame = _tidy(text, ("table_schema", "table_name"), "tiflash_replica")
    for col in ("table_id", "replica_count"):
        if col in frame:
            frame[col] = pd.to_numeric(frame[col]).astype("Int64")
    if "available" in frame:
        truth = {"1": True, "0": False, "true": True, "false": False}
        frame["available"] = frame["available"].map(lambda v: truth.get(str(v).strip().lower()))
    if "progress" in frame:
        frame["progress"] = pd.to_numeric(frame["progress"], errors="coerce").astype(float)
    return frame
