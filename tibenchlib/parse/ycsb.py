"""Parse the output of YCSB (the Java ``site.ycsb.Client``) and of go-ycsb into one per-run record.

:func:`parse_ycsb` is pure (text in, :class:`YcsbResult` out); :func:`parse_ycsb_file` only adds
reading the file. Both tools' layouts, checked against real outputs under
``tests/fixtures/ycsb/`` and ``tests/fixtures/go-ycsb/``:

Java YCSB (0.1 … 0.17, stdout and stderr together)
    - the summary, one ``[SECTION], metric, value`` line each: ``[OVERALL], RunTime(ms), …``,
      ``[OVERALL], Throughput(ops/sec), …``, then per operation ``Operations``,
      ``AverageLatency(us)``, ``MinLatency(us)``, ``MaxLatency(us)``,
      ``95thPercentileLatency(us)`` (``(ms)`` in the old ``histogram`` measurement),
      ``99thPercentileLatency(us)`` and ``Return=<status>, <count>`` (``OK``, ``ERROR``,
      ``NOT_FOUND``, ``BATCHED_OK``…; ``0`` / ``-1`` before 0.2). Operations whose name ends in
      ``-FAILED`` are YCSB's own measurement of failed calls and are kept as printed.
      ``[TOTAL_GC…]`` lines are the JVM's garbage collections, not operations;
    - ``measurementtype=histogram``: ``[READ], 0, 398998`` … ``[READ], >1000, 0``, one bucket
      per millisecond (:attr:`YcsbResult.histogram`);
    - ``measurementtype=timeseries``: ``[READ], 1000, 3512.4``, the average latency in
      microseconds of the operations in each time bucket (milliseconds since the start). An
      operation whose numbered lines end in a ``>N`` line is a histogram, else a time series;
    - the status lines of ``-s`` on stderr: ``2023-06-05 16:13:49:458 2 sec: 19 operations;
      19 current ops/sec; est completion in … [READ: Count=19, Max=…, Min=…, Avg=…, 90=…,
      99=…, 99.9=…, 99.99=…]`` (latencies in microseconds, counts of that interval), and the
      older ``[READ AverageLatency(us)=3.5]`` form.

go-ycsb (2018 … 2023)
    - a ``***** properties *****`` banner of ``"key"="value"`` lines (values of keys naming a
      password are masked in :attr:`YcsbResult.summary`);
    - every interval, one line per operation: ``READ   - Takes(s): 10.0, Count: 125, OPS: 12.5,
      Avg(us): 2282, Min(us): 544, Max(us): 12510, 95th(us): …, 99th(us): …``, with counts and
      rates *cumulative* since the start; newer versions add ``50th/90th/99.9th/99.99th`` and a
      ``TOTAL`` line; failed calls are measured under ``<OP>_ERROR``;
    - ``Run finished, takes 20.236090571s`` (Go's duration format: ``10m10.498337683s``,
      ``1h2m3.5s``, ``850ms``, ``12.5µs``), then the final lines in the same form; v1.0.3's
      ``TOTAL`` line (every successful operation, from its own histogram) gives the run's
      overall latency (``overall_latency_ms``); ``Got signal [interrupt] to exit.`` precedes
      them when the run was ended by SIGINT (a timed run: go-ycsb ignores
      ``maxexecutiontime``);
    - with ``silence=false``, one ``operation err: <error>`` line per failed call: the calls in
      flight when SIGINT cancelled go-ycsb's context say ``context canceled`` (counted in
      ``cancelled``; go-ycsb measures them under ``<OP>_ERROR`` too), the others are kept, each
      distinct message once, in ``exceptions``.

The per-run record (:attr:`YcsbResult.summary`) holds, whatever the tool, ``throughput_ops_s``,
``operations`` (name → count, ``TOTAL`` excluded), ``errors`` (name → calls that did not return
OK; go-ycsb's include the ``cancelled`` calls its SIGINT cut short), ``latency_ms`` (name →
``avg``, ``min``, ``max``, ``p95``, ``p99`` in milliseconds whatever unit the tool printed; None
where it printed no such figure), ``intervals`` and ``overall_latency_ms`` (the same keys over
every operation where the tool printed them, go-ycsb's ``TOTAL`` line, else None).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from os import PathLike
from typing import Any

import pandas as pd

from .files import NotALog, check_regular, read_log

WHAT = "YCSB log"

__all__ = [
    "INTERVAL_COLUMNS",
    "LATENCY_KEYS",
    "YcsbParseError",
    "YcsbResult",
    "go_duration_s",
    "parse_ycsb",
    "parse_ycsb_file",
]

#: Columns of :attr:`YcsbResult.intervals`, in order.
INTERVAL_COLUMNS = (
    "t_s",
    "operation",
    "count",
    "ops_s",
    "avg_ms",
    "min_ms",
    "max_ms",
    "p90_ms",
    "p95_ms",
    "p99_ms",
    "source",
)
#: Keys of each operation's ``latency_ms`` entry.
LATENCY_KEYS = ("avg", "min", "max", "p95", "p99")

_TO_MS = {"ns": 1e-6, "us": 1e-3, "µs": 1e-3, "ms": 1.0, "s": 1e3}
#: Return codes that mean success: YCSB ≥ 0.2 prints names, older versions print 0.
_OK_RETURNS = {"OK", "BATCHED_OK", "0"}
_SECRET = re.compile(r"pass(word)?|secret|token", re.I)


class YcsbParseError(ValueError):
    """The text is not a complete YCSB or go-ycsb output; the message says what is missing."""


@dataclass(frozen=True)
class YcsbResult:
    """One YCSB or go-ycsb run, parsed.

    Attributes
    ----------
    summary : dict
        JSON-serialisable per-run figures: ``file``, ``status`` (``ok`` or ``error``),
        ``error`` (the reason, or None), ``tool`` (``ycsb`` or ``go-ycsb``), ``phase``
        (``load``, ``run`` or None when the output does not say), ``runtime_s``,
        ``throughput_ops_s``, ``operations``, ``errors``, ``latency_ms``, ``returns``
        (operation → return code → count, Java YCSB only), ``intervals`` (status lines
        read), ``version`` (the ``YCSB Client`` banner's, or None), ``properties`` (go-ycsb's
        banner, passwords masked) and ``exceptions`` (distinct Java exception lines, in order).
    intervals : pandas.DataFrame
        Per-interval series, columns :data:`INTERVAL_COLUMNS`: ``t_s`` seconds since the start,
        ``operation`` (``TOTAL`` for all operations together), ``count`` operations in the
        interval, ``ops_s`` their rate, latencies in milliseconds (NaN when not printed), and
        ``source``: ``status`` (Java ``-s`` lines), ``timeseries`` (Java
        ``measurementtype=timeseries`` buckets, ``t_s`` their start) or ``interval`` (go-ycsb).
    histogram : pandas.DataFrame
        Java ``measurementtype=histogram`` buckets: ``operation``, ``bucket_ms`` (lower bound,
        int; the overflow bucket ``>N`` is ``N`` with ``overflow`` True) and ``count``.
    """

    summary: dict
    intervals: pd.DataFrame = field(repr=False)
    histogram: pd.DataFrame = field(repr=False)


def _f(s: str) -> float:
    return float(s.replace(",", ""))


def _ms(value: float, unit: str) -> float:
    # rounded so that 172 us reads 0.172 ms, not 0.17200000000000001
    return round(value * _TO_MS[unit], 9)


def _clean(v: float | None) -> int | float | None:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    return int(v) if float(v).is_integer() and abs(v) < 2**53 else float(v)


# -- Java YCSB ----------------------------------------------------------------------------------
_JAVA_LINE = re.compile(
    r"^\[(?P<sec>[A-Za-z0-9_%\-]+)\],\s*(?P<metric>[^,]+?),\s*(?P<value>\S+)\s*$"
)
_JAVA_METRIC = re.compile(
    r"^(?:(?P<kind>Average|Min|Max)Latency|(?P<pct>[\d.]+)thPercentileLatency)"
    r"\((?P<unit>ns|us|µs|ms|s)\)$"
)
_STATUS = re.compile(
    r"^(?:\d{4}-\d\d-\d\d \d\d:\d\d:\d\d[:.,]\d+ )?\s*(?P<t>\d+(?:\.\d+)?) sec: "
    r"(?P<ops>\d+) operations;(?: (?P<rate>[\d.]+|NaN|Infinity) current ops/sec;)?(?P<rest>.*)$"
)
_STATUS_OP = re.compile(r"\[(?P<op>[A-Z][A-Z0-9_\-]*)(?::| )(?P<body>[^\]]*)\]")
_STATUS_KV = re.compile(r"([A-Za-z0-9.]+(?:\(us\))?)=([\d.]+)")
_EXCEPTION = re.compile(
    r"^(?:Exception in thread \S+ )?(?:[a-z_$][\w$]*\.)+[A-Z]\w*(?:Exception|Error)\b.*$"
)


def _java(text: str) -> tuple[dict, list[dict], list[dict]]:
    overall: dict[str, float] = {}
    ops: dict[str, dict[str, Any]] = {}
    numbered: dict[str, list[tuple[str, float]]] = {}
    returns: dict[str, dict[str, int]] = {}
    status_rows: list[dict] = []
    exceptions: list[str] = []
    version = phase = None
    last_ops, last_t, status_lines = 0, 0.0, 0
    seen_status: set[str] = set()
    for raw in text.splitlines():
        line = raw.strip()
        m = _JAVA_LINE.match(line)
        if m:
            sec, metric, value = m.group("sec"), m.group("metric").strip(), m.group("value")
            if sec == "OVERALL":
                try:
                    overall[metric] = _f(value)
                except ValueError:
                    pass
                continue
            if sec.startswith("TOTAL_GC"):
                continue
            try:
                if metric.startswith("Return="):
                    returns.setdefault(sec, {})[metric[7:]] = int(_f(value))
                elif metric == "Operations":
                    ops.setdefault(sec, {})["count"] = int(_f(value))
                elif re.fullmatch(r">?\d+", metric):
                    numbered.setdefault(sec, []).append((metric, _f(value)))
                else:
                    lm = _JAVA_METRIC.match(metric)
                    if lm:
                        key = (lm.group("kind") or "").lower() or f"p{lm.group('pct')}"
                        key = {"average": "avg"}.get(key, key)
                        v = _ms(_f(value), lm.group("unit"))
                        ops.setdefault(sec, {})[key] = v
            except ValueError:
                continue
            continue
        s = _STATUS.match(line)
        if s:
            # with measurementtype=timeseries YCSB prints each status line on stdout and stderr
            if line[:1].isdigit() and line in seen_status:
                continue
            seen_status.add(line)
            status_lines += 1
            t, total = float(s.group("t")), int(s.group("ops"))
            rate = s.group("rate")
            dt = t - last_t
            status_rows.append(
                {
                    "t_s": t,
                    "operation": "TOTAL",
                    "source": "status",
                    "count": total - last_ops,
                    "ops_s": _f(rate)
                    if rate and rate[0].isdigit()
                    else ((total - last_ops) / dt if dt > 0 else math.nan),
                }
            )
            last_ops, last_t = total, t
            for om in _STATUS_OP.finditer(s.group("rest")):
                kv = {k: _f(v) for k, v in _STATUS_KV.findall(om.group("body"))}
                row = {"t_s": t, "operation": om.group("op"), "source": "status"}
                if "Count" in kv:
                    row["count"] = kv["Count"]
                    row["ops_s"] = kv["Count"] / dt if dt > 0 else math.nan
                    if kv["Count"] == 0:  # Min = Long.MAX_VALUE, Avg = NaN: no latency
                        status_rows.append(row)
                        continue
                for src, dst in (("Avg", "avg_ms"), ("AverageLatency(us)", "avg_ms"),
                                 ("Min", "min_ms"), ("Max", "max_ms"), ("90", "p90_ms"),
                                 ("95", "p95_ms"), ("99", "p99_ms")):  # fmt: skip
                    if src in kv:
                        row[dst] = _ms(kv[src], "us")
                status_rows.append(row)
            continue
        if line.startswith("YCSB Client"):
            version = line.removeprefix("YCSB Client").strip() or None
        elif (
            line.startswith("Command line:")
            or " site.ycsb.Client " in line
            or (" com.yahoo.ycsb.Client " in line)
        ):
            args = line.split()
            if "-load" in args:
                phase = "load"
            elif "-t" in args:
                phase = "run"
        elif _EXCEPTION.match(line) and line not in exceptions:
            exceptions.append(line)
    histogram: list[dict] = []
    for op, pairs in numbered.items():
        if any(k.startswith(">") for k, _ in pairs):
            for k, v in pairs:
                histogram.append(
                    {"operation": op, "bucket_ms": int(k.lstrip(">")), "overflow": k[0] == ">",
                     "count": int(v)}
                )  # fmt: skip
        else:
            status_rows += [
                {
                    "t_s": int(k) / 1e3,
                    "operation": op,
                    "avg_ms": _ms(v, "us"),
                    "source": "timeseries",
                }
                for k, v in pairs
            ]
    info = {
        "overall": overall,
        "ops": ops,
        "returns": returns,
        "version": version,
        "phase": phase,
        "status_lines": status_lines,
        "exceptions": exceptions,
    }
    return info, status_rows, histogram


def _java_summary(info: dict) -> dict:
    overall, ops, returns = info["overall"], info["ops"], info["returns"]
    if "RunTime(ms)" not in overall:
        first = f"; first exception: {info['exceptions'][0]}" if info["exceptions"] else ""
        raise YcsbParseError(
            f"truncated YCSB output: no [OVERALL] summary, the run did not finish "
            f"({info['status_lines']} status lines read){first}"
        )
    if not any("count" in v for op, v in ops.items() if op != "CLEANUP"):
        raise YcsbParseError(
            "truncated YCSB output: an [OVERALL] summary but no operation's (no "
            "'[READ], Operations, …' line)"
        )
    runtime_s = overall["RunTime(ms)"] / 1e3
    throughput = overall.get("Throughput(ops/sec)")
    operations = {op: v["count"] for op, v in ops.items() if "count" in v}
    if throughput is None and runtime_s > 0:
        throughput = sum(operations.values()) / runtime_s
    errors = {
        op: n
        for op, codes in returns.items()
        if (n := sum(c for code, c in codes.items() if code not in _OK_RETURNS))
    }
    # an operation that never completed prints Min = Long.MAX_VALUE and Avg = NaN: no figures
    latency = {
        op: {k: _clean(v.get(k)) if v.get("count") != 0 else None for k in LATENCY_KEYS}
        for op, v in ops.items()
    }
    return {
        "tool": "ycsb",
        "phase": info["phase"],
        "version": info["version"],
        "runtime_s": _clean(runtime_s),
        "throughput_ops_s": _clean(throughput),
        "operations": operations,
        "errors": errors,
        "returns": returns,
        "latency_ms": latency,
        "intervals": info["status_lines"],
        "properties": {},
        "exceptions": info["exceptions"],
        "overall_latency_ms": None,  # the HdrHistogram logs give it (ycsb.hdr)
    }


# -- go-ycsb ------------------------------------------------------------------------------------
_GO_LINE = re.compile(r"^(?P<op>[A-Z][A-Z0-9_]*)\s+-\s+Takes\(s\):\s*(?P<rest>.*)$")
_GO_FIELD = re.compile(r"(?P<name>[A-Za-z0-9.]+)(?:\((?P<unit>ns|us|µs|ms|s)\))?:\s*(?P<v>[\d.]+)")
_GO_FINISHED = re.compile(r"^Run finished, takes (?P<d>\S+)\s*$")
_GO_DURATION = re.compile(r"(?P<v>\d+(?:\.\d*)?|\.\d+)(?P<unit>h|ms|m|s|us|µs|μs|ns)")
_GO_UNIT_S = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "μs": 1e-6,
              "ns": 1e-9}  # fmt: skip
_GO_PROP = re.compile(r'^"(?P<k>[^"]*)"="(?P<v>[^"]*)"\s*$')
_GO_ERR = re.compile(r"^operation err: (?P<e>.*)$")
#: the error of a call cut short by the cancelled context (go-ycsb's answer to SIGINT)
_GO_CANCELLED = "context canceled"
_GO_LAT = {"Avg": "avg", "Min": "min", "Max": "max", "90th": "p90", "95th": "p95", "99th": "p99"}


def go_duration_s(text: str) -> float | None:
    """Seconds in a Go ``time.Duration`` as Go prints it (``1h2m3.5s``, ``10m10.49s``,
    ``850ms``, ``12.5µs``, ``0s``, a leading ``-``), or None when ``text`` is not one."""
    t = text.strip()
    sign = -1.0 if t.startswith("-") else 1.0
    t = t.lstrip("+-")
    if t == "0":
        return 0.0
    pos, total = 0, 0.0
    for m in _GO_DURATION.finditer(t):
        if m.start() != pos:
            return None
        total += float(m.group("v")) * _GO_UNIT_S[m.group("unit")]
        pos = m.end()
    return sign * total if pos == len(t) and pos > 0 else None


def _go_record(op: str, rest: str) -> dict:
    rec: dict[str, Any] = {"operation": op}
    first = rest.split(",")[0].strip()
    if re.fullmatch(r"[\d.]+", first) and first.count(".") <= 1 and first != ".":
        rec["takes_s"] = _f(first)  # a line cut short by a truncated log has none
    for m in _GO_FIELD.finditer(rest):
        name, unit, v = m.group("name"), m.group("unit"), _f(m.group("v"))
        if name == "Count":
            rec["count"] = int(v)
        elif name == "OPS":
            rec["ops_s"] = v
        elif name in _GO_LAT and unit:
            rec[_GO_LAT[name]] = _ms(v, unit)
    return rec


def _go(text: str) -> dict:
    props: dict[str, str] = {}
    blocks: list[list[dict]] = []  # interval blocks, then the final block after "Run finished"
    finished_s = None
    final: list[dict] = []
    cancelled, exceptions = 0, []
    for raw in text.splitlines():
        line = raw.strip()
        e = _GO_ERR.match(line)
        if e:
            if e.group("e").strip() == _GO_CANCELLED:
                cancelled += 1
            elif e.group("e") not in exceptions:
                exceptions.append(e.group("e"))
            continue
        m = _GO_LINE.match(line)
        if m:
            rec = _go_record(m.group("op"), m.group("rest"))
            if finished_s is not None:
                final.append(rec)
            elif not blocks or any(r["operation"] == rec["operation"] for r in blocks[-1]):
                blocks.append([rec])
            else:
                blocks[-1].append(rec)
            continue
        f = _GO_FINISHED.match(line)
        if f and go_duration_s(f.group("d")) is not None:
            finished_s = go_duration_s(f.group("d"))
            continue
        p = _GO_PROP.match(line)
        if p and finished_s is None and not blocks:
            k = p.group("k")
            props[k] = "***" if _SECRET.search(k) else p.group("v")
    return {
        "props": props, "blocks": blocks, "finished_s": finished_s, "final": final,
        "cancelled": cancelled, "exceptions": exceptions,
    }  # fmt: skip


def _go_intervals(blocks: list[list[dict]]) -> list[dict]:
    rows: list[dict] = []
    last: dict[str, tuple[float, int]] = {}
    for block in blocks:
        t = max(r.get("takes_s", math.nan) for r in block)
        has_total = any(r["operation"] == "TOTAL" for r in block)
        total_n = 0
        for r in block:
            op = r["operation"]
            t0, n0 = last.get(op, (0.0, 0))
            n = r.get("count", 0) - n0
            dt = r.get("takes_s", t) - t0
            last[op] = (r.get("takes_s", t), r.get("count", 0))
            if op != "TOTAL":
                total_n += n
            rows.append(
                {
                    "t_s": t,
                    "operation": op,
                    "source": "interval",
                    "count": n,
                    "ops_s": n / dt if dt > 0 else math.nan,
                    **{
                        f"{k}_ms": r.get(k, math.nan)
                        for k in ("avg", "min", "max", "p90", "p95", "p99")
                    },
                }
            )
        if not has_total:
            # older go-ycsb prints no TOTAL line: the interval's operations summed
            t0 = last.get("TOTAL", (0.0, 0))[0]
            rows.append(
                {"t_s": t, "operation": "TOTAL", "source": "interval", "count": total_n,
                 "ops_s": total_n / (t - t0) if t > t0 else math.nan}
            )  # fmt: skip
            last["TOTAL"] = (t, 0)
    return rows


def _go_summary(info: dict) -> dict:
    final, blocks = info["final"], info["blocks"]
    if info["finished_s"] is None or not final:
        raise YcsbParseError(
            "truncated go-ycsb output: no 'Run finished' line and final figures, the run did "
            f"not finish ({len(blocks)} interval reports read)"
        )
    operations: dict[str, int] = {}
    errors: dict[str, int] = {}
    latency: dict[str, dict] = {}
    total = None
    for r in final:
        op = r["operation"]
        if op == "TOTAL":
            total = r
            continue
        operations[op] = r.get("count", 0)
        latency[op] = {k: _clean(r.get(k)) for k in LATENCY_KEYS}
        if op.endswith("_ERROR"):
            base = op.removesuffix("_ERROR")
            errors[base] = errors.get(base, 0) + r.get("count", 0)
    runtime_s = info["finished_s"]
    if total is not None and "ops_s" in total:
        throughput = total["ops_s"]
    else:
        throughput = sum(operations.values()) / runtime_s if runtime_s > 0 else None
    props = info["props"]
    dotx = props.get("dotransactions")
    phase = {"true": "run", "false": "load"}.get(dotx or "", props.get("command") or None)
    return {
        "tool": "go-ycsb",
        "phase": phase if phase in ("load", "run") else None,
        "version": None,
        "runtime_s": _clean(runtime_s),
        "throughput_ops_s": _clean(throughput),
        "operations": operations,
        "errors": errors,
        "returns": {},
        "latency_ms": latency,
        "intervals": len(blocks),
        "properties": props,
        "exceptions": info["exceptions"],
        "cancelled": info["cancelled"],
        "overall_latency_ms": (
            {k: _clean(total.get(k)) for k in LATENCY_KEYS} if total is not None else None
        ),
    }


# -- entry points -------------------------------------------------------------------------------
def _detect(text: str) -> str | None:
    if re.search(r"^\s*[A-Z][A-Z0-9_]*\s+-\s+Takes\(s\):", text, re.M) or re.search(
        r"^\*+ properties \*+\s*$", text, re.M
    ):
        return "go-ycsb"
    if (
        re.search(r"^\[OVERALL\],", text, re.M)
        or re.search(r"^YCSB Client\b", text, re.M)
        or re.search(r"\d+ sec: \d+ operations;", text)
        or re.search(r"\b(?:site|com\.yahoo)\.ycsb\.", text)
    ):
        return "ycsb"
    return None


def _frame(rows: list[dict], columns) -> pd.DataFrame:
    df = pd.DataFrame(rows, columns=list(columns))
    for c in columns:
        if c not in ("operation", "source"):
            df[c] = pd.to_numeric(df[c], errors="coerce").astype("float64")
    return df


def parse_ycsb(text: str, file: str | None = None) -> YcsbResult:
    """YCSB or go-ycsb output (stdout and stderr, as one text) → :class:`YcsbResult`.

    Never raises on bad input: a truncated or foreign text gives ``summary["status"] ==
    "error"`` with the reason in ``summary["error"]``, and whatever could be read (the
    intervals of a run that was cut off, say) is kept.
    """
    base = {"file": file, "status": "ok", "error": None}
    tool = _detect(text)
    if tool is None:
        empty = {
            "tool": None, "phase": None, "version": None, "runtime_s": None,
            "throughput_ops_s": None, "operations": {}, "errors": {}, "returns": {},
            "latency_ms": {}, "intervals": 0, "properties": {}, "exceptions": [],
        }  # fmt: skip
        why = "empty file" if not text.strip() else "not YCSB or go-ycsb output"
        summary = {**base, "status": "error", "error": why, **empty}
        return YcsbResult(summary, _frame([], INTERVAL_COLUMNS), _histogram_frame([]))
    if tool == "ycsb":
        info, rows, hist = _java(text)
        summarise = _java_summary
    else:
        info, hist = _go(text), []
        rows = _go_intervals(info["blocks"])
        summarise = _go_summary
    try:
        summary = {**base, **summarise(info)}
    except YcsbParseError as e:
        partial = {
            "tool": tool, "phase": None, "version": info.get("version"), "runtime_s": None,
            "throughput_ops_s": None, "operations": {}, "errors": {}, "returns": {},
            "latency_ms": {}, "intervals": info.get("status_lines", len(info.get("blocks", []))),
            "properties": info.get("props", {}), "exceptions": info.get("exceptions", []),
        }  # fmt: skip
        summary = {**base, "status": "error", "error": str(e), **partial}
    return YcsbResult(summary, _frame(rows, INTERVAL_COLUMNS), _histogram_frame(hist))


def _histogram_frame(rows: list[dict]) -> pd.DataFrame:
    df = pd.DataFrame(rows, columns=["operation", "bucket_ms", "overflow", "count"])
    return df.astype({"bucket_ms": "int64", "overflow": "bool", "count": "int64"})


def parse_ycsb_file(path: str | PathLike) -> YcsbResult:
    """:func:`parse_ycsb` on a file (read as UTF-8, undecodable bytes replaced).

    Read through :func:`tibenchlib.parse.files.read_log`: a file with a line longer than
    :data:`~tibenchlib.parse.files.MAX_LINE_BYTES` (no line breaks) or larger than
    :data:`~tibenchlib.parse.files.MAX_TEXT_BYTES` is an "error" summary saying "not a YCSB
    log: …" once that much is read; a path that is not a regular file raises
    :class:`~tibenchlib.parse.files.NotALog` before it is opened.
    """
    check_regular(path, WHAT)
    try:
        text = read_log(path, WHAT)
    except NotALog as e:
        res = parse_ycsb("", file=str(path))
        return YcsbResult({**res.summary, "error": str(e)}, res.intervals, res.histogram)
    return parse_ycsb(text, file=str(path))
