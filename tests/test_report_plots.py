"""Plots in Chinese: every glyph rendered with the CJK font set-up installs (fonts-noto-cjk),
on report 000's and report 002's published figures."""

from __future__ import annotations

import io
import logging
import warnings

import matplotlib
import matplotlib.pyplot as plt
import pytest

from tibenchlib import published
from tibenchlib.compare import compare_table
from tibenchlib.report import plots
from tibenchlib.stats import summarize_cells
from tibenchlib.tpch import scaling

matplotlib.use("Agg")


def _missing_glyphs(make, caplog) -> list[str]:
    """Build figures with ``make()`` and draw each to PNG and SVG; return every missing-glyph
    message, as a warning or through matplotlib's logger."""
    with warnings.catch_warnings(record=True) as w, caplog.at_level(logging.WARNING):
        warnings.simplefilter("always")
        figs = make()
        for fig in figs:
            for fmt in ("png", "svg"):
                fig.savefig(io.BytesIO(), format=fmt)
    msgs = [str(x.message) for x in w] + [r.getMessage() for r in caplog.records]
    return figs, [m for m in msgs if "missing from font" in m or ("Glyph" in m and "missing" in m)]


def _zh_figures():
    runs = published.seed000_runs()
    cells = summarize_cells(runs, metric="tps")
    cmp = compare_table(runs, "v5.1.4", "v6.0.0")
    summary = scaling.query_summary(scaling.seed002_runs(), ["3", "4", "5"])
    return [
        plots.metric_vs_threads(cells, ylabel="TPS", title="v5.1.4 对比 v6.0.0", lang="zh"),
        plots.improvement_bars(cmp, title="TPS 提升(%)", lang="zh"),
        plots.query_times(summary, lang="zh"),
        plots.query_improvement(summary, lang="zh"),
    ]


def test_zh_figures_render_every_glyph(caplog):
    assert plots.use_fonts() is not None, "no CJK font: run make setup (fonts-noto-cjk)"
    figs, missing = _missing_glyphs(_zh_figures, caplog)
    assert missing == []
    texts = {t.get_text() for fig in figs for t in fig.findobj(matplotlib.text.Text)}
    assert {"压测线程", "效率提升比例 (%)", "平均耗时 (s),95% t 区间"} <= texts
    plt.close("all")


def test_without_the_cjk_font_the_check_would_fail(caplog):
    # the control: the same check catches missing glyphs when only DejaVu Sans is in use
    saved = matplotlib.rcParams["font.family"]
    try:
        matplotlib.rcParams["font.family"] = ["DejaVu Sans"]

        def one():
            fig, ax = plt.subplots()
            ax.set_xlabel(plots.LABELS["zh"]["threads"])
            return [fig]

        _, missing = _missing_glyphs(one, caplog)
        assert missing and "DejaVu Sans" in missing[0]
    finally:
        matplotlib.rcParams["font.family"] = saved
        plt.close("all")


def test_labels_have_the_same_keys_and_lang_is_checked():
    assert set(plots.LABELS["en"]) == set(plots.LABELS["zh"])
    with pytest.raises(ValueError, match="lang must be one of en, zh, not 'fr'"):
        plots.speedup(None, {}, lang="fr")


def test_the_ab_plot_draws_the_interval_the_verdict_reads():
    """The bars are the simultaneous interval (the table's verdicts read it), not the per-cell
    one, and the legend says so; a row without one keeps its own interval."""
    import pandas as pd

    cmp = pd.DataFrame(
        {
            "workload": ["oltp_update_non_index"] * 3,
            "threads": [1, 2, 4],
            "improvement_pct": [10.0, 12.0, 1.0],
            "ci_low_pct": [6.0, 8.0, -1.0],
            "ci_high_pct": [14.0, 16.0, 3.0],
            "ci_low_adj_pct": [-2.0, 4.0, float("nan")],
            "ci_high_adj_pct": [22.0, 20.0, float("nan")],
        }
    )
    fig = plots.improvement_bars(cmp, delta_pct=2)
    ax = fig.axes[0]
    (bars,) = ax.containers[0].lines[2]
    spans = sorted((float(s[0][1]), float(s[1][1])) for s in bars.get_segments())
    assert spans == [(-2.0, 22.0), (-1.0, 3.0), (4.0, 20.0)]
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert any("simultaneous" in t for t in legend), legend
    # without simultaneous columns the per-cell interval is drawn and named as such
    fig = plots.improvement_bars(cmp.drop(columns=["ci_low_adj_pct", "ci_high_adj_pct"]))
    (bars,) = fig.axes[0].containers[0].lines[2]
    assert sorted(float(s[0][1]) for s in bars.get_segments()) == [-1.0, 6.0, 8.0]
    assert not any("simultaneous" in t.get_text() for t in fig.legends[0].get_texts())
    plt.close("all")
