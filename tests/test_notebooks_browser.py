"""The notebooks as a person opens them: JupyterLab in Chromium, Run All, no error output, and on a
study that says ``lang: zh``, no English sentence either.

Runs once the CI study is measured (conftest's ``ci_study``), so each notebook opened on a copy of
``params/ci.yaml`` shows the catalog's results without measuring again. JupyterLab starts
headless on 127.0.0.1 with a token; Debian's ``chromium`` is driven by Playwright through
``executable_path`` (no browser download). Each notebook is a copy of the committed one whose
``params_path`` names, relative to the project root (the kernel runs in another directory and must
find it from there), a copy of ``params/ci.yaml`` that says ``lang: zh``: the same study, so the
same catalog, in Chinese. After Run All it is saved, and the saved file must hold no error
output, and what a reader sees of its outputs no English sentence (the detector of
``test_notebooks_zh.py``). A screenshot of each goes to ``data/ci/screenshots/``.

(One pass checks both: JupyterLab's Run All executes every cell as papermill would, so executing
the notebooks a second time in zh would measure nothing new.)
"""

from __future__ import annotations

import notebook_lab
import pytest

from tibenchlib import paths
from tibenchlib.notebook import PHASE_NOTEBOOKS

pytestmark = [pytest.mark.slow, pytest.mark.notebook]

#: the fixtures of the browser pass, shared with the other file of the pass
browser, lab, lab_page = notebook_lab.browser, notebook_lab.lab, notebook_lab.lab_page
zh_params = notebook_lab.zh_params

#: The notebooks opened here; test_notebooks_browser_tools.py opens the others (TPC-H, DM, YCSB,
#: TPC-C), on a worker of its own, so the two halves run side by side.
NOTEBOOKS = [PHASE_NOTEBOOKS[p] for p in ("environment", "prepare", "sweep", "compare", "numa")]


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_runs_in_jupyterlab_and_a_zh_study_speaks_chinese(lab_page, zh_params, name):
    """(Formerly two tests: this one on an English study, and test_notebooks_zh's
    ``test_zh_study_prints_no_english_sentence``, which executed the same notebooks again with
    papermill on the zh copy.)"""
    notebook_lab.run_all_on_the_zh_study(lab_page, zh_params, name)


#: Per table header: how many lines its text takes on the page, and how many words it has (a
#: Chinese header is one word: it must never break between its characters).
HEADER_LINES = """() => [...document.querySelectorAll("th")].map(th => {
  const r = document.createRange(); r.selectNodeContents(th);
  const tops = new Set([...r.getClientRects()].map(x => Math.round(x.top)));
  return [th.textContent.trim(), tops.size,
          th.textContent.trim().split(/[\\s\\-/(（]+/).filter(Boolean).length];
})"""


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_reports_as_a_person_opens_them(browser, lab, lang):
    """The en and zh reports of the CI study in Chromium: findings first, every header on as
    many lines as it has words at most, no cell reading nan or None; a full-page screenshot
    of each goes to data/ci/screenshots/."""
    from tibenchlib.report.html import build_report

    out = build_report("ci", lang=lang)
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    try:
        page.goto(out.as_uri(), timeout=120_000)
        shots = paths.study_dir("ci") / "screenshots"
        shots.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(shots / f"report.{lang}.png"), full_page=True)
        first = page.locator("h2").first.inner_text()
        findings = page.locator("ul.findings li").all_inner_texts()
        headers = page.evaluate(HEADER_LINES)
        cells = page.locator("td").all_inner_texts()
    finally:
        page.close()
    assert first.startswith("1. ") and ("found" in first or "结论" in first), first
    assert len(findings) >= 5, findings
    broken = [(t, lines) for t, lines, words in headers if lines > max(words, 1)]
    assert not broken, f"{lang}: headers broken inside a word: {broken[:5]}"
    assert not [c for c in cells if c.strip().lower() in ("nan", "none", "<na>")]
