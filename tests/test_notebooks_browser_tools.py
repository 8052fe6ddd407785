"""The browser pass of test_notebooks_browser.py for the tool phases' notebooks (TPC-H, DM, YCSB,
TPC-C): JupyterLab in Chromium, Run All on the zh copy of the CI study, no error output and no
English sentence; a file of its own so that it runs beside the first half on another worker.
"""

from __future__ import annotations

import notebook_lab
import pytest
from test_notebooks_browser import NOTEBOOKS as FIRST_HALF

from tibenchlib.notebook import PHASE_NOTEBOOKS

pytestmark = [pytest.mark.slow, pytest.mark.notebook]

#: the fixtures of the browser pass, shared with the other file of the pass
browser, lab, lab_page = notebook_lab.browser, notebook_lab.lab, notebook_lab.lab_page
zh_params = notebook_lab.zh_params

NOTEBOOKS = [n for n in sorted(PHASE_NOTEBOOKS.values()) if n not in FIRST_HALF]


def test_the_two_halves_open_every_notebook():
    assert NOTEBOOKS and FIRST_HALF
    assert sorted(NOTEBOOKS + FIRST_HALF) == sorted(PHASE_NOTEBOOKS.values())


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_runs_in_jupyterlab_and_a_zh_study_speaks_chinese(lab_page, zh_params, name):
    notebook_lab.run_all_on_the_zh_study(lab_page, zh_params, name)
