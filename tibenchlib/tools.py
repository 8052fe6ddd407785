"""External tools: find them (:func:`require`), run them streaming raw output to a file
(:func:`execute`), show their commands without secrets (:func:`display_command`). Never parse here.

A runner returns what happened (exit code, timing, whether it timed out) and where the raw output
is; the parsers read that file. Child processes die with their parent (Linux ``PDEATHSIG``), so
a killed study never leaves a benchmark running against the server behind its back.
"""

from __future__ import annotations

import ctypes
import os
import shlex
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from . import gobuild
from .db import child_env


class ToolMissing(RuntimeError):
    """A benchmark tool is not installed."""


@dataclass(frozen=True)
class Outcome:
    """What running one command did."""

    returncode: int | None
    log_path: Path
    started_at: float
    finished_at: float
    timed_out: bool = False
    missing: str | None = None
    interrupted: bool = False  # sent SIGINT at ``interrupt_after_s`` (a timed go-ycsb run)

    @property
    def wall_s(self) -> float:
        return self.finished_at - self.started_at


def which(tool: str) -> str | None:
    """The executable that runs ``tool``: tibench's own pinned build for go-ycsb and go-tpc
    (:mod:`tibenchlib.gobuild`, found without the user touching PATH), else PATH's."""
    own = gobuild.built(tool)
    return str(own) if own else shutil.which(tool)


def origin(tool: str) -> dict | None:
    """Where ``tool`` comes from: its path and, for tibench's own build, the module, version
    and hash it was built from (``source``); None when it is not installed."""
    path = which(tool)
    if path is None:
        return None
    src = gobuild.source_of(path) if gobuild.built(tool) else None
    return {"path": path, "source": src or "PATH"}


def require(tool: str) -> str:
    """The executable of ``tool``; go-ycsb and go-tpc are built on first use where the ``go``
    command is installed (minutes, once per user). Raises :class:`ToolMissing` naming what to
    install."""
    path = which(tool)
    if not path and tool in gobuild.TOOLS:
        if gobuild.find_go() is None:
            raise ToolMissing(f"{tool} is not installed and cannot be built: {gobuild.GO_HINT}")
        try:
            return str(gobuild.build(tool))
        except gobuild.GoBuildError as e:
            raise ToolMissing(str(e)) from None
    if not path:
        raise ToolMissing(
            f"{tool} is not installed: make setup installs it here "
            f"(apt-get install {tool} / dnf install {tool} / brew install {tool})"
        )
    return path


def display_command(cmd: Sequence[str]) -> str:
    """The command as a user would type it, with the private config file's path elided."""
    shown = [
        "--config-file=<0600 credentials file>" if a.startswith("--config-file=") else a
        for a in cmd
    ]
    return shlex.join(shown)


def _die_with_parent() -> None:  # pragma: no cover - runs in the child
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def _with_parent_death(argv: list[str]) -> tuple[list[str], Callable[[], None] | None]:
    """``argv`` started so that it dies with tibench: through util-linux's ``setpriv
    --pdeathsig KILL`` when installed (it sets the signal and execs the tool, same pid), else
    with a ``preexec_fn``. A ``preexec_fn`` forces a full fork of the Python process, about
    7 ms per start with pandas loaded against under 2 ms through setpriv (``bench_dm_overhead``
    dumps last 0.2 s: that difference is a few percent of them)."""
    if os.name != "posix":
        return argv, None
    setpriv = shutil.which("setpriv")
    if setpriv:
        return [setpriv, "--pdeathsig", "KILL", "--", *argv], None
    return argv, _die_with_parent


def execute(
    cmd: Sequence[str],
    log_path: str | Path,
    *,
    timeout_s: float | None = None,
    on_start: Callable[[int], None] | None = None,
    env: dict | None = None,
    interrupt_after_s: float | None = None,
) -> Outcome:
    """Run ``cmd``, writing stdout and stderr to ``log_path`` as they are produced.

    A missing executable is an :class:`Outcome` with ``missing`` set, not an exception, so a sweep
    records the failure and goes on. ``interrupt_after_s``: send SIGINT once the command has
    run that long (a tool that ends its run and prints its figures on SIGINT, as go-ycsb,
    whose timed runs have no duration of their own); ``timeout_s`` still counts from the start.
    """
    log_path = Path(log_path)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    started = time.time()
    exe = which(cmd[0])
    if exe is None:
        log_path.write_text(f"FATAL: {cmd[0]} is not installed\n")
        return Outcome(None, log_path, started, time.time(), missing=cmd[0])
    argv, preexec = _with_parent_death([exe, *cmd[1:]])
    with open(log_path, "wb") as out:
        proc = subprocess.Popen(
            argv,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            preexec_fn=preexec,
            env=env if env is not None else child_env(),  # no password in a tool's environment
        )
        if on_start:
            on_start(proc.pid)
        timed_out = interrupted = False
        try:
            if interrupt_after_s is not None:
                try:
                    proc.wait(timeout=interrupt_after_s)
                except subprocess.TimeoutExpired:
                    proc.send_signal(signal.SIGINT)
                    interrupted = True
            left = None if timeout_s is None else max(0.0, started + timeout_s - time.time())
            proc.wait(timeout=left)
        except subprocess.TimeoutExpired:
            timed_out = True
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        except BaseException:
            # Interrupted (KeyboardInterrupt, SIGTERM turned into an exception): stop the child.
            proc.kill()
            proc.wait()
            raise
    return Outcome(
        proc.returncode, log_path, started, time.time(), timed_out, interrupted=interrupted
    )
