"""TPC-H scaling verdicts for people: faster / slower / no detectable change per query, en and zh.

The figures come from :func:`tibenchlib.tpch.scaling.query_summary` (a paired t over the rounds
where the arms' passes alternated, Fieller and Welch where they ran as blocks; Holm across the
queries of a mode); nothing here computes a statistic. "No detectable change" is
always worded as what it is - these repeats cannot tell - and never as proof of no change.
"""

from __future__ import annotations

import pandas as pd

from ..tpch.scaling import SCALING
from . import tables as T
from . import words
from .display import details, say, show
from .tpch_queries import said_as_ratio, time_change

__all__ = [
    "SCALING_LABELS",
    "tpch_verdicts",
    "verdict_counts",
    "verdict_sentence",
    "verdict_table",
]

SCALING_LABELS = {
    "en": {
        "faster": "faster",
        "slower": "slower",
        "no detectable change": "no detectable change (not proof of none)",
    },
    "zh": {
        "faster": "更快",
        "slower": "更慢",
        "no detectable change": "未检测到变化(不等于没有变化)",
    },
}

_HEAD = {
    "en": {
        "query": "Query",
        "mode": "Mode",
        "arm": "Arm",
        "imp": "Time saved (%) [95% CI]",
        "ratio": "Time vs base (×) [95% CI]",
        "p": "p (Holm, across queries)",
        "verdict": "Verdict",
    },
    "zh": {
        "query": "查询",
        "mode": "模式",
        "arm": "组",
        "imp": "耗时减少 (%) [95% 置信区间]",
        "ratio": "耗时相对基准 (倍) [95% 置信区间]",
        "p": "p 值(Holm,跨查询校正)",
        "verdict": "结论",
    },
}


def verdict_counts(summary: pd.DataFrame) -> pd.DataFrame:
    """Per mode and arm: how many queries are faster, slower, with no detectable change."""

    d = summary[summary["scaling"].notna()]
    if not len(d):
        return pd.DataFrame(columns=["mode", "arm", *SCALING])
    out = d.groupby(["mode", "arm"], sort=False)["scaling"].value_counts().unstack(fill_value=0)
    return out.reindex(columns=list(SCALING), fill_value=0).reset_index()


def verdict_sentence(summary: pd.DataFrame, base: str, lang: str = "en") -> str:
    """One sentence per mode and arm: the three counts, Holm named, the caveat on "no change"."""
    lang = words.check_lang(lang)
    counts = verdict_counts(summary)
    if not len(counts):
        return words.say("scaling_none", lang)
    parts = [
        words.say("scaling_counts", lang, mode=r.mode, arm=r.arm, base=base, f=int(r[2]),
                  s=int(r[3]), u=int(r[4]))
        for r in counts.itertuples(index=False)
    ]  # fmt: skip
    sep = ";" if lang == "zh" else "; "  # the full-width semicolon of Chinese prose
    return sep.join(parts) + words.say("scaling_caveat", lang)


def verdict_table(summary: pd.DataFrame, lang: str = "en", only=None) -> pd.DataFrame:
    """Compared queries as text: query, mode, arm, time saved with its interval, Holm p, verdict.

    ``only``: keep the rows whose verdict is in this collection (e.g. ``{"slower"}``)."""
    lang = words.check_lang(lang)
    H, V = _HEAD[lang], SCALING_LABELS[lang]
    d = summary[summary["scaling"].notna()]
    if only is not None:
        d = d[d["scaling"].isin(list(only))]
    d = d.reset_index(drop=True)
    # the base arm's rows (no verdict of their own) give a change not resolved its reason
    base_rows = summary[summary["scaling"].isna()]
    as_ratio = said_as_ratio(d, None)
    tc = [time_change(r, _base_row(base_rows, r), None, lang, as_ratio) for r in d.itertuples()]
    out = pd.DataFrame(
        {
            H["query"]: [f"Q{int(q)}" for q in d["query"]],
            H["mode"]: d["mode"],
            H["arm"]: d["arm"],
            H["ratio" if as_ratio else "imp"]: [c.cell for c in tc],
            H["p"]: ["<0.001" if p < 0.001 else f"{p:.3f}" for p in d["p_adjusted"].astype(float)],
            H["verdict"]: [V[v] for v in d["scaling"]],
        }
    )
    if any(c.note for c in tc):
        out[T.labels(lang)["notes"]] = [c.note for c in tc]
    return out


def _base_row(base_rows: pd.DataFrame, r):
    """The base arm's row of ``r``'s query and mode (an itertuples row), None if absent."""
    m = base_rows[(base_rows["mode"] == r.mode) & (base_rows["query"] == r.query)]
    return next(m.itertuples(), None)


def tpch_verdicts(summary: pd.DataFrame, base: str, lang: str = "en") -> None:
    """Notebook section: the counts in a sentence, the significantly slower queries in a table
    (never hidden among "did not scale"), every compared query collapsed."""

    lang = words.check_lang(lang)
    say(verdict_sentence(summary, base, lang))
    slower = verdict_table(summary, lang, only={"slower"})
    if len(slower):
        say(words.say("scaling_slower", lang))
        show(slower, lang)
    table = verdict_table(summary, lang)
    details(words.say("scaling_every", lang, n=len(table)), table)
