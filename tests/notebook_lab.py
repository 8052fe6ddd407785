"""JupyterLab in Chromium on the CI study, for the browser pass (test_notebooks_browser*.py): the
browser, the server, the zh copy of the study and the Run All check of one notebook.

JupyterLab starts headless on 127.0.0.1 with a token; Debian's ``chromium`` is driven by
Playwright through ``executable_path`` (no browser download).
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
from test_notebooks_zh import english_runs, host_names, visible_text

from tibenchlib import paths

ROOT = paths.ROOT
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
TIMEOUT_MS = 600_000
#: JupyterLab's first-start question, which would cover the notebook in every screenshot.
NEWS_QUESTION = "Would you like to receive official Jupyter news?"
#: The status bar once the notebook's kernel has started and waits ("No Kernel | Initializing"
#: before; "Python 3 (ipykernel) | Idle" then).
KERNEL_IDLE = re.compile(r"(?<!No Kernel) \| Idle")


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
        # no search for language servers, which runs `npm prefix -g` under Node.js at every
        # start (about 5 s of CPU here); the pass uses no code intelligence
        "--LanguageServerManager.autodetect=False",
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


@pytest.fixture(scope="module")
def lab_page(browser, lab, request):
    """One JupyterLab tab for a test file's notebooks, as a person keeps one open: the
    application loads once (about 5 s of Chromium's CPU each time it loads), and each notebook
    is opened from the File menu, then closed with its kernel. The tab has a workspace of its
    own (the file's name): JupyterLab would otherwise reopen what another tab left open."""
    url, token = lab
    page = browser.new_page(viewport={"width": 1920, "height": 1800})
    try:
        page.goto(f"{url}/lab/workspaces/{request.module.__name__}?token={token}", timeout=120_000)
        page.get_by_role("menuitem", name="File", exact=True).wait_for(timeout=120_000)
        yield page
    finally:
        page.close()


@pytest.fixture(scope="module")
def zh_params(clone_data_dir, ci_study) -> Path:
    """A copy of params/ci.yaml saying ``lang: zh`` (the same study, so the same catalog), under
    data/ci/browser/, once the CI study is measured."""
    text = (ROOT / "params" / "ci.yaml").read_text(encoding="utf-8")
    text = re.sub(r"(?m)^description:.*$", "description: 内置 MariaDB 上的小规模测试", text)
    out = paths.study_dir("ci") / "browser" / "ci_zh.yaml"
    out.parent.mkdir(parents=True, exist_ok=True)
    # written whole, then renamed: the other browser file's kernels may be reading it
    part = out.with_suffix(f".{os.getpid()}.part")
    part.write_text(text + "\nlang: zh\n", encoding="utf-8")
    part.replace(out)
    return out


def _study_copy(name: str, params: Path) -> Path:
    """The committed notebook with ``params_path`` set to ``params`` relative to the project root,
    under data/ci/browser/."""
    rel = str(params.relative_to(ROOT))
    src = json.loads((paths.notebooks_dir() / name).read_text())
    for cell in src["cells"]:
        if "parameters" in cell.get("metadata", {}).get("tags", []):
            text = "".join(cell["source"]).replace('"params/demo.yaml"', json.dumps(rel))
            assert json.dumps(rel) in text, f"{name}: no params_path default to replace"
            cell["source"] = text
    out = paths.study_dir("ci") / "browser" / name
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(src, indent=1))
    return out


def _menu(page, menu: str, item: str) -> None:
    page.get_by_role("menuitem", name=menu, exact=True).click()
    page.locator(".lm-Menu-itemLabel", has_text=item).first.click()


def _close_and_shut_down(page) -> None:
    """File, Close and Shut Down: the notebook's tab closes and its kernel stops (JupyterLab asks
    first), so the next notebook is the only one open, as a person would leave the tab."""
    if not page.locator(".jp-NotebookPanel").count():
        return
    _menu(page, "File", "Close and Shut Down")
    accept = page.locator(".jp-Dialog .jp-mod-accept")
    try:
        accept.wait_for(timeout=10_000)
        accept.click()
    except Exception:  # noqa: BLE001 - a JupyterLab that does not ask
        pass
    page.locator(".jp-NotebookPanel").first.wait_for(state="detached", timeout=60_000)


def _errors(nb: dict) -> list[str]:
    return [
        f"cell {i}: {o.get('ename')}: {o.get('evalue')}"
        for i, c in enumerate(nb["cells"])
        if c["cell_type"] == "code"
        for o in c.get("outputs", [])
        if o.get("output_type") == "error"
    ]


def run_all_on_the_zh_study(page, zh_params: Path, name: str) -> None:
    """Open notebook ``name`` on the zh study in JupyterLab's tab ``page`` (File, Open from
    Path), Run All, save, screenshot, then close it and shut its kernel down; then check the
    saved file: no error output, every code cell ran, some output shown, and no English
    sentence in what a reader sees of it."""
    path = _study_copy(name, zh_params)
    rel = path.relative_to(ROOT)
    before = path.stat().st_mtime
    try:
        _menu(page, "File", "Open from Path…")
        dialog = page.locator(".jp-Dialog")
        dialog.locator("input").fill(str(rel))
        dialog.get_by_role("button", name="Open").click()
        page.locator(".jp-NotebookPanel").first.wait_for(timeout=120_000)
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
        _close_and_shut_down(page)
    assert not news, f"{rel}: JupyterLab's news question covers the screenshot"
    assert path.stat().st_mtime > before, f"{rel}: JupyterLab did not save the notebook"
    nb = json.loads(path.read_text())
    assert not _errors(nb), f"{rel}: error output after Run All: {_errors(nb)}"
    ran = [c for c in nb["cells"] if c["cell_type"] == "code" and c.get("execution_count")]
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert len(ran) == len(code), f"{rel}: {len(ran)} of {len(code)} code cells ran"
    # what a reader sees of the outputs: something, and in Chinese (names aside)
    allowed = host_names()
    shown, english = 0, []
    for i, cell in enumerate(nb["cells"]):
        for o in cell.get("outputs", []) if cell["cell_type"] == "code" else []:
            text = visible_text(o)
            shown += bool(text.strip())
            english += [f"cell {i}: {r}" for r in english_runs(text, allowed)]
    assert shown, f"{rel}: no output at all"
    assert not english, f"{rel} on a zh study prints English: {english}"
