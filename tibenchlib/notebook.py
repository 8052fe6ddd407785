"""The study's notebooks: where they run and what they do when opened.

Executed in batch, papermill runs each phase's notebook into ``data/<study>/notebooks/`` with the
interpreter that runs tibench (a kernelspec for ``sys.executable`` under ``data/jupyter/``), and
only the params file's path and flags are injected (secrets stay in the environment). That
kernel writes its progress bars and log records to the terminal, not into the executed
notebook (see :mod:`tibenchlib.terminal`); papermill's own cell log and the outputs' text reprs
are not echoed. Anything else the kernel writes to stderr is logged as a warning.

Opened in JupyterLab, a notebook calls :func:`open_study` first: a relative ``params_path``
resolves against the project root whatever the kernel's directory, and the notebook's
``measure`` parameter decides between measuring and showing what the catalog already holds:

``"auto"`` (the notebooks' default)
    measure only when the catalog holds nothing for this phase, otherwise show the stored
    results and say how to measure more;
``True`` (what ``tibench run`` injects)
    run the phase: resume what is missing, everything with ``redo``;
``False``
    never measure: show what is stored, or say which command measures it.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from . import paths, phases, registry, terminal
from .db import secret_env_names, secrets_for_kernels
from .params import load_study
from .report import words
from .store import Store

#: Each phase's notebook in ``notebooks/`` (from :mod:`tibenchlib.registry`).
PHASE_NOTEBOOKS = {p.name: p.notebook for p in registry.PHASES}
KERNEL_NAME = "tibench"
log = logging.getLogger(__name__)


def executed_path(study: str, phase: str) -> Path:
    return paths.executed_notebook(study, PHASE_NOTEBOOKS[phase])


# -- batch execution ---------------------------------------------------------------------------
def kernel_dir() -> Path:
    """A Jupyter data directory holding the kernelspec of the running interpreter."""
    return paths.jupyter_dir()


def ensure_kernelspec() -> str:
    """Write (or refresh) the ``tibench`` kernelspec for ``sys.executable``; return its name.

    Papermill would otherwise start whichever ``python3`` kernel Jupyter finds first, which
    need not be the environment tibench is installed in. The kernel leaves its process's stderr
    uncaptured and is marked as a batch kernel, so progress and logs reach the terminal and not
    the notebook (:mod:`tibenchlib.terminal`); the kernel application's own log (start-up
    notices, a notice of the interrupt a kernel may get as it is shut down) is silenced.
    """
    f = paths.kernelspec_file(KERNEL_NAME)
    spec = {
        "argv": [
            sys.executable,
            "-m",
            "ipykernel_launcher",
            "-f",
            "{connection_file}",
            "--IPKernelApp.capture_fd_output=False",
            "--IPKernelApp.log_level=CRITICAL",
        ],
        "display_name": "Python (tibench)",
        "language": "python",
        "env": {terminal.BATCH_ENV: "1"},
    }
    if not f.is_file() or json.loads(f.read_text()) != spec:
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(json.dumps(spec, indent=1))
    return KERNEL_NAME


class KernelStderr:
    """File-like sink for what the kernel writes to stderr besides tibench's own progress and
    logs (those go to the terminal directly): a library's message, logged as a warning."""

    def __init__(self, logger: logging.Logger | None = None):
        self.log = logger or log
        self._buf = ""

    def write(self, text: str) -> int:
        self._buf += text
        *lines, self._buf = self._buf.split("\n")
        for line in lines:
            self._line(line)
        return len(text)

    def _line(self, line: str) -> None:
        if line.strip():
            self.log.warning("%s", line)

    def flush(self) -> None:
        if self._buf:
            self._line(self._buf)
            self._buf = ""


class AutosaveNotice(logging.Filter):
    """Drops papermill's "Autosave too slow … Backing off" warning: papermill already saves less
    often by itself on a busy machine, and there is nothing for the user to do."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Autosave too slow")


def execute_phase_notebook(
    study: str,
    phase: str,
    params_path: str | Path,
    *,
    redo: bool = False,
    yes: bool = False,
    arms: list[str] | None = None,
    progress: bool = True,
) -> Path:
    """Run one phase's notebook; raises papermill's ``PapermillExecutionError`` on failure."""
    import papermill as pm  # import inside: Jupyter's heavy stack, only to execute a notebook

    src = paths.notebook_file(PHASE_NOTEBOOKS[phase])
    out = executed_path(study, phase)
    out.parent.mkdir(parents=True, exist_ok=True)
    kernel = ensure_kernelspec()
    jp = os.environ.get("JUPYTER_PATH", "")
    if str(kernel_dir()) not in jp.split(os.pathsep):
        os.environ["JUPYTER_PATH"] = os.pathsep.join(x for x in (str(kernel_dir()), jp) if x)
    # papermill's INFO records name the notebooks and cells: the terminal shows the phase instead
    pm_log = logging.getLogger("papermill")
    pm_log.setLevel(logging.WARNING)
    if not any(isinstance(f, AutosaveNotice) for f in pm_log.filters):
        pm_log.addFilter(AutosaveNotice())
    err = KernelStderr(logging.getLogger("tibench.kernel"))
    # the kernel reads the study's passwords from a 0600 file, not from its environment
    secret_names = secret_env_names(load_study(params_path).model_dump())
    try:
        with secrets_for_kernels(secret_names, paths.private_dir(study)):
            pm.execute_notebook(
                str(src),
                str(out),
                parameters={
                    "params_path": str(Path(params_path).resolve()),
                    "measure": True,
                    "redo": redo,
                    "yes": yes,
                    "arms": arms or [],
                    "progress": progress,
                },
                cwd=str(paths.ROOT),
                progress_bar=False,  # the kernel draws the phase's own bar (runs, queries...)
                log_output=False,  # it would print every output's repr (`<IPython… object>`)
                stderr_file=err,
                kernel_name=kernel,
            )
    finally:
        err.flush()
    return out


# -- notebooks opened by a person --------------------------------------------------------------
def resolve_params_path(params_path: str | Path) -> Path:
    """An absolute path as given; a relative one from the project root, else from the current
    directory (a kernel opened in ``notebooks/`` finds ``params/demo.yaml`` all the same)."""
    p = Path(params_path).expanduser()
    if p.is_absolute():
        return p
    for base in (paths.ROOT, Path.cwd()):
        if (base / p).is_file():
            return (base / p).resolve()
    return (paths.ROOT / p).resolve()


def shown_path(p: Path) -> str:
    """The path as a reader of the project would type it: relative to the root when inside."""
    try:
        return str(p.resolve().relative_to(paths.ROOT))
    except ValueError:
        return str(p)


def run_command(params_file: str, phase: str, redo: bool = False) -> str:
    return f"tibench run {params_file} --phase {phase}" + (" --redo" if redo else "")


@dataclass
class Session:
    """One notebook's study: what it reads, and whether it measures."""

    study: object  # tibenchlib.params.Study
    params_file: Path
    phase: str
    arms: list[str]
    measure: bool
    stored: bool
    redo: bool = False
    yes: bool = False
    notes: list[str] = field(default_factory=list)

    @property
    def lang(self) -> str:
        s = self.study
        return s.lang if s.lang != "en" else s.compare.lang

    @property
    def command(self) -> str:
        return run_command(shown_path(self.params_file), self.phase)

    def header(self) -> str:
        """The notebook's first output: which study file, which study, measure or show."""
        s = self.study
        arms = self.arms
        ph = registry.get(self.phase)
        if ph.own_arms:
            arms = self.only or ph.arms(s)

        lines = [
            words.say(
                "header",
                self.lang,
                path=shown_path(self.params_file),
                study=s.study,
                description=(
                    ("\uff1a" if self.lang == "zh" else ": ") + d
                    if (d := s.description_in(self.lang))
                    else ""
                ),
                arms=", ".join(f"`{a}`" for a in arms),
            )
        ]
        lines += self.notes
        return "\n\n".join(lines)

    def show_header(self) -> None:
        """Display :meth:`header` as the notebook's first output. When this session measures,
        the output is replaced once :meth:`results` has measured, so a saved notebook does not
        say "Measuring now." of a phase already measured."""
        from IPython.display import Markdown, display  # import inside: IPython, in a kernel only

        self._header = display(Markdown(self.header()), display_id=True)

    def results(self, *, progress: bool = True) -> pd.DataFrame:
        """The phase's rows: measured now when :attr:`measure`, else read from the catalog."""
        if not self.measure:
            return stored_results(self.study, self.phase, self.arms)
        rows = phases.run_phase(
            self.study,
            self.phase,
            yes=self.yes,
            arms=self.only if registry.get(self.phase).runs_given_arms else self.arms,
            redo=self.redo,
            progress=progress,
        )
        self._measured()
        return rows

    def _measured(self) -> None:
        """The header's note once measuring is over: measured, and how to measure again."""
        from IPython.display import Markdown  # import inside: IPython, in a kernel only

        if self._header is None:
            return
        self.notes = [words.say("measured", self.lang, cmd=self.command)]
        self._header.update(Markdown(self.header()))

    only: list[str] | None = None  # the arms given by the notebook's ``arms`` parameter
    _header: object = None  # the displayed header (an IPython display handle), once shown


def open_study(
    params_path: str | Path,
    phase: str,
    *,
    measure: bool | str = "auto",
    redo: bool = False,
    yes: bool = False,
    arms: list[str] | None = None,
) -> Session:
    """Load the study of a notebook and decide whether it measures (see the module's doc).

    The study's language (``lang``) becomes this process's :func:`current_lang`: the language of
    the notebook's sentences that are not given a session.
    """
    if phase not in PHASE_NOTEBOOKS:
        raise ValueError(f"unknown phase '{phase}' (phases: {', '.join(PHASE_NOTEBOOKS)})")
    if measure not in (True, False, "auto"):
        raise ValueError(f"measure must be True, False or 'auto', not {measure!r}")
    terminal.route_logging()
    p = resolve_params_path(params_path)
    study = load_study(p)
    selected = list(arms or [a.label for a in study.arms])
    stored = phase_stored(study, phase, selected)
    do = bool(redo or measure is True or (measure == "auto" and not stored))
    if phase == "compare":
        do = False  # computed from the sweep's runs: never measures
    s = Session(study, p, phase, selected, do, stored, redo=redo, yes=yes, only=arms or None)
    global _CURRENT_LANG
    _CURRENT_LANG = lang = s.lang
    cmd = run_command(shown_path(p), phase)
    if phase == "compare":
        if not phase_stored(study, "sweep", selected):
            sweep = run_command(shown_path(p), "sweep")
            s.notes.append(words.say("compare_no_sweep", lang, cmd=sweep))
    elif not do and stored:
        s.notes.append(words.say("stored", lang, cmd=cmd))
    elif not do:
        s.notes.append(words.say("not_measured", lang, cmd=cmd))
    elif stored and not redo:
        s.notes.append(words.say("resuming", lang))
    else:
        s.notes.append(words.say("measuring_redo" if redo else "measuring", lang))
    return s


_CURRENT_LANG = "en"


def current_lang() -> str:
    """The language of the study the last :func:`open_study` of this process opened ("en"
    before any): what a notebook's section builders use when no session is passed."""
    return _CURRENT_LANG


def phase_stored(study, phase: str, arms: list[str]) -> bool:
    """Whether the catalog (or the phase's results) already holds this phase's results."""
    if not paths.catalog_file(study.study).exists() and not study.results_url:
        return False
    return registry.get(phase).stored(study, Store.for_study(study), arms)


def stored_results(study, phase: str, arms: list[str]) -> pd.DataFrame:
    """A phase's rows as its run returns them, read from the catalog (no server)."""
    return registry.get(phase).results(study, Store.for_study(study), arms)
