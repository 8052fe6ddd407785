"""Where things live. Every path tibench writes to is derived here, nowhere else."""

from __future__ import annotations

import os
from pathlib import Path

#: The repository (or install) root: the folder holding ``tibenchlib/``.
ROOT = Path(__file__).resolve().parent.parent


def data_dir() -> Path:
    """Top of everything tibench writes; ``TIBENCH_DATA`` overrides ``<repo>/data``."""
    return Path(os.environ.get("TIBENCH_DATA", ROOT / "data")).resolve()


def study_dir(study: str) -> Path:
    """Results of one study: catalog, raw logs, executed notebooks, tables and plots."""
    return data_dir() / study


def server_dir(name: str = "embedded") -> Path:
    """The private MariaDB's datadir, socket, logs and credentials (outside any study)."""
    return data_dir() / "server" / name


def notebooks_dir() -> Path:
    return ROOT / "notebooks"


def reference_dir() -> Path:
    return ROOT / "data" / "reference"
