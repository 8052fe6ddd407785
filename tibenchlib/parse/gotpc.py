"""Parse the text output of ``go-tpc tpch run`` / ``tiup bench tpch run``.

go-tpc prints, in its default plain style (``pkg/measurement`` and ``tpch/workload.go``):

- ``[Current] Q1: 2.39s`` while running: the mean time of the query's executions that finished
  during the last reporting interval, two decimals;
- ``Finished`` when the run ends, then ``[Summary] Q1: 7.62s``: the mean over all executions,
  the query names sorted as strings (``Q1, Q10, Q11, … Q2, Q20 …``);
- ``Got signal [terminated] to exit.`` when it was stopped;
- a failed execution is measured under ``<query>_ERR`` (e.g. ``[Summary] Q5_ERR: 0.01s``), which
  this parser reports with ``status`` ``error``.

Other lines (server version, warnings, errors, tiup banners) are ignored. The ``--output
table`` and ``--output json`` styles are not parsed: no real sample of them was available.
"""

from __future__ import annotations

import re

import pandas as pd

__all__ = ["parse_tpch_output", "tpch_summary"]

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
