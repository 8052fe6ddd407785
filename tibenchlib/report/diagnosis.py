"""The bottleneck diagnosis for people: one row and one sentence per workload × arm.

Reads a study's sweep runs, the per-second CPU samples and any Prometheus metrics from its
catalog, hands them to :func:`tibenchlib.diagnose.diagnose`, and formats the result: a table
whose figures carry their interval and n, and one sentence per workload naming its numbers,
in English or Chinese. Used by notebook 02, ``tibench report`` and ``tibench diagnose``.
"""

from __future__ import annotations

import json
import math

import pandas as pd

from ..diagnose import cpu_per_run, diagnose
from ..store import Store
from . import tables as T
from .display import say, show
from .words import zh_punct

__all__ = [
    "TITLE", "VERDICT_TEXT", "as_json", "diagnosis_table", "note", "saturation_text", "section",
    "sentences", "study_diagnosis",
]  # fmt: skip

TITLE = {"en": "Bottleneck diagnosis", "zh": "性能瓶颈分析"}

VERDICT_TEXT = {
    "en": {
        "client_cpu": "client CPU-bound",
        "server_cpu": "server CPU-bound",
        "host_cpu": "host CPU-bound",
        "not_cpu": "not CPU-bound",
        "not_saturated": "not saturated",
        "undetermined": "undetermined",
    },
    "zh": {
        "client_cpu": "客户端 CPU 瓶颈",
        "server_cpu": "服务端 CPU 瓶颈",
        "host_cpu": "主机 CPU 瓶颈",
        "not_cpu": "非 CPU 瓶颈",
        "not_saturated": "未饱和",
        "undetermined": "无法判定",
    },
}

#: The "saturates from" cell by the diagnosis's saturation state
#: (:data:`tibenchlib.diagnose.SATURATION`).
_SAT_TEXT = {
    "en": {
        "not_reached": "not reached within the ladder (≤ {n_max})",
        "unclear": "unclear",
        "one_count": "n/a",
    },
    "zh": {
        "not_reached": "所测线程范围内尚未到达（≤ {n_max}）",
        "unclear": "无法确定",
        "one_count": "n/a",
    },
}


#: The same, shortened for a terminal's narrow column.
_SAT_SHORT = {
    "en": {"not_reached": "not reached (≤ {n_max})", "unclear": "unclear", "one_count": "n/a"},
    "zh": {"not_reached": "未到达（≤ {n_max}）", "unclear": "无法确定", "one_count": "n/a"},
}


def saturation_text(state, n_sat, n_max, lang: str = "en", short: bool = False) -> str:
    """Where a workload × arm saturates, as its cell says it: the thread count where it levels
    off, else why there is none (a peak at the ladder's top is "not reached", never a
    saturation point); ``short`` for a terminal's narrow column."""
    if state == "levels_off" and n_sat is not None and n_sat == n_sat:
        return f"{int(n_sat)}"
    if state is None or state != state:  # a row from before the state was kept
        return "n/a" if n_sat is None or n_sat != n_sat else f"{int(n_sat)}"
    n = "?" if n_max is None or n_max != n_max else int(n_max)
    return (_SAT_SHORT if short else _SAT_TEXT)[lang].get(state, "n/a").format(n_max=n)


_HEAD = {
    "en": {
        "workload": "Workload",
        "arm": "Arm",
        "verdict": "Verdict",
        "resource": "At its limit",
        "n_sat": "Saturates from (threads)",
        "at": "Judged at (threads)",
        "n": "Runs (n)",
        "demand": "CPU demand of it [95% CI]",
        "client": "Client CPU demand [95% CI]",
        "server": "Server CPU demand [95% CI]",
        "p95": "p95 latency, last / saturation point [95% CI]",
        "note": "Notes",
    },
    "zh": {
        "workload": "测试场景",
        "arm": "测试组",
        "verdict": "结论",
        "resource": "瓶颈资源",
        "n_sat": "饱和起点(压测线程)",
        "at": "判定线程数",
        "n": "运行次数 (n)",
        "demand": "其 CPU 需求 [95% 置信区间]",
        "client": "客户端 CPU 需求 [95% 置信区间]",
        "server": "服务端 CPU 需求 [95% 置信区间]",
        "p95": "p95 延迟 最大线程/饱和点 [95% 置信区间]",
        "note": "备注",
    },
}

_NOTE = {
    "en": (
        "CPU demand = (CPU time + time its threads waited for a CPU) / (wall time × CPUs it may "
        "use), per run; geometric mean over the repeated runs with a Student t 95% interval on "
        "the log scale, which stays positive (n = runs at the judged thread count); at or above "
        "{limit} a source is at its limit, with its whole interval below {headroom} it has "
        "headroom. p95 ratio: Fieller interval."
    ),
    "zh": (
        "CPU 需求 =(CPU 时间 + 线程等待 CPU 的时间)/(墙钟时间 × 可用 CPU 数),按每次运行计算,"
        "取多次运行的几何均值及对数尺度上的 Student t 95% 区间(区间恒为正;"
        "n = 判定线程数下的运行次数);不低于 {limit} "
        "即达到上限,整个区间低于 {headroom} 即有余量。p95 比值:Fieller 区间。"
    ),
}


def _host_cpus(captures: dict) -> int | None:
    """The client host's logical CPUs from the environment capture, if it holds them."""
    for cap in captures.values():
        host = cap.get("host") if isinstance(cap, dict) else None
        cpu = host.get("cpu") if isinstance(host, dict) else None
        n = cpu.get("logical") if isinstance(cpu, dict) else None
        if isinstance(n, int) and n > 0:
            return n
    return None


def study_diagnosis(
    study,
    *,
    lang: str | None = None,
    component_cores: dict[str, float] | None = None,
    host_cpus: int | None = None,
) -> pd.DataFrame:
    """:func:`tibenchlib.diagnose.diagnose` of a study's sweep, read from its catalog.

    Parameters
    ----------
    study
        A :class:`~tibenchlib.params.Study`.
    lang
        Language of ``sentence`` (default: the study's ``lang``).
    component_cores
        CPUs per instance of each TiDB component (for a cluster measured through Prometheus).
    host_cpus
        The client host's CPUs (default: from the environment capture, when there is one).
    """

    store = Store.for_study(study)
    name = study.study
    runs = store.runs(name, phase="sweep")
    if not len(runs):
        return diagnose(
            pd.DataFrame(columns=["run_key", "workload", "arm", "threads", "tps"]), None
        )
    keys = list(runs["run_key"])
    cpu = cpu_per_run(
        store.read("samples", name, run_key=keys),
        store.read("cluster_metrics", name, run_key=keys),
        component_cores,
    )
    if host_cpus is None:
        host_cpus = _host_cpus(store.environment_captures(name))
    return diagnose(runs, cpu, host_cpus=host_cpus, lang=lang or study.lang)


def _pct(mean, lo=None, hi=None) -> str:
    if not T._ok(mean):
        return "n/a"
    s = f"{mean * 100:.0f}%"
    if T._ok(lo) and T._ok(hi):
        s += f" [{lo * 100:.0f}, {hi * 100:.0f}]"
    return s


def diagnosis_table(d: pd.DataFrame, lang: str = "en") -> pd.DataFrame:
    """The diagnosis as text cells with ``lang`` headers, one row per workload × arm."""
    H, V = _HEAD[lang], VERDICT_TEXT[lang]
    rows = []
    for r in d.itertuples():
        p95 = "n/a"
        if T._ok(r.p95_ratio):
            p95 = f"{r.p95_ratio:.2f}x"
            if T._ok(r.p95_ratio_ci_low) and T._ok(r.p95_ratio_ci_high):
                p95 += f" [{r.p95_ratio_ci_low:.2f}, {r.p95_ratio_ci_high:.2f}]"
        notes = [r.reason] if r.reason else []
        notes += list(r.warnings or [])
        rows.append(
            {
                H["workload"]: r.workload,
                H["arm"]: r.arm,
                H["verdict"]: V.get(r.verdict, r.verdict),
                H["resource"]: r.resource or "",
                H["n_sat"]: saturation_text(getattr(r, "saturation", None), r.n_sat, r.n_max, lang),
                H["at"]: "n/a" if r.threads_at is None else f"{r.threads_at}",
                H["n"]: f"{r.n_runs}",
                H["demand"]: (f"{r.cpu_source}: " if r.cpu_source else "")
                + _pct(r.cpu_demand, r.cpu_demand_ci_low, r.cpu_demand_ci_high),
                H["client"]: _pct(r.client_demand, r.client_demand_ci_low, r.client_demand_ci_high),
                H["server"]: _pct(r.server_demand, r.server_demand_ci_low, r.server_demand_ci_high),
                H["p95"]: p95,
                H["note"]: T.fmt_notes(notes, lang),
            }
        )
    return pd.DataFrame(rows, columns=list(H.values()))


def sentences(d: pd.DataFrame) -> list[str]:
    """One sentence per row, led by its arm when the study has several."""
    several = d["arm"].nunique() > 1
    # a Chinese sentence takes full-width punctuation (an English one is left as it is)
    said = [zh_punct(s) for s in d["sentence"]]
    return [f"[{a}] {s}" if several else s for a, s in zip(d["arm"], said, strict=True)]


def note(lang: str = "en", limit: float = 0.90, headroom: float = 0.75) -> str:
    """What the table's figures are, in ``lang``."""
    text = _NOTE[lang].format(limit=f"{limit:.0%}", headroom=f"{headroom:.0%}")
    return zh_punct(text) if lang == "zh" else text


def _plain(x):
    if isinstance(x, float) and math.isnan(x):
        return None
    if hasattr(x, "item"):
        return x.item()
    return x


def as_json(d: pd.DataFrame) -> list[dict]:
    """The diagnosis rows as plain JSON-ready dicts (the nested evidence included)."""
    text = d.to_json(orient="records", force_ascii=False, default_handler=str)
    return [{k: _plain(v) for k, v in row.items()} for row in json.loads(text)]


def section(study, lang: str | None = None, **kw) -> pd.DataFrame:
    """Notebook section: the table, then one sentence per workload × arm. Returns the rows."""

    lang = lang or study.lang
    d = study_diagnosis(study, lang=lang, **kw)
    if not len(d):
        say(
            "没有压测结果,无法分析瓶颈。" if lang == "zh" else "No sweep runs: nothing to diagnose."
        )
        return d
    show(diagnosis_table(d, lang), lang)
    say(note(lang))
    say("\n".join(f"- {s}" for s in sentences(d)))
    return d
