"""Drive DM tasks with ``dmctl`` on clusters older than DM 5.3 (no OpenAPI).

The commands are dmctl's own (``--master-addr host:port start-task <file>``,
``query-status <task>``, ``stop-task <task>``); their JSON answers are read by
:mod:`tibenchlib.dm.dmctl`, so a status is the same tidy frame the OpenAPI client returns.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import pandas as pd

from .dmctl import DmStatusError, load_json, parse_query_status

__all__ = ["DmctlClient", "dmctl_command", "master_addr"]


def master_addr(master_url: str) -> str:
    """``http://host:8261`` (or ``host:8261``) → ``host:8261``, what ``--master-addr`` takes."""
    u = urlsplit(master_url if "://" in master_url else f"//{master_url}")
    if not u.hostname or not u.port:
        raise ValueError(f"dm.master_url must name host and port (host:8261): {master_url!r}")
    return f"{u.hostname}:{u.port}"


def dmctl_command(dmctl: str, master_url: str, action: str, *args: str) -> list[str]:
    """The argv of one dmctl call."""
    if action not in (
        "start-task", "query-status", "stop-task", "pause-task", "resume-task", "list-member"
    ):  # fmt: skip
        raise ValueError(f"unsupported dmctl action {action!r}")
    return [dmctl, f"--master-addr={master_addr(master_url)}", action, *map(str, args)]


class DmctlClient:
    """start / query / stop one task through ``dmctl``; errors are one clear line."""

    def __init__(self, master_url: str, dmctl: str | None = None, timeout_s: float = 60):
        self.dmctl = dmctl or shutil.which("dmctl")
        if not self.dmctl:
            raise DmStatusError(
                "dmctl is not on PATH: DM older than 5.3 has no OpenAPI and is driven by dmctl "
                "(tiup install dm:dmctl, or put dmctl on PATH)"
            )
        self.master_url, self.timeout_s = master_url, timeout_s

    def _run(self, action: str, *args: str) -> dict:
        argv = dmctl_command(self.dmctl, self.master_url, action, *args)
        try:
            p = subprocess.run(argv, capture_output=True, text=True, timeout=self.timeout_s)
        except subprocess.TimeoutExpired:
            raise DmStatusError(f"dmctl {action} did not answer in {self.timeout_s:g} s") from None
        try:
            obj = load_json(p.stdout)
        except DmStatusError:
            tail = " ".join((p.stderr or p.stdout).split())[-300:]
            raise DmStatusError(f"dmctl {action} exited {p.returncode}: {tail}") from None
        if obj.get("result") is False:
            raise DmStatusError(f"dmctl {action} failed: {' '.join(str(obj.get('msg')).split())}")
        obj["_stdout"] = p.stdout
        return obj

    def masters(self) -> dict:
        return self._run("list-member")

    def check(self) -> dict:
        """The master answers: ``query-status`` without a task (every DM version has it;
        ``list-member`` came with DM 2.0)."""
        return self._run("query-status")

    def start_task(self, task_file: str | Path, *flags: str) -> dict:
        """``start-task [flags] FILE`` (e.g. ``--remove-meta``, :func:`.taskfile.start_args`)."""
        return self._run("start-task", *flags, str(task_file))

    def stop_task(self, name: str) -> dict:
        return self._run("stop-task", name)

    def pause_task(self, name: str) -> dict:
        return self._run("pause-task", name)

    def resume_task(self, name: str) -> dict:
        return self._run("resume-task", name)

    def status(self, name: str) -> pd.DataFrame:
        return parse_query_status(self._run("query-status", name)["_stdout"])
