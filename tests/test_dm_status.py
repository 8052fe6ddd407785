"""DM status parsing on real dmctl captures (tests/fixtures/dm/SOURCES.md) and the OpenAPI task
request."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tibenchlib.db import ConnInfo
from tibenchlib.dm import dmctl, openapi
from tibenchlib.dm.dump import DumpSettings
from tibenchlib.dm.load import LoadSettings

FIX = Path(__file__).parent / "fixtures" / "dm"


def read(name: str) -> str:
    return (FIX / name).read_text()


def test_raw_tiup_capture_banner_and_ansi_stripped():
    text = read("dmctl-v8.5.4-query-status-sync-running-raw-tiup-banner.txt")
    assert "\x1b[" in text and text.startswith("Starting component")
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)
    df = dmctl.parse_query_status(text)
    assert len(df) == 1
    r = df.iloc[0]
    assert (r.task, r.source, r.worker, r.stage, r.unit) == (
        "fk-lab",
        "src-01",
        "dm-worker-0",
        "Running",
        "sync",
    )
    assert r.synced == True  # noqa: E712
    assert r.total_events == 41 and r.total_rows == 41 and r.seconds_behind_master == 0
    assert r.error is None and r.finished_bytes is None


def test_paused_sync_error_in_one_line():
    df = dmctl.parse_query_status(read("dmctl-v8.5.4-query-status-sync-paused-fk-error-raw.txt"))
    r = df.iloc[0]
    assert r.stage == "Paused" and r.synced == False  # noqa: E712
    assert r.total_events == 13
    assert r.error.startswith("ErrCode 10006 (database): Error 1451 (23000): Cannot delete")
    assert "\n" not in r.error


def test_load_unit_progress_and_error():
    df = dmctl.parse_query_status(read("dmctl-v8.5.2-query-status-load-paused-error.txt"))
    r = df.iloc[0]
    assert r.unit == "load" and r.stage == "Paused"
    assert r.progress_pct == 0.0 and r.total_bytes == 0 and r.bps == 0
    assert r.total_events is None  # a load subtask has no sync counters
    assert "ErrCode 34019 (load-unit)" in r.error and "Unknown character set: 'ucs2'" in r.error


def test_older_sync_shape_without_rows_fields():
    df = dmctl.parse_query_status(read("dmctl-v2.0-query-status-sync-running-docs.txt"))
    r = df.iloc[0]
    assert (r.task, r.worker, r.unit, r.total_events) == ("task-test", "127.0.0.1:8262", "sync", 0)
    assert r.total_rows is None and r.seconds_behind_master is None


def test_dmctl_failure_and_garbage():
    with pytest.raises(dmctl.DmStatusError, match="task not found"):
        dmctl.parse_query_status('{"result": false, "msg": "task not\\nfound"}')
    with pytest.raises(dmctl.DmStatusError, match="no JSON object"):
        dmctl.parse_query_status("Error: connection refused")


def test_openapi_status_shape_from_the_docs_schema():
    # the docs example is a schema with placeholders ("string", 0, "runing"): shape only
    df = openapi.parse_task_status(read("dm-openapi-task-status-docs-schema-placeholder.txt"))
    assert list(df.columns) == dmctl.STATUS_COLUMNS
    r = df.iloc[0]
    assert r.unit == "sync" and r.stage == "runing" and r.synced == True  # noqa: E712
    assert r.total_events == 0 and r.seconds_behind_master == 0 and r.finished_bytes == 0
    assert not openapi.finished(df.assign(synced=False))
    assert openapi.finished(df)
    with pytest.raises(dmctl.DmStatusError, match="no 'data'"):
        openapi.parse_task_status({"error_msg": "x"})


def test_task_request_carries_the_swept_settings_and_masks():
    target = ConnInfo("10.0.0.5", 4000, "root", "sbtest", password="s3cret")
    body, warnings = openapi.task_request(
        "t1",
        source_name="mysql-01",
        target=target,
        schema="sbtest",
        dump=DumpSettings(threads=32, rows=320000, statement_size=200_000),
        load=LoadSettings(threads=16),
        workers=32,
        batch=100,
    )
    sc = body["task"]["source_config"]
    assert sc["full_migrate_conf"]["export_threads"] == 32
    assert sc["full_migrate_conf"]["import_threads"] == 16
    assert sc["incr_migrate_conf"] == {"repl_threads": 32, "repl_batch": 100}
    assert body["task"]["target_config"]["password"] == "s3cret"
    assert len(warnings) == 2 and "rows=320000" in warnings[0]
    shown = json.dumps(openapi.masked(body))
    assert "s3cret" not in shown and '"password": "***"' in shown
    with pytest.raises(ValueError, match="task_mode"):
        openapi.task_request(
            "t",
            source_name="s",
            target=target,
            schema="d",
            dump=DumpSettings(),
            load=LoadSettings(),
            task_mode="sync",
        )


@pytest.mark.skipif(
    not __import__("os").environ.get("TIBENCH_DM_MASTER"),
    reason="set TIBENCH_DM_MASTER=http://host:8261 to test against a real DM master",
)
def test_live_dm_master_answers():
    import os

    client = openapi.DmClient(os.environ["TIBENCH_DM_MASTER"])
    masters = client.masters()
    assert masters.get("total", 0) >= 1, masters
