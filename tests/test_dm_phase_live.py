"""Phase dm on two real private MariaDBs with the real mydumper, myloader and sysbench: a kill
in the middle and the resume, raw logs, no password anywhere, and a mismatch marked failed."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from helpers import tibench

from tibenchlib.phase import RunContext
from tibenchlib.store import Store

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parent.parent
STUDY = "dmlive"
PARAMS = {
    "study": STUDY,
    "target": {"kind": "embedded"},
    "phases": ["dm"],
    "dm": {
        "tables": 1,
        "table_size": 2000,
        "repeats": 2,
        "load": {"threads": [1, 2]},
        "sync": {"workers": [1, 2], "workloads": ["oltp_insert"], "duration_s": 1},
    },
}


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    for tool in ("mydumper", "myloader", "sysbench"):
        if not shutil.which(tool):
            pytest.skip(f"{tool} is not installed (make setup installs it)")
    tmp = tmp_path_factory.mktemp("dmlive")
    data = tmp / "data"
    old = os.environ.get("TIBENCH_DATA")
    os.environ["TIBENCH_DATA"] = str(data)
    f = tmp / "dm.yaml"
    f.write_text(yaml.safe_dump(PARAMS))
    yield SimpleNamespace(params=f, data=data, env=os.environ.copy())
    from tibenchlib.dm.servers import target_server
    from tibenchlib.server import embedded

    embedded().stop()
    target_server().stop()
    if old is None:
        os.environ.pop("TIBENCH_DATA", None)
    else:
        os.environ["TIBENCH_DATA"] = old


def test_killed_phase_resumes_without_loss(live):
    store = Store(f"sqlite:///{live.data / STUDY / 'results.sqlite'}")
    p = subprocess.Popen(
        [sys.executable, "-m", "tibenchlib.cli", "run", str(live.params), "--phase", "dm",
         "--in-process"],
        cwd=ROOT, env=live.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(store.run_status(STUDY)) < 2:
        time.sleep(0.2)
    time.sleep(0.5)  # inside the third run
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=30)
    before = store.runs(STUDY)
    assert 2 <= len(before) < 8
    # the resume and the progress read in this process (a child only adds its imports)
    r = tibench("run", str(live.params), "--phase", "dm", "--in-process", "--json", env=live.env)
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    # 2 load settings × (load) + 2 sync settings × 1 workload, every one verified
    assert [(x["unit"], x["setting"]) for x in rows] == [
        ("load", "1"),
        ("load", "2"),
        ("sync", "1"),
        ("sync", "2"),
    ]
    assert all(x["status"] == "ok" and x["verified"] and x["n"] == 2 for x in rows)
    cols = {"unit", "knob", "setting", "workload", "n", "mb_s", "rows_s", "ci_low", "ci_high",
            "latency_ms", "verified", "status"}  # fmt: skip
    assert cols <= set(rows[0])
    load = [x for x in rows if x["unit"] == "load"]
    assert all(x["ci_low"] <= x["mb_s"] <= x["ci_high"] and x["latency_ms"] > 0 for x in load)
    after = store.runs(STUDY).set_index("run_key")
    assert len(after) == 8 and (after["phase"] == "dm").all()
    for rec in before[before["status"] == "ok"].itertuples():
        assert after.loc[rec.run_key, "started_at"] == rec.started_at  # not measured twice
    dm_runs = store.read("dm_runs", STUDY)
    assert set(dm_runs["run_key"]) == set(after.index)
    full = dm_runs[dm_runs["unit"] == "full"]
    assert (full["rows"] == 2000).all() and (full["rows_per_statement"] > 1).all()
    assert (full["dump_mb_s"] > 0).all() and (full["load_s"] > 0).all()
    sync = dm_runs[dm_runs["unit"] == "sync"]
    assert (sync["events_s"] > 0).all() and (sync["catchup_s"] > 0).all()
    assert len(store.read("dm_lag", STUDY)) > 0
    # raw logs per run under raw/dm/, and the password nowhere in them or the catalog
    raw = live.data / STUDY / "raw" / "dm"
    one = raw / "load.threads=2__full__r1"
    assert "Finished dump" in (one / "mydumper.log").read_text()
    assert (one / "myloader.log").is_file()
    secret = (live.data / "server" / "embedded" / "private" / "credentials").read_text().strip()
    secret2 = (live.data / "server" / "dm-target" / "private" / "credentials").read_text().strip()
    for path in [*raw.rglob("*.log"), live.data / STUDY / "results.sqlite"]:
        text = path.read_bytes()
        assert secret.encode() not in text and secret2.encode() not in text, path
    r = tibench("runs", str(live.params), "--json", env=live.env)
    prog = json.loads(r.stdout)
    dm = [x for x in prog if x["phase"] == "dm"]
    assert sum(x["done"] for x in dm) == 8 and sum(x["pending"] for x in dm) == 0


def test_a_source_changed_during_the_run_fails_verification(live):
    """Rows written on the source while a migration runs are not in the dump: the target's
    checksums differ, the run is failed and enters no statistic."""
    from tibenchlib.dm.analysis import result_rows, unit_rows
    from tibenchlib.dm.phase import DmContext, run_full
    from tibenchlib.dm.plan import DmSpec
    from tibenchlib.dm.servers import source_server, target_server
    from tibenchlib.params import load_study

    study = load_study(live.params)
    store = Store.for_study(study)
    src, tgt = source_server().ensure(), target_server().ensure()
    ctx = DmContext(study, SimpleNamespace(label="load.threads=1"), src, tgt, store, {})
    stop = threading.Event()
    eng = ctx.source_conn().engine()

    def write():
        with eng.connect() as c:
            while not stop.is_set():
                c.exec_driver_sql("INSERT INTO sbtest1 (k, c, pad) VALUES (1, 'x', 'y')")
                c.commit()
                time.sleep(0.005)

    th = threading.Thread(target=write)
    th.start()
    try:
        time.sleep(0.3)
        spec = DmSpec("full", "load.threads", "1", "full", 9, 99, 1)
        rec = run_full(ctx, spec)
    finally:
        stop.set()
        th.join()
        eng.dispose()
    assert rec.status == "failed" and "verification failed" in rec.error
    assert "sbtest1" in rec.error and rec.tps is None
    row = store.read("dm_runs", STUDY, run_key=spec.run_key).iloc[0]
    assert not row["verified"] and row["status"] == "failed"
    rows = result_rows(unit_rows(store.read("dm_runs", STUDY, run_key=spec.run_key)))
    assert rows.iloc[0]["n"] == 0 and rows.iloc[0]["status"] == "failed"


def test_a_replica_error_is_one_line_and_the_next_sync_run_sets_up_again(live):
    from tibenchlib.dm.phase import DmContext, run_sync
    from tibenchlib.dm.plan import DmSpec
    from tibenchlib.dm.servers import source_server, target_server
    from tibenchlib.params import load_study

    study = load_study(live.params)
    store = Store.for_study(study)
    src, tgt = source_server().ensure(), target_server().ensure()
    ctx = DmContext(study, SimpleNamespace(label="sync.workers=2"), src, tgt, store, {})
    spec = DmSpec("sync", "sync.workers", "2", "oltp_insert", 8, 98, 2)
    rec = run_sync(ctx, spec)
    assert rec.status == "ok" and ctx.state["replica"], rec.error
    # the target loses the table the source writes to: the replica stops on an error
    admin = tgt._root_connect(first=False)  # sql_log_bin is the server admin's
    with admin.cursor() as c:
        c.execute("SET SESSION sql_log_bin = 0")
        c.execute(f"DROP TABLE `{ctx.target_conn().database}`.sbtest1")
    admin.close()
    rec = run_sync(ctx, DmSpec("sync", "sync.workers", "2", "oltp_insert", 9, 99, 2))
    assert rec.status == "failed" and "\n" not in rec.error
    assert rec.error.startswith("replica SQL thread stopped with error 1146")
    assert not ctx.state["replica"]
    # the next run copies the source again, replicates from there and measures
    rec = run_sync(ctx, DmSpec("sync", "sync.workers", "2", "oltp_insert", 10, 100, 2))
    assert rec.status == "ok" and rec.tps > 0, rec.error


def test_a_source_killed_during_a_dump_fails_that_run_and_the_phase_resumes(live, monkeypatch):
    """SIGKILL of the source's mariadbd while mydumper is writing the dump: that run is failed
    with one line naming the source and the dump, the runs before it stay as they were, the
    phase restarts the source once and goes on, and a second invocation measures the failed
    run again with verified data."""
    import psutil

    from tibenchlib.dm import migrate
    from tibenchlib.dm.phase import run_dm_phase
    from tibenchlib.dm.servers import source_server
    from tibenchlib.params import parse_study

    study = parse_study(
        {
            "study": "dmkill",
            "target": {"kind": "embedded"},
            "dm": {
                "tables": 2,
                "table_size": 60000,
                "repeats": 2,
                "dump": {"threads": [1]},
                "load": {"threads": [1, 2]},
                "sync": {"workers": []},
            },
        }
    )
    real_dump, calls, killed = migrate.dump, [], {}

    def dump_killing_the_second(conn, outdir, *args, on_start=None, **kw):
        calls.append(outdir)
        if len(calls) != 2:
            return real_dump(conn, outdir, *args, on_start=on_start, **kw)

        def kill_when_writing(pid):
            if on_start:
                on_start(pid)

            def watch():  # the first file mydumper writes, then the source goes
                deadline = time.monotonic() + 10
                while time.monotonic() < deadline and not any(Path(outdir).glob("*.sql")):
                    time.sleep(0.002)
                killed["mydumper_running"] = psutil.pid_exists(pid)
                killed["files"] = len(list(Path(outdir).glob("*.sql")))
                os.kill(source_server().pid, signal.SIGKILL)

            threading.Thread(target=watch, daemon=True).start()

        return real_dump(conn, outdir, *args, on_start=kill_when_writing, **kw)

    monkeypatch.setattr(migrate, "dump", dump_killing_the_second)
    rows = run_dm_phase(RunContext.open(study, progress=False))
    assert killed["mydumper_running"] and killed["files"] >= 1
    store = Store.for_study(study)
    runs = store.runs("dmkill").sort_values("seq")
    assert len(runs) == 4
    first, second = runs.iloc[0], runs.iloc[1]
    assert first["status"] == "ok"
    assert second["status"] == "failed", second["error"]
    err = second["error"]
    assert "\n" not in err and "Traceback" not in err
    assert err.startswith("dump failed: the embedded MariaDB stopped during the dump")
    assert "error.log" in err and "mydumper.log" in err
    secret = (live.data / "server" / "embedded" / "private" / "credentials").read_text().strip()
    assert secret not in err
    # the source was restarted once and every later run measured and verified
    assert (runs.iloc[2:]["status"] == "ok").all()
    assert rows.set_index("run_key").loc[second["run_key"], "verified"] == False  # noqa: E712
    # the second invocation measures only the failed run again
    monkeypatch.setattr(migrate, "dump", real_dump)
    before = runs.set_index("run_key")["started_at"]
    run_dm_phase(RunContext.open(study, progress=False))
    after = store.runs("dmkill").set_index("run_key")
    assert (after["status"] == "ok").all() and int(after.loc[second["run_key"], "attempts"]) == 2
    for key in before.index.drop(second["run_key"]):
        assert after.loc[key, "started_at"] == before[key]  # not measured twice
    dm = store.read("dm_runs", "dmkill").set_index("run_key")
    assert bool(dm.loc[second["run_key"], "verified"]) and dm["verified"].all()
    assert (dm["rows"] == 2 * 60000).all()
