"""Every notebook in notebooks/ is executed by papermill with params/ci.yaml into
data/ci/notebooks/, by one real `tibench run params/ci.yaml` as a user runs it (conftest's
``ci_study``; test_notebooks_resume.py then resumes the study and re-executes copies with nbval
--nbval-lax).

The run's terminal output is checked (short, no object reprs, no doubled lines), and so are the
executed notebooks: documents never carry logs (no progress, no ETA, no stderr blocks, no
"Measuring now." once measured).

The notebooks hold their own checks as assert cells; a notebook that fails here fails CI. A
notebook that exists in notebooks/ but is not executed here fails the last test.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from helpers import tibench

from tibenchlib import published
from tibenchlib.notebook import PHASE_NOTEBOOKS, executed_path

ROOT = Path(__file__).resolve().parent.parent
CI_PARAMS = ROOT / "params" / "ci.yaml"
present = [p for p, nb in PHASE_NOTEBOOKS.items() if (ROOT / "notebooks" / nb).exists()]
executed: list[str] = []
#: A progress or ETA line as a log would print it ("run 18/24 …: 18692 TPS, ETA 0.2 min").
LOG_TEXT = re.compile(r"ETA \d|\b\d+/\d+ \[\d|^(INFO|WARNING|DEBUG) \w", re.MULTILINE)
MEASURING = ("Measuring now", "正在测试", "正在重新测试")


@pytest.fixture(scope="module", autouse=True)
def ci_run(clone_data_dir, ci_study):
    """The terminal output (stdout and stderr, interleaved) of `tibench run params/ci.yaml`
    (conftest's ``ci_study``: this file asks first)."""
    return ci_study


@pytest.mark.notebook
@pytest.mark.slow
@pytest.mark.parametrize("phase", present)
def test_notebook_executes(phase, ci_run):
    out = executed_path("ci", phase)
    assert out.exists(), f"no executed notebook for {phase}; the run printed:\n{ci_run.stdout}"
    nb = json.loads(out.read_text())
    meta = nb["metadata"]["papermill"]
    assert meta["parameters"]["params_path"] == str(CI_PARAMS)
    outputs = [o for c in nb["cells"] if c["cell_type"] == "code" for o in c.get("outputs", [])]
    errors = [o for o in outputs if o.get("output_type") == "error"]
    assert not errors
    # documents never carry logs: no stderr block, no progress or ETA line, no log record
    stderr = ["".join(o["text"]) for o in outputs if o.get("name") == "stderr"]
    assert not stderr, f"{phase}: stderr in the executed notebook: {stderr[:3]}"
    texts = [
        "".join(o.get("text", "")) + "".join(o.get("data", {}).get("text/plain", ""))
        + "".join(o.get("data", {}).get("text/markdown", ""))
        for o in outputs
    ]  # fmt: skip
    logged = [m.group(0) for t in texts for m in [LOG_TEXT.search(t)] if m]
    assert not logged, f"{phase}: progress or log text in the executed notebook: {logged[:3]}"
    # the header said "Measuring now." while measuring; the finished document says it measured
    assert not [t for t in texts if any(w in t for w in MEASURING)], phase
    executed.append(phase)


@pytest.mark.notebook
@pytest.mark.slow
def test_the_ci_run_prints_a_short_clean_terminal_output(ci_run):
    out = ci_run.stdout
    assert ci_run.returncode == 0, out
    lines = out.replace("\r", "\n").splitlines()
    assert len(lines) <= 60, f"{len(lines)} lines:\n{out}"
    for bad in ("object at 0x", "<IPython", "WARNING papermill", "INFO papermill", "Executing:"):
        assert bad not in out, f"{bad!r} in:\n{out}"
    doubled = [a for a, b in zip(lines, lines[1:], strict=False) if a.strip() and a == b]
    assert not doubled, f"{doubled} in:\n{out}"
    assert "report: tibench report ci" in out, out
    # the servers the run started are stopped, and it says so
    assert "stopped the embedded MariaDB this run started" in out, out
    assert "still running" not in out, out


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
    secret = embedded()._cred_path.read_text().strip()
    assert secret and secret not in page
    report = out.parent
    for f in [*(report / "tables").iterdir(), *(report / "figures").glob("*.svg")]:
        assert secret not in f.read_text(encoding="utf-8-sig"), f
    assert list((report / "figures").glob("sweep_*_zh.png"))
    (zh_md,) = (report / "tables").glob("compare_*_vs_*_zh.md")
    assert zh_md.read_text().count("TPS 提升 (%) [95% 置信区间]") == 1


@pytest.mark.notebook
@pytest.mark.slow
@pytest.mark.parametrize("command", ["runs", "diagnose"])
def test_terminal_tables_of_the_ci_study_fit_120_columns(command):
    from tibenchlib.texttable import display_width

    for lang in ["en", "zh"] if command == "diagnose" else ["en"]:
        args = [command, "ci", *(["--lang", lang] if command == "diagnose" else [])]
        r = tibench(*args)
        assert r.returncode == 0, r.stderr
        out = r.stdout
        assert out.strip()
        wide = [line for line in out.splitlines() if display_width(line) > 120]
        assert not wide, wide
        assert not re.search(r"\bnan\b", out), out
