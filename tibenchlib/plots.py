"""Plots people would rather look at than read. Error bars are tibench's own intervals
(Student t over repeated runs, Fieller for ratios), never seaborn's default bootstrap."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns


def _facets(df: pd.DataFrame, col: str = "workload"):
    keys = list(dict.fromkeys(df[col])) if len(df) else []
    n = max(len(keys), 1)
    fig, axes = plt.subplots(1, n, figsize=(4.8 * n, 3.6), squeeze=False)
    return fig, list(zip(keys, axes[0], strict=False))


def metric_vs_threads(
    cells: pd.DataFrame, *, ylabel: str = "TPS", title: str | None = None, log2_x: bool = True
):
    """Mean of a metric against client threads, one line per arm, t-interval bars.

    ``cells`` has columns workload, arm, threads, mean, ci_low, ci_high (as from
    :func:`tibenchlib.stats.summarize_cells`); rows with n = 1 are drawn without a bar.
    """
    fig, facets = _facets(cells)
    # arms in the order given (the study's), not alphabetical
    palette = dict(zip(dict.fromkeys(cells["arm"]), sns.color_palette(), strict=False))
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
        if log2_x:
            ax.set_xscale("log", base=2)
        ax.set_xticks(sorted(d["threads"].unique()))
        ax.get_xaxis().set_major_formatter(plt.ScalarFormatter())
        ax.set_xlabel("client threads")
        ax.set_ylabel(ylabel)
        ax.set_title(w)
        ax.grid(alpha=0.3)
    if facets:
        facets[0][1].legend(title="arm (mean, 95% t interval)", fontsize=8)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def interval_tps(
    intervals: pd.DataFrame, runs: pd.DataFrame, *, workload: str | None = None, max_runs: int = 12
):
    """Per-interval TPS over time of each run (diagnostic: warm-up, dips, stalls)."""
    r = runs if workload is None else runs[runs["workload"] == workload]
    keys = list(r["run_key"])[:max_runs]
    d = intervals[intervals["run_key"].isin(keys)]
    fig, ax = plt.subplots(figsize=(9, 3.6))
    sns.lineplot(
        data=d, x="t", y="tps", hue="run_key", ax=ax, errorbar=None, legend=len(keys) <= 12
    )
    ax.set_xlabel("seconds into the run")
    ax.set_ylabel("interval TPS")
    ax.set_title(f"interval TPS{' — ' + workload if workload else ''}")
    if ax.get_legend():
        ax.legend(fontsize=6, ncols=2)
    fig.tight_layout()
    return fig


def improvement_bars(cmp: pd.DataFrame, *, delta_pct: float = 2.0, title: str | None = None):
    """Improvement % per thread count with Fieller interval bars, the zero line and the ±δ band."""
    fig, facets = _facets(cmp)
    for w, ax in facets:
        d = cmp[cmp["workload"] == w].sort_values("threads")
        x = range(len(d))
        lo = (d["improvement_pct"] - d["ci_low_pct"]).fillna(0)
        hi = (d["ci_high_pct"] - d["improvement_pct"]).fillna(0)
        ax.axhspan(-delta_pct, delta_pct, color="0.85", label=f"±{delta_pct:g}% (δ)")
        ax.axhline(0, color="0.3", lw=0.8)
        ax.errorbar(list(x), d["improvement_pct"], yerr=[lo, hi], fmt="o", capsize=4)
        for xi, (_, r) in zip(x, d.iterrows(), strict=True):
            if r["ci_low_pct"] is None or r["ci_low_pct"] != r["ci_low_pct"]:
                # no interval: n < 2, or Fieller unbounded (baseline mean not clear of 0)
                ax.annotate(
                    "no interval",
                    (xi, r["improvement_pct"]),
                    fontsize=7,
                    textcoords="offset points",
                    xytext=(4, 4),
                    color="0.35",
                )
        ax.set_xticks(list(x), [str(t) for t in d["threads"]])
        ax.set_xlabel("client threads")
        ax.set_ylabel("improvement % (95% Fieller)")
        ax.set_title(w)
        ax.grid(alpha=0.3, axis="y")
    if facets:
        facets[0][1].legend(fontsize=8)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def tps_with_dips(run_intervals: pd.DataFrame, events: pd.DataFrame, *, title: str = ""):
    """One run's interval TPS over time with its dip (orange) and floor (red) events shaded:
    report 000's "TPS 掉底" made visible."""
    fig, ax = plt.subplots(figsize=(9, 3.2))
    ax.plot(run_intervals["t"], run_intervals["tps"], lw=1, color="0.2")
    for e in events.itertuples() if len(events) else []:
        color = "tab:red" if e.kind == "floor" else "tab:orange"
        ax.axvspan(e.start, e.end, color=color, alpha=0.3, lw=0)
    ax.set_xlabel("seconds into the run")
    ax.set_ylabel("interval TPS")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def query_times(summary: pd.DataFrame, *, mode: str = "power", title: str | None = None):
    """Grouped bars of per-query mean time per arm with t-interval whiskers (report 002's bars)."""
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
    ax.set_ylabel("mean time (s), 95% t interval")
    ax.set_title(title or f"TPC-H query times, {mode}")
    ax.legend(title="arm", fontsize=8)
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    return fig


def query_improvement(summary: pd.DataFrame, *, mode: str = "power", title: str | None = None):
    """Improvement % per query against the base arm, Fieller interval bars, zero line."""
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
            label=f"{arm} vs {base}",
        )
    ax.axhline(0, color="0.3", lw=0.8)
    qs = sorted(d["query"].unique())
    ax.set_xticks(qs, [f"Q{q}" for q in qs], fontsize=8)
    ax.set_ylabel("(t_base − t_arm) / t_base, %")
    ax.set_title(title or f"improvement per query, {mode} (95% Fieller)")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    return fig


def speedup(overall: pd.DataFrame, units: dict, *, title: str | None = None):
    """Geometric-mean speedup against scale units (instances, cores) with the ideal line."""
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
        ax.plot(us, [u / base_units for u in us], ls="--", color="0.5", label="ideal (linear)")
    ax.set_xlabel("scale units (TiFlash instances / cores)")
    ax.set_ylabel("speedup (geometric mean)")
    ax.set_title(title or "speedup against the base arm")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig
