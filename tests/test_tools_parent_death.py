"""A tool started by :func:`tibenchlib.tools.execute` dies with the tibench process that started
it (a killed notebook kernel or CLI leaves no sysbench or mydumper running)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from tibenchlib import tools

CHILD = """
import sys
from tibenchlib.tools import execute
execute(["sleep", "60"], sys.argv[1], on_start=lambda pid: print(pid, flush=True))
"""


@pytest.mark.parametrize("setpriv", [True, False], ids=["setpriv", "preexec"])
def test_the_tool_dies_with_its_parent(tmp_path, monkeypatch, setpriv):
    env = dict(os.environ)
    if not setpriv:  # a PATH without setpriv: the preexec_fn path
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir()
        os.symlink("/bin/sleep", bin_dir / "sleep")
        env["PATH"] = str(bin_dir)
    elif not tools.shutil.which("setpriv"):
        pytest.skip("setpriv (util-linux) is not installed")
    parent = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(tmp_path / "sleep.log")],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    pid = int(parent.stdout.readline())
    tool = psutil.Process(pid)
    deadline = time.monotonic() + 10
    while tool.name() != "sleep" and time.monotonic() < deadline:  # setpriv execs the tool
        time.sleep(0.01)
    assert tool.name() == "sleep" and tool.ppid() == parent.pid
    parent.send_signal(signal.SIGKILL)
    parent.wait(timeout=10)
    tool.wait(timeout=10)  # raises TimeoutExpired if the tool outlived its parent
    assert not psutil.pid_exists(pid) or tool.status() == psutil.STATUS_ZOMBIE


def test_setpriv_wraps_the_tool_when_installed(monkeypatch):
    monkeypatch.setattr(tools.shutil, "which", lambda name: "/usr/bin/setpriv")
    argv, preexec = tools._with_parent_death(["/usr/bin/sysbench", "run"])
    assert argv == ["/usr/bin/setpriv", "--pdeathsig", "KILL", "--", "/usr/bin/sysbench", "run"]
    assert preexec is None
    monkeypatch.setattr(tools.shutil, "which", lambda name: None)
    argv, preexec = tools._with_parent_death(["/usr/bin/sysbench", "run"])
    assert argv == ["/usr/bin/sysbench", "run"] and preexec is tools._die_with_parent
