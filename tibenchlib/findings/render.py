"""Findings as sentences, in English or Chinese, through :mod:`tibenchlib.report.words`.

Each finding's ``key`` names a sentence (``f_…``) and its ``reason`` a clause (``r_…``); the
figures are formatted here the way the report's tables show them (``+4.9% [+1.6, +8.4]``,
thousands separators, p with two significant digits). A finding whose estimate lies outside its
own interval is never rendered as a claim: it reads "withheld" with the reason.
"""

from __future__ import annotations

import re

from .. import terminal
from ..report import tables as T
from ..report import words as W
from .record import Caveat, Figure, Finding

__all__ = [
    "caveat_marks",
    "caveat_notes",
    "figure_text",
    "impossible",
    "marked",
    "render",
    "render_all",
    "terminal_text",
]

#: How a finding points to its numbered notes (one or several), and how a note is introduced.
NOTE_MARK = {"en": (" [note {n}]", " [notes {n}]"), "zh": ("［注 {n}］", "［注 {n}］")}
NOTE_HEAD = {"en": "note {n}: ", "zh": "注 {n}："}

_ONE = re.compile(r"\b(1) (thread|stream)s\b")

#: DM's units in the seeds' words (report 003 says 导出/导入/同步)
_DM_UNIT = {"en": {}, "zh": {"dump": "导出", "load": "导入", "sync": "同步"}}
#: TPC-H's modes as a Chinese reader knows them (单流 / 多流并发), the specification's names beside
_MODE = {"en": {}, "zh": {"power": "单流 (Power)", "throughput": "多流并发 (Throughput)"}}
#: units said in the reader's language (the seeds' 行/秒)
_UNIT = {"en": {}, "zh": {"rows/s": "行/秒"}}
#: which way a signed figure points, for a sentence that says it in words (zh: 比其余各轮高 / 低)
_HIGHER_LOWER = {"en": {False: "higher", True: "lower"}, "zh": {False: "高", True: "低"}}

_RESOURCE = {
    "en": {"server": "server", "client": "client", "host": "host"},
    "zh": {"server": "服务端", "client": "客户端", "host": "主机"},
}


def _pct(x: float) -> str:
    return f"{x:+,.0f}" if abs(x) >= 10 else f"{x:+,.1f}"


def _pct_end(x: float) -> str:
    """An interval's end as :func:`_pct`, except that an end short of ±100% never reads as
    ±100 (−99.6% of a throughput is not "all of it", nor a time saved of 99.6% "all of it"):
    one decimal, at most ±99.9."""
    if -100 < x < 100 and abs(round(x)) >= 100:
        return f"{min(max(x, -99.9), 99.9):+.1f}"
    return _pct(x)


def _unsigned(x: float) -> str:
    return _pct(x).lstrip("+-")


def figure_text(fig: Figure | None, lang: str = "en", *, unsigned: bool = False) -> str:
    """``+52% [+41, +64]`` for a change, ``83% [59, 117]`` for a share, ``1,234 [1,200, 1,260]
    TPS`` otherwise; the interval is the 95% one.

    ``unsigned``: a change said after a verb that gives its direction (``TPS 下降 65% [40, 80]``):
    the sizes without sign, low to high, when estimate and interval lie on one side of 0 (else
    the signed figure, which the verb cannot summarise)."""
    if fig is None or fig.estimate is None:
        return ""
    e, lo, hi = fig.estimate, fig.ci_low, fig.ci_high
    if fig.unit in ("%", "% saved"):
        one_side = fig.has_interval and (lo > 0 if e > 0 else hi < 0) or not fig.has_interval
        if unsigned and one_side and e != 0:
            s = _unsigned(e) + "%"
            if fig.unbounded:
                return s + W.say("fig_unbounded", lang)
            if not fig.has_interval:
                return s
            a, b = sorted((abs(lo), abs(hi)))
            return s + f" [{_pct_end(a).lstrip('+')}, {_pct_end(b).lstrip('+')}]"
        s = _pct(e) + "%"
        if fig.unbounded:
            return s + W.say("fig_unbounded", lang)
        return s + (f" [{_pct_end(lo)}, {_pct_end(hi)}]" if fig.has_interval else "")
    if fig.unit == "% CPU":
        s = f"{e:.0f}%"
        return s + (f" [{lo:.0f}, {hi:.0f}]" if fig.has_interval else "")
    s = T.fmt_ci(e, lo, hi) if fig.has_interval else T.fmt_num(e)
    return f"{s} {_UNIT[lang].get(fig.unit, fig.unit)}".strip()


#: rounds beyond which "about N rounds" stops being advice: the noise must come down first
MAX_ROUNDS = 50


def _value(k: str, v, lang: str):
    if v is None:
        return "—"
    if isinstance(v, dict):  # a value said per language (a workload's name)
        return v.get(lang, v.get("en", "—"))
    if isinstance(v, list):
        return ("、" if lang == "zh" else ", ").join(str(x) for x in v)
    if k == "need":
        if v > MAX_ROUNDS:
            return f"more than {MAX_ROUNDS}" if lang == "en" else f" {MAX_ROUNDS} 轮以上"
        return f"about {v}" if lang == "en" else f"约 {v} 轮"
    if k == "p":
        return T.fmt_p(v)
    if k == "delta":
        return f"{v:g}"
    if k == "cv":
        return f"{v:.0f}%"
    if k == "unit":
        return _DM_UNIT[lang].get(str(v), str(v))
    if k == "mode":
        return _MODE[lang].get(str(v), str(v))
    if k == "resource":
        return _RESOURCE[lang].get(str(v), str(v))
    if isinstance(v, float):
        return T.fmt_num(v)
    return v


def impossible(fig: Figure | None) -> bool:
    """A figure that cannot be: outside its own interval, or a time saved of 100% or more (a
    positive time cannot shrink by all of itself)."""
    if fig is None:
        return False
    if not fig.coherent:
        return True
    if fig.unit == "% saved":
        return any(x is not None and x >= 100 for x in (fig.estimate, fig.ci_high))
    return False


def render(f: Finding, lang: str = "en") -> str:
    """One finding as one sentence in ``lang``; an impossible figure is withheld."""
    vals = {k: _value(k, v, lang) for k, v in f.values.items()}
    vals.setdefault("unresolved", "")  # a TPC-H finding stored before it carried the clause
    if impossible(f.figure):
        return W.say("f_withheld", lang, topic=f.topic, fig=figure_text(f.figure, lang))
    vals["fig"] = figure_text(f.figure, lang)
    # Chinese says the direction with its verb (TPS 提升 39%, 下降 65%): the figure without sign
    if "unit" in f.values and "workload" in f.values:
        # a unit of migration and what it moved: the seeds' 全量导出 / 全量导入 / 增量同步
        # (oltp_insert), the mode before the unit
        unit, wl = vals["unit"], f.values["workload"]
        if lang == "zh":
            vals["dm_what"] = f"全量{unit}" if wl == "full" else f"增量{unit}（{wl}）"
        else:
            vals["dm_what"] = f"{unit} ({wl})"
    vals["fig_abs"] = figure_text(f.figure, lang, unsigned=True)
    vals["higher_lower"] = _HIGHER_LOWER[lang][
        f.figure is not None and f.figure.estimate is not None and f.figure.estimate < 0
    ]
    vals["n_fig"] = f.figure.n if f.figure is not None and f.figure.n is not None else "—"
    text = W.say(f.key, lang, **vals)
    if f.reason:
        end = text[-1] if text[-1] in ".。" else ""
        text = W.say(
            "f_with_reason",
            lang,
            text=text.rstrip(".。"),
            reason=W.say(f"r_{f.reason}", lang, **vals),
            end=end,
        )
    if lang == "en":
        text = _ONE.sub(r"\1 \2", text)
    return text


def render_all(findings: list[Finding], lang: str = "en") -> list[tuple[Finding, str]]:
    """Every finding with its sentence, in order."""
    return [(f, render(f, lang)) for f in findings]


def _same(c: Caveat) -> tuple:
    return (c.key, c.text.get("en"), c.text.get("zh"))


def caveat_notes(findings: list[Finding]) -> list[Caveat]:
    """Every distinct caveat of ``findings`` once, in the order first met: the numbered notes
    a document lists (note 1 is ``[0]``); two findings with the same caveat share its number."""
    out: dict[tuple, Caveat] = {}
    for f in findings:
        for c in f.caveats:
            out.setdefault(_same(c), c)
    return list(out.values())


def caveat_marks(f: Finding, notes: list[Caveat]) -> list[int]:
    """The numbers (from 1) in ``notes`` of ``f``'s caveats."""
    index = {_same(c): i for i, c in enumerate(notes, 1)}
    return sorted(index[_same(c)] for c in f.caveats if _same(c) in index)


def marked(f: Finding, notes: list[Caveat], lang: str = "en") -> str:
    """The finding's sentence followed by the numbers of its notes (``[note 1]``)."""
    marks = caveat_marks(f, notes)
    if not marks:
        return render(f, lang)
    one, several = NOTE_MARK[lang]
    sep = "、" if lang == "zh" else ", "
    mark = (one if len(marks) == 1 else several).format(n=sep.join(map(str, marks)))
    return render(f, lang) + mark


def terminal_text(
    found: dict[str, list[Finding]],
    titles: dict[str, str],
    lang: str = "en",
    cols: int | None = None,
) -> str:
    """Every phase's findings for a terminal: its title, one wrapped paragraph per finding
    (with the numbers of its notes), then the notes first met in that phase; every line at most
    ``cols`` display columns (default :func:`tibenchlib.terminal.width`)."""
    notes = caveat_notes([f for fs in found.values() for f in fs])
    shown: set[int] = set()
    blocks: list[str] = []
    for phase, fs in found.items():
        if not fs:
            continue
        lines = [titles.get(phase, phase)]
        lines += [terminal.wrap(marked(f, notes, lang), cols, "- ", "  ") for f in fs]
        for i in sorted({i for f in fs for i in caveat_marks(f, notes)} - shown):
            head = NOTE_HEAD[lang].format(n=i)
            lines.append(terminal.wrap(head + notes[i - 1].say(lang), cols, "  ", "    "))
            shown.add(i)
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)
