"""``tibench report STUDY``: one self-contained HTML file a DBA can send.

The study's executed notebooks (``data/<study>/notebooks/``) are joined in phase order,
environment first, behind a table of contents and the headline table of each phase, and rendered
by nbconvert without code cells. A phase not run, failed or still running gets a section that
says so. Every figure is also written as PNG (and SVG when the notebook holds one) under
``data/<study>/report/figures/``, every table as CSV and Markdown under
``data/<study>/report/tables/``.
"""

from __future__ import annotations

import base64
import copy
import html as _html
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import pandas as pd

from .. import paths, registry
from ..notebook import PHASE_NOTEBOOKS
from . import tables
from .comparison import export

__all__ = ["PhaseStatus", "phase_status", "study_in_progress", "build_report", "report_dir", "TEXT"]

#: The report's own words; the notebooks keep the language they were executed in.
TEXT = {
    "en": {
        "title": "tibench report: study {study}",
        "toc": "Contents",
        "headlines": "Headlines",
        "phase": {p.name: p.title("en") for p in registry.PHASES},
        "section": "{n}. {title} ({state})",
        "done": "done",
        "not_run": "not run",
        "running": "in progress",
        "failed": "failed",
        "not_run_text": "This phase has not been run. Run it with `{cmd}`.",
        "running_text": (
            "This phase was still running when the report was built (its notebook was last "
            "written at {when}): what follows is partial. Build the report again when it ends."
        ),
        "failed_text": "This phase failed: `{error}`. Its notebook is `{path}`.",
        "no_headline": "No table in this phase.",
        "live": (
            "A tibench run of this study is in progress (pid {pid}): phases may be incomplete;"
            " build the report again when it ends."
        ),
        "generated": "Built from the executed notebooks under `data/{study}/notebooks/`.",
        "figures": "Figures (PNG, SVG) and tables (CSV, Markdown): `data/{study}/report/`.",
    },
    "zh": {
        "title": "tibench 测试报告:{study}",
        "toc": "目录",
        "headlines": "主要结果",
        "phase": {p.name: p.title("zh") for p in registry.PHASES},
        "section": "{n}. {title}({state})",
        "done": "已完成",
        "not_run": "未运行",
        "running": "运行中",
        "failed": "失败",
        "not_run_text": "此阶段尚未运行。运行命令:`{cmd}`。",
        "running_text": (
            "生成报告时此阶段仍在运行(notebook 最后写入于 {when}),以下结果不完整。"
            "运行结束后请重新生成报告。"
        ),
        "failed_text": "此阶段运行失败:`{error}`。notebook:`{path}`。",
        "no_headline": "此阶段没有表格。",
        "live": "此测试正在运行(pid {pid}):部分阶段可能不完整,运行结束后请重新生成报告。",
        "generated": "根据 `data/{study}/notebooks/` 下已执行的 notebook 生成。",
        "figures": "图片(PNG、SVG)和表格(CSV、Markdown)位于 `data/{study}/report/`。",
    },
}


@dataclass
class PhaseStatus:
    """One phase as the report shows it: ``state`` is done, not_run, running or failed."""

    phase: str
    state: str
    path: Path
    nb: nbformat.NotebookNode | None = None
    error: str = ""
    when: str = ""
    figures: list[Path] = field(default_factory=list)


def report_dir(study: str) -> Path:
    return paths.report_dir(study)


def _texts(lang: str) -> dict:
    if lang not in TEXT:
        raise ValueError(f"lang must be one of {', '.join(TEXT)}, not {lang!r}")
    return TEXT[lang]


def phase_status(study: str, phase: str) -> PhaseStatus:
    """Read one phase's executed notebook and say whether it ran, is running or failed.

    papermill writes the executed copy as it goes: ``end_time`` stays empty and cells are
    marked ``running``/``pending`` until it ends, and ``exception`` is set when a cell failed.
    """
    p = paths.executed_notebook(study, PHASE_NOTEBOOKS[phase])
    if not p.exists():
        return PhaseStatus(phase, "not_run", p)
    try:
        nb = nbformat.read(p, as_version=4)
    except (json.JSONDecodeError, nbformat.reader.NotJSONError) as e:
        # caught mid-write by papermill
        return PhaseStatus(phase, "running", p, error=str(e))
    pm = nb.metadata.get("papermill", {})
    cell_states = {c.metadata.get("papermill", {}).get("status") for c in nb.cells}
    when = str(pm.get("end_time") or pm.get("start_time") or "")
    if pm.get("exception") or any(
        o.get("output_type") == "error" for c in nb.cells for o in c.get("outputs", [])
    ):
        errs = [
            f"{o.get('ename')}: {o.get('evalue')}"
            for c in nb.cells
            for o in c.get("outputs", [])
            if o.get("output_type") == "error"
        ]
        return PhaseStatus(
            phase, "failed", p, nb, error=(errs or ["see the notebook"])[0], when=when
        )
    if pm and (not pm.get("end_time") or cell_states & {"running", "pending"}):
        return PhaseStatus(phase, "running", p, nb, when=when)
    return PhaseStatus(phase, "done", p, nb, when=when)


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


# ------------------------------------------------------------------------------- notebooks


def _is_table(o) -> bool:
    return "<table" in "".join(o.get("data", {}).get("text/html", ""))


def _headline(nb: nbformat.NotebookNode) -> list:
    """The outputs that lead the phase: those of a cell tagged ``headline``, else the first
    table (with the sentence displayed just before it in the same cell)."""
    code = [c for c in nb.cells if c.cell_type == "code"]
    tagged = [c for c in code if "headline" in c.metadata.get("tags", [])]
    for c in tagged or code:
        outs = [o for o in c.get("outputs", []) if o.get("output_type") != "stream"]
        for i, o in enumerate(outs):
            if _is_table(o) or tagged:
                return copy.deepcopy(outs if tagged else outs[max(0, i - 1) : i + 1])
    return []


def _img(data: dict, alt: str) -> str:
    # nbconvert's lab template writes no alt text: the report embeds its figures itself
    if "image/png" in data:
        src = "data:image/png;base64," + "".join(data["image/png"]).replace("\n", "")
    else:
        svg = "".join(data["image/svg+xml"]).encode()
        src = "data:image/svg+xml;base64," + base64.b64encode(svg).decode()
    return f'<img src="{src}" alt="{_html.escape(alt)}" style="max-width:100%">'


def _figure_stem(phase: str, n: int) -> str:
    return f"{list(PHASE_NOTEBOOKS).index(phase):02d}_{phase}_{n:02d}"


def _body_cells(nb: nbformat.NotebookNode, phase: str) -> list:
    """The phase's cells without papermill's parameter cells (their source names local paths);
    each figure gets an alternative text naming its file under ``report/figures/``."""
    out = []
    n = 0
    for c in nb.cells:
        tags = c.metadata.get("tags", [])
        if c.cell_type == "code" and {"parameters", "injected-parameters"} & set(tags):
            continue
        c = copy.deepcopy(c)
        if c.cell_type == "markdown":
            # phase titles become level-2 headings under the report's own level-1 sections
            c.source = re.sub(r"^(#{1,5}) ", r"#\1 ", c.source, flags=re.M)
        for o in c.get("outputs", []):
            data = o.get("data", {})
            if "image/png" in data or "image/svg+xml" in data:
                n += 1
                o["data"] = {
                    "text/html": _img(data, f"{phase} figure {n}: {_figure_stem(phase, n)}")
                }
        out.append(c)
    return out


def _save_figures(st: PhaseStatus, out: Path) -> list[Path]:
    files = []
    n = 0
    for c in st.nb.cells if st.nb else []:
        for o in c.get("outputs", []):
            data = o.get("data", {})
            if "image/png" not in data and "image/svg+xml" not in data:
                continue
            n += 1
            stem = out / _figure_stem(st.phase, n)
            if "image/png" in data:
                p = stem.with_suffix(".png")
                p.write_bytes(base64.b64decode("".join(data["image/png"])))
                files.append(p)
            if "image/svg+xml" in data:
                p = stem.with_suffix(".svg")
                p.write_text("".join(data["image/svg+xml"]), encoding="utf-8")
                files.append(p)
    return files


def _cells(tr) -> list[str]:
    out = []
    for cell in tr.find_all(["th", "td"]):
        span = int(cell.get("colspan", 1) or 1)
        out += [cell.get_text(" ", strip=True)] * span
    return out


def _unique(names: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for n in names:
        seen[n] = seen.get(n, 0) + 1
        out.append(n if seen[n] == 1 else f"{n} ({seen[n]})")
    return out


def _table_frame(t) -> pd.DataFrame | None:
    """One HTML table as text cells: header rows (``thead``; several for pandas' column or
    index names) joined per column, pandas' row numbers dropped, names made unique."""
    head = t.find("thead")
    hrows = [_cells(tr) for tr in head.find_all("tr")] if head else []
    body = t.find("tbody") or t
    rows = [r for r in (_cells(tr) for tr in body.find_all("tr")) if r]
    if not hrows:
        if len(rows) < 2:
            return None
        hrows, rows = rows[:1], rows[1:]
    if not rows:
        return None
    width = max(len(r) for r in hrows + rows)
    hrows = [r + [""] * (width - len(r)) for r in hrows]
    rows = [r + [""] * (width - len(r)) for r in rows]
    names = [" ".join(x for x in col if x) for col in zip(*hrows, strict=True)]
    df = pd.DataFrame(rows, columns=_unique(names))
    if names[0] == "" and df.iloc[:, 0].tolist() == [str(i) for i in range(len(df))]:
        df = df.iloc[:, 1:]  # pandas' row numbers: nothing to paste
    return df


def _html_tables(nb: nbformat.NotebookNode) -> list[pd.DataFrame]:
    from bs4 import BeautifulSoup

    frames = []
    for c in nb.cells:
        for o in c.get("outputs", []):
            if not _is_table(o):
                continue
            soup = BeautifulSoup("".join(o["data"]["text/html"]), "html.parser")
            frames += [df for df in map(_table_frame, soup.find_all("table")) if df is not None]
    return frames


def _compare_tables(study: str, lang: str) -> list[tuple[str, str, pd.DataFrame]]:
    """Each A/B pair of the compare phase's results as the notebooks show it (the seeds' table,
    improvements as ``+4.9% [+1.6, +8.4]``): (baseline, candidate, table)."""
    res = paths.phase_results(study, "compare")
    if not res.exists():
        return []
    cmp = pd.read_json(res)
    if not len(cmp):
        return []
    return [
        (str(a), str(b), tables.compare_table(g, lang))
        for (a, b), g in cmp.groupby(["baseline", "candidate"], sort=False)
    ]


def _save_tables(st: PhaseStatus, out: Path, lang: str, study: str) -> list[Path]:
    files: list[Path] = []
    idx = list(PHASE_NOTEBOOKS).index(st.phase)
    for k, df in enumerate(_html_tables(st.nb) if st.nb else [], 1):
        files += export(df, out / f"{idx:02d}_{st.phase}_{k:02d}")
    for a, b, table in _compare_tables(study, lang) if st.phase == "compare" else []:
        files += export(tables.plain(table, lang), out / f"{idx:02d}_compare_{a}_vs_{b}_{lang}")
    return files


# ---------------------------------------------------------------------------------- report


def _md(text: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_markdown_cell(text)


def _params_hint(statuses: list[PhaseStatus]) -> str:
    """The study file the executed notebooks were given (papermill records it), for the
    command that runs a missing phase; ``PARAMS`` when no phase has run."""
    for st in statuses:
        pp = (st.nb.metadata.get("papermill", {}).get("parameters", {}) if st.nb else {}).get(
            "params_path"
        )
        if pp:
            p = Path(pp)
            return str(p.relative_to(paths.ROOT)) if p.is_relative_to(paths.ROOT) else str(p)
    return "PARAMS"


def _section_cells(st: PhaseStatus, n: int, T: dict, study: str, params: str) -> list:
    title = T["phase"][st.phase]
    sec = T["section"].format(n=n, title=title, state=T[st.state])
    head = f'<a id="phase-{st.phase}"></a>\n\n# {sec}'
    cells = [_md(head)]
    if st.state == "not_run":
        cmd = f"tibench run {params} --phase {st.phase}"
        cells.append(_md(T["not_run_text"].format(cmd=cmd)))
        return cells
    if st.state == "running":
        cells.append(_md("**" + T["running_text"].format(when=st.when or "?") + "**"))
    if st.state == "failed":
        rel = st.path.relative_to(paths.ROOT) if st.path.is_relative_to(paths.ROOT) else st.path
        cells.append(_md("**" + T["failed_text"].format(error=st.error, path=rel) + "**"))
    return cells + (_body_cells(st.nb, st.phase) if st.nb else [])


def _output_cell(outputs: list) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell("")
    cell.outputs = [nbformat.from_dict(o) for o in outputs]
    return cell


def _headline_cells(st: PhaseStatus, study: str, lang: str, T: dict, params: str) -> list:
    """What leads a phase in the headlines: for compare, each A/B pair's table in the report's
    language (from the results); otherwise the notebook's headline outputs or a sentence."""
    pairs = _compare_tables(study, lang) if st.phase == "compare" and st.nb else []
    if pairs:
        return [
            _output_cell(
                [
                    nbformat.v4.new_output("display_data", {"text/markdown": f"**{b} / {a}**"}),
                    nbformat.v4.new_output(
                        "display_data", {"text/html": tables.styled(table, lang).to_html()}
                    ),
                ]
            )
            for a, b, table in pairs
        ]
    outs = _headline(st.nb) if st.nb else []
    if outs:
        for o in outs:
            if {"image/png", "image/svg+xml"} & set(o.get("data", {})):
                o["data"] = {"text/html": _img(o["data"], f"{st.phase}: headline figure")}
        return [_output_cell(outs)]
    if st.state == "not_run":
        return [_md(T["not_run_text"].format(cmd=f"tibench run {params} --phase {st.phase}"))]
    return [_md(T["no_headline"])] if st.state == "done" else []


def _diagnosis_cells(study: str, lang: str, out: Path) -> list:
    """The sweep's bottleneck diagnosis (table, note, one sentence per workload) from the
    catalog, its table also saved as CSV and Markdown; nothing when it holds no sweep runs."""
    from ..params import ParamsError
    from ..studyplan import study_from
    from .diagnosis import TITLE, diagnosis_table, note, sentences, study_diagnosis

    try:
        d = study_diagnosis(study_from(study), lang=lang)
    except (ParamsError, ValueError) as e:
        return [_md(f"### {TITLE[lang]}\n\n{e}")]
    if not len(d):
        return []
    table = diagnosis_table(d, lang)
    idx = list(PHASE_NOTEBOOKS).index("sweep")
    export(tables.plain(table, lang), out / f"{idx:02d}_sweep_diagnosis_{lang}")
    lines = "\n".join(f"- {x}" for x in sentences(d))
    return [
        _md(f'<a id="diagnosis"></a>\n\n### {TITLE[lang]}'),
        _output_cell(
            [
                nbformat.v4.new_output(
                    "display_data", {"text/html": tables.styled(table, lang).to_html()}
                )
            ]
        ),
        _md(f"{note(lang)}\n\n{lines}"),
    ]


def _report_notebook(study: str, statuses: list[PhaseStatus], lang: str):
    T = _texts(lang)
    params = _params_hint(statuses)
    pid = study_in_progress(study)
    cells = [_md(f"# {T['title'].format(study=study)}\n\n{T['generated'].format(study=study)} "
                 f"{T['figures'].format(study=study)}")]  # fmt: skip
    if pid:
        cells.append(_md("**" + T["live"].format(pid=pid) + "**"))
    toc = [f"## {T['toc']}", "", f"- [{T['headlines']}](#headlines)"]
    for i, st in enumerate(statuses, 1):
        toc.append(f"- [{i}. {T['phase'][st.phase]}](#phase-{st.phase}) — {T[st.state]}")
    cells.append(_md("\n".join(toc)))
    cells.append(_md(f'<a id="headlines"></a>\n\n## {T["headlines"]}'))
    for i, st in enumerate(statuses, 1):
        sec = T["section"].format(n=i, title=T["phase"][st.phase], state=T[st.state])
        cells.append(_md(f"### {sec}"))
        cells += _headline_cells(st, study, lang, T, params)
    cells += _diagnosis_cells(study, lang, paths.report_tables_dir(study))
    for i, st in enumerate(statuses, 1):
        cells += _section_cells(st, i, T, study, params)
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["title"] = T["title"].format(study=study)
    return nb


def _render(nb: nbformat.NotebookNode, lang: str) -> str:
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(
        template_name="lab", exclude_input=True, exclude_input_prompt=True,
        exclude_output_prompt=True, embed_images=True,
    )  # fmt: skip
    body, _ = exporter.from_notebook_node(nb)
    # Self-contained and readable offline: drop the scripts fetched from CDNs (require.js,
    # MathJax); the report has no widgets or formulas that need them.
    body = re.sub(r"<script[^>]*\bsrc=\"https?://[^\"]*\"[^>]*>\s*</script>", "", body)
    body = re.sub(r"<script[^>]*>(?:(?!</script>).)*?https?://cdn(?:(?!</script>).)*</script>", "",
                  body, flags=re.S)  # fmt: skip
    body = re.sub(r'<html lang="[^"]*"', f'<html lang="{"zh-CN" if lang == "zh" else "en"}"', body)
    return body


def build_report(study: str, *, lang: str = "en", fmt: str = "html") -> Path:
    """Write ``data/<study>/report/<study>.html`` with figures and tables beside it.

    Parameters
    ----------
    study
        The study's name (its directory under ``data/``).
    lang
        "en" or "zh": the report's own headings and sentences, and the A/B table for pasting.
    fmt
        "html" only, for now.

    Returns
    -------
    Path
        The HTML file.
    """
    _texts(lang)  # an unknown language fails before anything is written
    if fmt != "html":
        raise ValueError(f"format must be 'html', not {fmt!r}")
    sdir = paths.study_dir(study)
    if not sdir.exists():
        raise FileNotFoundError(f"no study {study!r}: {sdir} does not exist (run it first)")
    figs, tabs = paths.report_figures_dir(study), paths.report_tables_dir(study)
    for d in (figs, tabs):
        d.mkdir(parents=True, exist_ok=True)
        for old in d.iterdir():
            old.unlink()
    statuses = [phase_status(study, p) for p in PHASE_NOTEBOOKS]
    for st in statuses:
        st.figures = _save_figures(st, figs)
        _save_tables(st, tabs, lang, study)
    page = _render(_report_notebook(study, statuses, lang), lang)
    target = paths.report_file(study)
    target.write_text(page, encoding="utf-8")
    return target
