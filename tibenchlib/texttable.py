"""Plain-text tables for the terminal whose columns line up in Chinese too.

A terminal draws East Asian wide and fullwidth characters (``提升``, ``（``) two cells wide and
combining marks zero cells wide, so padding by ``len()`` misaligns every column after a Chinese
header. Widths here are display widths (``unicodedata.east_asian_width``).
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Sequence
from typing import Any

import pandas as pd


def display_width(text: str) -> int:
    """Terminal cells ``text`` occupies: 2 for wide/fullwidth characters, 0 for combining marks."""
    w = 0
    for ch in text:
        if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
            continue
        w += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return w


def cell_text(v: Any, digits: int = 4) -> str:
    """A value as shown in a cell: empty for missing, floats to ``digits`` significant digits."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        if abs(v) >= 1e15:
            return f"{v:.{digits}g}"
        if v.is_integer():
            return f"{v:,.0f}" if abs(v) >= 10_000 else f"{v:.0f}"
        # no exponent for the figures people read: 12,610.4 TPS, 0.58 ms
        return f"{v:,.1f}" if abs(v) >= 1000 else f"{v:.{digits}g}"
    if isinstance(v, list | tuple):
        return "; ".join(cell_text(x, digits) for x in v)
    return " ".join(str(v).split())  # one line per row: newlines and tabs become spaces


def _pad(text: str, width: int, right: bool) -> str:
    fill = " " * (width - display_width(text))
    return fill + text if right else text + fill


def format_table(
    columns: Sequence[str], rows: Sequence[Sequence[Any]], *, max_width: int = 60
) -> str:
    """Rows under a header, columns separated by two spaces, numbers right-aligned.

    Cells longer than ``max_width`` display cells are cut with ``…``.
    """
    texts = [[cell_text(v) for v in r] for r in rows]
    texts = [[_cut(t, max_width) for t in r] for r in texts]
    numeric = [bool(rows) and all(_numeric(r[i]) for r in rows) for i in range(len(columns))]
    widths = [
        max([display_width(str(c))] + [display_width(r[i]) for r in texts])
        for i, c in enumerate(columns)
    ]
    lines = [
        "  ".join(_pad(str(c), w, n) for c, w, n in zip(columns, widths, numeric, strict=True)),
        "  ".join("-" * w for w in widths),
    ]
    for r in texts:
        lines.append("  ".join(_pad(t, w, n) for t, w, n in zip(r, widths, numeric, strict=True)))
    return "\n".join(line.rstrip() for line in lines)


_NUMBER = re.compile(r"^[+-]?(\d[\d,]*)?\.?\d+(e[+-]?\d+)?%?$")


def _numeric(v: Any) -> bool:
    """Numbers, and text cells that are numbers ("1,234.5", "+4.9%"), align right."""
    if v is None or isinstance(v, int | float):
        return True
    return isinstance(v, str) and (v == "" or bool(_NUMBER.match(v.strip())))


def _cut(text: str, max_width: int) -> str:
    if display_width(text) <= max_width:
        return text
    out, w = "", 0
    for ch in text:
        cw = display_width(ch)
        if w + cw > max_width - 1:
            break
        out, w = out + ch, w + cw
    return out + "…"


def format_frame(df: pd.DataFrame, *, max_width: int = 60) -> str:
    """:func:`format_table` of a DataFrame (index dropped); a sentence when it has no rows."""
    if not len(df):
        return "(no rows)"
    rows = [[None if _missing(v) else v for v in r] for r in df.itertuples(index=False)]
    rows = [[v.item() if hasattr(v, "item") else v for v in r] for r in rows]
    return format_table([str(c) for c in df.columns], rows, max_width=max_width)


def _missing(v: Any) -> bool:
    try:
        return v is None or bool(pd.isna(v))
    except (TypeError, ValueError):  # lists and arrays are values, not missing
        return False
