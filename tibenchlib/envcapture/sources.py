"""Where host facts come from: the roots a capture reads, and file reads and tool runs that
never raise (a failure is an unavailable value)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..db import child_env
from .record import unavailable


@dataclass(frozen=True)
class _Host:
    """What one host capture reads: the /proc, /sys and os-release it is pointed at (a fake tree
    in tests), how it finds a tool, and the data directory whose disk it describes."""

    proc: Path
    sys: Path
    os_release: Path
    which: Callable[[str], str | None]
    data_dir: Path | None


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")


def _read_or_unavailable(path: Path) -> str | dict:
    try:
        return _read(path).strip()
    except OSError as e:
        return unavailable(f"cannot read {path}: {e.strerror or e}")


def _run(argv: list[str], timeout: float = 15) -> dict:
    try:
        res = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**child_env(), "LC_ALL": "C"},
        )
    except (OSError, subprocess.SubprocessError) as e:
        return unavailable(f"{' '.join(argv)}: {e}")
    out = res.stdout if res.stdout.strip() else res.stderr
    if res.returncode != 0 and not out.strip():
        return unavailable(f"{' '.join(argv)} exited with {res.returncode} and printed nothing")
    return {"stdout": out, "returncode": res.returncode}
