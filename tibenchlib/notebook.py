"""Execute the study's notebooks with papermill into ``data/<study>/notebooks/``.

Only the params file's path and flags are injected (papermill writes injected parameters into the
executed copy): secrets stay in the environment.
"""

from __future__ import annotations

import logging
from pathlib import Path

from . import paths

PHASE_NOTEBOOKS = {
    "environment": "00_environment.ipynb",
    "prepare": "01_prepare.ipynb",
    "sweep": "02_sweep.ipynb",
    "compare": "03_compare.ipynb",
    "numa": "04_numa.ipynb",
    "tpch_scaling": "05_tiflash_scaling.ipynb",
}


def executed_path(study: str, phase: str) -> Path:
    return paths.study_dir(study) / "notebooks" / PHASE_NOTEBOOKS[phase]


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
    import papermill as pm

    src = paths.notebooks_dir() / PHASE_NOTEBOOKS[phase]
    out = executed_path(study, phase)
    out.parent.mkdir(parents=True, exist_ok=True)
    logging.getLogger("papermill").setLevel(logging.INFO)
    pm.execute_notebook(
        str(src),
        str(out),
        parameters={
            "params_path": str(Path(params_path).resolve()),
            "redo": redo,
            "yes": yes,
            "arms": arms or [],
            "progress": False,
        },
        cwd=str(paths.ROOT),
        progress_bar=progress,
        log_output=True,
        kernel_name="python3",
    )
    return out
