"""Bad input and faults, kept as regression tests: what the user sees, and that nothing measured
is lost (catalog row counts before and after)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import run_cli

from tibenchlib import paths
from tibenchlib.db import mask_url, url_has_password
from tibenchlib.params import ParamsError, parse_study
from tibenchlib.store import CatalogError, Store

SECRET = "s3cr/e?t@pw"


def _tibench(*args, data: Path, env: dict | None = None, cwd: Path | None = None):
    return run_cli(*args, env={"TIBENCH_DATA": str(data), **(env or {})}, cwd=cwd)


def _error_line(r) -> str:
    # a progress bar may share the line (it ends with a carriage return in a terminal)
    lines = [
        x[x.index("tibench: error:") :] for x in r.stderr.splitlines() if "tibench: error:" in x
    ]
    assert lines, r.stderr
    return lines[-1]


def _counts(db: Path) -> dict[str, int]:
    if not db.exists():
        return {}
    with sqlite3.connect(db) as c:
        tabs = [r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {t: c.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in tabs}


# -- passwords in URLs ---------------------------------------------------------------------------
PASSWORD_URLS = [
    "mysql+pymysql://root:pw@10.0.1.8:4000/sbtest",
    "mysql+pymysql://root:pa/ss@10.0.1.8:4000/sbtest",
    "mysql+pymysql://root:pa?ss@10.0.1.8:4000/sbtest",
    "mysql+pymysql://root:p@ss@10.0.1.8:4000/sbtest",
    "mysql+pymysql://root:p%40s%2Fs%3F@10.0.1.8:4000/sbtest",
    "mysql+pymysql://:pw@10.0.1.8:4000/sbtest",
    "mysql+pymysql://root@10.0.1.8:4000/sbtest?password=pw",
    "mysql+pymysql://root@10.0.1.8:4000/sbtest?charset=utf8mb4&passwd=pw",
    "mysql://root@10.0.1.8/sbtest?PWD=pw",
]


@pytest.mark.parametrize("url", PASSWORD_URLS)
def test_password_in_target_url_refused_and_masked(url):
    assert url_has_password(url)
    with pytest.raises(ParamsError) as e:
        parse_study({"study": "x", "target": {"kind": "url", "url": url}})
    msg = str(e.value)
    assert "target.url" in msg and "password_env" in msg and "***" in msg
    for piece in ("pw", "pa/ss", "pa?ss", "p@ss", "p%40s", "ss@"):
        assert piece not in msg.replace("password_env", "").replace("passwd=***", ""), msg


@pytest.mark.parametrize("url", PASSWORD_URLS)
def test_password_in_results_url_refused(url):
    with pytest.raises(ParamsError, match=r"results_url: .*results_password_env"):
        parse_study({"study": "x", "results_url": url})


def test_urls_without_password_pass_and_stay_readable():
    for url in ("mysql+pymysql://root@10.0.1.8:4000/sbtest", "sqlite:////tmp/x.sqlite"):
        assert not url_has_password(url)
        assert mask_url(url) == url
    assert mask_url("http://u:pw@prom:9090/api") == "http://u:***@prom:9090/api"


def test_catalog_params_json_masks_every_url(tmp_path, monkeypatch):
    monkeypatch.setenv("TIBENCH_DATA", str(tmp_path))
    study = parse_study({"study": "m", "prometheus_url": f"http://admin:{SECRET}@prom:9090"})
    store = Store.for_study(study, record=True)
    stored = store.read("studies", "m")["params_json"].iloc[0]
    assert SECRET not in stored and "admin:***@prom" in stored


@pytest.mark.slow
def test_results_url_takes_its_password_from_the_environment(mariadb, monkeypatch):
    """The catalog on a MariaDB results server: password from results_password_env only."""
    ci = mariadb.conninfo()
    with ci.engine(database="").begin() as c:
        c.exec_driver_sql("CREATE DATABASE IF NOT EXISTS tibench_results")
    monkeypatch.setenv("TB_RESULTS_PW", ci.password)
    url = f"mysql+pymysql://{ci.user}@127.0.0.1:{ci.port}/tibench_results"
    study = parse_study(
        {
            "study": "r",
            "results_url": url,
            "results_password_env": "TB_RESULTS_PW",
            "prometheus_url": f"http://admin:{SECRET}@prom:9090",
        }
    )
    store = Store.for_study(study, record=True)
    assert ci.password not in store.url
    stored = store.read("studies", "r")["params_json"].iloc[0]
    assert ci.password not in stored and SECRET not in stored and url in stored
    store.engine.dispose()


# -- study names ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name", [".", "..", "...", "server", "reference"])
def test_study_names_that_escape_or_collide_are_refused(name):
    with pytest.raises(ParamsError, match="study"):
        parse_study({"study": name})


@pytest.mark.parametrize("name", ["..", ".", "../x", "a/b", "/etc", "", "server"])
def test_paths_refuse_anything_outside_the_data_dir(name, tmp_path, monkeypatch):
    monkeypatch.setenv("TIBENCH_DATA", str(tmp_path))
    with pytest.raises(paths.PathError, match="study name"):
        paths.study_dir(name)
    assert paths.study_dir("ok.name-1") == tmp_path / "ok.name-1"


def test_server_name_stays_under_the_server_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TIBENCH_DATA", str(tmp_path))
    with pytest.raises(paths.PathError, match="server name"):
        paths.server_dir("../../etc")


# -- catalog faults ------------------------------------------------------------------------------
def test_corrupt_catalog_names_the_file_and_what_to_do(tmp_path):
    db = tmp_path / "results.sqlite"
    db.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(CatalogError) as e:
        Store(f"sqlite:///{db}")
    assert str(db) in str(e.value) and "move it aside" in str(e.value)
    assert db.read_bytes() == b"this is not sqlite" * 100  # untouched


def test_catalog_is_wal_with_schema_version(tmp_path):
    db = tmp_path / "results.sqlite"
    Store(f"sqlite:///{db}").record_study("s", {})
    with sqlite3.connect(db) as c:
        assert c.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert c.execute("PRAGMA user_version").fetchone()[0] == 1


def test_catalog_from_a_newer_tibench_is_refused(tmp_path):
    db = tmp_path / "results.sqlite"
    Store(f"sqlite:///{db}").record_study("s", {"a": 1})
    with sqlite3.connect(db) as c:
        c.execute("PRAGMA user_version = 99")
    before = _counts(db)
    with pytest.raises(CatalogError, match=r"schema version 99.*upgrade tibench"):
        Store(f"sqlite:///{db}")
    assert _counts(db) == before


def test_empty_catalog_is_said_out_loud(tmp_path, caplog):
    db = tmp_path / "results.sqlite"
    db.write_bytes(b"")
    Store(f"sqlite:///{db}")
    assert any("0 bytes" in r.getMessage() and str(db) in r.getMessage() for r in caplog.records)


def test_corrupt_catalog_through_the_cli_is_one_line(tmp_path):
    (tmp_path / "c").mkdir()
    db = tmp_path / "c" / "results.sqlite"
    db.write_bytes(b"garbage" * 200)
    params = tmp_path / "p.yaml"
    params.write_text("study: c\nphases: [compare]\n")
    r = _tibench("run", str(params), "--in-process", "--phase", "compare", data=tmp_path)
    assert r.returncode == 1
    line = _error_line(r)
    assert str(db) in line and "move it aside" in line, r.stderr
    assert "Traceback" not in r.stderr
    assert json.dumps  # keep the import used when this file grows


# -- parsing: bad files and large files ---------------------------------------------------------
FIXTURES = Path(__file__).parent / "fixtures" / "sysbench"


def _fixture_logs():
    import gzip

    for p in sorted(FIXTURES.rglob("*.txt*")):
        raw = p.read_bytes()
        yield p.name, (gzip.decompress(raw) if p.suffix == ".gz" else raw)


@pytest.mark.parametrize("name,raw", list(_fixture_logs()), ids=lambda x: str(x)[:40])
def test_streamed_parse_equals_whole_parse(name, raw, tmp_path, monkeypatch):
    """Every real log parses the same streamed in small chunks as read whole."""
    import numpy as np

    from tibenchlib.parse import sysbench as sb

    f = tmp_path / "log.txt"
    f.write_bytes(raw)
    whole = sb.parse_sysbench_file(f)
    monkeypatch.setattr(sb, "STREAM_ABOVE_BYTES", 0)
    monkeypatch.setattr(sb, "_CHUNK_LINES", 7)
    streamed = sb.parse_sysbench_file(f)
    assert streamed.summary == whole.summary
    np.testing.assert_array_equal(streamed.intervals.to_numpy(), whole.intervals.to_numpy())
    assert streamed.histogram.equals(whole.histogram)
    counted = sb.parse_sysbench_file(f, intervals=False)
    assert counted.summary == whole.summary and len(counted.intervals) == 0


def test_large_log_streams_in_bounded_memory(tmp_path):
    """A log of 60 MB of real interval lines: parsed with peak memory well under its size."""
    code = f"""
import resource, sys
sys.path.insert(0, {str(Path(__file__).parents[1])!r})
from tibenchlib.parse.sysbench import parse_sysbench_file
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
s = parse_sysbench_file(sys.argv[1], intervals=False).summary
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(s["status"], s["intervals"], s["tps"], (after - before) * 1024)
"""
    import gzip

    text = gzip.decompress(
        (FIXTURES / "mariadb" / "point_select-t2-ri1-600s-hist.txt.gz").read_bytes()
    ).decode()
    lines = text.splitlines(keepends=True)
    iv = [x for x in lines if x.startswith("[ ")]
    first, last = lines.index(iv[0]), lines.index(iv[-1])
    f = tmp_path / "big.log"
    with open(f, "w") as out:
        out.writelines(lines[:first])
        block = "".join(iv)
        reps = 60_000_000 // len(block) + 1
        for _ in range(reps):
            out.write(block)
        out.writelines(lines[last + 1 :])
    size = f.stat().st_size
    r = subprocess.run([sys.executable, "-c", code, str(f)], capture_output=True, text=True)
    status, n, tps, grew = r.stdout.split()
    assert status == "ok" and int(n) == reps * len(iv)
    assert float(tps) == pytest.approx(float(parse_tps(text)))
    assert int(grew) < 0.25 * size, f"peak memory grew by {int(grew) / size:.2f}x the log"


def parse_tps(text: str) -> float:
    from tibenchlib.parse.sysbench import parse_sysbench

    return parse_sysbench(text).summary["tps"]


def test_parse_directory_and_unreadable_files_are_per_file_statuses(tmp_path):
    good = FIXTURES / "mariadb" / "point_select-t2-events2000.txt"
    missing = tmp_path / "missing.log"
    r = _tibench(
        "parse", "sysbench", str(tmp_path), str(good), str(missing), "--json", data=tmp_path
    )
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    assert [x["status"] for x in rows] == ["unreadable", "ok", "unreadable"]
    assert "is a directory" in rows[0]["error"] and "no such file" in rows[2]["error"]
    assert f"tibench: {tmp_path}: is a directory" in r.stderr
    r = _tibench("parse", "sysbench", str(tmp_path), "--json", data=tmp_path)
    assert r.returncode == 2 and json.loads(r.stdout)[0]["status"] == "unreadable"


# -- the study lock ------------------------------------------------------------------------------
HOLD = """
import sys, time
sys.path.insert(0, sys.argv[2])
from tibenchlib.lock import study_lock
with study_lock(sys.argv[1]):
    print("held", flush=True)
    time.sleep(60)
"""


def test_second_runner_fails_at_once_naming_the_holder(tmp_path, monkeypatch):
    from tibenchlib.lock import ENV, StudyLocked, lock_path, study_lock

    monkeypatch.setenv("TIBENCH_DATA", str(tmp_path))
    root = str(Path(__file__).parents[1])
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, "lk", root],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ},
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(StudyLocked, match=f"pid {holder.pid}"):
            with study_lock("lk"):
                pass
        # naming the holder in the environment does not let a non-descendant in
        monkeypatch.setenv(ENV, f"{lock_path('lk')}:{holder.pid}")
        with pytest.raises(StudyLocked):
            with study_lock("lk"):
                pass
        params = tmp_path / "p.yaml"
        params.write_text("study: lk\n")
        r = _tibench("run", str(params), "--phase", "prepare", "--in-process", data=tmp_path)
        assert r.returncode == 1
        line = _error_line(r)
        assert f"pid {holder.pid}" in line and "being run by another tibench" in line
        assert "phase prepare" not in r.stderr, "nothing ran"
    finally:
        holder.kill()
        holder.wait()


def test_lock_is_reentrant_in_process_and_for_children(tmp_path, monkeypatch):
    from tibenchlib.lock import study_lock

    monkeypatch.setenv("TIBENCH_DATA", str(tmp_path))
    child = (
        "import sys; sys.path.insert(0, sys.argv[1]);"
        "from tibenchlib.lock import study_lock\n"
        "with study_lock('re'): print('child ran')"
    )
    with study_lock("re"):
        with study_lock("re"):  # a phase inside tibench run's lock
            pass
        r = subprocess.run(
            [sys.executable, "-c", child, str(Path(__file__).parents[1])],
            capture_output=True,
            text=True,
        )
        assert r.returncode == 0 and "child ran" in r.stdout, r.stderr
    # released: an unrelated process takes it
    r = subprocess.run(
        [sys.executable, "-c", child, str(Path(__file__).parents[1])],
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if k != "TIBENCH_STUDY_LOCK"},
    )
    assert r.returncode == 0, r.stderr


# -- sysbench's credentials file -----------------------------------------------------------------
def test_credentials_file_lives_in_the_study_private_dir(tmp_path, monkeypatch):
    from tibenchlib.db import ConnInfo, remove_stale_configs, secret_config_file

    monkeypatch.setenv("TIBENCH_DATA", str(tmp_path))
    d = paths.private_dir("cfg")
    assert d == tmp_path / "cfg" / ".private"
    assert (d.stat().st_mode & 0o777) == 0o700
    info = ConnInfo("127.0.0.1", 3306, "u", "sbtest", password=SECRET)
    with secret_config_file(info, d) as p:
        assert p.parent == d and (p.stat().st_mode & 0o777) == 0o600
        assert SECRET in p.read_text()
    assert not p.exists()
    (d / "sysbench-stale.cfg").write_text(f"mysql-password={SECRET}\n")  # left by a SIGKILL
    assert remove_stale_configs(d) == 1 and not list(d.iterdir())


# -- a dead target -------------------------------------------------------------------------------
def test_dead_external_target_stops_the_phase_with_one_masked_line():
    from types import SimpleNamespace

    from tibenchlib.db import ConnInfo
    from tibenchlib.runloop import AliveCheck, TargetDown
    from tibenchlib.server import free_port
    from tibenchlib.sysbench.runner import RunSpec

    conn = ConnInfo("127.0.0.1", free_port(), "root", "sbtest", password=SECRET)
    ctx = SimpleNamespace(server=None, conn=conn)
    with pytest.raises(TargetDown) as e:
        AliveCheck().check(ctx, RunSpec("a", "oltp_point_select", 1, 1), 5)
    msg = str(e.value)
    assert "stopped answering before run a/oltp_point_select/t1/r1" in msg
    assert "5 runs left" in msg and SECRET not in msg and "\n" not in msg


# -- the corpus on the embedded default, with a measured study -----------------------------------
@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    import shutil

    if not shutil.which("sysbench"):
        pytest.skip("sysbench is not installed (make setup installs it)")
    data = tmp_path_factory.mktemp("corpus-data")
    params = data.parent / "corpus.yaml"
    params.write_text(
        "study: corpus\nworkloads: [oltp_point_select]\nthreads: [1]\nrepeats: 2\n"
        "duration_s: 1\nsample_resources: false\ndataset: {tables: 1, table_size: 1000}\n"
    )
    r = _tibench(
        "run", str(params), "--phase", "prepare", "--phase", "sweep", "--in-process", data=data
    )
    assert r.returncode == 0, r.stderr
    yield data, params, data / "corpus" / "results.sqlite"
    _tibench("server", "stop", data=data)


def _variant(measured, text: str) -> Path:
    data, params, _ = measured
    p = data.parent / "variant.yaml"
    p.write_text(params.read_text() + text)
    return p


BAD_PARAMS = [
    ("threads: [1\n", "not valid YAML"),
    ("colour: blue\n", "colour: unknown key"),
    ("repeats: 0\n", "repeats: Input should be greater than 0"),
    ("order: backwards\n", "order: Input should be"),
    (
        f"target: {{kind: url, url: 'mysql+pymysql://root:{SECRET}@127.0.0.1:4000/sbtest'}}\n",
        "root:***@127.0.0.1:4000",
    ),
    ("extra_args: ['--mysql-password=x']\n", "--mysql-password comes from target"),
]


@pytest.mark.slow
@pytest.mark.parametrize("extra,shown", BAD_PARAMS, ids=[b for _, b in BAD_PARAMS])
def test_bad_params_one_line_and_nothing_lost(measured, extra, shown):
    data, _, db = measured
    before = _counts(db)
    p = _variant(measured, extra)
    r = _tibench("run", str(p), "--phase", "sweep", "--in-process", "--redo", data=data)
    assert r.returncode == 2, r.stderr
    assert shown in r.stderr and SECRET not in r.stderr + r.stdout
    assert "Traceback" not in r.stderr and "phase sweep" not in r.stderr
    assert _counts(db) == before


@pytest.mark.slow
def test_study_dot_dot_is_refused_before_anything_is_written(measured, tmp_path):
    data, params, db = measured
    p = tmp_path / "dots.yaml"
    p.write_text(params.read_text().replace("study: corpus", "study: '..'"))
    r = _tibench("run", str(p), "--phase", "prepare", "--in-process", data=data)
    assert r.returncode == 2 and "study: Value error, '..' is not a study name" in r.stderr
    assert not (data.parent / "results.sqlite").exists()


@pytest.mark.slow
def test_missing_sysbench_is_said_before_any_run(measured):
    data, params, db = measured
    before = _counts(db)
    r = _tibench(
        "run",
        str(params),
        "--phase",
        "sweep",
        "--in-process",
        "--redo",
        data=data,
        env={"PATH": "/nonexistent"},
    )
    assert r.returncode == 1
    assert _error_line(r).startswith("tibench: error: ToolMissing: sysbench is not installed")
    assert _counts(db) == before


@pytest.mark.slow
def test_unreachable_and_wrong_password_targets(measured):
    from tibenchlib.server import free_port

    data, _, db = measured
    before = _counts(db)
    closed = free_port()
    p = _variant(
        measured,
        f"target: {{kind: url, url: 'mysql+pymysql://root@127.0.0.1:{closed}/sbtest'}}\n"
        "allow_destructive: true\n",
    )
    r = _tibench("run", str(p), "--phase", "sweep", "--in-process", "--redo", data=data)
    assert r.returncode == 1
    assert f"cannot connect to mysql+pymysql://root@127.0.0.1:{closed}/sbtest" in _error_line(r)

    st = json.loads(_tibench("server", "status", "--json", data=data).stdout)
    p = _variant(
        measured,
        f"target: {{kind: url, url: 'mysql+pymysql://tibench@127.0.0.1:{st['port']}/sbtest',"
        " password_env: TB_WRONG}\nallow_destructive: true\n",
    )
    r = _tibench(
        "run",
        str(p),
        "--phase",
        "sweep",
        "--in-process",
        "--redo",
        data=data,
        env={"TB_WRONG": SECRET},
    )
    assert r.returncode == 1 and "Access denied" in _error_line(r)
    assert SECRET not in r.stderr + r.stdout
    assert _counts(db) == before


@pytest.mark.slow
def test_server_killed_mid_sweep_is_restarted_once_and_resume_retries(measured, monkeypatch):
    import signal
    import threading
    import time

    from tibenchlib import phases
    from tibenchlib.params import load_study

    data, params, _ = measured
    monkeypatch.setenv("TIBENCH_DATA", str(data))
    p = data.parent / "killed.yaml"
    p.write_text(
        params.read_text()
        .replace("study: corpus", "study: killed")
        .replace("repeats: 2", "repeats: 6")
    )
    study = load_study(p)
    store = Store.for_study(study)
    killed = {}

    def kill_server_during_second_run():
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(store.run_status("killed")) < 1:
            time.sleep(0.05)
        time.sleep(0.4)
        st = json.loads((data / "server" / "embedded" / "private" / "state.json").read_text())
        os.kill(st["pid"], signal.SIGKILL)
        killed["pid"] = st["pid"]

    t = threading.Thread(target=kill_server_during_second_run)
    t.start()
    df = phases.sweep(study, progress=False)
    t.join()
    assert killed and len(df) == 6
    assert 1 <= (df["status"] != "ok").sum() <= 1, df[["run_key", "status", "error"]]
    assert (df["status"] == "ok").sum() == 5  # the later runs ran on the restarted server
    # resume: only the failed run runs again, its first log kept
    again = phases.sweep(study, progress=False)
    assert (again["status"] == "ok").all()
    assert sorted(again["attempts"].fillna(1).astype(int)) == [1, 1, 1, 1, 1, 2]
    ok_before = df[df["status"] == "ok"].set_index("run_key")["tps"]
    assert (again.set_index("run_key").loc[ok_before.index, "tps"] == ok_before).all()


@pytest.mark.slow
def test_tibench_run_notebook_kernel_works_under_the_parents_lock(measured):
    """``tibench run`` holds the lock; the papermill kernel's phase takes it without failing."""
    data, params, db = measured
    r = _tibench("run", str(params), "--phase", "environment", "--json", data=data)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)[0]["arm"] == "default"
    assert not (data / "corpus" / ".private").exists() or not list(
        (data / "corpus" / ".private").glob("*.cfg")
    )


@pytest.mark.slow
def test_emptied_catalog_never_costs_the_old_raw_logs(measured):
    data, params, _ = measured
    p = data.parent / "zero.yaml"
    p.write_text(
        params.read_text()
        .replace("study: corpus", "study: zero")
        .replace("repeats: 2", "repeats: 1")
    )
    r = _tibench("run", str(p), "--phase", "sweep", "--in-process", data=data)
    assert r.returncode == 0, r.stderr
    raw = data / "zero" / "raw" / "sysbench" / "default__oltp_point_select__t1__r1.log"
    first = raw.read_text()
    (data / "zero" / "results.sqlite").write_bytes(b"")
    for side in ("-wal", "-shm"):
        (data / "zero" / f"results.sqlite{side}").unlink(missing_ok=True)
    r = _tibench("run", str(p), "--phase", "sweep", "--in-process", data=data)
    assert r.returncode == 0, r.stderr
    assert "0 bytes" in r.stderr and "results.sqlite" in r.stderr
    assert raw.with_name(raw.stem + ".attempt1.log").read_text() == first
    assert raw.read_text() != first


def test_a_study_folder_symlinked_to_another_disk_is_allowed(tmp_path, monkeypatch):
    data, elsewhere = tmp_path / "data", tmp_path / "big-disk" / "s"
    elsewhere.mkdir(parents=True)
    data.mkdir()
    (data / "s").symlink_to(elsewhere)
    monkeypatch.setenv("TIBENCH_DATA", str(data))
    assert paths.study_dir("s").resolve() == elsewhere
