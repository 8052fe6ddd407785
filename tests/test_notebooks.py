"""Every notebook in notebooks/ is executed by papermill with params/ci.yaml into
data/ci/notebooks/ (Makefile then runs nbval --nbval-lax on those executed copies).

The notebooks hold their own checks as assert cells; a notebook that fails here fails CI. A
notebook that exists in notebooks/ but is not executed here fails the last test.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tibenchlib import paths, published
from tibenchlib.notebook import PHASE_NOTEBOOKS, execute_phase_notebook, executed_path

ROOT = Path(__file__).resolve().parent.parent
CI_PARAMS = ROOT / "params" / "ci.yaml"
present = [p for p, nb in PHASE_NOTEBOOKS.items() if (ROOT / "notebooks" / nb).exists()]
executed: list[str] = []


@pytest.fixture(scope="module", autouse=True)
def fresh_ci_study(sysbench_bin):
    # The CI study starts from nothing, so the suite sees prepare and the sweep do real work;
    # nbval's re-execution afterwards then exercises resume (everything already measured).
    shutil.rmtree(paths.study_dir("ci"), ignore_errors=True)
    yield
    from tibenchlib.dm.servers import target_server
    from tibenchlib.server import embedded

    embedded().stop()
    target_server().stop()  # the dm phase's second server


@pytest.mark.notebook
@pytest.mark.slow
@pytest.mark.parametrize("phase", present)
def test_notebook_executes(phase):
    out = execute_phase_notebook("ci", phase, CI_PARAMS, progress=False)
    nb = json.loads(out.read_text())
    meta = nb["metadata"]["papermill"]
    assert meta["parameters"]["params_path"] == str(CI_PARAMS)
    errors = [
        o
        for c in nb["cells"]
        if c["cell_type"] == "code"
        for o in c.get("outputs", [])
        if o.get("output_type") == "error"
    ]
    assert not errors
    executed.append(phase)


@pytest.mark.notebook
@pytest.mark.slow
def test_every_notebook_is_executed_by_the_suite():
    on_disk = {p.name for p in (ROOT / "notebooks").glob("*.ipynb")}
    # the one notebook that is no phase: Makefile's `test` checks its committed outputs (nbval)
    known = set(PHASE_NOTEBOOKS.values()) | {published.NOTEBOOK}
    assert on_disk <= known, f"notebooks without a phase: {sorted(on_disk - known)}"
    missing = [p for p in present if p not in executed or not executed_path("ci", p).exists()]
    assert not missing, f"not executed by the suite: {missing}"


@pytest.mark.notebook
@pytest.mark.slow
def test_report_of_the_executed_ci_study():
    """`tibench report ci` on the study just executed: findings first, every phase, figures,
    no code, and never the embedded server's password."""
    from tibenchlib.report import html
    from tibenchlib.server import embedded

    out = html.build_report("ci", lang="zh")
    page = out.read_text(encoding="utf-8")
    assert out.name == "ci.zh.html" and 'id="findings"' in page
    assert all(f'id="phase-{p}"' in page for p in PHASE_NOTEBOOKS)
    assert "import tibenchlib" not in page and "params_path" not in page
    secret = (embedded().root / "credentials").read_text().strip()
    assert secret and secret not in page
    report = out.parent
    for f in [*(report / "tables").iterdir(), *(report / "figures").glob("*.svg")]:
        assert secret not in f.read_text(encoding="utf-8-sig"), f
    assert list((report / "figures").glob("sweep_*_zh.png"))
    (zh_md,) = (report / "tables").glob("compare_*_vs_*_zh.md")
    assert zh_md.read_text().count("TPS 提升 (%) [95% 置信区间]") == 1
