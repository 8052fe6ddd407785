"""Client hosts' contributions for people: for a phase whose runs drove the database from several
hosts, each host's throughput, its share of the run's throughput and its CPU demand, with 95%
intervals, beside the merged figure of the cell (notebook 02 and the report's sweep section).

The figures are :func:`tibenchlib.hosts.tables.contributions` (each a mean over the repeated
runs with a Student t 95% interval); the merged TPS is the sweep table's
(:func:`tibenchlib.sweep.sweep_table`). A phase without client hosts has no ``run_hosts`` rows
and shows nothing.
"""

from __future__ import annotations

import pandas as pd

from ..hosts.tables import contributions
from ..store import Store
from ..sweep import sweep_table
from . import tables as T
from .display import say, show

__all__ = ["WORDS", "contributions_table", "host_contributions", "section"]

#: The table's headers and sentences, en and zh.
WORDS = {
    "en": {
        "title": "### Client hosts' contributions",
        "lead": (
            "The runs of this sweep were driven from {k} client hosts ({hosts}). Per cell, each "
            "host's TPS, its share of the run's TPS and its CPU demand (threads running or "
            "waiting for a CPU, per CPU it has: 100% is every CPU busy), each the mean over the "
            "repeated runs with its Student t 95% interval, beside the run's merged TPS (all "
            "hosts' clients summed). A host near 100% demand limits what the sweep measured."
        ),
        "host": "Client host",
        "merged": "Merged TPS [95% CI]",
        "host_tps": "Host TPS [95% CI]",
        "share": "TPS share (%) [95% CI]",
        "demand": "CPU demand (%) [95% CI]",
        "caption": "Client hosts: each host's TPS share and CPU demand beside the merged TPS",
    },
    "zh": {
        "title": "### 各客户端主机的贡献",
        "lead": (
            "本次压测由 {k} 台客户端主机（{hosts}）共同施压。每个测试场景下给出各主机的 TPS、"
            "其占该次运行 TPS 的比例及其 CPU 需求（正在运行或等待 CPU 的线程数除以其 CPU 数："
            "100% 即所有 CPU 均已用满），均为重复运行的均值及 Student t 95% 置信区间，"
            "并列出该次运行合并后的 TPS（所有主机的客户端相加）。CPU 需求接近 100% 的主机"
            "会限制压测测到的结果。"
        ),
        "host": "客户端主机",
        "merged": "合并 TPS [95% 置信区间]",
        "host_tps": "主机 TPS [95% 置信区间]",
        "share": "TPS 占比 (%) [95% 置信区间]",
        "demand": "CPU 需求 (%) [95% 置信区间]",
        "caption": "客户端主机：各主机的 TPS 占比和 CPU 需求，与合并后的 TPS 并列",
    },
}


def words(lang: str) -> dict[str, str]:
    """This module's words in ``lang`` ("en" or "zh")."""
    T.labels(lang)  # the one check of ``lang``
    return WORDS[lang]


def host_contributions(study, store: Store | None = None, phase: str = "sweep") -> pd.DataFrame:
    """:func:`~tibenchlib.hosts.tables.contributions` of ``phase``'s runs in the study's
    catalog, with the cell's merged TPS (``merged_tps``, ``merged_tps_ci_low``,
    ``merged_tps_ci_high``); no rows when its runs had no client hosts."""
    store = store or Store.for_study(study)
    name = study.study
    runs = store.runs(name, phase=phase)
    if not len(runs):
        return contributions(runs, pd.DataFrame())
    keys = list(runs["run_key"])
    run_hosts = store.read("run_hosts", name, run_key=keys)
    if not len(run_hosts):
        return contributions(runs, run_hosts)
    c = contributions(runs, run_hosts, store.read("samples", name, run_key=keys))
    cells = sweep_table(runs)[["arm", "workload", "threads", "tps", "tps_ci_low", "tps_ci_high"]]
    cells = cells.rename(columns=lambda k: k.replace("tps", "merged_tps"))
    return c.merge(cells, on=["arm", "workload", "threads"], how="left")


def _pct(est, low, high) -> str:
    return T.fmt_ci(*(100 * x if T._ok(x) else x for x in (est, low, high)), digits=1)


def contributions_table(c: pd.DataFrame, lang: str = "en", order=None) -> pd.DataFrame:
    """:func:`host_contributions` for people: one row per cell × host, people's headers."""
    L, W = T.labels(lang), words(lang)
    if not len(c):
        return pd.DataFrame()
    d = T.sort_by_arm(c, "arm", order, then=("workload", "threads"))
    d = d.sort_values(["workload"], kind="stable").reset_index(drop=True)

    out = pd.DataFrame(
        {
            L["workload"]: d["workload"],
            L["arm"]: d["arm"],
            L["threads"]: [T.fmt_num(t, 0) for t in d["threads"]],
            W["host"]: d["host"].astype(str),
            L["n"]: [str(int(x)) for x in d["n"]],
        }
    )
    if "merged_tps" in d:
        out[W["merged"]] = T.ci_column(d, "merged_tps")
    out[W["host_tps"]] = T.ci_column(d, "tps")
    out[W["share"]] = T.ci_column(d, "tps_share", _pct)
    out[W["demand"]] = T.ci_column(d, "cpu_demand", _pct)
    return out


def lead(c: pd.DataFrame, lang: str = "en") -> str:
    """The sentence above the table: how many hosts, which, and how to read it."""
    hosts = list(dict.fromkeys(c["host"].astype(str)))
    sep = "、" if lang == "zh" else ", "
    return words(lang)["lead"].format(k=len(hosts), hosts=sep.join(hosts))


def section(session, order=None) -> pd.DataFrame:
    """Notebook 02's section: the heading, a sentence and the table; nothing at all when the
    sweep had no client hosts. Returns :func:`host_contributions` (for the notebook's checks)."""
    lang = session.lang
    c = host_contributions(session.study)
    if not len(c):
        return c
    say(words(lang)["title"])
    say(lead(c, lang))
    show(contributions_table(c, lang, order or session.arms), lang)
    return c
