"""Where things live. Every path tibench writes to is derived here, nowhere else."""

from __future__ import annotations

import os
from pathlib import Path

#: The repository (or install) root: the folder holding ``tibenchlib/``.
ROOT = Path(__file__).resolve().parent.parent


def data_dir() -> Path:
    """Top of everything tibench writes; ``TIBENCH_DATA`` overrides ``<repo>/data``."""
    return Path(os.environ.get("TIBENCH_DATA", ROOT / "data")).resolve()


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
    if p.name in ("server", "reference"):
        raise PathError(f"study name '{study}' is reserved for tibench's own files under {d}")
    return p


def private_dir(study: str) -> Path:
    """A 0700 folder of the study for short-lived secrets (sysbench's credentials file)."""
    p = study_dir(study) / ".private"
    p.mkdir(parents=True, exist_ok=True)
    os.chmod(p, 0o700)
    return p


def server_dir(name: str = "embedded") -> Path:
    """The private MariaDB's datadir, socket, logs and credentials (outside any study)."""
    return _inside(data_dir() / "server", name, "server name")


def notebooks_dir() -> Path:
    return ROOT / "notebooks"


def reference_dir() -> Path:
    return ROOT / "data" / "reference"
