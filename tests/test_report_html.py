"""`tibench report`: the HTML file, its figures and tables, from executed notebooks in every
state a study can be in (done, failed, still running, not run). The notebooks here are written
the way papermill writes them; the report of a real executed study is checked in
tests/test_notebooks.py."""

from __future__ import annotations

import base64
import io
import os
import re

import matplotlib
import matplotlib.pyplot as plt
import nbformat
import pandas as pd
import pytest

from tibenchlib import cli, paths
from tibenchlib.notebook import PHASE_NOTEBOOKS
from tibenchlib.report import html

matplotlib.use("Agg")
CODE_MARK = "CODE_THAT_MUST_NOT_SHOW = 42"


def _png() -> str:
    fig, ax = plt.subplots(figsize=(2, 1))
    ax.plot([1, 2], [3, 4])
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()


def _notebook(title: str, *, state: str = "done", svg: bool = False) -> nbformat.NotebookNode:
    table = pd.DataFrame({"threads": [1, 2], "TPS": ["1,234", "2,345"]})
    fig = {"image/png": _png(), "text/plain": "<Figure>"}
    if svg:
        fig["image/svg+xml"] = '<svg xmlns="http://www.w3.org/2000/svg"><rect/></svg>'
    params = nbformat.v4.new_code_cell("params_path = 'params/x.yaml'  # the study")
    params.metadata["tags"] = ["injected-parameters"]
    c1 = nbformat.v4.new_code_cell(CODE_MARK)
    c1.outputs = [
        nbformat.v4.new_output("display_data", {"text/markdown": f"Headline of {title}"}),
        nbformat.v4.new_output(
            "display_data", {"text/html": table.to_html(), "text/plain": "table"}
        ),
    ]
    c2 = nbformat.v4.new_code_cell("plot()")
    c2.outputs = [nbformat.v4.new_output("display_data", fig)]
    cells = [nbformat.v4.new_markdown_cell(f"# {title}\n\nWhat it shows."), params, c1, c2]
    for c in cells:
        c.metadata["papermill"] = {"status": "completed"}
    pm = {"start_time": "2026-01-01T00:00:00", "end_time": "2026-01-01T00:01:00"}
    pm["exception"] = None
    if state == "running":
        pm["end_time"] = None
        c2.metadata["papermill"]["status"] = "running"
    if state == "failed":
        pm["exception"] = True
        c2.outputs = [
            nbformat.v4.new_output(
                "error", ename="QueryError", evalue="table missing", traceback=[]
            )
        ]
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["papermill"] = pm
    return nb


@pytest.fixture
def study(tmp_path, monkeypatch):
    monkeypatch.setenv("TIBENCH_DATA", str(tmp_path))
    d = paths.study_dir("s1") / "notebooks"
    d.mkdir(parents=True)
    states = {"environment": "done", "prepare": "done", "sweep": "failed", "compare": "running"}
    for phase, state in states.items():
        nb = _notebook(f"{phase} notebook", state=state, svg=phase == "environment")
        nbformat.write(nb, d / PHASE_NOTEBOOKS[phase])
    return "s1"


def test_phase_states(study):
    got = {p: html.phase_status(study, p).state for p in PHASE_NOTEBOOKS}
    assert got == {
        "environment": "done",
        "prepare": "done",
        "sweep": "failed",
        "compare": "running",
        "numa": "not_run",
        "tpch_scaling": "not_run",
        "dm": "not_run",
        "ycsb": "not_run",
        "tpcc": "not_run",
    }
    assert html.phase_status(study, "sweep").error == "QueryError: table missing"


def test_report_html_sections_in_phase_order_without_code(study):
    out = html.build_report(study)
    assert out == paths.study_dir(study) / "report" / "s1.html"
    page = out.read_text(encoding="utf-8")
    assert CODE_MARK not in page and "params/x.yaml" not in page
    # contents first, then headlines, then each phase in the study's order, every one present
    toc = page.index('href="#headlines"')  # the contents list links the headlines first
    heads = [page.index(f'id="phase-{p}"') for p in PHASE_NOTEBOOKS]
    assert toc < page.index('id="headlines"') < heads[0] and heads == sorted(heads)
    assert all(f'href="#phase-{p}"' in page for p in PHASE_NOTEBOOKS)
    assert "5. NUMA (not run)" in page and "tibench run PARAMS --phase numa" in page
    assert "3. Sweep (failed)" in page and "QueryError: table missing" in page
    assert "4. A/B comparison (in progress)" in page and "partial" in page
    # the headline table of a phase appears before any phase section
    assert page.index("Headline of prepare notebook") < heads[0]
    # self-contained: figures inline, no script fetched from elsewhere
    assert 'src="data:image/png;base64,' in page and 'alt="environment figure 1' in page
    assert not re.search(r"<script[^>]+src=\"https?://", page) and "cdnjs" not in page


def test_report_writes_figures_and_tables(study):
    html.build_report(study)
    rep = paths.study_dir(study) / "report"
    figs = sorted(p.name for p in (rep / "figures").iterdir())
    assert figs == [
        "00_environment_01.png",
        "00_environment_01.svg",
        "01_prepare_01.png",
        "03_compare_01.png",
    ]
    assert (rep / "figures" / "00_environment_01.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    t = pd.read_csv(rep / "tables" / "01_prepare_01.csv", encoding="utf-8-sig")
    assert list(t.columns) == ["threads", "TPS"] and t["TPS"].tolist() == ["1,234", "2,345"]
    assert (rep / "tables" / "01_prepare_01.md").read_text().startswith("| threads | TPS |")


def test_report_in_chinese_and_from_the_cli(study, capsys):
    assert cli.main(["report", study, "--lang", "zh"]) == 0
    out = capsys.readouterr()
    page = (paths.study_dir(study) / "report" / "s1.html").read_text(encoding="utf-8")
    assert "目录" in page and "5. NUMA 绑定(未运行)" in page and 'lang="zh-CN"' in page
    assert out.out.strip().endswith("s1.html") and "numa" in out.err and "未运行" in out.err


def test_report_errors_name_the_study_and_the_option(tmp_path, monkeypatch):
    monkeypatch.setenv("TIBENCH_DATA", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="no study 'ghost'"):
        html.build_report("ghost")
    (tmp_path / "s2").mkdir()
    with pytest.raises(ValueError, match="lang must be one of en, zh, not 'fr'"):
        html.build_report("s2", lang="fr")
    with pytest.raises(ValueError, match="format must be 'html', not 'pdf'"):
        html.build_report("s2", fmt="pdf")


def test_a_run_in_progress_is_said_at_the_top(study):
    from tibenchlib.lock import study_lock

    assert html.study_in_progress(study) is None
    with study_lock(study):
        assert html.study_in_progress(study) == os.getpid()
        page = html.build_report(study).read_text(encoding="utf-8")
    assert f"in progress (pid {os.getpid()})" in page
    assert page.index("in progress (pid") < page.index('href="#headlines"')
    assert html.study_in_progress(study) is None


def test_a_cell_tagged_headline_leads_its_phase(study):
    p = paths.study_dir(study) / "notebooks" / PHASE_NOTEBOOKS["prepare"]
    nb = nbformat.read(p, as_version=4)
    nb.cells[3].metadata["tags"] = ["headline"]  # the figure, not the first table
    nbformat.write(nb, p)
    page = html.build_report(study).read_text(encoding="utf-8")
    first_section = page.index('id="phase-environment"')
    assert page.index('alt="prepare: headline figure"') < first_section
    assert page.index("Headline of prepare notebook") > first_section


def test_tables_for_pasting_from_pandas_html_of_every_shape():
    from bs4 import BeautifulSoup

    def frame(df, **kw):
        return html._table_frame(BeautifulSoup(df.to_html(**kw), "html.parser").find("table"))

    cols = pd.MultiIndex.from_product([["TPS", "p95 (ms)"], ["A", "B"]])
    wide = pd.DataFrame([[1, 2, 0.5, 0.6], [3, 4, 0.7, 0.8]], columns=cols)
    got = frame(wide.rename_axis("threads"))
    assert list(got.columns) == ["threads", "TPS A", "TPS B", "p95 (ms) A", "p95 (ms) B"]
    dup = pd.DataFrame([[1, 2]], columns=["x", "x"])
    assert list(frame(dup).columns) == ["x", "x (2)"]
    assert list(frame(dup, index=False).iloc[0]) == ["1", "2"]
    assert frame(pd.DataFrame({"a": []})) is None


def test_compare_headline_is_each_pair_formatted_for_people(study):
    from tibenchlib import published
    from tibenchlib.compare import compare_table

    cmp = compare_table(published.seed000_runs(), "v5.1.4", "v6.0.0")
    res = paths.study_dir(study) / "results"
    res.mkdir(parents=True)
    (res / "compare.json").write_text(cmp.to_json(orient="records"), encoding="utf-8")
    page = html.build_report(study, lang="zh").read_text(encoding="utf-8")
    head = page[page.index('id="headlines"') : page.index('id="phase-environment"')]
    assert "v6.0.0 / v5.1.4" in head and "TPS 提升 (%) [95% 置信区间]" in head
    assert "+8.5%" in head and "592,352" in head  # point select, 900 threads (n = 1)
    md = paths.study_dir(study) / "report" / "tables" / "03_compare_v5.1.4_vs_v6.0.0_zh.md"
    assert "| oltp_read_write | 300 | 9,822 | 10,142 |" in md.read_text(encoding="utf-8")
