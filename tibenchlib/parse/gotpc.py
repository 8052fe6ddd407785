"""Parse the text output of go-tpc (``go-tpc``/``tiup bench``): TPC-H and TPC-C runs.

TPC-H (:func:`parse_tpch_output`): go-tpc prints, in its default plain style
(``pkg/measurement`` and ``tpch/workload.go``):

- ``[Current] Q1: 2.39s`` while running: the mean time of the query's executions that finished
  during the last reporting interval, two decimals;
- ``Finished`` when the run ends, then ``[Summary] Q1: 7.62s``: the mean over all executions,
  the query names sorted as strings (``Q1, Q10, Q11, … Q2, Q20 …``);
- ``Got signal [terminated] to exit.`` when it was stopped;
- a failed execution is measured under ``<query>_ERR`` (e.g. ``[Summary] Q5_ERR: 0.01s``), which
  this parser reports with ``status`` ``error``.

Other lines (server version, warnings, errors, tiup banners) are ignored. The ``--output
table`` and ``--output json`` styles are not parsed: no real sample of them was available.

TPC-C (:func:`parse_tpcc_output`): one line per transaction type and reporting interval,
``[Current] NEW_ORDER - Takes(s): 9.8, Count: 254, TPM: 1548.4, Sum(ms): …, Avg(ms): …,
50th(ms): …, 90th(ms): …, 95th(ms): …, 99th(ms): …, 99.9th(ms): …, Max(ms): …``, then
``Finished``, the ``[Summary]`` lines and ``tpmC: 1577.2, tpmTotal: 3507.9, efficiency:
3066.2%``. Generations read (``tests/fixtures/go-tpc-tpcc/``): 2020's lines without the
``[Current]``/``[Summary]`` prefix (cumulative figures, ``95th/99th/99.9th``), 2020's integer
milliseconds with ``90th/99th/99.9th``, 2021's last line with ``tpmC`` alone, and 2024's float
milliseconds with ``50th`` to ``Max``. Failed transactions are measured under ``<TYPE>_ERR``.
Lines of other programs (Go's automaxprocs log line, tiup banners) are ignored.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from os import PathLike

import pandas as pd

from .files import NotALog, check_regular, read_log

__all__ = [
    "TPCC_COLUMNS",
    "TPCC_TRANSACTIONS",
    "TpccResult",
    "parse_tpcc_file",
    "parse_tpcc_output",
    "parse_tpch_output",
    "tpcc_series",
    "tpch_summary",
]

_LINE = re.compile(
    r"^\s*\[(?P<section>Current|Summary)\]\s+(?P<name>Q(?P<query>\d+))(?P<err>_ERR)?:\s*"
    r"(?P<seconds>\d+(?:\.\d+)?)s\s*$"
)

COLUMNS = ["section", "block", "query", "name", "status", "seconds", "line"]


def parse_tpch_output(text: str) -> pd.DataFrame:
    """go-tpc TPC-H output → one row per ``[Current]`` / ``[Summary]`` line.

    Parameters
    ----------
    text
        The tool's standard output (a fragment is fine).

    Returns
    -------
    DataFrame
        ``section`` (``current`` or ``summary``), ``block`` (0-based number of the run of
        consecutive lines of one section: a second ``[Summary]`` block means a second run),
        ``query`` (int), ``name`` (``Q1``), ``status`` (``ok`` or ``error`` for ``_ERR``
        lines), ``seconds`` (the printed mean, float), ``line`` (1-based line number), in
        file order. ``attrs`` holds ``finished`` (count of ``Finished`` lines) and
        ``signal`` (the signal named by a ``Got signal [...]`` line, or None).
    """
    rows = []
    block = -1
    previous = None  # section of the previous line if it matched, else None
    finished = 0
    signal = None
    for i, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip("\r")
        m = _LINE.match(line)
        if not m:
            previous = None
            if line.strip() == "Finished":
                finished += 1
            sig = re.match(r"^\s*Got signal \[(.+?)\]", line)
            if sig:
                signal = sig.group(1)
            continue
        section = m.group("section").lower()
        if section != previous:
            block += 1
        previous = section
        rows.append(
            {
                "section": section,
                "block": block,
                "query": int(m.group("query")),
                "name": m.group("name"),
                "status": "error" if m.group("err") else "ok",
                "seconds": float(m.group("seconds")),
                "line": i,
            }
        )
    frame = pd.DataFrame(rows, columns=COLUMNS)
    frame.attrs["finished"] = finished
    frame.attrs["signal"] = signal
    return frame


def tpch_summary(parsed: pd.DataFrame) -> pd.DataFrame:
    """The last ``[Summary]`` block, ordered by query number: ``query, name, status, seconds``.

    Empty when the output holds no summary (a run cut off before it printed one).
    """
    summary = parsed[parsed["section"] == "summary"]
    if summary.empty:
        return summary[["query", "name", "status", "seconds"]].reset_index(drop=True)
    last = summary[summary["block"] == summary["block"].max()]
    out = last.sort_values(["query", "status"])[["query", "name", "status", "seconds"]]
    return out.reset_index(drop=True)


# -- TPC-C -------------------------------------------------------------------------------------
#: The five TPC-C transaction types, as go-tpc names them.
TPCC_TRANSACTIONS = ("NEW_ORDER", "PAYMENT", "ORDER_STATUS", "DELIVERY", "STOCK_LEVEL")

_NUM = r"(-?\d+(?:\.\d+)?)"
_TPCC_LINE = re.compile(
    r"^\s*(?:\[(?P<section>Current|Summary)\]\s+)?"
    r"(?P<txn>[A-Z][A-Z_]*?)(?P<err>_ERR)?\s+-\s+"
    r"Takes\(s\):\s*(?P<takes>[\d.]+),\s*Count:\s*(?P<count>\d+),\s*TPM:\s*(?P<tpm>[\d.]+),"
    r"\s*Sum\(ms\):\s*(?P<sum>[\d.]+),\s*Avg\(ms\):\s*(?P<avg>[\d.]+)(?P<rest>.*)$"
)
_TPCC_FIELD = re.compile(rf"(\d+(?:\.\d+)?th|Max)\(ms\):\s*{_NUM}")
_TPCC_TPMC = re.compile(
    rf"^\s*tpmC:\s*{_NUM}(?:,\s*tpmTotal:\s*{_NUM})?(?:,\s*efficiency:\s*{_NUM}%)?\s*$"
)
# printed field name -> column
_PCT_COLUMNS = {
    "50th": "p50_ms",
    "90th": "p90_ms",
    "95th": "p95_ms",
    "99th": "p99_ms",
    "99.9th": "p99_9_ms",
    "Max": "max_ms",
}
#: Columns of :attr:`TpccResult.lines`, in order.
TPCC_COLUMNS = [
    "section",
    "block",
    "transaction",
    "status",
    "takes_s",
    "count",
    "tpm",
    "sum_ms",
    "avg_ms",
    *_PCT_COLUMNS.values(),
    "line",
]
_LATENCY_KEYS = {"avg_ms": "avg", **{c: c.removesuffix("_ms") for c in _PCT_COLUMNS.values()}}


@dataclass(frozen=True)
class TpccResult:
    """One go-tpc TPC-C run, parsed.

    Attributes
    ----------
    summary : dict
        JSON-serialisable per-run figures: ``file``, ``status`` (``ok`` or ``failed``),
        ``error``, ``tool`` (``go-tpc``), ``layout`` (``prefixed`` or ``no-prefix``),
        ``finished`` (a ``Finished`` line was printed), ``tpmc``, ``tpmc_source``
        (``printed``: the ``tpmC:`` line; ``new_order_tpm``: the final NEW_ORDER line's TPM,
        which is what go-tpc prints as tpmC; None), ``tpm_total`` and ``tpm_total_source``
        (``printed``, or ``sum_tpm``: the sum of the final non-error lines' TPM, which is what
        go-tpc prints), ``efficiency_pct`` (printed only: it needs the warehouse count),
        ``runtime_s`` (NEW_ORDER's ``Takes(s)`` on its final line), ``transactions``
        (type → committed count), ``errors`` (type → ``_ERR`` count, every type present, 0 when
        none), ``latency_ms`` (type → ``avg``, ``p50``, ``p90``, ``p95``, ``p99``, ``p99_9``,
        ``max``, None when that generation did not print it) and ``intervals`` (number of
        ``[Current]`` blocks).
    lines : pandas.DataFrame
        One row per transaction line, columns :data:`TPCC_COLUMNS`: ``section`` (``current``,
        ``summary``, or ``cumulative`` for the prefix-less lines), ``block`` (0-based reporting
        interval within its section), ``transaction`` (``NEW_ORDER``…), ``status`` (``ok``, or
        ``error`` for ``_ERR`` lines), the printed figures (NaN when not printed) and ``line``
        (1-based line number).

    Notes
    -----
    The final figures are the last ``[Summary]`` block, else (prefix-less output) the last
    cumulative block. Output without either (only ``[Current]`` lines: an interrupted run or a
    fragment) is ``failed`` with error ``truncated: no summary``; its lines are still returned.
    Blocks: a new block starts when a transaction type repeats (2020's go-tpc printed the
    types of one interval in map order, and left out those with no event), or when the
    section changes.
    """

    summary: dict
    lines: pd.DataFrame = field(repr=False)


def _f(x: float) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


def parse_tpcc_output(text: str, file: str | None = None) -> TpccResult:
    """go-tpc ``tpcc run`` output (any generation) → :class:`TpccResult`.

    Parameters
    ----------
    text
        Everything the tool printed (a fragment is fine).
    file
        Copied into ``summary["file"]``.
    """
    rows = []
    block = {"current": -1, "summary": -1, "cumulative": -1}
    seen: set[tuple[str, str]] = set()
    previous = None
    finished = False
    tpm_line = None
    for i, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip("\r")
        m = _TPCC_LINE.match(line)
        if not m:
            if line.strip() == "Finished" or line.strip().startswith("Finished:"):
                finished = True
            t = _TPCC_TPMC.match(line)
            if t:
                tpm_line = t
            if line.strip():
                previous = None
            continue
        section = (m.group("section") or "cumulative").lower()
        key = (m.group("txn"), "error" if m.group("err") else "ok")
        if section != previous or key in seen:
            block[section] += 1
            seen = set()
        seen.add(key)
        previous = section
        pcts = {_PCT_COLUMNS[k]: float(v) for k, v in _TPCC_FIELD.findall(m.group("rest"))}
        rows.append(
            {
                "section": section,
                "block": block[section],
                "transaction": key[0],
                "status": key[1],
                "takes_s": float(m.group("takes")),
                "count": int(m.group("count")),
                "tpm": float(m.group("tpm")),
                "sum_ms": float(m.group("sum")),
                "avg_ms": float(m.group("avg")),
                **pcts,
                "line": i,
            }
        )
    lines = pd.DataFrame(rows, columns=TPCC_COLUMNS)
    lines["count"] = lines["count"].astype("int64")
    return TpccResult(summary=_tpcc_summary(lines, finished, tpm_line, file), lines=lines)


def parse_tpcc_file(path: str | PathLike) -> TpccResult:
    """:func:`parse_tpcc_output` on a file (UTF-8, undecodable bytes replaced).

    Read through :func:`tibenchlib.parse.files.read_log`: a file with a line longer than
    :data:`~tibenchlib.parse.files.MAX_LINE_BYTES` (no line breaks) or larger than
    :data:`~tibenchlib.parse.files.MAX_TEXT_BYTES` is ``failed`` with error "not a go-tpc
    TPC-C log: …"; a path that is not a regular file raises
    :class:`~tibenchlib.parse.files.NotALog` before it is opened.
    """
    what = "go-tpc TPC-C log"
    check_regular(path, what)
    try:
        text = read_log(path, what)
    except NotALog as e:
        res = parse_tpcc_output("", file=str(path))
        return TpccResult({**res.summary, "error": str(e)}, res.lines)
    return parse_tpcc_output(text, file=str(path))


def _tpcc_summary(lines: pd.DataFrame, finished: bool, tpm_line, file) -> dict:
    final = lines[lines["section"] == "summary"]
    if final.empty:
        final = lines[lines["section"] == "cumulative"]
    if not final.empty:
        final = final[final["block"] == final["block"].max()]
    ok = final[final["status"] == "ok"].set_index("transaction")
    err = final[final["status"] == "error"].set_index("transaction")

    tpmc, tpmc_source = None, None
    tpm_total, total_source = None, None
    efficiency = None
    if tpm_line is not None:
        tpmc, tpmc_source = float(tpm_line.group(1)), "printed"
        if tpm_line.group(2) is not None:
            tpm_total, total_source = float(tpm_line.group(2)), "printed"
        if tpm_line.group(3) is not None:
            efficiency = float(tpm_line.group(3))
    if tpmc is None and "NEW_ORDER" in ok.index:
        tpmc, tpmc_source = float(ok.at["NEW_ORDER", "tpm"]), "new_order_tpm"
    if tpm_total is None and not ok.empty:
        tpm_total, total_source = round(float(ok["tpm"].sum()), 1), "sum_tpm"

    if lines.empty:
        status, error = "failed", "no go-tpc TPC-C lines in the output"
    elif final.empty:
        status, error = "failed", "truncated: no summary"
    else:
        status, error = "ok", None
    types = list(dict.fromkeys([*ok.index, *err.index]))
    return {
        "file": file,
        "status": status,
        "error": error,
        "tool": "go-tpc",
        "layout": "no-prefix" if (lines["section"] == "cumulative").any() else "prefixed",
        "finished": finished,
        "tpmc": tpmc,
        "tpmc_source": tpmc_source,
        "tpm_total": tpm_total,
        "tpm_total_source": total_source,
        "efficiency_pct": efficiency,
        "runtime_s": float(ok.at["NEW_ORDER", "takes_s"]) if "NEW_ORDER" in ok.index else None,
        "transactions": {t: int(ok.at[t, "count"]) for t in ok.index},
        "errors": {t: int(err.at[t, "count"]) if t in err.index else 0 for t in types},
        "latency_ms": {t: {k: _f(ok.at[t, c]) for c, k in _LATENCY_KEYS.items()} for t in ok.index},
        "intervals": int(lines.loc[lines["section"] == "current", "block"].nunique()),
    }


def tpcc_series(lines: pd.DataFrame) -> pd.DataFrame:
    """Per reporting interval: ``block``, ``t_s`` (end of the interval, seconds from the
    start), ``tpmc`` (NEW_ORDER TPM, 0 when no New-Order finished), ``tpm_total`` (sum of the
    non-error TPM) and ``errors`` (``_ERR`` count), from the ``[Current]`` rows of
    :attr:`TpccResult.lines`.

    ``t_s`` accumulates each block's longest ``Takes(s)``: go-tpc prints how long each
    transaction type's interval histogram covered, not a timestamp, so this is approximate
    to the reporting period's jitter.
    """
    cur = lines[lines["section"] == "current"]
    if cur.empty:
        return pd.DataFrame(columns=["block", "t_s", "tpmc", "tpm_total", "errors"])
    ok = cur[cur["status"] == "ok"]
    out = pd.DataFrame({"block": sorted(cur["block"].unique())}).set_index("block")
    out["t_s"] = cur.groupby("block")["takes_s"].max().cumsum()
    out["tpmc"] = ok[ok["transaction"] == "NEW_ORDER"].groupby("block")["tpm"].sum()
    out["tpm_total"] = ok.groupby("block")["tpm"].sum()
    out["errors"] = cur[cur["status"] == "error"].groupby("block")["count"].sum()
    out = out.fillna({"tpmc": 0.0, "tpm_total": 0.0, "errors": 0})
    out["errors"] = out["errors"].astype("int64")
    return out.reset_index()
