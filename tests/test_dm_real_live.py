"""Phase dm against a real DM cluster: runs only when TIBENCH_DM_MASTER names a DM master
(OpenAPI, DM ≥ 5.3), with TIBENCH_DM_SOURCE_NAME, TIBENCH_DM_SOURCE_URL and TIBENCH_DM_TARGET_URL
(passwords in TIBENCH_SOURCE_PASSWORD and TIBENCH_PASSWORD). It drops and re-creates database
``tibench_dm_live`` on the target. With ``dmctl`` on PATH the same phase also runs through
dmctl and a task file (``dm.api: dmctl``; ``TIBENCH_DM_VERSION`` gives the cluster's version
when it is older than a current DM)."""

from __future__ import annotations

import os

import pytest

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not os.environ.get("TIBENCH_DM_MASTER"), reason="TIBENCH_DM_MASTER names no DM master"
    ),
]


@pytest.mark.parametrize("api", ["auto", "dmctl"])
def test_real_dm_phase(tmp_path, monkeypatch, api):
    import shutil

    from tibenchlib import phases
    from tibenchlib.params import parse_study

    if api == "dmctl" and not shutil.which("dmctl"):
        pytest.skip("dmctl is not on PATH")
    monkeypatch.setenv("TIBENCH_DATA", str(tmp_path))
    study = parse_study(
        {
            "study": "dm-live",
            "target": {"kind": "url", "url": os.environ["TIBENCH_DM_TARGET_URL"]},
            "allow_destructive": True,
            "phases": ["dm"],
            "dm": {
                "database": "tibench_dm_live",
                "tables": 1,
                "table_size": 1000,
                "repeats": 2,
                "master_url": os.environ["TIBENCH_DM_MASTER"],
                "source_name": os.environ["TIBENCH_DM_SOURCE_NAME"],
                "source_url": os.environ["TIBENCH_DM_SOURCE_URL"],
                "api": api,
                "version": os.environ.get("TIBENCH_DM_VERSION"),
                "load": {"threads": [2, 4]},
                "sync": {"workers": [4], "workloads": ["oltp_insert"], "duration_s": 5},
            },
        }
    )
    rows = phases.run_phase(study, "dm", yes=True, arms=None, redo=False, progress=False)
    assert set(rows["unit"]) == {"load", "sync"}
    assert (rows["status"] == "ok").all() and rows["verified"].all()
