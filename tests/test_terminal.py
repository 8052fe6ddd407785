"""Progress and logs go to the terminal, never into a saved document (tibenchlib.terminal), and
``tibench run`` prints a short run: no object reprs, no doubled lines, a summary at the end."""

from __future__ import annotations

import io
import logging
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from tibenchlib import published, terminal

ROOT = str(Path(__file__).resolve().parent.parent)


class FakeTty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture()
def plain(monkeypatch):
    """A process that is no notebook kernel."""
    monkeypatch.delenv(terminal.BATCH_ENV, raising=False)


def test_off_a_tty_a_bar_is_one_line_when_it_closes(plain, monkeypatch):
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    bar = terminal.bar(24, "sweep", "run")
    for _ in range(24):
        bar.set_postfix_str("flush1/oltp_update_non_index/t2/r1")
        bar.update(1)
    assert err.getvalue() == ""  # nothing drawn while it runs
    bar.close()
    out = err.getvalue()
    assert out.count("\n") == 1 and "\r" not in out
    assert out.startswith("sweep: 100%") and "24/24" in out and "flush1/" in out


def test_a_step_bar_leaves_no_line_once_done(plain, monkeypatch):
    """A step within a phase (analyze, load) is drawn while it runs on a terminal, and neither
    a terminal nor a log keeps a line of it: a finished phase leaves its runs' bar only."""
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    bar = terminal.bar(4, "analyze + warm-up", "table", step=True)
    bar.update(4)
    bar.close()
    assert err.getvalue() == ""
    tty = FakeTty()
    monkeypatch.setattr(sys, "stderr", tty)
    bar = terminal.bar(4, "analyze + warm-up", "table", step=True)
    bar.update(2)
    bar.refresh()
    assert "2/4" in tty.getvalue()  # drawn while it runs
    bar.update(2)
    bar.close()
    last = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", tty.getvalue().rsplit("\r", 1)[-1])
    assert last.strip() == ""  # cleared when done (tqdm may move the cursor: an ANSI code)


def test_a_disabled_bar_prints_nothing(plain, monkeypatch):
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    bar = terminal.bar(3, "runs", "run", enabled=False)
    bar.update(3)
    bar.close()
    assert err.getvalue() == ""


def test_on_a_tty_the_bar_redraws_in_place(plain, monkeypatch):
    tty = FakeTty()
    monkeypatch.setattr(sys, "stderr", tty)
    bar = terminal.bar(2, "TPC-H power", "query")
    bar.update(2)
    bar.close()
    assert "\r" in tty.getvalue() and "2/2" in tty.getvalue()


def test_a_batch_kernel_writes_to_its_own_stderr_not_the_notebook(monkeypatch):
    # in a batch kernel sys.stderr is the notebook's stream, sys.__stderr__ the terminal
    notebook_stream, tty = io.StringIO(), FakeTty()
    monkeypatch.setenv(terminal.BATCH_ENV, "1")
    monkeypatch.setattr(sys, "stderr", notebook_stream)
    monkeypatch.setattr(sys, "__stderr__", tty)
    assert terminal.stream() is tty
    bar = terminal.bar(5, "ycsb", "run")
    bar.update(5)
    bar.close()
    assert "5/5" in tty.getvalue() and notebook_stream.getvalue() == ""


def test_a_batch_kernel_sends_logs_and_warnings_to_the_terminal(monkeypatch):
    tty = FakeTty()
    monkeypatch.setenv(terminal.BATCH_ENV, "1")
    monkeypatch.setattr(sys, "__stderr__", tty)
    loggers = [logging.getLogger(n) for n in ("tibenchlib", "py.warnings")]
    saved = [(lg.handlers[:], lg.level, lg.propagate) for lg in loggers]
    try:
        terminal.route_logging()
        terminal.route_logging()  # twice: still one handler
        assert sum(getattr(h, "_tibench_terminal", False) for h in loggers[0].handlers) == 1
        logging.getLogger("tibenchlib.runloop").warning("r1: failed: boom")
        logging.getLogger("tibenchlib.runloop").info("24 runs planned")  # below WARNING
        warnings.warn("a library's warning", FutureWarning, stacklevel=1)
    finally:
        logging.captureWarnings(False)
        for lg, (handlers, level, propagate) in zip(loggers, saved, strict=True):
            lg.handlers[:], lg.level, lg.propagate = handlers, level, propagate
    out = tty.getvalue()
    assert "WARNING tibenchlib.runloop: r1: failed: boom" in out
    assert "runs planned" not in out
    assert "a library's warning" in out


def test_outside_a_batch_kernel_logging_is_left_alone(plain):
    before = logging.getLogger("tibenchlib").handlers[:]
    terminal.route_logging()
    assert logging.getLogger("tibenchlib").handlers == before


def test_run_help_names_keep_server():
    out = subprocess.run(
        [sys.executable, "-m", "tibenchlib.cli", "run", "--help"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert "--keep-server" in out


def test_committed_phase_notebooks_are_what_the_git_filter_commits():
    """`make setup` installs nbstripout (--keep-id) as the notebooks' git filter; the committed
    phase notebooks must already be in that form, or they would show as modified once it is."""
    root = Path(ROOT)
    attrs = (root / ".gitattributes").read_text()
    assert "*.ipynb filter=nbstripout" in attrs
    assert f"notebooks/{published.NOTEBOOK} !filter" in attrs  # committed with outputs (nbval)
    phase_notebooks = sorted(
        str(p) for p in (root / "notebooks").glob("*.ipynb") if p.name != published.NOTEBOOK
    )
    check = subprocess.run(
        [sys.executable, "-m", "nbstripout", "--keep-id", "--verify", *phase_notebooks],
        capture_output=True, text=True,
    )  # fmt: skip
    assert check.returncode == 0, check.stdout + check.stderr


@pytest.mark.notebook
def test_in_a_notebook_the_bar_moves_then_leaves_an_empty_output(plain, tmp_path):
    """A notebook opened by a person: the bar is drawn in the cell while it runs, and the saved
    document keeps an empty output, not the bar's text."""
    import nbformat  # Jupyter's stack, only for the tests that run a kernel
    from nbclient import NotebookClient

    code = (
        "from tibenchlib import terminal\n"
        "bar = terminal.bar(3, 'sweep demo', 'run')\n"
        "for _ in range(3):\n"
        "    bar.update(1)\n"
        "bar.close()\n"
    )
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
    NotebookClient(
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": ROOT}}
    ).execute()
    outputs = nb.cells[0].outputs
    assert [o.output_type for o in outputs] == ["display_data"]  # one output, updated in place
    assert outputs[0].data["text/plain"] == ""


def test_papermill_reads_every_parameter_of_every_phase_notebook(caplog):
    """A parameters line papermill cannot parse (an ``=`` in its comment) is a warning on the
    terminal of every run and a parameter papermill calls unknown."""
    import papermill as pm  # Jupyter's stack, only for the tests that read notebooks

    from tibenchlib.notebook import PHASE_NOTEBOOKS

    wanted = {"params_path", "measure", "redo", "yes", "arms", "progress"}
    for nb in PHASE_NOTEBOOKS.values():
        with caplog.at_level(logging.WARNING, logger="papermill"):
            found = set(pm.inspect_notebook(str(Path(ROOT) / "notebooks" / nb)))
        assert found == wanted, nb
    assert not caplog.records, [r.getMessage() for r in caplog.records]
