"""The notebooks as a person opens them: JupyterLab in Chromium, Run All, no error output.

Runs once the CI study is measured (conftest's ``ci_study``), so each notebook opened
on ``params/ci.yaml`` shows the catalog's results without measuring again. JupyterLab starts
headless on 127.0.0.1 with a token; Debian's ``chromium`` is driven by Playwright through
``executable_path`` (no browser download). Each notebook is a copy of the committed one with
``params_path = "params/ci.yaml"`` (relative: the kernel runs in another directory and must find
it from the project root); after Run All it is saved, and the saved file must hold no error
output. A screenshot of each goes to ``data/ci/screenshots/``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from helpers import free_port

from tibenchlib import paths
from tibenchlib.notebook import PHASE_NOTEBOOKS

ROOT = paths.ROOT
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
TIMEOUT_MS = 600_000
#: JupyterLab's first-start question, which would cover the notebook in every screenshot.
NEWS_QUESTION = "Would you like to receive official Jupyter news?"
#: The status bar once the notebook's kernel has started and waits ("No Kernel | Initializing"
#: before; "Python 3 (ipykernel) | Idle" then).
KERNEL_IDLE = re.compile(r"(?<!No Kernel) \| Idle")

pytestmark = [pytest.mark.slow, pytest.mark.notebook]


@pytest.fixture(scope="module")
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("Playwright for Python is not installed (pip install -e '.[dev]')")
    if not CHROMIUM:
        pytest.skip("Debian's chromium is not installed (scripts/setup-system.sh installs it)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"], headless=True)
        yield b
        b.close()


@pytest.fixture(scope="module")
def lab(clone_data_dir, ci_study, tmp_path_factory):
    """JupyterLab on 127.0.0.1 serving the project root, with a token, once the CI study is
    measured (conftest's ``ci_study``)."""
    token = os.urandom(16).hex()
    port = free_port()
    # the user settings JupyterLab starts with: no news question, no update check (a person's
    # own settings are left alone; these live in a temporary folder)
    settings = tmp_path_factory.mktemp("lab-settings")
    notification = settings / "@jupyterlab" / "apputils-extension"
    notification.mkdir(parents=True)
    (notification / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False})
    )
    cmd = [
        sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ip=127.0.0.1",
        f"--port={port}", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={ROOT}",
        "--LabApp.news_url=None", "--LabApp.check_for_updates_class="
        "jupyterlab.NeverCheckForUpdate", f"--LabApp.user_settings_dir={settings}",
    ]  # fmt: skip
    if os.geteuid() == 0:
        cmd.append("--allow-root")
    log = tmp_path_factory.mktemp("lab") / "lab.log"
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(tmp_path_factory.mktemp("jupyter-config"))}
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2)
                break
            except OSError:
                if proc.poll() is not None:
                    pytest.fail(f"JupyterLab exited: {log.read_text()[-2000:]}")
                time.sleep(0.5)
        else:
            pytest.fail(f"JupyterLab did not answer in 60 s: {log.read_text()[-2000:]}")
        yield url, token
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


def _ci_copy(name: str) -> Path:
    """The committed notebook with the CI study's params path, under data/ci/browser/."""
    src = json.loads((paths.notebooks_dir() / name).read_text())
    for cell in src["cells"]:
        if "parameters" in cell.get("metadata", {}).get("tags", []):
            text = "".join(cell["source"]).replace('"params/demo.yaml"', '"params/ci.yaml"')
            assert '"params/ci.yaml"' in text, f"{name}: no params_path default to replace"
            cell["source"] = text
    out = paths.study_dir("ci") / "browser" / name
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(src, indent=1))
    return out


def _errors(nb: dict) -> list[str]:
    return [
        f"cell {i}: {o.get('ename')}: {o.get('evalue')}"
        for i, c in enumerate(nb["cells"])
        if c["cell_type"] == "code"
        for o in c.get("outputs", [])
        if o.get("output_type") == "error"
    ]


@pytest.mark.parametrize("name", sorted(PHASE_NOTEBOOKS.values()))
def test_notebook_runs_in_jupyterlab(browser, lab, name):
    url, token = lab
    path = _ci_copy(name)
    rel = path.relative_to(ROOT)
    before = path.stat().st_mtime
    page = browser.new_page(viewport={"width": 1920, "height": 1800})
    try:
        # a workspace of its own: JupyterLab would otherwise reopen the notebooks opened before
        # (their kernels too), and the one shown first would be another
        page.goto(f"{url}/lab/workspaces/{rel.stem}/tree/{rel}?token={token}", timeout=120_000)
        # JupyterLab may ask which kernel to start: take the one it proposes (this env's). It
        # asks before any kernel starts, so this notebook's kernel idle means it did not ask.
        select = page.locator(".jp-Dialog").get_by_role("button", name="Select")
        idle = page.locator(".jp-StatusBar-Item", has_text=KERNEL_IDLE).first
        select.or_(idle).first.wait_for(timeout=120_000)
        if select.is_visible():
            select.click()
            idle.wait_for(timeout=120_000)
        page.get_by_role("menuitem", name="Run", exact=True).click()
        page.get_by_text("Run All Cells", exact=True).click()
        # Run All starts at once; then wait until the kernel is idle and no cell is pending
        page.wait_for_timeout(1500)
        page.wait_for_function(
            """() => {
              const busy = document.querySelector(
                ".jp-Notebook-ExecutionIndicator[data-status='busy']");
              const pending = [...document.querySelectorAll(".jp-InputPrompt")]
                .some(e => e.textContent.includes("[*]"));
              return !busy && !pending;
            }""",
            timeout=TIMEOUT_MS,
            polling=1000,
        )
        page.keyboard.press("Control+s")
        for _ in range(60):
            if path.stat().st_mtime > before:
                break
            page.wait_for_timeout(500)
        shots = paths.study_dir("ci") / "screenshots"
        shots.mkdir(parents=True, exist_ok=True)
        news = page.get_by_text(NEWS_QUESTION).count()
        page.screenshot(path=str(shots / f"{Path(name).stem}.png"))
    finally:
        page.close()
    assert not news, f"{rel}: JupyterLab's news question covers the screenshot"
    assert path.stat().st_mtime > before, f"{rel}: JupyterLab did not save the notebook"
    nb = json.loads(path.read_text())
    assert not _errors(nb), f"{rel}: error output after Run All: {_errors(nb)}"
    ran = [c for c in nb["cells"] if c["cell_type"] == "code" and c.get("execution_count")]
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert len(ran) == len(code), f"{rel}: {len(ran)} of {len(code)} code cells ran"


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
