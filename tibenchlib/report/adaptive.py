"""Adaptive repeats for people: why each cell stopped, in a table and a sentence (en/zh).

The figures come from the compare phase's rows (:func:`tibenchlib.adaptive.adaptive_comparison`:
``n_rounds``, ``rounds_needed``, ``stop_reason``, ``halfwidth_pct``, ``ci_level``); nothing here
computes a statistic.
"""

from __future__ import annotations

import pandas as pd

from ..adaptive import describe_rule
from ..store import Store
from ..sweep import compared, plan
from . import tables as T
from . import words
from .display import say, show

__all__ = ["LABELS", "REASONS", "reason_text", "stopping_table", "stopping_summary", "stopping"]

LABELS = {
    "en": {
        "pair": "Comparison",
        "rounds": "Rounds run",
        "needed": "Rounds needed (estimate)",
        "half": "Half-width (%)",
        "level": "Level",
        "why": "Why it stopped",
    },
    "zh": {
        "pair": "对比",
        "rounds": "已测轮次",
        "needed": "所需轮次（估计）",
        "half": "区间半宽 (%)",
        "level": "置信水平",
        "why": "停止原因",
    },
}

#: ``stop_reason`` in words; ``{target}`` and ``{delta}`` are the study's percentages.
REASONS = {
    "en": {
        "stage 1": "first {min} rounds not complete yet",
        "running": "still running: about {needed} rounds needed",
        "target width": "interval within ±{target}%",
        "above margin": "stopped early: whole interval above +{delta}%",
        "below margin": "stopped early: whole interval below −{delta}%",
        "within margin": "stopped early: whole interval within ±{delta}%",
        "max rounds": "reached {max} rounds (needed more for ±{target}%)",
    },
    "zh": {
        "stage 1": "前 {min} 轮尚未完成",
        "running": "仍在进行：估计需要 {needed} 轮",
        "target width": "区间已在 ±{target}% 以内",
        "above margin": "提前停止:整个区间高于 +{delta}%",
        "below margin": "提前停止:整个区间低于 −{delta}%",
        "within margin": "提前停止:整个区间在 ±{delta}% 以内",
        "max rounds": "已达上限 {max} 轮 (要达到 ±{target}% 还需更多轮次)",
    },
}


def _count(x) -> str:
    return str(int(x)) if T._ok(x) else "n/a"


def reason_text(reason: str, study, lang: str = "en", needed=None) -> str:
    """One stopping reason in words, with the study's figures filled in."""
    rep = study.adaptive
    words = REASONS[lang].get(str(reason))
    if words is None:
        return str(reason)
    return words.format(
        min=rep.min,
        max=rep.max,
        target=f"{rep.target_halfwidth_pct:g}",
        delta=f"{study.compare.delta_pct:g}",
        needed=_count(needed),
    )


def stopping_table(cmp: pd.DataFrame, study, lang: str = "en") -> pd.DataFrame:
    """One row per compared pair x workload x threads: rounds run, rounds estimated as needed,
    the interval's half-width and level, and why the cell stopped."""
    L, A = T.labels(lang), LABELS[lang]
    if not len(cmp) or "stop_reason" not in cmp:
        return pd.DataFrame()
    return pd.DataFrame(
        {
            A["pair"]: [
                f"{b} / {a}" for a, b in zip(cmp["baseline"], cmp["candidate"], strict=True)
            ],
            L["workload"]: cmp["workload"].to_numpy(),
            L["threads"]: [T._int(x) for x in cmp["threads"]],
            A["rounds"]: [_count(x) for x in cmp["n_rounds"]],
            A["needed"]: [_count(x) for x in cmp["rounds_needed"]],
            A["half"]: [T.fmt_num(x, 2) for x in cmp["halfwidth_pct"]],
            A["level"]: [f"{x:.0%}" if T._ok(x) else "n/a" for x in cmp["ci_level"]],
            A["why"]: [
                reason_text(r, study, lang, needed=n)
                for r, n in zip(cmp["stop_reason"], cmp["rounds_needed"], strict=True)
            ],
        }
    )


def stopping_summary(cmp: pd.DataFrame, study, runs_made: int, lang: str = "en") -> str:
    """The rule and what it did, in one paragraph: cells by reason, runs made of the most the
    rule allowed."""

    rep = study.adaptive
    cells = len(cmp)
    most = len(compared(plan(study)))
    counts = cmp["stop_reason"].value_counts() if cells else pd.Series(dtype=int)
    if lang == "zh":
        parts = "、".join(f"{n} 个{reason_text(r, study, lang)}" for r, n in counts.items())
        return (
            f"自适应轮次：每个测试场景先测 {rep.min} 轮，之后每测一轮检视一次，最多 {rep.max} 轮。"
            f"每次检视的区间是已测各轮的轮内配对 t 区间，临界值按 O'Brien–Fleming 型 α 消耗函数"
            f"分配到各次检视（成组序贯设计），因此无论在哪一轮停止，区间的覆盖率都不低于 95%。"
            f"区间整体高于、低于或落在 ±{study.compare.delta_pct:g}% 以内，或在 {rep.max} 轮内"
            f"难以得出结论时提前停止。{cells} 个测试场景中：{parts}。共运行 {runs_made} 次，"
            f"固定 {rep.max} 轮需要 {most} 次。"
        )
    parts = "; ".join(f"{n} {reason_text(r, study, lang)}" for r, n in counts.items())
    return (
        f"Adaptive repeats: {describe_rule(study)}. Each look's interval is the paired t interval "
        f"of the rounds so far, with critical values that spend the 5% over all looks "
        f"(group-sequential, O'Brien–Fleming type), so the interval where a cell stops covers "
        f"at least 95% whatever made it stop. Of "
        f"{cells} cells: {parts}. {runs_made} runs made, against {most} for a fixed "
        f"{rep.max} rounds."
    )


def stopping(session, cmp: pd.DataFrame) -> pd.DataFrame:
    """The notebook's section: the sentence, then the table of stopping decisions."""

    study, lang = session.study, session.lang
    if study.adaptive is None:
        say(words.say("adaptive_fixed", lang, n=study.repeats))
        return pd.DataFrame()
    runs = Store.for_study(study).runs(study.study, phase="sweep")
    say(stopping_summary(cmp, study, len(runs), lang))
    table = stopping_table(cmp, study, lang)
    show(table, lang)
    return table
