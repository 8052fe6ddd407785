"""``tibench report STUDY``: one self-contained HTML file a DBA can send, built from the study's
data (its catalog and results), not from executed notebooks.

It opens with what the study found (:mod:`tibenchlib.findings`, one short section per phase),
then each phase's one answering table or figure, details last in ``<details>`` folds. A phase not
run, or still running, says so. Every string that comes from a study file, a server or a tool is
HTML-escaped by Jinja2's autoescaping; figures are PNG embedded as data URLs (also written under
``report/figures/``), tables also as CSV and Markdown under ``report/tables/``. The English report
is ``report/<study>.html``, the Chinese one ``report/<study>.zh.html`` beside it.
"""

from __future__ import annotations

import base64
import datetime as _dt
import io
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import jinja2
import matplotlib
import numpy as np
import pandas as pd

from .. import findings as F
from .. import paths, registry
from ..compare_phase import COMPARE
from ..dm.phase import DM
from ..envcapture.phase import ENVIRONMENT
from ..numa import NUMA
from ..params import ParamsError
from ..prepare import PREPARE
from ..store import Store
from ..sweep import SWEEP
from ..tpcc.phase import TPCC
from ..tpch.phase import TPCH_SCALING
from ..ycsb.phase import YCSB
from . import tables as T
from .comparison import export
from .kubernetes import kubernetes_view
from .words import check_lang, say

matplotlib.use("Agg")  # the report draws off screen, also where no display exists
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)

from ..compare import compare_arms_table
from ..dm.analysis import result_rows, unit_rows
from ..dm.phase import planned_runs
from ..envcapture import config_diff, environment_tables
from ..numa import analyze
from ..stats import summarize_cells
from ..studyplan import study_from
from ..sweep import sweep_table
from ..tpcc.phase import summarize
from ..tpch import scaling
from ..tpch.phase import arm_cores, arm_labels, runs_frame
from . import plots  # noqa: E402  (configures the CJK fonts)
from .diagnosis import diagnosis_table, note, study_diagnosis
from .dm import knob_table
from .hosts import contributions_table, host_contributions
from .hosts import words as host_words
from .tpcc import tpmc_table
from .tpcc import words as tpcc_words
from .tpch_queries import tpch_overall_table, tpch_query_table
from .words import SENTENCES
from .ycsb import cells, cells_table

__all__ = ["PhaseStatus", "phase_status", "study_in_progress", "build_report", "report_dir", "TEXT"]

#: The report's own words (headings, states); sentences live in :mod:`.words`.
TEXT = {
    "en": {
        "title": "tibench report: study {study}",
        "findings": "What the study found",
        "findings_note": "Square brackets hold the 95% confidence interval; n is the number of "
        "repeated runs behind a figure.",
        "no_findings": "Nothing measured yet: no findings.",
        "caveats": "Read this first: what stands in, what is scaled, what an arm means",
        "note": "note {n}",
        "differs": "What differs between the compared arms",
        "differs_none": "No environment capture of {a} and {b}: what differs is unknown.",
        "differs_same": "{a} and {b}: no setting differs.",
        "differs_n": "{a} → {b}: {n} setting(s) differ, as captured from each arm's server.",
        "setting": "Setting",
        "phase": {p.name: p.title("en") for p in registry.PHASES},
        "section": "{n}. {title}",
        "done": "done",
        "not_run": "not run",
        "running": "in progress",
        "partial": "partial (a run is in progress)",
        "failed": "failed",
        "not_run_text": "This phase has not been run. Run it with `{cmd}`.",
        "running_text": "This phase is being measured now: what follows is partial. Build the "
        "report again when the run ends.",
        "live": "A tibench run of this study is in progress (pid {pid}): some phases may be "
        "incomplete; build the report again when it ends.",
        "generated": "Built {when} from the catalog and results under `data/{study}/`.",
        "figures": "Figures (PNG) and tables (CSV, Markdown): `data/{study}/report/`.",
        "arms": "Arms: {arms}",
        "details": "Details",
        "every_row": "{what}: every row ({n})",
        "diagnosis": "Bottleneck diagnosis",
        "queries": "Every query",
        "withheld": "{n} figure(s) withheld, in {where}: impossible values (a time saved of "
        "100% or more, an efficiency above 100%, or an estimate outside its interval) are not "
        "shown.",
        "fig_method": "Points: mean over repeated runs; bars: Student t 95% interval.",
        "fig_cmp": "Points: change of the candidate against the baseline; bars: the 95% "
        "interval simultaneous over the pair's cells (paired t or Fieller), the one the verdicts "
        "in the table read; grey band: the equivalence margin.",
        "state": "State",
        "phase_col": "Phase",
        "status_table": "Phases",
    },
    "zh": {
        "title": "tibench 测试报告：{study}",
        "findings": "测试结论",
        "findings_note": "方括号内为 95% 置信区间；n 为每个数值所依据的重复测试次数。",
        "no_findings": "尚无测试结果，暂无结论。",
        "caveats": "阅读前须知：替代方案、缩小的设计与各测试组的含义",
        "note": "注 {n}",
        "differs": "各对比测试组之间的配置差异",
        "differs_none": "{a} 与 {b} 没有环境采集结果，无法列出配置差异。",
        "differs_same": "{a} 与 {b}：没有配置项不同。",
        "differs_n": "{a} → {b}：{n} 项配置不同（采集自各测试组的数据库）。",
        "setting": "配置项",
        "phase": {p.name: p.title("zh") for p in registry.PHASES},
        "section": "{n}. {title}",
        "done": "已完成",
        "not_run": "未运行",
        "running": "运行中",
        "partial": "部分完成（测试仍在运行）",
        "failed": "失败",
        "not_run_text": "此阶段尚未运行。运行命令：`{cmd}`。",
        "running_text": "此阶段正在测试，以下结果不完整。测试结束后请重新生成报告。",
        "live": "此测试正在运行（pid {pid}）：部分阶段可能不完整，测试结束后请重新生成报告。",
        "generated": "生成于 {when}，数据来自 `data/{study}/` 下的结果库与结果文件。",
        "figures": "图片（PNG）与表格（CSV、Markdown）位于 `data/{study}/report/`。",
        "arms": "测试组\uff1a{arms}",
        "details": "详细数据",
        "every_row": "{what}：全部 {n} 行",
        "diagnosis": "性能瓶颈分析",
        "queries": "各查询明细",
        "withheld": "有 {n} 个数值不予显示（{where}）：不可能的数值"
        "（耗时减少 ≥ 100%、效率高于 100%，或估计值落在自身置信区间之外）。",
        "fig_method": "点为多次测试的均值，误差线为 Student t 95% 置信区间。",
        "fig_cmp": "点为测试组相对基准的变化，误差线为该对比各测试场景的联合 95% 置信区间"
        "（配对 t 或 Fieller），即表中判定所依据的区间；灰色带为等价区间。",
        "state": "状态",
        "phase_col": "阶段",
        "status_table": "各阶段状态",
    },
}

#: The cell that stands for a figure that is missing or withheld.
DASH = "—"
_EMPTY = {"nan", "none", "nat", "n/a", "<na>", ""}
#: a cell starting with one of these is a figure, right-aligned
_NUMERIC = tuple("+-0123456789[")


@dataclass
class PhaseStatus:
    """One phase as the report shows it: ``state`` is done, not_run, running or partial."""

    phase: str
    state: str
    error: str = ""


@dataclass
class Table:
    """A table for people: column names and rows of cells (``v`` the text, ``ci`` its interval
    when it has one, ``cls`` its class: ``wrap`` for prose columns, ``text`` for left-aligned
    words, ``split`` for a figure that may break before its interval, ``bg`` a verdict's colour);
    ``verdict`` is the column (if any) whose codes are shown in words."""

    columns: list[str]
    rows: list[list[dict]]
    verdict: int | None = None


@dataclass
class Section:
    anchor: str
    title: str
    state: str
    note: str = ""
    blocks: list[dict] = field(default_factory=list)
    details: list[dict] = field(default_factory=list)
    #: the caveats of the phase's findings, numbered as the findings list numbers them
    caveats: list[dict] = field(default_factory=list)


def report_dir(study: str) -> Path:
    return paths.report_dir(study)


def report_path(study: str, lang: str = "en") -> Path:
    """``report/<study>.html`` (English) or ``report/<study>.zh.html`` (Chinese)."""
    base = paths.report_file(study)
    return base if lang == "en" else base.with_name(f"{study}.{lang}.html")


def _texts(lang: str) -> dict:
    return TEXT[check_lang(lang)]


def study_in_progress(study: str) -> int | None:
    """The pid holding the study's run lock (``data/<study>/.lock``, taken by ``tibench run``
    while it measures), or None. Read from ``/proc/locks``: taking the lock to test it would
    make a run starting at that moment fail."""
    lock = paths.lock_file(study)
    try:
        st = lock.stat()
        table = Path("/proc/locks").read_text()
    except OSError:
        return None
    dev = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    for line in table.splitlines():
        f = line.split()
        if len(f) >= 6 and f[1] == "FLOCK" and f[5] == dev:
            return int(f[4])
    return None


def _load_study(study: str):
    try:
        return study_from(study)
    except ParamsError:
        return None


def phase_status(study: str, phase: str, *, loaded=None, store=None, live=None) -> PhaseStatus:
    """Whether a phase's results are in the catalog (done), being measured (running: a run holds
    the study's lock and the phase has nothing yet; partial: it has some), or not run."""
    s = loaded if loaded is not None else _load_study(study)
    live = study_in_progress(study) if live is None else live
    if s is None:
        return PhaseStatus(phase, "running" if live else "not_run")
    store = store or Store.for_study(s)
    ph = registry.get(phase)
    try:
        stored = ph.stored(s, store, ph.arms(s))
    except (OSError, ValueError, KeyError) as e:
        return PhaseStatus(phase, "failed", error=str(e))
    if stored:
        return PhaseStatus(phase, "partial" if live else "done")
    if live and phase in s.phases:
        return PhaseStatus(phase, "running")
    return PhaseStatus(phase, "not_run")


# ------------------------------------------------------------------------------ tables


def _cell(v) -> str:
    if v is None or (isinstance(v, float) and not np.isfinite(v)):
        return DASH
    if isinstance(v, (list, tuple)):
        return ", ".join(_cell(x) for x in v)
    s = str(v)
    return DASH if s.strip().lower() in _EMPTY else s


def as_table(
    df: pd.DataFrame, lang: str, verdict_col: str | None = None, colour: bool = True
) -> Table:
    """A formatted DataFrame (:mod:`.tables`) as a :class:`Table`: every cell text, never
    ``nan``/``None``; the verdict column (the labels' "verdict" unless given) coloured, unless
    ``colour`` is off (a verdict that is a measure, not a judgement)."""
    cols = [str(c) for c in df.columns]
    vname = verdict_col or T.labels(lang)["verdict"]
    vi = cols.index(vname) if vname in cols else None
    wrap = {i for i, c in enumerate(cols) if c in _wrapped(lang)}
    prose = {i for i, c in enumerate(cols) if c in _notes(lang)}
    status = {i for i, c in enumerate(cols) if c in (T.labels(lang)["status"], "status")}
    rows = []
    for r in df.itertuples(index=False):
        cells = []
        for i, v in enumerate(r):
            text = _cell(v)
            if i in status and text != DASH:
                text = T.status_text(text, lang)
            cls = "wrap" if i in wrap or i == vi else "" if text[:1] in _NUMERIC else "text"
            cls = "wrap notes" if i in prose else cls
            bg = ""
            if i == vi:
                bg = T.VERDICT_COLOURS.get(str(v), "") if colour else ""
                text = T.verdict_text(v, lang) or DASH
            # prose (notes, verdicts) wraps as prose; only a figure keeps its interval whole
            head, ci = _split_interval(text) if not cls.startswith("wrap") else (text, "")
            cls = f"{cls} split".strip() if ci else cls
            cells.append({"v": head, "ci": ci, "cls": cls, "bg": bg})
        rows.append(cells)
    return Table(cols, rows, vi)


def _split_interval(text: str) -> tuple[str, str]:
    """``"1,234 [1,200, 1,260]"`` → ``("1,234", "[1,200, 1,260]")``: a figure and its interval
    are each kept on one line, and a narrow column breaks the cell between them only."""
    i = text.find(" [")
    return (text[:i], text[i + 1 :]) if i > 0 and text.endswith("]") else (text, "")


def _notes(lang: str) -> set[str]:
    return {T.labels(lang)["notes"], "Notes", "备注", "说明", "notes"}


def _wrapped(lang: str) -> set[str]:
    L = T.labels(lang)
    return {L["verdict"], L["method"], *_notes(lang)}


def _without(df: pd.DataFrame, *cols: str) -> pd.DataFrame:
    return df.drop(columns=[c for c in cols if c in df.columns])


# ------------------------------------------------------------------------------ figures


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


class _Ctx:
    """What every phase's section needs: the study, its catalog, the language, where figures
    and tables go, and the count of figures withheld."""

    def __init__(self, study, store: Store, lang: str, out: Path, found: dict):
        self.study, self.store, self.lang = study, store, lang
        self.L, self.T = T.labels(lang), TEXT[lang]
        self.figs, self.tabs = out / "figures", out / "tables"
        self.found = found
        self.withheld: dict[str, int] = {}
        self.n = 0

    def figure(self, phase: str, fig, caption: str) -> dict:
        self.n += 1
        data = _png(fig)
        stem = f"{phase}_{self.n:02d}_{self.lang}"
        (self.figs / f"{stem}.png").write_bytes(data)
        return {
            "kind": "figure",
            "src": "data:image/png;base64," + base64.b64encode(data).decode(),
            "alt": f"{self.T['phase'].get(phase, phase)}: {caption}",
            "caption": caption,
        }

    def table(
        self, phase: str, name: str, df: pd.DataFrame, caption: str = "", colour: bool = True
    ) -> dict:
        if len(df):
            export(T.plain(df, self.lang), self.tabs / f"{phase}_{name}_{self.lang}")
        return {"kind": "table", "caption": caption, "table": as_table(df, self.lang, None, colour)}


# ------------------------------------------------------------------------------ phases


def _environment(c: _Ctx, sec: Section) -> None:
    arms = [a.label for a in c.study.arms]
    summary = ENVIRONMENT.results(c.study, c.store, arms)
    if not len(summary):
        return
    L = c.L
    keep = {"arm": L["arm"], "flavor": L["flavor"], "version": L["version"], "cpu_model": L["cpu"],
            "logical_cpus": L["logical_cpus"], "numa_nodes": L["numa_nodes"],
            "memory_bytes": L["memory"], "os": L["os"]}  # fmt: skip
    head = summary[[k for k in keep if k in summary]].copy()
    if "memory_bytes" in head:
        head["memory_bytes"] = [T.fmt_num(x / 2**30, 1) if T._ok(x) else DASH
                                for x in head["memory_bytes"]]  # fmt: skip
    sec.blocks.append(c.table("environment", "summary", head.rename(columns=keep)))

    caps = c.store.environment_captures(c.study.study)
    for arm in arms:
        for name, t in environment_tables(caps.get(arm, {}), c.lang).items() if arm in caps else []:
            what = say(f"env_{name}", c.lang) if f"env_{name}" in _sentences() else name
            sec.details.append(
                {
                    "summary": f"{arm} · " + c.T["every_row"].format(what=what, n=len(t)),
                    "table": as_table(t.astype(str), c.lang),
                }
            )
        view = kubernetes_view(caps[arm], c.lang) if arm in caps else None
        if view is not None:  # the arm's TiDB Operator cluster (target.kubernetes)
            shown = view.components
            lines = [f"{arm} · {view.sentence}", *(view.unavailable if len(shown) else [])]
            text = " ".join(lines).replace("`", "")
            if not len(shown):  # not captured: the reasons in its place
                shown = pd.DataFrame({say("env_unavailable", c.lang): view.unavailable})
            sec.blocks.append(c.table("environment", f"kubernetes_{arm}", shown, text))
            if len(view.pods):
                what = say("env_kube_pods_rows", c.lang, n=len(view.pods))
                sec.details.append(
                    {"summary": f"{arm} · {what}", "table": as_table(view.pods.astype(str), c.lang)}
                )


def _sentences():
    return SENTENCES


def _prepare(c: _Ctx, sec: Section) -> None:
    steps = PREPARE.results(c.study, c.store, [a.label for a in c.study.arms])
    if not len(steps):
        return
    L = c.L
    t = steps.groupby(["arm", "step"], as_index=False, sort=False).agg(
        seconds=("seconds", "sum"), status=("status", lambda s: ", ".join(sorted(set(map(str, s)))))
    )
    df = pd.DataFrame(
        {
            L["arm"]: t["arm"],
            L["step"]: T.step_names(t["step"], c.lang),
            L["seconds"]: [T.fmt_num(x) for x in t["seconds"]],
            L["status"]: t["status"],
        }
    )
    sec.blocks.append(c.table("prepare", "steps", df))


def _sweep_runs(c: _Ctx) -> pd.DataFrame:
    return c.store.runs(c.study.study, phase="sweep")


def _sweep(c: _Ctx, sec: Section) -> None:
    runs = _sweep_runs(c)
    if not len(runs):
        return
    arms = [a.label for a in c.study.arms]
    cells = F._quiet(summarize_cells, runs, metric="tps")
    cells = T.sort_by_arm(cells, "arm", arms, then=("workload", "threads"))
    fig = plots.metric_vs_threads(cells, ylabel=say("ylabel_tps", c.lang), lang=c.lang)
    sec.blocks.append(c.figure("sweep", fig, c.T["fig_method"]))
    table = T.sweep_table(F._quiet(sweep_table, runs), c.lang, arms)
    sec.blocks.append(c.table("sweep", "tps", _without(table, c.L["notes"])))
    every = c.T["every_row"].format(what=c.T["phase"]["sweep"], n=len(table))
    sec.details.append({"summary": every, "table": as_table(table, c.lang)})
    hosts = F._quiet(host_contributions, c.study, c.store)
    if len(hosts):  # clients on several hosts: each one's share beside the merged TPS
        t = contributions_table(hosts, c.lang, arms)
        sec.blocks.append(c.table("sweep", "hosts", t, host_words(c.lang)["caption"]))
    d = F._quiet(study_diagnosis, c.study, lang=c.lang)
    if len(d):
        dt = diagnosis_table(d, c.lang)
        export(T.plain(dt, c.lang), c.tabs / f"sweep_diagnosis_{c.lang}")
        sec.details.append(
            {"summary": c.T["diagnosis"], "table": as_table(dt, c.lang), "note": note(c.lang)}
        )


def _compare(c: _Ctx, sec: Section) -> None:
    runs = _sweep_runs(c)
    if len(c.study.arms) < 2:
        sec.note = say("f_one_arm", c.lang)
        return
    if not len(runs) or c.study.compare is None:
        return
    iv = c.store.intervals(c.study.study, runs["run_key"])
    cmp = F._quiet(compare_arms_table, runs, c.study, intervals=iv)
    for (a, b), g in cmp.groupby(["baseline", "candidate"], sort=False):
        t = T.compare_table(g, c.lang)
        cap = say("f_pair", c.lang, cand=b, base=a)
        # the simultaneous interval stays: the verdict is read from it; latency goes to details
        p95 = [c.L["p95"].format(arm=x) for x in (a, b)]
        keep = [x for x in (c.L["notes"], c.L["method"], *p95) if x in t]
        sec.blocks.append(c.table("compare", f"{a}_vs_{b}", _without(t, *keep), cap))
        fig = plots.improvement_bars(g, delta_pct=c.study.compare.delta_pct, lang=c.lang)
        sec.blocks.append(c.figure("compare", fig, c.T["fig_cmp"]))
        sec.details.append({"summary": cap, "table": as_table(t, c.lang)})


def _numa(c: _Ctx, sec: Section) -> None:
    if not len(c.store.runs(c.study.study, phase="numa")):
        return
    rows = F._quiet(analyze, c.study, c.store)
    t = T.numa_table(rows, c.lang)
    # the answer (TPS and its change per binding) fits the page; latency, the binding's check
    # and the dips stay in the details
    L = c.L
    aside = [L["notes"], L["verified"], L["dips_pair"], L["p95_pair"]]
    # on a one-node host binding has nothing to show: a faster or slower policy is a measure of
    # the CPUs it took away (the findings say so), never coloured as a verdict on binding
    nodes, _ = F._numa_host(c.store.environment_captures(c.study.study))
    judge = nodes != 1
    sec.blocks.append(c.table("numa", "policies", _without(t, *aside), colour=judge))
    sec.details.append({"summary": c.T["every_row"].format(what=c.T["phase"]["numa"], n=len(t)),
                        "table": as_table(t, c.lang, None, judge)})  # fmt: skip


def _tpch(c: _Ctx, sec: Section) -> None:
    runs = runs_frame(c.store, c.study)
    if not len(runs):
        return
    order = [a for a in arm_labels(c.study) if a in set(runs["arm"])]
    units = {a: float(arm_cores(a)) for a in order} if c.study.target.kind == "embedded" else None
    r = runs[~runs["warmup"]]
    overall = F._quiet(scaling.overall_summary, r, order, units=units)
    summary = F._quiet(scaling.query_summary, r, order, units=units)
    t = tpch_overall_table(overall, c.lang, base=order[0])
    n = _impossible(overall, order[0]) + _impossible(summary, order[0])
    n += int((pd.to_numeric(overall["efficiency"], errors="coerce") > 1).sum())
    c.withheld["tpch_scaling"] = n
    sec.blocks.append(c.table("tpch_scaling", "overall", _without(t, c.L["notes"])))
    q = tpch_query_table(summary, c.lang, base=order[0])
    sec.details.append({"summary": c.T["queries"] + f" ({len(q)})", "table": as_table(q, c.lang)})


def _impossible(rows: pd.DataFrame, base: str) -> int:
    """Rows whose time saved cannot be (100% or more), the base arm's own row aside."""
    return sum(
        T.impossible_saved(r.improvement_pct, r.ci_high_pct)
        for r in rows.itertuples()
        if str(r.arm) != str(base)
    )


def _dm(c: _Ctx, sec: Section) -> None:
    if not len(c.store.read("dm_runs", c.study.study)):
        return
    rows = F._quiet(result_rows, unit_rows(planned_runs(c.store, c.study)))
    if not len(rows):
        return
    t = knob_table(rows, c.lang)
    notes = [x for x in t.columns if x in _wrapped(c.lang)]
    sec.blocks.append(c.table("dm", "knobs", _without(t, *notes)))
    sec.details.append({"summary": c.T["every_row"].format(what=c.T["phase"]["dm"], n=len(t)),
                        "table": as_table(t, c.lang)})  # fmt: skip


def _ycsb(c: _Ctx, sec: Section) -> None:
    runs = c.store.runs(c.study.study, phase="ycsb")
    if not len(runs):
        return
    t = cells_table(F._quiet(cells, runs), c.lang, [a.label for a in c.study.arms])
    sec.blocks.append(c.table("ycsb", "cells", _without(t, c.L["notes"])))
    sec.details.append({"summary": c.T["every_row"].format(what="YCSB", n=len(t)),
                        "table": as_table(t, c.lang)})  # fmt: skip


def _tpcc(c: _Ctx, sec: Section) -> None:
    rows = F._quiet(summarize, c.study, c.store)
    if not len(rows):
        return
    t = tpmc_table(rows, c.lang)
    eff = tpcc_words(c.lang)["h"]["eff"]
    if eff in t:
        # an efficiency above 100% cannot be: withheld rather than shown
        bad = [T._ok(x) and float(x) > 100 for x in rows["efficiency_pct"]]
        c.withheld["tpcc"] = sum(bad)
        t[eff] = [DASH if b else v for b, v in zip(bad, t[eff], strict=True)]
    H = tpcc_words(c.lang)["h"]
    # tpmTotal, the client count, p99 and the notes stay in the details: the main table fits
    # the page
    aside = (H["notes"], H["no99"], H["tpmt"], H["clients"])
    sec.blocks.append(c.table("tpcc", "tpmc", _without(t, *aside)))
    sec.details.append({"summary": c.T["every_row"].format(what="TPC-C", n=len(t)),
                        "table": as_table(t, c.lang)})  # fmt: skip


#: Each phase's section of the report, by phase object.
PHASE_SECTIONS = {
    ENVIRONMENT: _environment,
    PREPARE: _prepare,
    SWEEP: _sweep,
    COMPARE: _compare,
    NUMA: _numa,
    TPCH_SCALING: _tpch,
    DM: _dm,
    YCSB: _ycsb,
    TPCC: _tpcc,
}

# ------------------------------------------------------------------------------ page

_ENV = jinja2.Environment(autoescape=True, trim_blocks=True, lstrip_blocks=True)
_CODE = re.compile(r"`([^`]+)`")


def _md(text: str):
    """A sentence whose ``code`` spans become <code>: escaped first, then marked up."""
    esc = str(jinja2.utils.markupsafe.escape(text))
    return jinja2.utils.markupsafe.Markup(_CODE.sub(r"<code>\1</code>", esc))


_ENV.filters["md"] = _md

PAGE = _ENV.from_string(
    """{% macro cell(c) %}{% if c.ci %}<span class="nw">{{ c.v }}</span>
{{- " " }}<span class="nw">{{ c.ci }}</span>{% else %}{{ c.v }}{% endif %}{% endmacro %}
{% macro table(t) %}
<div class="scroll"><table>
<thead><tr>{% for c in t.columns %}<th>{{ c }}</th>{% endfor %}</tr></thead>
<tbody>
{% for r in t.rows %}<tr>{% for c in r %}<td{% if c.cls %} class="{{ c.cls }}"{% endif %}
{% if c.bg %} style="background-color: {{ c.bg }}"{% endif %}>{{ cell(c) }}</td>{% endfor %}</tr>
{% endfor %}
</tbody></table></div>
{% endmacro %}
<!DOCTYPE html>
<html lang="{{ html_lang }}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{ title }}</title>
<style>
body { font-family: "Noto Sans CJK SC", "PingFang SC", "Microsoft YaHei", "DejaVu Sans", sans-serif;
       margin: 2em auto; max-width: 78em; padding: 0 1.5em; color: #222; line-height: 1.55; }
h1 { font-size: 1.6em; margin-bottom: .2em; } h3 { font-size: 1.05em; margin: 1.2em 0 .3em; }
h2 { border-bottom: 1px solid #ddd; padding-bottom: .2em; margin-top: 2em; }
.meta { color: #555; font-size: .92em; } .banner { background: #fff3c4; padding: .6em 1em; }
ul.findings { padding-left: 1.2em; } ul.findings li { margin: .25em 0; }
.v { display: inline-block; min-width: .8em; height: .8em; border-radius: 50%; margin-right: .4em; }
.v-better { background: #43a047; } .v-worse { background: #e53935; }
.v-equivalent { background: #64b5f6; } .v-inconclusive { background: #fbc02d; }
.v-rising, .v-saturated, .v-bottleneck, .v-info { background: #9e9e9e; }
table { border-collapse: collapse; margin: .6em 0 1em; font-size: .9em; }
th, td { border: 1px solid #ddd; padding: .25em .5em; text-align: right; vertical-align: top; }
th { background: #f5f5f5; text-align: left; min-width: 4em; word-break: keep-all; }
td { white-space: nowrap; word-break: keep-all; } td.wrap { white-space: normal; min-width: 6em;
       max-width: 24em; word-break: normal; overflow-wrap: anywhere; text-align: left; }
td.notes { min-width: 9em; }
td.text { text-align: left; white-space: normal; }
td.split { white-space: normal; } .nw { white-space: nowrap; }
.scroll { overflow-x: auto; } figure { margin: .6em 0 1em; } figure img { max-width: 100%; }
figcaption, .caption { color: #555; font-size: .88em; } details { margin: .4em 0; }
summary { cursor: pointer; color: #1565c0; } code { background: #f3f3f3; padding: 0 .25em; }
.state { color: #666; font-weight: normal; font-size: .85em; }
.caveats { background: #fff8e1; border-left: 4px solid #f9a825; padding: .3em 1em; }
.caveats ol { margin: .3em 0; } a.note { font-size: .85em; white-space: nowrap; }
p.caveat { border-left: 3px solid #f9a825; padding-left: .6em; }
</style>
</head>
<body>
<h1>{{ title }}</h1>
{% if description %}<p>{{ description }}</p>{% endif %}
<p class="meta">{{ arms }}<br>{{ generated | md }} {{ figures_note | md }}</p>
{% if banner %}<p class="banner">{{ banner }}</p>{% endif %}

<h2 id="findings">1. {{ findings_title }}</h2>
{% if summary %}<p><strong>{{ summary }}</strong></p>{% endif %}
<p class="meta">{{ findings_note }}</p>
{% if caveats %}
<div class="caveats" id="caveats"><h3>{{ caveats_title }}</h3>
<ol>{% for c in caveats %}<li id="caveat-{{ loop.index }}">{{ c | md }}</li>
{% endfor %}</ol></div>
{% endif %}
{% for d in differs %}
{% if loop.first %}<h3>{{ differs_title }}</h3>{% endif %}
{% if d.table %}<p class="caption">{{ d.caption }}</p>{{ table(d.table) }}
{% else %}<p class="meta">{{ d.caption }}</p>{% endif %}
{% endfor %}
{% for group in findings %}
<h3><a href="#phase-{{ group.phase }}">{{ group.title }}</a></h3>
<ul class="findings">
{% for f in group["items"] %}<li><span class="v v-{{ f.verdict }}"></span>{{ f.text }}
{%- for n in f.marks %} <a class="note" href="#caveat-{{ n }}">[{{ note_word.format(n=n) }}]</a>
{%- endfor %}</li>
{% endfor %}
</ul>
{% else %}
<p>{{ no_findings }}</p>
{% endfor %}
{% if withheld %}<p class="meta">{{ withheld }}</p>{% endif %}

{% for s in sections %}
<h2 id="phase-{{ s.anchor }}">{{ s.title }} <span class="state">· {{ s.state }}</span></h2>
{% if s.note %}<p>{{ s.note | md }}</p>{% endif %}
{% for c in s.caveats %}<p class="meta caveat"><a href="#caveat-{{ c.n }}">
{{- note_word.format(n=c.n) }}</a>{{ note_sep }}{{ c.text | md }}</p>
{% endfor %}
{% for b in s.blocks %}
{% if b.kind == "figure" %}
<figure><img src="{{ b.src }}" alt="{{ b.alt }}"><figcaption>{{ b.caption }}</figcaption></figure>
{% else %}
{% if b.caption %}<p class="caption">{{ b.caption }}</p>{% endif %}
{{ table(b.table) }}
{% endif %}
{% endfor %}
{% if s.details %}
{% for d in s.details %}
<details><summary>{{ d.summary }}</summary>{{ table(d.table) }}
{% if d.note %}<p class="caption">{{ d.note }}</p>{% endif %}</details>
{% endfor %}
{% endif %}
{% endfor %}
</body>
</html>
"""
)


def _findings_groups(found: dict, lang: str) -> list[dict]:
    titles = TEXT[lang]["phase"]
    notes = F.caveat_notes([f for fs in found.values() for f in fs])
    return [
        {
            "phase": p,
            "title": titles.get(p, p),
            "items": [
                {"text": text, "verdict": f.verdict, "marks": F.caveat_marks(f, notes)}
                for f, text in F.render_all(fs, lang)
            ],
        }
        for p, fs in found.items()
        if fs
    ]


def _pairs(study) -> list[tuple[str, str]]:
    """The arm pairs the study compares, as the comparison reads them (its ``pairs``, else
    baseline and candidate, else the first two arms); none with one arm."""
    labels = [a.label for a in study.arms]
    c = study.compare
    if len(labels) < 2 or c is None:
        return []
    pairs = list(c.pairs) or [(c.baseline or labels[0], c.candidate or labels[1])]
    return [(a, b) for a, b in pairs if a != b]


def _differs(study, store: Store, lang: str) -> list[dict]:
    """Per compared pair, what differs between the two arms' servers: the notebook's "What
    differs" table (:func:`tibenchlib.envcapture.config_diff` of their captures)."""
    pairs = _pairs(study)
    if not pairs:
        return []
    Tx = TEXT[lang]
    captures = store.environment_captures(study.study)
    out = []
    for a, b in pairs:
        if a not in captures or b not in captures:
            out.append({"caption": Tx["differs_none"].format(a=a, b=b), "table": None})
            continue
        d = config_diff(captures, a, b)
        if not len(d):
            out.append({"caption": Tx["differs_same"].format(a=a, b=b), "table": None})
            continue
        d = d.rename(columns={"setting": Tx["setting"]}).astype(str)
        out.append(
            {"caption": Tx["differs_n"].format(a=a, b=b, n=len(d)), "table": as_table(d, lang)}
        )
    return out


def _section_caveats(found: dict, phase: str, lang: str) -> list[dict]:
    """The caveats of one phase's findings, with their numbers in the findings' list: shown
    at the top of the phase's section, beside its tables."""
    notes = F.caveat_notes([f for fs in found.values() for f in fs])
    marks = sorted({n for f in found.get(phase, []) for n in F.caveat_marks(f, notes)})
    return [{"n": n, "text": notes[n - 1].say(lang)} for n in marks]


def _caveats(found: dict, lang: str) -> list[str]:
    """Every distinct caveat of the study's findings, in ``lang``, numbered as the findings'
    marks number them."""
    return [c.say(lang) for c in F.caveat_notes([f for fs in found.values() for f in fs])]


def _summary(found: dict, lang: str) -> str:
    """The study's answer in one sentence: how many findings say what."""
    v = [f.verdict for fs in found.values() for f in fs]
    if not v:
        return ""
    n = {k: v.count(k) for k in ("better", "worse", "equivalent", "inconclusive")}
    other = len(v) - sum(n.values())
    return say(
        "f_summary", lang, n=len(v), better=n["better"], worse=n["worse"],
        same=n["equivalent"], open=n["inconclusive"], other=other,
    )  # fmt: skip


def _params_hint(study) -> str:
    return f"{study.study}.yaml" if study is not None else "PARAMS"


def build_report(study: str, *, lang: str = "en", fmt: str = "html") -> Path:
    """Write the study's report: ``report/<study>.html`` (en) or ``report/<study>.zh.html``.

    Parameters
    ----------
    study
        The study's name (its directory under ``data/``).
    lang
        "en" or "zh": every heading, sentence, table header and figure label.
    fmt
        "html" only, for now.

    Returns
    -------
    Path
        The HTML file. Its figures (PNG) and tables (CSV, Markdown) are written under
        ``report/figures/`` and ``report/tables/``, and the findings to
        ``results/findings.json``.
    """
    Tx = _texts(lang)  # an unknown language fails before anything is written
    if fmt != "html":
        raise ValueError(f"format must be 'html', not {fmt!r}")
    sdir = paths.study_dir(study)
    if not sdir.exists():
        raise FileNotFoundError(f"no study {study!r}: {sdir} does not exist (run it first)")
    out = report_dir(study)
    for d in (out / "figures", out / "tables"):
        d.mkdir(parents=True, exist_ok=True)
        for old in d.glob(f"*_{lang}.*"):
            old.unlink()
    s = _load_study(study)
    live = study_in_progress(study)
    store = Store.for_study(s) if s is not None else None
    found = F.study_findings(s, store) if s is not None else {}
    if s is not None:
        F.save(study, found)
    ctx = _Ctx(s, store, lang, out, found)
    sections = []
    for n, ph in enumerate(registry.PHASES, 2):
        st = phase_status(study, ph.name, loaded=s, store=store, live=live)
        sec = Section(ph.name, Tx["section"].format(n=n, title=Tx["phase"][ph.name]), Tx[st.state])
        if st.state == "not_run":
            sec.note = Tx["not_run_text"].format(
                cmd=f"tibench run {_params_hint(s)} --phase {ph.name}"
            )
        elif st.state == "running":
            sec.note = Tx["running_text"]
        elif st.state == "failed":
            sec.note = st.error
        if st.state in ("done", "partial"):
            PHASE_SECTIONS[ph](ctx, sec)
            sec.caveats = _section_caveats(found, ph.name, lang)
        sections.append(sec)
    for p, fs in found.items():
        ctx.withheld[p] = ctx.withheld.get(p, 0) + sum(F.impossible(f.figure) for f in fs)
    fmt_where = "{t} {k} 个" if lang == "zh" else "{t} ({k})"
    where = [fmt_where.format(t=Tx["phase"][p], k=k) for p, k in ctx.withheld.items() if k]
    sep = "\u3001" if lang == "zh" else ", "
    withheld = Tx["withheld"].format(n=sum(ctx.withheld.values()), where=sep.join(where))
    arms = Tx["arms"].format(arms=sep.join(a.label for a in s.arms) if s is not None else DASH)
    page = PAGE.render(
        html_lang="zh-CN" if lang == "zh" else "en",
        title=Tx["title"].format(study=study),
        description=s.description_in(lang) if s is not None else "",
        arms=arms,
        generated=Tx["generated"].format(
            study=study, when=_dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
        ),
        figures_note=Tx["figures"].format(study=study),
        banner=Tx["live"].format(pid=live) if live else "",
        findings_title=Tx["findings"],
        findings_note=Tx["findings_note"],
        findings=_findings_groups(found, lang),
        caveats=_caveats(found, lang),
        caveats_title=Tx["caveats"],
        note_word=Tx["note"],
        note_sep="：" if lang == "zh" else ": ",
        differs=_differs(s, store, lang) if s is not None else [],
        differs_title=Tx["differs"],
        summary=_summary(found, lang),
        no_findings=Tx["no_findings"],
        withheld=withheld if where else "",
        sections=sections,
    )
    target = report_path(study, lang)
    target.write_text(page, encoding="utf-8")
    return target
