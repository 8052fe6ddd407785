"""dmctl-driven tasks for DM < 5.3: the commands built, and statuses read from real outputs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tibenchlib.dm.dmctl import DmStatusError
from tibenchlib.dm.dmctl_client import DmctlClient, dmctl_command, master_addr

FIX = Path(__file__).parent / "fixtures" / "dm"


def test_master_addr_and_commands():
    assert master_addr("http://10.0.1.5:8261") == "10.0.1.5:8261"
    assert master_addr("dm-master:8261") == "dm-master:8261"
    with pytest.raises(ValueError, match="dm.master_url"):
        master_addr("http://dm-master")
    assert dmctl_command("dmctl", "http://h:8261", "start-task", "task.yaml") == [
        "dmctl", "--master-addr=h:8261", "start-task", "task.yaml",
    ]  # fmt: skip
    assert dmctl_command("dmctl", "h:8261", "query-status", "t1")[-2:] == ["query-status", "t1"]
    with pytest.raises(ValueError, match="unsupported dmctl action"):
        dmctl_command("dmctl", "h:8261", "remove-task")


def _client_printing(tmp_path, fixture: str) -> DmctlClient:
    """A client whose dmctl prints a real captured dmctl answer (the command line is ignored)."""
    exe = tmp_path / "dmctl"
    exe.write_text(
        f"#!{sys.executable}\nimport sys\nsys.stdout.write(open({str(FIX / fixture)!r}).read())\n"
    )
    exe.chmod(0o755)
    return DmctlClient("http://127.0.0.1:8261", dmctl=str(exe))


def test_status_from_real_dmctl_outputs(tmp_path):
    st = _client_printing(tmp_path, "dmctl-v8.5.4-query-status-sync-running-raw-tiup-banner.txt")
    df = st.status("t")
    assert len(df) >= 1 and (df["unit"] == "sync").all() and df["total_events"].notna().all()
    old = _client_printing(tmp_path, "dmctl-v2.0-query-status-sync-running-docs.txt").status("t")
    assert old.loc[0, "task"] == "task-test" and old.loc[0, "source"] == "mysql-01"
    err = _client_printing(tmp_path, "dmctl-v8.5.2-query-status-load-paused-error.txt")
    row = err.status("t").iloc[0]
    assert row["stage"] == "Paused" and row["error"]


def test_missing_or_failing_dmctl_is_one_clear_line(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(DmStatusError, match="dmctl is not on PATH"):
        DmctlClient("h:8261")
    exe = tmp_path / "dmctl"
    exe.write_text(
        "#!/bin/sh\necho 'dial tcp 127.0.0.1:8261: connect: connection refused' >&2\nexit 1\n"
    )
    exe.chmod(0o755)
    with pytest.raises(DmStatusError, match=r"dmctl query-status exited 1: dial tcp .* refused"):
        DmctlClient("h:8261", dmctl=str(exe)).status("t")
