"""Where things live. Every path tibench writes to is derived here, nowhere else."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent
#: True in a clone (or an editable install), False when tibench runs from an installed wheel.
IN_CLONE = (_PACKAGE.parent / "pyproject.toml").is_file() and (
    _PACKAGE.parent / "notebooks"
).is_dir()
#: The project root: the clone holding ``tibenchlib/``; for an installed package, the directory
#: tibench was started from (relative params paths and ``data/`` resolve from it).
ROOT = _PACKAGE.parent if IN_CLONE else Path.cwd()
#: Notebooks, example params and reference data as shipped inside an installed package.
SHARE = _PACKAGE / "share"


def data_dir() -> Path:
    """Top of everything tibench writes.

    ``TIBENCH_DATA`` (set by ``tibench --data-dir``) if given; otherwise ``data/`` of the clone,
    or ``data/`` of the current directory when tibench is installed as a package (never the
    package's own folder).
    """
    env = os.environ.get("TIBENCH_DATA")
    if env:
        return Path(env).expanduser().resolve()
    return (ROOT if IN_CLONE else Path.cwd()) / "data"


#: Folders of the data directory that hold tibench's own files, not a study's: the embedded
#: servers, the reference data sets, the Jupyter kernelspec, TPC-H data, the YCSB binding.
SERVER_FOLDER, REFERENCE_FOLDER, JUPYTER_FOLDER, TPCH_FOLDER, YCSB_FOLDER = (
    "server",
    "reference",
    "jupyter",
    "tpch",
    "ycsb",
)
RESERVED_NAMES = (SERVER_FOLDER, REFERENCE_FOLDER, JUPYTER_FOLDER, TPCH_FOLDER, YCSB_FOLDER)


class PathError(ValueError):
    """A name that would put files outside the data directory."""


def _inside(base: Path, name: str, what: str) -> Path:
    """``base / name``, refused unless ``name`` is one plain path component (so the folder sits
    directly in ``base``; a symlink there, e.g. to a larger disk, is the user's choice)."""
    if not name or name in (".", "..") or Path(name).name != name or "\0" in name:
        raise PathError(
            f"{what} '{name}' would write outside {base}: use a plain name "
            "(letters, digits, '_', '-', '.'; not '.' or '..')"
        )
    return base / name


def study_dir(study: str) -> Path:
    """Results of one study: catalog, raw logs, executed notebooks, tables and plots."""
    d = data_dir()
    p = _inside(d, study, "study name")
    if p.name in RESERVED_NAMES:
        raise PathError(f"study name '{study}' is reserved for tibench's own files under {d}")
    return p


def private_dir(study: str) -> Path:
    """A 0700 folder of the study for short-lived secrets (sysbench's credentials file)."""
    p = study_dir(study) / ".private"
    p.mkdir(parents=True, exist_ok=True)
    os.chmod(p, 0o700)
    return p


def servers_dir() -> Path:
    """The folder holding every embedded server's folder."""
    return data_dir() / SERVER_FOLDER


def server_dir(name: str = "embedded") -> Path:
    """The private MariaDB's datadir, socket, logs and credentials (outside any study)."""
    return _inside(data_dir() / SERVER_FOLDER, name, "server name")


def notebooks_dir() -> Path:
    """The phases' notebooks: ``notebooks/`` of the clone, or the copy shipped in the package."""
    return ROOT / "notebooks" if IN_CLONE else SHARE / "notebooks"


def params_examples_dir() -> Path:
    """The example study files (``params/``), in the clone or shipped in the package."""
    return ROOT / "params" if IN_CLONE else SHARE / "params"


def reference_dir() -> Path:
    """Reference data sets: ``data/reference/`` of the clone, or the copy shipped in the package."""
    return ROOT / "data" / REFERENCE_FOLDER if IN_CLONE else SHARE / REFERENCE_FOLDER


def reference_file(*parts: str) -> Path:
    """A file (or folder) of the reference data sets, e.g. ``reference_file("tpch")``."""
    return reference_dir().joinpath(*parts)


def notebook_file(notebook: str) -> Path:
    """One phase's notebook as committed (:func:`notebooks_dir`)."""
    return notebooks_dir() / notebook


# -- inside a study ----------------------------------------------------------------------------
def catalog_file(study: str) -> Path:
    """The study's SQLite catalog (when no ``results_url`` is given)."""
    return study_dir(study) / "results.sqlite"


def results_dir(study: str) -> Path:
    """The phases' tables (``<phase>.json``/``.csv``) and what they export."""
    return study_dir(study) / "results"


def findings_file(study: str) -> Path:
    """What the study found, every phase's findings in en and zh (``findings.json``)."""
    return results_dir(study) / "findings.json"


def raw_dir(study: str, tool: str) -> Path:
    """Raw output of one tool or step (``sysbench``, ``warmup``, ``prepare``, ``tpch``)."""
    return study_dir(study) / "raw" / tool


def environment_dir(study: str) -> Path:
    """Environment captures, one JSON file per arm."""
    return study_dir(study) / "environment"


def executed_notebooks_dir(study: str) -> Path:
    """The phases' notebooks as executed for this study."""
    return study_dir(study) / "notebooks"


def report_dir(study: str) -> Path:
    """The study's HTML report."""
    return study_dir(study) / "report"


def lock_file(study: str) -> Path:
    """The study's lock (see :mod:`tibenchlib.lock`)."""
    return study_dir(study) / ".lock"


# -- files inside a study's folders ------------------------------------------------------------
def raw_log(study: str, tool: str, name: str) -> Path:
    """The raw output of one step of a tool (``<name>.log`` under :func:`raw_dir`)."""
    return raw_dir(study, tool) / f"{name}.log"


def run_log(study: str, tool: str, run_key: str, prefix: str = "") -> Path:
    """The raw output of one run, named after its ``run_key`` (``/`` written as ``__``)."""
    return raw_log(study, tool, prefix + run_key.replace("/", "__"))


def client_run_logs(study: str, tool: str, run_key: str, clients: int) -> list[Path]:
    """The raw output of one run's clients: :func:`run_log` for one client, else one log per
    client, ``<run_log stem>.c<i>.log`` beside it."""
    base = run_log(study, tool, run_key)
    if clients == 1:
        return [base]
    return [raw_log(study, tool, f"{base.stem}.c{i}") for i in range(clients)]


def host_run_logs(study: str, tool: str, run_key: str, hosts: list[str]) -> list[Path]:
    """The raw output of one run's clients on named hosts (``local``, ``10.0.1.21_2222``):
    ``<host>.log`` in a folder named like :func:`run_log` (``raw/<tool>/<run>/<host>.log``)."""
    return [raw_run_dir(study, tool, run_key) / f"{h}.log" for h in hosts]


def raw_run_dir(study: str, tool: str, name: str) -> Path:
    """A folder of raw output for one run or step of a tool whose output is several files
    (mydumper's dump, a replica's set-up), named like :func:`run_log` (``/`` as ``__``)."""
    return raw_dir(study, tool) / name.replace("/", "__")


def phase_results(study: str, phase: str, ext: str = "json") -> Path:
    """A phase's table of results (``<phase>.json`` or ``.csv``)."""
    return results_dir(study) / f"{phase}.{ext}"


def compare_export(study: str, name: str) -> Path:
    """The stem (no suffix) of one exported comparison table (CSV and Markdown)."""
    return results_dir(study) / "compare" / name


def tpch_plans_file(study: str, arm: str) -> Path:
    """The TiFlash plan check of one TPC-H arm."""
    return results_dir(study) / "tpch_plans" / f"{arm}.csv"


def environment_file(study: str, arm: str) -> Path:
    """One arm's environment capture."""
    return environment_dir(study) / f"{arm}.json"


def executed_notebook(study: str, notebook: str) -> Path:
    """A phase's notebook as executed for this study."""
    return executed_notebooks_dir(study) / notebook


def report_file(study: str) -> Path:
    """The study's self-contained HTML report."""
    return report_dir(study) / f"{study}.html"


# -- outside any study -------------------------------------------------------------------------
def jupyter_dir() -> Path:
    """A Jupyter data directory holding the kernelspec of the running interpreter."""
    return data_dir() / JUPYTER_FOLDER


def kernelspec_file(kernel: str) -> Path:
    """The kernelspec papermill starts notebooks with (under :func:`jupyter_dir`)."""
    return jupyter_dir() / "kernels" / kernel / "kernel.json"


def tpch_data_dir(sf_label: str) -> Path:
    """Generated TPC-H data of one scale factor (``sf_label`` as ``tpch.datagen.sf_label``)."""
    return data_dir() / TPCH_FOLDER / f"sf{sf_label}"


def ycsb_home() -> Path:
    """Where the built YCSB binding and its Maven repository live: ``<data dir>/ycsb``, or
    ``TIBENCH_YCSB_HOME`` (so several data directories share one build)."""
    env = os.environ.get("TIBENCH_YCSB_HOME")
    return Path(env).expanduser().resolve() if env else data_dir() / YCSB_FOLDER


@contextmanager
def using_data_dir(path: str | Path | None) -> Iterator[None]:
    """Within the block, :func:`data_dir` is ``path`` (when given): ``TIBENCH_DATA`` is set, so
    the environment carries it into papermill's kernels and the tools' children; restored after,
    so a command called in-process (tests, scripts) does not leave it behind."""
    before = os.environ.get("TIBENCH_DATA")
    if path:
        os.environ["TIBENCH_DATA"] = str(Path(path).expanduser().resolve())
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("TIBENCH_DATA", None)
        else:
            os.environ["TIBENCH_DATA"] = before
