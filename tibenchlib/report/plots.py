"""Plots people would rather look at than read. Error bars are tibench's own intervals
(Student t over repeated runs, Fieller for ratios), never seaborn's default bootstrap.

Every plot takes ``lang`` ("en" or "zh"): Chinese labels follow the seed reports' own words
(压测线程, TPS 提升(%)). Importing this module configures matplotlib's font fallback so CJK
glyphs render with a CJK font (Debian ``fonts-noto-cjk``, installed by ``make setup``) and, in a
Jupyter kernel, has figures shown as PNG and SVG (the HTML report saves both).
"""

from __future__ import annotations

import glob
import logging

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib import font_manager

from .words import check_lang

log = logging.getLogger(__name__)

#: CJK fonts tried in order (Simplified Chinese first); the first one installed is used.
CJK_FONTS = [
    "Noto Sans CJK SC",
    "Noto Sans CJK JP",
    "Source Han Sans SC",
    "WenQuanYi Zen Hei",
    "WenQuanYi Micro Hei",
    "Microsoft YaHei",
    "PingFang SC",
    "SimHei",
]
_FONT_GLOBS = [
    "/usr/share/fonts/**/NotoSansCJK*",
    "/usr/share/fonts/**/wqy-*",
    "/usr/local/share/fonts/**/NotoSansCJK*",
]

LABELS = {
    "en": {
        "threads": "client threads",
        "arm_legend": "arm",
        "clipped": "▲ ▼ interval beyond the axis (its end written beside the mark)",
        "t": "seconds into the run",
        "interval_tps": "interval TPS",
        "improvement": "TPS improvement (%)",
        "no_interval": "no interval",
        "delta": "equivalence margin ±{d:g}%",
        "ci_sim": "95% interval, simultaneous over the pair's cells (the verdict's)",
        "ci_cell": "95% interval",
        "query_time": "mean time (s), 95% t interval",
        "query_times": "TPC-H query times, {mode}",
        "arm": "arm",
        "query_gain": "(t_base − t_arm) / t_base, %",
        "query_gain_title": "improvement per query, {mode} (95% Fieller)",
        "vs": "{arm} vs {base}",
        "units": "scale units (TiFlash instances / cores)",
        "speedup": "speedup (geometric mean)",
        "speedup_title": "speedup against the base arm",
        "ideal": "ideal (linear)",
    },
    "zh": {
        "threads": "压测线程",
        "arm_legend": "测试组",
        "clipped": "▲ ▼ 置信区间超出坐标轴（旁注为区间端点）",
        "t": "运行时间 (s)",
        "interval_tps": "每秒 TPS",
        "improvement": "TPS 提升（%）",
        "no_interval": "无区间",
        "delta": "等价区间 ±{d:g}%",
        "ci_sim": "各测试场景的联合 95% 置信区间（判定所依据的区间）",
        "ci_cell": "95% 置信区间",
        "query_time": "平均耗时 (s),95% t 区间",
        "query_times": "TPC-H 查询耗时,{mode}",
        "arm": "测试组",
        "query_gain": "效率提升比例 (%)",
        "query_gain_title": "各查询效率提升比例,{mode}(95% Fieller 区间)",
        "vs": "{arm} 对比 {base}",
        "units": "扩展单位(TiFlash 实例数 / CPU 核数)",
        "speedup": "加速比(几何平均)",
        "speedup_title": "相对基准组的加速比",
        "ideal": "理想(线性)",
    },
}


def _labels(lang: str) -> dict:
    return LABELS[check_lang(lang)]


def cjk_font() -> str | None:
    """The name of the installed CJK font matplotlib will fall back to, or None."""
    for _ in range(2):
        for name in CJK_FONTS:
            try:
                font_manager.findfont(name, fallback_to_default=False)
                return name
            except ValueError:
                continue
        # fonts installed after matplotlib cached its font list: add the files directly
        files = [f for g in _FONT_GLOBS for f in glob.glob(g, recursive=True)]
        if not files:
            return None
        for f in files:
            try:
                font_manager.fontManager.addfont(f)
            except (OSError, RuntimeError):
                continue
    return None


def use_fonts() -> str | None:
    """Latin text in DejaVu Sans, every glyph it lacks from the CJK font (matplotlib's
    per-glyph fallback over the family list). Returns the CJK font used, or None (then Chinese
    labels render as boxes: install ``fonts-noto-cjk``)."""
    name = cjk_font()
    fam = ["DejaVu Sans"] + ([name] if name else [])
    rest = [f for f in matplotlib.rcParams["font.sans-serif"] if f not in fam]
    # per-glyph fallback runs over font.family; a generic "sans-serif" there resolves to one font
    matplotlib.rcParams["font.family"] = fam + ["sans-serif"]
    matplotlib.rcParams["font.sans-serif"] = fam + rest
    if name is None:
        log.debug("no CJK font found (%s): Chinese labels will not render", ", ".join(CJK_FONTS))
    return name


def _inline_formats() -> None:
    try:
        # import inside: IPython and its inline backend exist only within a notebook kernel
        from IPython import get_ipython

        if get_ipython() is not None and "inline" in matplotlib.get_backend():
            # import inside: as above
            from matplotlib_inline.backend_inline import set_matplotlib_formats

            set_matplotlib_formats("png", "svg")
    except ImportError:
        pass


use_fonts()
_inline_formats()


def clip_extremes(ax, xs, means, lows, highs) -> bool:
    """Keep one extreme interval from flattening the others: the y axis spans the means with a
    margin of twice the narrowest half-width (at least a quarter of the largest mean); a bar that
    reaches beyond is cut at the axis, marked ▲/▼ with its end written beside it. Returns
    whether any bar was cut (the caller then adds the note :data:`LABELS` ``clipped``)."""
    m = np.asarray(means, float)
    lo = np.asarray(lows, float)
    hi = np.asarray(highs, float)
    ok = np.isfinite(m)
    if not ok.any():
        return False
    half = (hi - lo)[ok & np.isfinite(lo) & np.isfinite(hi)] / 2
    pad = max(2 * float(half.min()) if len(half) else 0.0, 0.25 * float(np.abs(m[ok]).max()), 1e-9)
    bottom, top = float(m[ok].min()) - pad, float(m[ok].max()) + pad
    cut = False
    stacked: dict = {}  # ends cut at the same x and side: their labels stacked, not overprinted
    for i in range(len(m)):
        if not ok[i]:
            continue
        x = list(xs)[i]
        for end, lim, mark, va in ((hi[i], top, "^", "bottom"), (lo[i], bottom, "v", "top")):
            if np.isfinite(end) and ((mark == "^" and end > lim) or (mark == "v" and end < lim)):
                cut = True
                k = stacked.get((x, mark), 0)
                stacked[(x, mark)] = k + 1
                dy = 9 * k if mark == "^" else -9 * k
                ax.plot([x], [lim], marker=mark, color="0.2", ms=7, clip_on=False, zorder=5)
                ax.annotate(f"{end:,.0f}" if abs(end) >= 100 else f"{end:,.2g}", (x, lim),
                            textcoords="offset points", xytext=(6, dy), va=va, fontsize=7,
                            color="0.2", annotation_clip=False)  # fmt: skip
    if cut:
        lo_now, hi_now = ax.get_ylim()
        ax.set_ylim(max(lo_now, bottom), min(hi_now, top))
    return cut


def _legend_below(fig, axes, title: str | None = None) -> None:
    """One legend for the figure, below the plots, so it never covers data."""
    handles, labels = {}, {}
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            if lab not in labels:
                handles[lab], labels[lab] = h, lab
    if handles:
        fig.legend(list(handles.values()), list(labels), loc="upper center", title=title,
                   bbox_to_anchor=(0.5, 0.0), ncols=min(len(handles), 5), fontsize=8,
                   frameon=False)  # fmt: skip


def _facets(df: pd.DataFrame, col: str = "workload"):
    keys = list(dict.fromkeys(df[col])) if len(df) else []
    n = max(len(keys), 1)
    fig, axes = plt.subplots(1, n, figsize=(4.8 * n, 3.6), squeeze=False)
    return fig, list(zip(keys, axes[0], strict=False))


def metric_vs_threads(
    cells: pd.DataFrame,
    *,
    ylabel: str = "TPS",
    title: str | None = None,
    log2_x: bool = True,
    lang: str = "en",
):
    """Mean of a metric against client threads, one line per arm, t-interval bars.

    ``cells`` has columns workload, arm, threads, mean, ci_low, ci_high (as from
    :func:`tibenchlib.stats.summarize_cells`); rows with n = 1 are drawn without a bar.
    """
    L = _labels(lang)
    fig, facets = _facets(cells)
    # arms in the order given (the study's), not alphabetical
    palette = dict(zip(dict.fromkeys(cells["arm"]), sns.color_palette(), strict=False))
    cut = False
    for w, ax in facets:
        d = cells[cells["workload"] == w]
        for arm, g in d.groupby("arm", sort=False):
            g = g.sort_values("threads")
            lo = (g["mean"] - g["ci_low"]).where(g["ci_low"].notna(), 0)
            hi = (g["ci_high"] - g["mean"]).where(g["ci_high"].notna(), 0)
            ax.errorbar(
                g["threads"],
                g["mean"],
                yerr=[lo, hi],
                marker="o",
                capsize=3,
                label=arm,
                color=palette[arm],
            )
        cut |= clip_extremes(ax, d["threads"], d["mean"], d["ci_low"], d["ci_high"])
        if log2_x:
            ax.set_xscale("log", base=2)
        ax.set_xticks(sorted(d["threads"].unique()))
        ax.get_xaxis().set_major_formatter(plt.ScalarFormatter())
        ax.set_xlabel(L["threads"])
        ax.set_ylabel(ylabel)
        ax.set_title(w)
        ax.grid(alpha=0.3)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    _legend_below(fig, [ax for _, ax in facets], L["arm_legend"])
    if cut:
        fig.text(0.01, 1.0, L["clipped"], fontsize=7, color="0.3", va="bottom")
    return fig


def interval_tps(
    intervals: pd.DataFrame,
    runs: pd.DataFrame,
    *,
    workload: str | None = None,
    max_runs: int = 12,
    lang: str = "en",
):
    """Per-interval TPS over time of each run (diagnostic: warm-up, dips, stalls)."""
    L = _labels(lang)
    r = runs if workload is None else runs[runs["workload"] == workload]
    keys = list(r["run_key"])[:max_runs]
    d = intervals[intervals["run_key"].isin(keys)]
    fig, ax = plt.subplots(figsize=(9, 3.6))
    sns.lineplot(
        data=d, x="t", y="tps", hue="run_key", ax=ax, errorbar=None, legend=len(keys) <= 12
    )
    ax.set_xlabel(L["t"])
    ax.set_ylabel(L["interval_tps"])
    ax.set_title(f"{L['interval_tps']}{' — ' + workload if workload else ''}")
    if ax.get_legend():
        ax.legend(fontsize=6, ncols=2)
    fig.tight_layout()
    return fig


def verdict_interval(cmp: pd.DataFrame) -> tuple[pd.Series, pd.Series, pd.Series]:
    """Per comparison row, the interval its verdict was read from, as improvement %: the
    simultaneous one (``ci_low_adj_pct``/``ci_high_adj_pct``) where the row has it, else the
    cell's own. Returns (low, high, simultaneous?)."""
    lo, hi = cmp["ci_low_pct"], cmp["ci_high_pct"]
    if "ci_low_adj_pct" not in cmp or "ci_high_adj_pct" not in cmp:
        return lo, hi, pd.Series(False, index=cmp.index)
    sim = cmp["ci_low_adj_pct"].notna() & cmp["ci_high_adj_pct"].notna()
    return lo.where(~sim, cmp["ci_low_adj_pct"]), hi.where(~sim, cmp["ci_high_adj_pct"]), sim


def improvement_bars(
    cmp: pd.DataFrame, *, delta_pct: float = 2.0, title: str | None = None, lang: str = "en"
):
    """Improvement % per thread count with interval bars, the zero line and the ±δ band.

    The bars are the interval the verdicts read (:func:`verdict_interval`): the simultaneous one
    over the comparison's cells where the table has it, so the plot and the table agree; the
    legend names which was drawn."""
    L = _labels(lang)
    fig, facets = _facets(cmp)
    cut = False
    cmp = cmp.assign(**dict(zip(("_lo", "_hi", "_sim"), verdict_interval(cmp), strict=True)))
    for w, ax in facets:
        d = cmp[cmp["workload"] == w].sort_values("threads")
        x = range(len(d))
        lo = (d["improvement_pct"] - d["_lo"]).fillna(0)
        hi = (d["_hi"] - d["improvement_pct"]).fillna(0)
        ax.axhspan(-delta_pct, delta_pct, color="0.85", label=L["delta"].format(d=delta_pct))
        ax.axhline(0, color="0.3", lw=0.8)
        ci = L["ci_sim"] if d["_sim"].any() else L["ci_cell"]
        ax.errorbar(list(x), d["improvement_pct"], yerr=[lo, hi], fmt="o", capsize=4, label=ci)
        cut |= clip_extremes(ax, x, d["improvement_pct"], d["_lo"], d["_hi"])
        for xi, (_, r) in zip(x, d.iterrows(), strict=True):
            if r["_lo"] is None or r["_lo"] != r["_lo"]:
                # no interval: n < 2, or Fieller unbounded (baseline mean not clear of 0)
                ax.annotate(
                    L["no_interval"],
                    (xi, r["improvement_pct"]),
                    fontsize=7,
                    textcoords="offset points",
                    xytext=(4, 4),
                    color="0.35",
                )
        ax.set_xticks(list(x), [str(t) for t in d["threads"]])
        ax.set_xlabel(L["threads"])
        ax.set_ylabel(L["improvement"])
        ax.set_title(w)
        ax.grid(alpha=0.3, axis="y")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    _legend_below(fig, [ax for _, ax in facets])
    if cut:
        fig.text(0.01, 1.0, L["clipped"], fontsize=7, color="0.3", va="bottom")
    return fig


def tps_with_dips(
    run_intervals: pd.DataFrame, events: pd.DataFrame, *, title: str = "", lang: str = "en"
):
    """One run's interval TPS over time with its dip (orange) and floor (red) events shaded:
    report 000's "TPS 掉底" made visible."""
    L = _labels(lang)
    fig, ax = plt.subplots(figsize=(9, 3.2))
    ax.plot(run_intervals["t"], run_intervals["tps"], lw=1, color="0.2")
    for e in events.itertuples() if len(events) else []:
        color = "tab:red" if e.kind == "floor" else "tab:orange"
        ax.axvspan(e.start, e.end, color=color, alpha=0.3, lw=0)
    ax.set_xlabel(L["t"])
    ax.set_ylabel(L["interval_tps"])
    ax.set_title(title)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def query_times(
    summary: pd.DataFrame, *, mode: str = "power", title: str | None = None, lang: str = "en"
):
    """Grouped bars of per-query mean time per arm with t-interval whiskers (report 002's bars)."""
    L = _labels(lang)
    d = summary[summary["mode"] == mode]
    arms = list(dict.fromkeys(d["arm"]))
    queries = sorted(d["query"].unique())
    # at most 11 inches: a notebook shows it whole, bars get thinner instead
    fig, ax = plt.subplots(figsize=(min(11, max(8, 0.45 * len(queries) * len(arms))), 3.6))
    width = 0.8 / max(len(arms), 1)
    for i, (arm, color) in enumerate(zip(arms, sns.color_palette(), strict=False)):
        g = d[d["arm"] == arm].set_index("query").reindex(queries)
        x = [q + (i - (len(arms) - 1) / 2) * width for q in queries]
        lo = (g["mean_s"] - g["ci_low_s"]).clip(lower=0).fillna(0)
        hi = (g["ci_high_s"] - g["mean_s"]).fillna(0)
        ax.bar(x, g["mean_s"], width, yerr=[lo, hi], capsize=2, label=str(arm), color=color)
    ax.set_xticks(queries, [f"Q{q}" for q in queries], fontsize=8)
    ax.set_ylabel(L["query_time"])
    ax.set_title(title or L["query_times"].format(mode=mode))
    ax.legend(title=L["arm"], fontsize=8)
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    return fig


def query_improvement(
    summary: pd.DataFrame, *, mode: str = "power", title: str | None = None, lang: str = "en"
):
    """Improvement % per query against the base arm, Fieller interval bars, zero line."""
    L = _labels(lang)
    base = summary[summary["mode"] == mode]["arm"].iloc[0] if len(summary) else None
    d = summary[(summary["mode"] == mode) & (summary["arm"] != base)]
    arms = list(dict.fromkeys(d["arm"]))
    fig, ax = plt.subplots(figsize=(10, 3.6))
    width = 0.8 / max(len(arms), 1)
    for i, (arm, color) in enumerate(zip(arms, sns.color_palette()[1:], strict=False)):
        g = d[d["arm"] == arm].sort_values("query")
        x = g["query"] + (i - (len(arms) - 1) / 2) * width
        lo = (g["improvement_pct"] - g["ci_low_pct"]).fillna(0)
        hi = (g["ci_high_pct"] - g["improvement_pct"]).fillna(0)
        ax.errorbar(
            x,
            g["improvement_pct"],
            yerr=[lo, hi],
            fmt="o",
            capsize=2,
            color=color,
            label=L["vs"].format(arm=arm, base=base),
        )
    ax.axhline(0, color="0.3", lw=0.8)
    qs = sorted(d["query"].unique())
    ax.set_xticks(qs, [f"Q{q}" for q in qs], fontsize=8)
    ax.set_ylabel(L["query_gain"])
    ax.set_title(title or L["query_gain_title"].format(mode=mode))
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    return fig


def speedup(overall: pd.DataFrame, units: dict, *, title: str | None = None, lang: str = "en"):
    """Geometric-mean speedup against scale units (instances, cores) with the ideal line."""
    L = _labels(lang)
    fig, ax = plt.subplots(figsize=(5, 3.6))
    base_units = None
    for mode, g in overall.groupby("mode", sort=False):
        g = g.assign(u=g["arm"].map(units)).sort_values("u")
        base_units = g["u"].iloc[0]
        lo = (g["speedup"] - g["speedup_ci_low"]).fillna(0)
        hi = (g["speedup_ci_high"] - g["speedup"]).fillna(0)
        ax.errorbar(g["u"], g["speedup"], yerr=[lo, hi], marker="o", capsize=3, label=mode)
    if base_units:
        us = sorted(set(units.values()))
        ax.plot(us, [u / base_units for u in us], ls="--", color="0.5", label=L["ideal"])
    ax.set_xlabel(L["units"])
    ax.set_ylabel(L["speedup"])
    ax.set_title(title or L["speedup_title"])
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig
