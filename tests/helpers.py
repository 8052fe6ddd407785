"""Helpers the tests share: the command line in this process or in a child process, a free local
port."""

from __future__ import annotations

import contextlib
import io
import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path
from unittest import mock

from tibenchlib import cli

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


def tibench(
    *args: str,
    env: dict[str, str] | None = None,
    cwd: Path | None = ROOT,
) -> subprocess.CompletedProcess:
    """``tibench ARGS`` through :func:`tibenchlib.cli.main` in this process, as :func:`run_cli`
    reports it: exit code, stdout and stderr as text.

    A child process costs a second of imports per call and proves nothing more for what happens
    inside ``main`` (parsing, dispatch, output, exit codes); what only a child shows (the entry
    point, a closed pipe, what is imported) is tested with :func:`run_cli`. ``env`` is laid over
    the environment for the call only; ``cwd`` None runs in the current folder.
    """
    out, err = io.StringIO(), io.StringIO()
    sigterm = signal.getsignal(signal.SIGTERM)  # main() installs its own handler
    with contextlib.ExitStack() as stack:
        stack.enter_context(mock.patch.dict(os.environ, env or {}))
        if cwd is not None:
            stack.enter_context(contextlib.chdir(cwd))
        stack.enter_context(contextlib.redirect_stdout(out))
        stack.enter_context(contextlib.redirect_stderr(err))
        try:
            code = cli.main(list(args))
        except SystemExit as e:  # argparse: --help, --version, a usage error
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            if isinstance(e.code, str):
                print(e.code, file=sys.stderr)
        finally:
            signal.signal(signal.SIGTERM, sigterm)
    return subprocess.CompletedProcess(["tibench", *args], code, out.getvalue(), err.getvalue())


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def sysbench_seed(log: str | Path) -> int | None:
    """The ``--rand-seed`` a sysbench log says it ran with (its own words at the start:
    "Initializing random number generator from seed (N)."); None for the current time."""
    m = re.search(r"random number generator from seed \((\d+)\)", Path(log).read_text())
    return int(m.group(1)) if m else None
