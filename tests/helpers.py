"""Helpers the tests share: the command line in a child process, a free local port."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_cli(
    *args: str,
    env: dict[str, str] | None = None,
    cwd: Path | None = ROOT,
    timeout: float | None = 600,
) -> subprocess.CompletedProcess:
    """``python -m tibenchlib.cli ARGS`` in a child process, output captured as text.

    ``env`` is laid over this process's environment; ``cwd`` None runs in the current folder.
    """
    return subprocess.run(
        [sys.executable, "-m", "tibenchlib.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        timeout=timeout,
    )


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
