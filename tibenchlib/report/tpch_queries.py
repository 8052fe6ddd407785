"""A TPC-H query's time against the base arm's, as a person reads it (en and zh), and the
report's per-query table built on it.

The figures are :func:`tibenchlib.tpch.scaling.query_summary`'s: the time ratio arm / base with
its 95% interval (delta method on the log scale, so always positive), and the time saved
``1 - ratio`` in percent. Nothing here computes a statistic; this module only chooses how a row
is said:

- a change the repeats did not size: the interval holds 1 (no change shown) and its ends lie
  more than :data:`UNRESOLVED_SPAN` apart. The row reads "not resolved", and its notes give the
  reason: the interval, and the arm whose own time varied the most over its repeats. Its
  verdict stays "no detectable change", as the findings count it; only the unreadable figure
  (a time saved of "-2,869.8% [-116,677.5, +24.5]") is replaced;
- otherwise, while every compared row's interval stays within twice the base time, the time
  saved in percent, ``-35.2% [-80.1, +12.3]``, as every other change in the report;
- once one row's interval reaches beyond twice the base time, a percentage no longer reads
  ("-250%"), and the whole table says each time as a multiple of the base time,
  ``3.00× [2.49, 3.61]``, under a header that says so: one form per column.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from . import words
from .tables import (
    WITHHELD,
    _eff,
    _int,
    _saved,
    fmt_ci,
    fmt_notes,
    fmt_num,
    fmt_pct_ci,
    fmt_pos,
    impossible_saved,
    labels,
    saved_verdict,
)

__all__ = [
    "UNRESOLVED_SPAN",
    "TimeChange",
    "resolved",
    "said_as_ratio",
    "time_change",
    "time_changes",
    "tpch_overall_table",
    "tpch_query_table",
]

#: An interval whose ends lie further apart than this factor, around a ratio of 1, does not
#: size a change: it allows "ten times faster" and "as fast" alike, or worse.
UNRESOLVED_SPAN = 10.0
#: Beyond this multiple of the base time a time saved in percent stops reading ("-250%"): a
#: table with such a row says every time as a multiple of the base time.
RATIO_SAID_ABOVE = 2.0


@dataclass(frozen=True)
class TimeChange:
    """One row's time change as text: the cell, the speed-up cell, a note ("" when none), and
    whether the change is resolved (False: "not resolved", its reason in ``note``)."""

    cell: str
    speedup: str
    note: str
    resolved: bool


def _num(x) -> float | None:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _ratio(x: float) -> str:
    """A ratio of times with two significant figures at least: 0.76, 3.1, 29.7, 1,168."""
    return fmt_num(x, 2 if x < 10 else 1 if x < 100 else 0)


def _speedup(r) -> str:
    s, lo, hi = _num(r.speedup), _num(r.speedup_ci_low), _num(r.speedup_ci_high)
    if s is None:
        return "n/a"
    text = fmt_num(s, 2)
    return text + (f" [{fmt_num(lo, 2)}, {fmt_num(hi, 2)}]" if lo is not None and hi is not None
                   else "")  # fmt: skip


def _widest_arm(rows: list) -> tuple | None:
    """Of the compared arms' own rows, the one whose time interval spans the widest factor:
    ``(arm, mean_s, ci_low_s, ci_high_s, n)``, None without intervals."""
    best, span = None, 0.0
    for r in rows:
        m, lo, hi = _num(r.mean_s), _num(r.ci_low_s), _num(r.ci_high_s)
        if m is None or lo is None or hi is None or lo <= 0:
            continue
        if hi / lo > span:
            best, span = (str(r.arm), m, lo, hi, int(r.n)), hi / lo
    return best


def time_change(
    r, base_row=None, base: str | None = None, lang: str = "en", ratio: bool = False
) -> TimeChange:
    """Row ``r`` of :func:`~tibenchlib.tpch.scaling.query_summary` (an itertuples row) said
    against the base arm; ``base_row`` is the base arm's row of the same query and mode (for
    the reason of a change not resolved); ``ratio``: as a multiple of the base time instead of
    a time saved in percent."""
    lang = words.check_lang(lang)
    if base is not None and str(r.arm) == str(base):
        return TimeChange(words.say("reference", lang), _speedup(r), "", True)
    est, lo_pct, hi_pct = r.improvement_pct, r.ci_low_pct, r.ci_high_pct
    if impossible_saved(est, hi_pct):
        return TimeChange(WITHHELD, _speedup(r), "", True)
    q, lo, hi = _num(r.ratio), _num(r.ratio_ci_low), _num(r.ratio_ci_high)
    if q is None or lo is None or hi is None or lo <= 0:
        return TimeChange(fmt_pct_ci(est, lo_pct, hi_pct, lang=lang, n=r.n), _speedup(r), "", True)
    if not resolved(r):
        why = words.say("tc_span", lang, lo=_ratio(lo), hi=_ratio(hi))
        widest = _widest_arm([x for x in (r, base_row) if x is not None])
        if widest is not None:
            arm, m, tlo, thi, n = widest
            why += words.say(
                "tc_varies", lang, arm=arm, n=n, t=fmt_num(m), lo=fmt_pos(tlo), hi=fmt_pos(thi)
            )
        nr = words.say("tc_unresolved", lang)
        return TimeChange(nr, nr, why, False)
    if ratio:
        cell = words.say("tc_ratio", lang, r=_ratio(q), lo=_ratio(lo), hi=_ratio(hi))
        return TimeChange(cell, _speedup(r), "", True)
    return TimeChange(fmt_pct_ci(est, lo_pct, hi_pct, lang=lang, n=r.n), _speedup(r), "", True)


def resolved(r) -> bool:
    """False when the row's time-ratio interval holds 1 and spans more than
    :data:`UNRESOLVED_SPAN` (the repeats did not size the change); True otherwise."""
    lo, hi = _num(getattr(r, "ratio_ci_low", None)), _num(getattr(r, "ratio_ci_high", None))
    return not (lo is not None and hi is not None and 0 < lo <= 1.0 <= hi
                and hi / lo > UNRESOLVED_SPAN)  # fmt: skip


def said_as_ratio(summary: pd.DataFrame, base: str | None) -> bool:
    """Whether the table says times as multiples of the base time: some resolved compared
    row's interval reaches beyond :data:`RATIO_SAID_ABOVE`."""
    d = summary if base is None else summary[summary["arm"].astype(str) != str(base)]
    return any(
        resolved(r) and (_num(r.ratio_ci_high) or 0) > RATIO_SAID_ABOVE for r in d.itertuples()
    )


def time_changes(
    summary: pd.DataFrame, base: str | None, lang: str = "en"
) -> tuple[list[TimeChange], bool]:
    """:func:`time_change` of every row of ``summary``, in its order, and whether they are
    said as multiples of the base time (:func:`said_as_ratio`)."""
    d = summary.reset_index(drop=True)
    as_ratio = said_as_ratio(d, base)
    base_rows = {}
    if base is not None and len(d):
        for r in d[d["arm"].astype(str) == str(base)].itertuples():
            base_rows[(r.mode, int(r.query))] = r
    return [
        time_change(r, base_rows.get((r.mode, int(r.query))), base, lang, as_ratio)
        for r in d.itertuples()
    ], as_ratio


def tpch_query_table(
    summary: pd.DataFrame, lang: str = "en", base: str | None = None
) -> pd.DataFrame:
    """Rows of :func:`tibenchlib.tpch.scaling.query_summary`: one line per query, mode and arm
    (the ``base`` arm's rows are the reference); each time change said by :func:`time_change`,
    the reason of one not resolved in the notes."""
    L = labels(lang)
    if not len(summary):
        return pd.DataFrame()
    d = summary.reset_index(drop=True)
    tc, as_ratio = time_changes(d, base, lang)
    sep = "\uff1b" if lang == "zh" else "; "
    return pd.DataFrame(
        {
            L["query"]: [f"Q{int(q)}" for q in d["query"]],
            L["mode"]: d["mode"],
            L["arm"]: d["arm"],
            L["n"]: [_int(x) for x in d["n"]],
            L["mean_s"]: [
                fmt_ci(*r) for r in zip(d["mean_s"], d["ci_low_s"], d["ci_high_s"], strict=True)
            ],
            L["t_ratio" if as_ratio else "t_imp"]: [c.cell for c in tc],
            L["speedup"]: [c.speedup for c in tc],
            L["notes"]: [
                sep.join(x for x in (c.note, fmt_notes(w, lang)) if x)
                for c, w in zip(tc, d["warnings"], strict=True)
            ],
        }
    )


def _overall_as_ratio(d: pd.DataFrame, base: str | None) -> bool:
    """Whether some compared arm's overall time reaches beyond :data:`RATIO_SAID_ABOVE` times
    the base time (its time saved below -100%): then the column says multiples."""
    rows = d if base is None else d[d["arm"].astype(str) != str(base)]
    low = pd.to_numeric(rows["ci_low_pct"], errors="coerce")
    return bool((1 - low / 100 > RATIO_SAID_ABOVE).any())


def _overall_change(r, base: str | None, lang: str, as_ratio: bool) -> str:
    """An overall row's time change: the time saved in percent, or (``as_ratio``) the time as
    a multiple of the base time, ``1 - saved / 100`` with its interval's ends swapped."""
    e, lo, hi = _num(r.improvement_pct), _num(r.ci_low_pct), _num(r.ci_high_pct)
    if (
        not as_ratio
        or (base is not None and str(r.arm) == str(base))
        or impossible_saved(e, hi)
        or None in (e, lo, hi)
    ):
        return _saved(r, base, lang)
    return words.say(
        "tc_ratio", lang, r=_ratio(1 - e / 100), lo=_ratio(1 - hi / 100), hi=_ratio(1 - lo / 100)
    )


def tpch_overall_table(
    overall: pd.DataFrame, lang: str = "en", base: str | None = None
) -> pd.DataFrame:
    """Rows of :func:`tibenchlib.tpch.scaling.overall_summary`: every arm over all queries;
    the ``base`` arm's rows read "reference" where the others read their time saved, or, as in
    the per-query table, every time as a multiple of the base time once one row's interval
    reaches beyond :data:`RATIO_SAID_ABOVE` times it (a time saved of "-68.5% [-107.7, -36.6]"
    reads "1.69× [1.37, 2.08]")."""
    L = labels(lang)
    if not len(overall):
        return pd.DataFrame()
    d = overall.reset_index(drop=True)
    as_ratio = _overall_as_ratio(d, base)
    return pd.DataFrame(
        {
            L["mode"]: d["mode"],
            L["arm"]: d["arm"],
            L["queries"]: [_int(x) for x in d["n_queries"]],
            L["geomean"]: [
                fmt_ci(*r)
                for r in zip(
                    d["geomean_s"], d["geomean_ci_low_s"], d["geomean_ci_high_s"], strict=True
                )
            ],
            L["t_ratio" if as_ratio else "t_imp"]: [
                _overall_change(r, base, lang, as_ratio) for r in d.itertuples()
            ],
            L["speedup"]: [
                fmt_ci(*r, digits=2)
                for r in zip(d["speedup"], d["speedup_ci_low"], d["speedup_ci_high"], strict=True)
            ],
            L["efficiency"]: [_eff(x) for x in d["efficiency"]],
            # the overall time saved claims what its interval supports, as each query's does
            L["verdict"]: [
                WITHHELD
                if (base is not None and str(r.arm) == str(base))
                or impossible_saved(r.improvement_pct, r.ci_high_pct)
                else saved_verdict(r.ci_low_pct, r.ci_high_pct)
                for r in d.itertuples()
            ],
            L["notes"]: [fmt_notes(w, lang) for w in d.get("warnings", [None] * len(d))],
        }
    )
