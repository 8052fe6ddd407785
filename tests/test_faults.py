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
from helpers import run_cli, tibench

from tibenchlib import paths
from tibenchlib.db import mask_url, url_has_password
from tibenchlib.params import ParamsError, parse_study
from tibenchlib.phase import RunContext
from tibenchlib.store import CatalogError, Store

SECRET = "s3cr/e?t@pw"


def _tibench(
    *args, data: Path, env: dict | None = None, cwd: Path | None = None, child: bool = False
):
    """``tibench ARGS`` on the data directory ``data``: in this process (what ``main`` does with
    the input is what these cases test), or as a child process (``child``) where only a child
    shows it (a phase measured and killed, the entry point's own exit)."""
    env = {"TIBENCH_DATA": str(data), **(env or {})}
    return run_cli(*args, env=env, cwd=cwd) if child else tibench(*args, env=env, cwd=cwd)


def _data(data: Path) -> dict[str, str]:
    return {"TIBENCH_DATA": str(data)}


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
    c = sqlite3.connect(db)
    try:  # closed, not only committed: an open reader keeps SQLite's WAL files in place
        tabs = [r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {t: c.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in tabs}
    finally:
        c.close()


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
    url = f"http://admin:{SECRET}@prom:9090"
    with pytest.raises(ParamsError, match="prometheus_http.password_env"):
        parse_study({"study": "m", "prometheus_url": url})
    # refused in the file; the catalog masks it all the same when a study is built in code
    study = parse_study({"study": "m"}).model_copy(update={"prometheus_url": url})
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
        }
    ).model_copy(update={"prometheus_url": f"http://admin:{SECRET}@prom:9090"})
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
    r = tibench("run", str(params), "--in-process", "--phase", "compare", env=_data(tmp_path))
    assert r.returncode == 2  # bad input: nothing runs on a catalog that cannot be read
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


@pytest.mark.slow  # writes and parses 60 MB: several seconds
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
    r = tibench(
        "parse", "sysbench", str(tmp_path), str(good), str(missing), "--json", env=_data(tmp_path)
    )
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    assert [x["status"] for x in rows] == ["unreadable", "ok", "unreadable"]
    assert "is a directory" in rows[0]["error"] and "no such file" in rows[2]["error"]
    assert f"tibench: {tmp_path}: is a directory" in r.stderr
    r = tibench("parse", "sysbench", str(tmp_path), "--json", env=_data(tmp_path))
    assert r.returncode == 2 and json.loads(r.stdout)[0]["status"] == "unreadable"


# -- parsing: truncated logs, files that are not logs ------------------------------------------
HIST_LOG = FIXTURES / "mariadb" / "point_select-t2-ri1-hist.txt"


@pytest.mark.parametrize(
    "cut_after,missing",
    [
        ("Latency (ms):", "latency min"),
        ("avg:", "latency max"),
        ("95th percentile:", "latency sum"),
        ("Threads fairness:", "threads fairness"),
    ],
)
def test_sysbench_log_cut_inside_its_summary_is_truncated(tmp_path, cut_after, missing):
    text = HIST_LOG.read_text()
    assert parse_tps(text) > 0  # the whole log parses as ok
    end = text.index("\n", text.index(cut_after)) + 1
    f = tmp_path / "cut.log"
    f.write_text(text[:end])
    r = _tibench("parse", "sysbench", str(f), "--json", data=tmp_path)
    assert r.returncode == 0, r.stderr
    row = json.loads(r.stdout)[0]
    assert row["status"] == "failed" and row["error"].startswith("truncated: the summary ends")
    assert missing in row["error"]
    r = _tibench("parse", "sysbench", str(HIST_LOG), str(f), data=tmp_path)
    assert f"{f}: truncated: the summary ends early (no {missing}" in r.stdout
    assert [x.split()[1] for x in r.stdout.splitlines()[2:4]] == ["ok", "failed"]


@pytest.mark.parametrize("tool", ["sysbench", "ycsb", "tpcc", "tpch"])
def test_fifo_and_devices_are_refused_without_reading(tool, tmp_path):
    fifo = tmp_path / "pipe.log"
    os.mkfifo(fifo)
    r = run_cli("parse", tool, str(fifo), "/dev/zero", "--json", timeout=60)
    assert r.returncode == 2, r.stderr
    rows = json.loads(r.stdout)
    assert [x["status"] for x in rows] == ["unreadable", "unreadable"]
    assert f"tibench: {fifo}: is not a regular file" in r.stderr
    assert "tibench: /dev/zero: is not a regular file" in r.stderr


TOOL_FIXTURES = {
    "sysbench": HIST_LOG,
    "tpch": FIXTURES.parent / "go-tpc-tpch" / "go-tpc-tpch-2020-summary-22q-got-signal.txt",
    "tpcc": FIXTURES.parent / "go-tpc-tpcc" / "go-tpc-tpcc-run-x86-with-err-lines.txt",
    "ycsb": FIXTURES.parent / "ycsb" / "tibench-ycsb-0.17-run-histogram-mariadb.txt",
}
NO_OUTPUT = {"sysbench": "no sysbench output", "tpch": "no TPC-H result",
             "tpcc": "no TPC-C result", "ycsb": "no YCSB result"}  # fmt: skip


@pytest.mark.parametrize("tool", sorted(TOOL_FIXTURES))
def test_parse_of_files_holding_no_output_of_the_tool_says_so_and_exits_2(tool, tmp_path):
    empty, noise, other = tmp_path / "empty.log", tmp_path / "noise.log", tmp_path / "other.log"
    empty.write_bytes(b"")
    noise.write_bytes(bytes(range(1, 256)) * 8 + b"\n")
    # another tool's whole output, and the head of this tool's own log cut before any result
    others = [t for t in sorted(TOOL_FIXTURES) if t != tool]
    other.write_text(TOOL_FIXTURES[others[0]].read_text())
    for f, said in [(empty, "is empty: "), (noise, "holds "), (other, "holds ")]:
        r = _tibench("parse", tool, str(f), "--json", data=tmp_path)
        assert r.returncode == 2, (f.name, r.stdout)
        assert r.stderr.startswith(f"tibench: {f}: {said}{NO_OUTPUT[tool]}"), r.stderr
        assert len(r.stderr.splitlines()) == 1
        (row,) = json.loads(r.stdout)
        assert row["file"] == str(f) and row["status"] != "ok" and row["error"]
    # beside a file holding a result: that file's rows, the others named, exit 0
    r = _tibench("parse", tool, str(TOOL_FIXTURES[tool]), str(empty), "--json", data=tmp_path)
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    assert rows[0]["status"] == "ok" and rows[-1]["file"] == str(empty)
    assert f"tibench: {empty}: is empty: {NO_OUTPUT[tool]}" in r.stderr


def test_parse_tpch_of_a_log_cut_before_its_first_result_exits_2(tmp_path):
    text = TOOL_FIXTURES["tpch"].read_text()
    cut = tmp_path / "cut.log"
    cut.write_text(text[: text.index("[Summary]") + len("[Summ")])  # cut inside the first line
    r = _tibench("parse", "tpch", str(cut), data=tmp_path)
    assert r.returncode == 2 and f"tibench: {cut}: holds no TPC-H result" in r.stderr
    assert "failed" in r.stdout.splitlines()[2]


MEASURE = """
import json, resource, sys
sys.path.insert(0, {root!r})
from tibenchlib.parse import parse_sysbench_file, parse_tpcc_file, parse_ycsb_file
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
s = {{"sysbench": parse_sysbench_file, "ycsb": parse_ycsb_file, "tpcc": parse_tpcc_file}}[
    sys.argv[1]](sys.argv[2]).summary
grew = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024
print(json.dumps({{"status": s["status"], "error": s["error"], "grew": grew}}))
"""


@pytest.mark.parametrize("tool", ["sysbench", "ycsb", "tpcc"])
def test_a_300_mb_file_of_zeros_is_refused_in_bounded_memory(tool, tmp_path):
    """No line breaks: "not a … log" after a few MB read, memory and time bounded."""
    import time

    f = tmp_path / "zeros.log"
    with open(f, "wb") as fh:
        fh.truncate(300 << 20)  # sparse: reads as 300 MB of zero bytes
    code = MEASURE.format(root=str(Path(__file__).parents[1]))
    t0 = time.monotonic()
    r = subprocess.run(
        [sys.executable, "-c", code, tool, str(f)], capture_output=True, text=True, timeout=120
    )
    took = time.monotonic() - t0
    out = json.loads(r.stdout)
    assert out["status"] in ("failed", "error"), out
    assert out["error"].startswith("not a ") and "longer than 1 MiB" in out["error"]
    assert out["grew"] < 32 << 20, f"grew by {out['grew'] >> 20} MB"
    assert took < 30


def test_log_lines_keep_the_text_and_bound_the_line(tmp_path, monkeypatch):
    from tibenchlib.parse import files

    text = "a\r\nb\rc\n" + "é" * 50 + "\nlast"
    f = tmp_path / "x.log"
    f.write_bytes(text.encode())
    monkeypatch.setattr(files, "CHUNK_BYTES", 3)  # chunks split lines and characters
    assert list(files.log_lines(f, "log")) == ["a\n", "b\n", "c\n", "é" * 50 + "\n", "last"]
    monkeypatch.setattr(files, "MAX_LINE_BYTES", 60)
    f.write_bytes(b"ok\n" + b"x" * 100)
    with pytest.raises(files.NotALog, match="not a log: line 2 is longer"):
        list(files.log_lines(f, "log"))


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


# -- the server lease across a whole tibench run -------------------------------------------------
LEASE = """
import sys
from tibenchlib.lock import study_lock
from tibenchlib.server import EmbeddedServer
with study_lock(sys.argv[1]), EmbeddedServer(root=sys.argv[2]).lease():
    print("held", flush=True)
"""


def _other_study_takes_the_lease(data: Path) -> subprocess.CompletedProcess:
    """Another study, in a process that is no descendant of the run, asks for the lease of the
    embedded server and waits for it no longer than 0.2 s."""
    return subprocess.run(
        [sys.executable, "-c", LEASE, "study-b", str(data / "server" / "embedded")],
        capture_output=True,
        text=True,
        env={
            **{k: v for k, v in os.environ.items() if k != "TIBENCH_STUDY_LOCK"},
            "TIBENCH_DATA": str(data),
            "TIBENCH_SERVER_WAIT_S": "0.2",
        },
    )


def test_a_run_holds_the_server_lease_from_its_first_phase_to_its_last(tmp_path, monkeypatch):
    """Between two notebooks (no kernel alive, none holding a lease of its own) the run still
    holds the embedded server: another study is refused with the run named; a kernel of the run
    (a child of the holder, same study) is not. After the run, the other study gets it."""
    from tibenchlib import notebook, phases

    data = tmp_path / "data"
    monkeypatch.setenv("TIBENCH_DATA", str(data))
    params = tmp_path / "lease.yaml"
    params.write_text("study: study-a\nphases: [environment, prepare]\n")
    seen: dict[str, tuple] = {}

    def kernel(study, phase, params_path, **kw):
        # the kernel: a child of the run, under its lock, takes the lease at once
        own = subprocess.run(
            [sys.executable, "-c", LEASE, study, str(data / "server" / "embedded")],
            capture_output=True,
            text=True,
            env={**os.environ, "TIBENCH_SERVER_WAIT_S": "0"},
        )
        seen[phase] = (own, _other_study_takes_the_lease(data))

    monkeypatch.setattr(notebook, "execute_phase_notebook", kernel)
    monkeypatch.setattr(phases, "read_results", lambda study, phase: [])
    r = tibench("run", str(params), env={"TIBENCH_DATA": str(data)})
    assert r.returncode == 0, r.stderr
    assert list(seen) == ["environment", "prepare"]
    for phase, (own, other) in seen.items():
        assert own.returncode == 0 and own.stdout.strip() == "held", (phase, own.stderr)
        assert other.returncode == 1, (phase, other.stdout)
        line = other.stderr.strip().splitlines()[-1]
        assert (
            f"ServerBusy: embedded server 'embedded' is in use by study 'study-a' (pid "
            f"{os.getpid()}); waited 0.2s (TIBENCH_SERVER_WAIT_S)" in line
        ), line
    after = _other_study_takes_the_lease(data)
    assert after.returncode == 0 and after.stdout.strip() == "held", after.stderr


@pytest.mark.parametrize(
    "target,phases,names",
    [
        ({"kind": "embedded"}, ["sweep"], ["embedded"]),
        ({"kind": "url", "url": "mysql+pymysql://root@10.0.0.5:4000/sbtest"}, ["sweep"], []),
        (
            {"kind": "url", "url": "mysql+pymysql://root@10.0.0.5:4000/sbtest"},
            ["dm"],
            ["embedded", "dm-target"],
        ),
    ],
)
def test_the_servers_a_run_leases(target, phases, names):
    from tibenchlib.studyplan import embedded_servers

    study = parse_study({"study": "lease", "target": target})
    assert embedded_servers(study, phases) == names


@pytest.mark.slow
def test_two_studies_on_one_server_the_second_waits_then_is_refused(short_data, tmp_path):
    """Study A's ``tibench run`` (its phases in notebook kernels) measures on the embedded
    server; study B's, on the same data directory, waits ``TIBENCH_SERVER_WAIT_S`` and is
    refused with one line naming A, its catalog untouched; A ends as if alone."""
    import shutil
    import time

    if not shutil.which("sysbench"):
        pytest.skip("sysbench is not installed (make setup installs it)")
    data = short_data
    common = (
        "workloads: [oltp_point_select]\nthreads: [1]\nrepeats: 1\nduration_s: 2\n"
        "sample_resources: false\ndataset: {tables: 1, table_size: 1000}\n"
    )
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    a.write_text("study: study-a\n" + common)
    b.write_text("study: study-b\n" + common)
    env = {**os.environ, "TIBENCH_DATA": str(data)}
    cmd = [sys.executable, "-m", "tibenchlib.cli", "run"]
    proc = subprocess.Popen(
        [*cmd, str(a), "--phase", "prepare", "--phase", "sweep"],
        stderr=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stderr.readline().startswith("tibench: [1/2] prepare")
        t0 = time.monotonic()
        other = _tibench(
            "run", str(b), "--phase", "prepare", data=data, env={"TIBENCH_SERVER_WAIT_S": "2"}
        )
        waited = time.monotonic() - t0
        assert other.returncode == 1, other.stderr
        assert _error_line(other) == (
            f"tibench: error: ServerBusy: embedded server 'embedded' is in use by study "
            f"'study-a' (pid {proc.pid}); waited 2s (TIBENCH_SERVER_WAIT_S): run again when it "
            "has finished"
        )
        assert waited >= 2
        assert _counts(data / "study-b" / "results.sqlite").get("runs", 0) == 0
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
        runs = _rows(data / "study-a" / "results.sqlite", "SELECT status FROM runs")
        assert [r[0] for r in runs] == ["ok"]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        _tibench("server", "stop", data=data)


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
        "run",
        str(params),
        "--phase",
        "prepare",
        "--phase",
        "sweep",
        "--in-process",
        data=data,
    )
    assert r.returncode == 0, r.stderr
    yield data, params, data / "corpus" / "results.sqlite"
    _tibench("server", "stop", data=data)


def _variant(measured, text: str) -> Path:
    """The corpus params with ``text``'s top-level keys in place of the same keys (a key given
    twice is refused)."""
    data, params, _ = measured
    keys = {x.split(":")[0] for x in text.splitlines() if x and not x.startswith(" ")}
    base = [x for x in params.read_text().splitlines(keepends=True) if x.split(":")[0] not in keys]
    p = data.parent / "variant.yaml"
    p.write_text("".join(base) + text)
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

    # running, whatever the tests before left (a run stops the servers it started)
    assert _tibench("server", "start", data=data).returncode == 0
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
    df = phases.run_phase(study, "sweep", progress=False)
    t.join()
    assert killed and len(df) == 6
    assert 1 <= (df["status"] != "ok").sum() <= 1, df[["run_key", "status", "error"]]
    assert (df["status"] == "ok").sum() == 5  # the later runs ran on the restarted server
    failed = df[df["status"] != "ok"]["error"].iloc[0]
    assert failed and "\n" not in failed and "Traceback" not in failed, failed
    db = data / "killed" / "results.sqlite"
    before = _counts(db)
    # resume: only the failed run runs again, its first log kept
    again = phases.run_phase(study, "sweep", progress=False)
    after = _counts(db)
    assert after["runs"] == before["runs"] == 6
    assert after["run_attempts"] == before["run_attempts"] + 1  # the failed attempt kept
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
    r = _tibench("run", str(p), "--phase", "sweep", "--in-process", data=data, child=True)
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


# -- compare ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "args,named",
    [
        (["/nonexistent", "LOGS"], "baseline /nonexistent: no such directory"),
        (["LOGS", "/nonexistent"], "candidate /nonexistent: no such directory"),
        (["LOGS", "s/a"], "candidate s/a: no such directory"),
        (["/nonexistent", "/nonexistent2"], "baseline /nonexistent: no such directory"),
        (["FILE", "LOGS"], "baseline FILE: is a file; give the directory of sysbench logs"),
        (["foo/bar", "baz/q"], "foo/bar: study 'foo' has no catalog at "),
    ],
)
def test_compare_names_the_side_that_is_no_directory(tmp_path, args, named):
    logs, file = tmp_path / "garbdir", tmp_path / "one.log"
    logs.mkdir()
    file.write_text("")
    args = [str(logs) if x == "LOGS" else str(file) if x == "FILE" else x for x in args]
    named = named.replace("FILE", str(file))
    r = _tibench("compare", *args, data=tmp_path / "data")
    assert r.returncode == 2, r.stderr
    assert _error_line(r).startswith(f"tibench: error: {named}"), r.stderr
    assert len(r.stderr.splitlines()) == 1


# -- params files and catalogs that are not what they should be -----------------------------------
def _dry(tmp_path, params: Path, *more: str):
    return _tibench("run", str(params), "--dry-run", *more, data=tmp_path / "data")


PARAMS_FILES = [
    ("utf16", "study: x\n".encode("utf-16"), "UTF-16 text: save the params file as UTF-8"),
    ("binary", bytes(range(256)) * 4, "not UTF-8 text (byte 128 is 0x80)"),
    ("nul", b"study: x\n\0\0\0", "holds NUL bytes"),
    ("twice", b"study: a\nthreads: [1]\nstudy: b\n", "line 3: key 'study' given twice (first"),
    ("twice-nested", b"study: a\ndataset:\n  tables: 1\n  tables: 2\n", "line 4: key 'tables'"),
    ("tab", b"study: a\nsweep:\n\tthreads: [1]\n", "line 3, column 1: a tab character: YAML is"),
    (
        "tab-deep",
        b"study: a\ndataset:\n  tables: 1\n\t  table_size: 9\n",
        "line 4, column 1: a tab",
    ),
    ("two-docs", b"study: a\n---\nstudy: b\n", "line 2, column 1: a second YAML document"),
    ("unclosed", b"study: a\nthreads: [1, 2\n", "not valid YAML, line 3, column 1: expected"),
]


@pytest.mark.parametrize("kind,raw,shown", PARAMS_FILES, ids=[k for k, _, _ in PARAMS_FILES])
def test_params_file_that_is_not_utf8_yaml_is_one_line_naming_it(tmp_path, kind, raw, shown):
    p = tmp_path / f"{kind}.yaml"
    p.write_bytes(raw)
    r = _dry(tmp_path, p)
    assert r.returncode == 2, r.stderr
    line = _error_line(r)
    assert line.startswith(f"tibench: error: {p}: ") and shown in line, line
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    assert "<unicode string>" not in r.stderr
    assert not (tmp_path / "data").exists()


def test_params_path_that_is_a_directory_is_said_so(tmp_path):
    d = tmp_path / "study.yaml"
    d.mkdir()
    r = _dry(tmp_path, d)
    assert r.returncode == 2
    assert _error_line(r) == (
        f"tibench: error: {d}: is a directory, not a params file (give the YAML file in it)"
    )


@pytest.mark.parametrize("kind", ["fifo", "/dev/null", "/dev/zero"])
def test_params_path_that_is_not_a_regular_file_is_said_so_without_blocking(tmp_path, kind):
    """A FIFO with no writer would block an open for reading; /dev/zero would never end."""
    p = tmp_path / "study.yaml" if kind == "fifo" else Path(kind)
    if kind == "fifo":
        os.mkfifo(p)
    what = "a pipe (FIFO)" if kind == "fifo" else "a device"
    r = _tibench("run", str(p), "--dry-run", data=tmp_path / "data", child=True)
    assert r.returncode == 2, r.stderr
    assert _error_line(r) == (
        f"tibench: error: {p}: is {what}, not a regular file: give the study's YAML file"
    )
    assert len(r.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("command", ["runs", "report", "findings"])
def test_a_study_given_as_a_pipe_or_device_is_said_so(tmp_path, command):
    """The commands that take a study's name or its params file read a FIFO or a device as a
    params path (not as a study name that 'would write outside' the data directory)."""
    fifo = tmp_path / "study"
    os.mkfifo(fifo)
    for p, what in [(fifo, "a pipe (FIFO)"), (Path("/dev/null"), "a device")]:
        r = _tibench(command, str(p), data=tmp_path / "data")
        assert r.returncode == 2, r.stderr
        assert _error_line(r) == (
            f"tibench: error: {p}: is {what}, not a regular file: give the study's YAML file"
        )


@pytest.mark.parametrize("name", ["-h", "--help", "-x1"])
def test_study_named_like_an_option_is_refused(tmp_path, name):
    """The study's name is typed in the commands a run prints (tibench report NAME)."""
    p = tmp_path / "p.yaml"
    p.write_text(f'study: "{name}"\n')
    r = _dry(tmp_path, p)
    assert r.returncode == 2, r.stdout
    assert f"'{name}' starts with '-', which commands would read as an option" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 2 and not (tmp_path / "data").exists()


@pytest.mark.parametrize("name", paths.RESERVED_NAMES)
def test_study_named_after_a_folder_tibench_uses_is_refused(tmp_path, name):
    p = tmp_path / "p.yaml"
    p.write_text(f"study: {name}\n")
    r = _dry(tmp_path, p)
    assert r.returncode == 2
    assert f"'{name}' is reserved for tibench's own files" in r.stderr
    with pytest.raises(paths.PathError, match="reserved"):
        paths.study_dir(name)


def test_every_folder_of_the_data_dir_tibench_writes_is_reserved(tmp_path, monkeypatch):
    monkeypatch.setenv("TIBENCH_DATA", str(tmp_path))
    monkeypatch.delenv("TIBENCH_YCSB_HOME", raising=False)
    used = [
        paths.server_dir("embedded"),
        paths.jupyter_dir(),
        paths.tpch_data_dir("0.01"),
        paths.ycsb_home(),
        tmp_path / paths.REFERENCE_FOLDER,
    ]
    assert {p.relative_to(tmp_path).parts[0] for p in used} == set(paths.RESERVED_NAMES)


@pytest.mark.parametrize("command", ["runs", "report"])
def test_catalog_that_is_a_directory_is_refused_by_runs_and_report(tmp_path, command):
    data = tmp_path / "data"
    (data / "dirstudy" / "results.sqlite").mkdir(parents=True)
    p = tmp_path / "p.yaml"
    p.write_text("study: dirstudy\n")
    for ref in ("dirstudy", str(p)):
        r = _tibench(command, ref, data=data)
        assert r.returncode == 2, (ref, r.stdout, r.stderr)
        line = _error_line(r)
        assert f"{data / 'dirstudy' / 'results.sqlite'} is a directory" in line, line
        assert "move it aside" in line
    r = _tibench("run", str(p), "--phase", "compare", "--in-process", data=data)
    assert r.returncode == 2 and "is a directory, not a tibench catalog" in _error_line(r)
    assert (data / "dirstudy" / "results.sqlite").is_dir()


@pytest.fixture
def full_disk(tmp_path):
    """A 2 MB tmpfs (root only): the data directory on a disk that fills up."""
    mnt = tmp_path / "small-disk"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mnt)])
    if r.returncode != 0:
        pytest.skip("cannot mount a small tmpfs here (needs root)")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)])


def test_full_disk_is_one_line_naming_the_path(full_disk, tmp_path):
    data = full_disk / "data"
    p = tmp_path / "p.yaml"
    p.write_text("study: full\nphases: [compare]\n")
    r = _tibench("run", str(p), "--phase", "compare", "--in-process", data=data, child=True)
    # the catalog made on the empty disk by a child: its process, ended, holds no SQLite file
    # open (this one's would keep the WAL's room); the full disk is then met in this process
    assert "no sweep runs" in _error_line(r)
    db = data / "full" / "results.sqlite"
    before = _counts(db)
    with open(full_disk / "filler", "wb") as fh:
        try:
            fh.write(b"\0" * (4 << 20))
        except OSError:
            pass
    r = _tibench("run", str(p), "--phase", "compare", "--in-process", data=data)
    assert r.returncode == 2
    line = _error_line(r)
    assert f"{db}: no space left on its device" in line, line
    assert "Traceback" not in r.stderr
    other = tmp_path / "o.yaml"
    other.write_text("study: other\n")  # a new study: no room for its catalog
    r = _tibench("run", str(other), "--phase", "compare", "--in-process", data=data)
    assert r.returncode == 2
    line = _error_line(r)
    assert "no space left on" in line and str(data) in line, line
    (full_disk / "filler").unlink()
    assert _counts(db) == before


def test_stopping_a_server_that_does_not_exist_is_an_error(tmp_path):
    r = _tibench("server", "stop", "--name", "nosuch", data=tmp_path)
    assert r.returncode == 2
    line = _error_line(r)
    assert "--name nosuch: no such embedded server" in line
    assert str(tmp_path / "server" / "nosuch") in line
    r = _tibench("server", "stop", data=tmp_path)  # the default one, never started: stopped
    assert r.returncode == 0 and "stopped" in r.stdout


def test_missing_or_broken_java_is_found_before_any_run(tmp_path, monkeypatch):
    """With the binding built, Java is still checked first, and the hint names the package."""
    from tibenchlib.tools import ToolMissing
    from tibenchlib.ycsb import build

    home = tmp_path / "ycsb"
    done = home / f"build-{build.source_hash(build.SOURCE_DIR)}"
    done.mkdir(parents=True)
    (done / "classpath.txt").write_text("/nonexistent.jar\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", str(bin_dir))
    with pytest.raises(ToolMissing, match="java is not installed.*default-jre-headless"):
        build.build_binding(home)
    java = bin_dir / "java"
    java.write_text("#!/bin/sh\necho 'Error: could not find libjvm.so' >&2\nexit 1\n")
    java.chmod(0o755)
    with pytest.raises(ToolMissing, match="does not start .*libjvm.so.*default-jre-headless"):
        build.build_binding(home)


BAD_INPUT = [
    # (what, params text or None for the folder itself, extra args, exit code, in the line)
    ("params folder", None, (), 2, "is a directory, not a params file"),
    ("utf-16 params", "utf-16", (), 2, "variant.yaml: UTF-16 text: save the params file as UTF-8"),
    ("binary params", "binary", (), 2, "variant.yaml: not UTF-8"),
    ("study twice", "study: corpus\n", (), 2, "key 'study' given twice"),
    ("reserved name", "study: ycsb\n", (), 2, "- study: Value error, 'ycsb' is reserved"),
    ("server nosuch", None, ("server", "stop", "--name", "nosuch"), 2, "no such embedded server"),
    (
        "java missing",
        "phases: [ycsb]\nycsb: {workloads: {r: {maxexecutiontime_s: 1}}, threads: [1]}\n",
        ("--phase", "ycsb", "--in-process"),
        1,
        "java is not installed (YCSB runs on it): apt-get install default-jre-headless",
    ),
]


@pytest.mark.slow
@pytest.mark.parametrize("what,text,args,code,shown", BAD_INPUT, ids=[b[0] for b in BAD_INPUT])
def test_bad_input_is_one_line_and_the_catalog_stays_as_it_was(
    measured, tmp_path, what, text, args, code, shown
):
    """Issue 21 §12's bad inputs against a study with a catalog: the exit code, one line naming
    the file or field, and every catalog table's row count unchanged."""
    data, params, db = measured
    before = _counts(db)
    server_before = _embedded_pid(data)
    env = {}
    if args[:1] == ("server",):
        r = _tibench(*args, data=data)
    else:
        if text is None:
            target = tmp_path / "params.yaml"
            target.mkdir()
        elif text in ("utf-16", "binary"):
            target = _variant(measured, "")
            raw = params.read_text()
            target.write_bytes(raw.encode("utf-16") if text == "utf-16" else b"\x00\xff\xfe" * 50)
        elif what == "study twice":
            target = data.parent / "variant.yaml"
            target.write_text(params.read_text() + text)
        else:
            target = _variant(measured, text)
        if what == "java missing":
            empty = tmp_path / "bin"
            empty.mkdir()
            env["PATH"] = str(empty)  # no java; the running server needs no tool
        r = _tibench("run", str(target), *args, data=data, env=env)
    assert r.returncode == code, (r.stdout, r.stderr)
    # one error line; a params file's problems follow it, one line per field
    errors = [x for x in r.stderr.splitlines() if "tibench: error:" in x]
    assert len(errors) == 1 and shown in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    assert _counts(db) == before
    assert _embedded_pid(data) == server_before  # a server the run started is stopped again


# -- YCSB's own defaults for the operation mix ---------------------------------------------------
def test_ycsb_proportions_not_given_take_ycsbs_defaults_and_are_named(tmp_path):
    from tibenchlib.ycsb.runner import Workload

    w = Workload(operationcount=10)
    assert (w.readproportion, w.updateproportion, w.insertproportion) == (0.95, 0.05, 0.0)
    assert w.filled_in == {"readproportion": 0.95, "updateproportion": 0.05}
    assert Workload(operationcount=10, readproportion=1.0, updateproportion=0).filled_in == {}
    p = tmp_path / "p.yaml"
    p.write_text(
        "study: y\nphases: [ycsb]\n"
        "ycsb: {workloads: {ro: {readproportion: 1.0, maxexecutiontime_s: 3}}}\n"
    )
    r = _dry(tmp_path, p)
    assert r.returncode == 2
    assert "got 1.05 (updateproportion 0.05 not given: YCSB's default filled in" in r.stderr
    assert "give updateproportion: 0 for none" in r.stderr
    p.write_text(
        p.read_text().replace("readproportion: 1.0", "readproportion: 1.0, updateproportion: 0")
    )
    assert _dry(tmp_path, p).returncode == 0


# -- absurd counts -------------------------------------------------------------------------------
ABSURD = [
    ("repeats: 1000000000000\n", "repeats: Input should be less than or equal to 1000"),
    ("dm: {repeats: 1000000000000}\n", "dm.repeats: Input should be less than or equal to 1000"),
    ("ycsb: {repeats: 1000000000000}\n", "ycsb.repeats: Input should be less than or equal"),
    ("tpcc: {repeats: 1000000000000}\n", "tpcc.repeats: Input should be less than or equal"),
    ("ycsb: {threads: [1.0e+9]}\n", "ycsb.threads.0: Input should be less than or equal to 100000"),
    ("threads: [100001]\n", "threads.0: Input should be less than or equal to 100000"),
    ("tpcc: {warehouses: [1000000000]}\n", "tpcc.warehouses.0: Input should be less than or equal"),
    ("repeats: {min: 5, max: 5000}\n", "repeats.max: Input should be less than or equal to 1000"),
    ("duration_s: 100000000\n", "duration_s: Input should be less than or equal to 604800"),
    ("dataset: {tables: 1000000000}\n", "dataset.tables: Input should be less than or equal"),
    ("tpch_scaling: {streams: 1000000}\n", "tpch_scaling.streams: Input should be less than"),
]


@pytest.mark.parametrize("extra,shown", ABSURD, ids=[s.split(":")[0] for _, s in ABSURD])
def test_absurd_counts_are_refused_naming_the_field(tmp_path, extra, shown):
    p = tmp_path / "p.yaml"
    p.write_text("study: big\n" + extra)
    r = _dry(tmp_path, p)
    assert r.returncode == 2, r.stdout[-500:]
    assert shown in r.stderr, r.stderr


def test_dry_run_at_the_bounds_is_quick_and_its_disk_estimate_honest(tmp_path):
    """The largest accepted TPC-C data set is estimated in terabytes, not megabytes."""
    import time

    from tibenchlib.params import MAX_WAREHOUSES
    from tibenchlib.tpcc.phase import data_set_bytes

    # one warehouse at the specification's sizes: ~69 MB of rows (clause 4.3.3) and 8 MB of
    # items, twice that on disk
    assert data_set_bytes(100_000, 3_000, 1) / 2 == pytest.approx(77e6, rel=0.02)
    assert data_set_bytes(100_000, 3_000, 10) > 9 * data_set_bytes(100_000, 3_000, 1)
    p = tmp_path / "p.yaml"
    p.write_text(
        f"study: big\nphases: [tpcc]\ntpcc: {{warehouses: [{MAX_WAREHOUSES}], repeats: 1000}}\n"
    )
    t0 = time.monotonic()
    r = _tibench("run", str(p), "--dry-run", "--json", data=tmp_path / "data")
    took = time.monotonic() - t0
    assert r.returncode == 0, r.stderr
    (tpcc,) = [e for e in json.loads(r.stdout)["phases"] if e["phase"] == "tpcc"]
    assert tpcc["runs"] == 2 * 1000 and tpcc["disk_bytes"] > 10e12
    assert took < 60


# -- --redo never loses a good measurement -------------------------------------------------------
def _run_row(run_key: str, status: str, tps, attempts: int, log: str) -> dict:
    return {"study": "s", "run_key": run_key, "status": status, "tps": tps, "attempts": attempts,
            "error": None if status == "ok" else "timeout after 1 s", "log_path": log,
            "started_at": float(attempts), "warnings": []}  # fmt: skip


def test_a_failed_attempt_keeps_the_earlier_good_result_and_every_row(tmp_path):
    import pandas as pd

    db = tmp_path / "results.sqlite"
    store = Store(f"sqlite:///{db}")
    log = tmp_path / "raw" / "k.log"
    log.parent.mkdir()
    log.write_text("first\n")
    store.record_run(_run_row("k", "ok", 100.0, 1, str(log)), pd.DataFrame({"t": [1.0]}))
    log.rename(log.with_name("k.attempt1.log"))  # as the runner sets it aside
    log.write_text("second\n")
    store.record_run(_run_row("k", "failed", None, 2, str(log)))
    (row,) = store.runs("s").to_dict("records")
    assert row["status"] == "ok" and row["tps"] == 100.0 and row["attempts"] == 2
    assert row["warnings"] == [
        "attempt 2 failed (timeout after 1 s); this is the earlier good result"
    ]
    assert Path(row["log_path"]).read_text() == "first\n"
    assert len(store.intervals("s")) == 1  # the good run's intervals stay
    a = store.attempts("s", "k")
    assert list(a["status"]) == ["ok", "failed"] and list(a["attempts"]) == [1, 2]
    store.record_run(_run_row("k", "ok", 90.0, 3, str(log)))  # a later good attempt wins
    assert store.runs("s")["tps"].tolist() == [90.0]
    assert list(store.attempts("s")["tps"].fillna(-1)) == [100.0, -1, 90.0]
    assert _counts(db)["run_attempts"] == 3


@pytest.mark.slow
def test_redo_that_fails_keeps_the_good_runs(measured):
    data, _, db = measured
    with sqlite3.connect(db) as c:
        good = dict(c.execute("SELECT run_key, tps FROM runs WHERE status = 'ok'").fetchall())
    c.close()
    before = _counts(db)
    assert good
    p = _variant(measured, "run_timeout_s: 0.01\n")  # every re-measurement times out
    r = _tibench("run", str(p), "--phase", "sweep", "--in-process", "--redo", data=data)
    assert r.returncode == 0, r.stderr
    after = _counts(db)
    assert after["runs"] == before["runs"]
    assert after["run_attempts"] >= before.get("run_attempts", 0) + len(good)
    c = sqlite3.connect(db)
    try:
        now = dict(c.execute("SELECT run_key, tps FROM runs WHERE status = 'ok'").fetchall())
        failed = c.execute(
            "SELECT run_key, error FROM run_attempts WHERE status = 'failed'"
        ).fetchall()
        logs = dict(c.execute("SELECT run_key, log_path FROM runs").fetchall())
    finally:
        c.close()
    assert now == good, "a failed --redo replaced good results"
    assert {k for k, _ in failed} >= set(good) and all("timeout" in e for _, e in failed)
    for key, path in logs.items():
        assert ".attempt" in path and Path(path).exists(), (key, path)


# -- a server killed during a phase's run: that run fails, the server restarts once -------------
def _kill_embedded_when(data: Path, ready, timeout_s: float = 300):
    """A thread that SIGKILLs the embedded server once ``ready()`` is true; returns (thread,
    dict that gets the killed pid)."""
    import signal
    import threading
    import time

    killed: dict = {}

    def watch():
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and not ready():
            time.sleep(0.05)
        if not ready():
            return
        st = json.loads((data / "server" / "embedded" / "private" / "state.json").read_text())
        os.kill(st["pid"], signal.SIGKILL)
        killed["pid"] = st["pid"]

    t = threading.Thread(target=watch, daemon=True)
    t.start()
    return t, killed


@pytest.mark.slow
def test_server_killed_during_a_tpcc_run_fails_that_run_only(measured, monkeypatch):
    import time

    from tibenchlib.params import load_study
    from tibenchlib.tpcc.phase import run_tpcc_phase, runs_table

    data, params, _ = measured
    monkeypatch.setenv("TIBENCH_DATA", str(data))
    p = data.parent / "tpcc-killed.yaml"
    p.write_text(
        "study: tpcckill\nphases: [tpcc]\nsample_resources: false\n"
        "tpcc: {tool: sysbench, warehouses: [1], items: 1000, customers: 30, threads: [1],"
        " duration_s: 3, repeats: 3, consistency: true}\n"
    )
    study = load_study(p)
    raw = data / "tpcckill" / "raw"

    def first_run_going():
        logs = [x for x in raw.rglob("*r1*.log")] if raw.exists() else []
        return any(x.stat().st_size > 0 for x in logs) and time.sleep(1.0) is None

    t, killed = _kill_embedded_when(data, first_run_going)
    run_tpcc_phase(RunContext.open(study, yes=True, progress=False, record=False))
    t.join(timeout=5)
    runs = runs_table(study, Store.for_study(study))
    assert killed and len(runs) == 3, runs[["run_key", "status", "error"]]
    failed = runs[runs["status"] != "ok"]
    assert len(failed) == 1 and "\n" not in failed["error"].iloc[0]
    assert "stopped answering" in failed["error"].iloc[0], failed["error"].iloc[0]
    assert (runs["status"] == "ok").sum() == 2  # on the restarted server
    db = data / "tpcckill" / "results.sqlite"
    counts = _counts(db)
    assert counts["runs"] == counts["run_attempts"] == 3  # the failed run's row kept as well


@pytest.fixture
def short_data(monkeypatch):
    """A data directory (``TIBENCH_DATA``) with a path short enough for mariadbd's socket (at
    most 107 bytes; pytest's per-test folders under xdist are longer)."""
    import shutil
    import tempfile

    d = Path(tempfile.mkdtemp(prefix="tbk-"))
    d.chmod(0o755)  # mariadbd's user reaches its datadir through it
    monkeypatch.setenv("TIBENCH_DATA", str(d / "data"))
    yield d / "data"
    shutil.rmtree(d, ignore_errors=True)


def _rows(db: Path, sql: str, *args) -> list[tuple]:
    c = sqlite3.connect(db)
    try:
        return c.execute(sql, args).fetchall()
    finally:
        c.close()


def _embedded_pid(data: Path) -> int | None:
    from tibenchlib.server import EmbeddedServer

    return EmbeddedServer(root=data / "server" / "embedded").pid


def _one_failed_run(runs, killed: dict, data: Path, n: int) -> str:
    """The runs of a phase whose server was killed in one run: ``n`` runs, that one failed with
    one line, the others ok, and the server running again (restarted once): the failed run's
    error."""
    assert killed and len(runs) == n, runs[["run_key", "status", "error"]]
    failed = runs[runs["status"] != "ok"]
    assert len(failed) == 1, runs[["run_key", "status", "error"]]
    err = failed["error"].iloc[0]
    assert err and "\n" not in err and "Traceback" not in err, err
    pid = _embedded_pid(data)
    assert pid is not None and pid != killed["pid"], "restarted, and running"
    return err


@pytest.mark.slow
def test_server_killed_during_a_ycsb_run_fails_that_run_only(tmp_path, short_data):
    """Measured through the phase's notebook, as ``tibench run`` does: 1 of 5 runs failed (the
    20% limit) ends with the failed-runs line and exit 0, as in process (the notebook's checks
    had a rule of their own, 90% good, and failed the phase)."""
    import re
    import shutil

    from tibenchlib import phases
    from tibenchlib.params import load_study

    if not (shutil.which("java") and shutil.which("mvn")):
        pytest.skip("java and mvn are not installed (make setup installs them)")
    data = short_data
    p = tmp_path / "ycsb-killed.yaml"
    p.write_text(
        "study: ycsbkill\nphases: [ycsb]\nsample_resources: false\n"
        "ycsb: {workloads: {ru: {recordcount: 1000, maxexecutiontime_s: 3}}, threads: [1],"
        " repeats: 5, jvm_options: [-XX:TieredStopAtLevel=1]}\n"
    )
    study = load_study(p)
    db = data / "ycsbkill" / "results.sqlite"
    raw = data / "ycsbkill" / "raw" / "ycsb"
    going = re.compile(r" sec: [1-9]\d* operations")

    def first_run_going():
        logs = list(raw.glob("*r1.log")) if raw.exists() else []
        return any(going.search(x.read_text(errors="replace")) for x in logs)

    t, killed = _kill_embedded_when(data, first_run_going)
    try:
        r = _tibench("run", str(p), "--keep-server", data=data, child=True)
        t.join(timeout=5)
        assert r.returncode == 0 and "AssertionError" not in r.stderr, r.stderr
        assert re.search(
            r"ycsb: 1 of 5 runs failed or were degenerate; first: \S+r1: .*"
            rf"retry them with: tibench run {re.escape(str(p))} --phase ycsb",
            r.stderr,
        ), r.stderr
        assert "restarting it once" in r.stderr
        before = _counts(db)
        runs = Store.for_study(study).runs("ycsbkill").sort_values("seq")
        ops_before = _rows(
            db,
            "SELECT * FROM ycsb_ops WHERE run_key != ? ORDER BY run_key, operation",
            runs["run_key"].iloc[0],
        )
        assert len(ops_before) >= 4 * 2  # READ and UPDATE at least, for each good run
        err = _one_failed_run(runs, killed, data, 5)
        assert runs["status"].tolist()[0] == "failed", runs[["run_key", "status"]]
        assert "stopped answering" in err, err
        # resumed: only the failed run runs again; nothing recorded is lost
        again = phases.run_phase(study, "ycsb", progress=False)
        assert (again["status"] == "ok").all(), again[["run_key", "status", "error"]]
        after = _counts(db)
        assert after["runs"] == before["runs"] == 5
        assert after["run_attempts"] == before["run_attempts"] + 1  # the failed attempt kept
        kept = "SELECT * FROM ycsb_ops WHERE run_key != ? ORDER BY run_key, operation"
        failed_key = runs["run_key"].iloc[0]
        assert _rows(db, kept, failed_key) == ops_before  # the good runs' figures untouched
    finally:
        _tibench("server", "stop", data=data)


@pytest.mark.slow
def test_server_killed_during_a_tpch_pass_fails_that_pass_only(tmp_path, short_data):
    """Measured through the phase's notebook, as ``tibench run`` does: the killed pass is 1 of
    4, past the limit, and the phase fails with the failed-runs line and the command that
    retries it (the notebook's own count of query rows failed first; in process no rule held
    the phase's passes)."""
    from tibenchlib import phases
    from tibenchlib.params import load_study

    data = short_data
    p = tmp_path / "tpch-killed.yaml"
    p.write_text(
        "study: tpchkill\nphases: [tpch_scaling]\nsample_resources: false\n"
        "tpch_scaling: {scale_factor: 0.01, repeats: 2, queries: [1, 3, 6, 10, 12, 14],"
        " arms: [unbound], modes: [power, throughput]}\n"
    )
    study = load_study(p)
    db = data / "tpchkill" / "results.sqlite"

    def first_block_going():
        return _counts(db).get("tpch_queries", 0) >= 8

    t, killed = _kill_embedded_when(data, first_block_going)
    try:
        r = _tibench("run", str(p), "--keep-server", data=data, child=True)
        t.join(timeout=5)
        assert r.returncode == 1, r.stderr
        assert (
            "tpch_scaling: 1 of 4 runs failed or were degenerate; first: tpch_scaling/"
        ) in r.stderr and "the server stopped answering" in r.stderr, r.stderr
        assert f"retry them with: tibench run {p} --phase tpch_scaling" in r.stderr
        assert "AssertionError" not in r.stderr and "rows, " not in r.stderr
        runs = Store.for_study(study).runs("tpchkill").sort_values("seq")
        # one pass per mode and round: the first (power, pass 1) killed, the others measured
        err = _one_failed_run(runs, killed, data, 4)
        assert runs["status"].tolist() == ["failed", "ok", "ok", "ok"], runs[
            ["run_key", "status", "error"]
        ]
        assert "stopped answering" in err, err
        before = _counts(db)
        phases.run_phase(study, "tpch_scaling", progress=False)  # the failed pass again
        assert _embedded_pid(data) is not None
        runs = Store.for_study(study).runs("tpchkill")
        assert (runs["status"] == "ok").all(), runs[["run_key", "status", "error"]]
        after = _counts(db)
        assert after["runs"] >= before["runs"] and after["tpch_queries"] >= 6 * 4
    finally:
        _tibench("server", "stop", data=data)


@pytest.mark.slow
def test_source_killed_during_a_dm_sync_run_fails_that_run_only(tmp_path, short_data):
    """SIGKILL of the source's mariadbd while sysbench writes on it in a sync run: that run
    fails with one line, the source is restarted and the replica set up again before the next
    run, which replicates and verifies."""
    import shutil
    import time

    from tibenchlib import phases
    from tibenchlib.dm.servers import target_server
    from tibenchlib.params import load_study

    for tool in ("mydumper", "myloader", "sysbench"):
        if not shutil.which(tool):
            pytest.skip(f"{tool} is not installed (make setup installs it)")
    data = short_data
    p = tmp_path / "dm-killed.yaml"
    p.write_text(
        "study: dmsynckill\nphases: [dm]\nsample_resources: false\n"
        "dm: {tables: 1, table_size: 2000, repeats: 3, load: {threads: [1]}, dump: {threads: [1]},"
        " sync: {workers: [1], workloads: [oltp_insert], duration_s: 3, lag: false}}\n"
    )
    study = load_study(p)
    db = data / "dmsynckill" / "results.sqlite"
    raw = data / "dmsynckill" / "raw" / "dm"

    def first_sync_writing():
        logs = [x for x in raw.glob("sync*r1*/sysbench.log")] if raw.exists() else []
        return any(x.stat().st_size > 0 for x in logs) and time.sleep(1.0) is None

    t, killed = _kill_embedded_when(data, first_sync_writing)
    try:
        phases.run_phase(study, "dm", progress=False)
        t.join(timeout=5)
        runs = Store.for_study(study).runs("dmsynckill")
        sync = runs[runs["workload"] == "sync"].sort_values("seq")
        err = _one_failed_run(sync, killed, data, 3)
        print("ERR", err)
        assert sync["status"].tolist()[0] == "failed", sync[["run_key", "status", "error"]]
        assert (runs[runs["workload"] != "sync"]["status"] == "ok").all()
        dm_runs = _counts(db)["dm_runs"]
        assert dm_runs == len(runs), "one dm_runs row per run, the failed one too"
    finally:
        _tibench("server", "stop", data=data)
        target_server().stop()


@pytest.mark.slow
def test_dm_target_killed_during_myloader_fails_that_run_only(short_data, monkeypatch):
    """SIGKILL of the DM target's mariadbd while myloader loads: that run fails with one line,
    the target is restarted before the next run, the phase goes on."""
    import shutil
    import signal
    import threading
    import time

    from tibenchlib.dm import migrate
    from tibenchlib.dm.phase import run_dm_phase
    from tibenchlib.dm.servers import target_server
    from tibenchlib.server import embedded

    for tool in ("mydumper", "myloader"):
        if not shutil.which(tool):
            pytest.skip(f"{tool} is not installed (make setup installs it)")
    study = parse_study(
        {
            "study": "dmloadkill",
            "target": {"kind": "embedded"},
            "sample_resources": False,
            "dm": {
                "tables": 1,
                "table_size": 30000,
                "repeats": 3,
                "dump": {"threads": [1]},
                "load": {"threads": [1]},
                "sync": {"workers": []},
            },
        }
    )
    real_load, calls, killed = migrate.load, [], {}

    def load_killing_the_second(conn, directory, *args, on_start=None, **kw):
        calls.append(directory)
        if len(calls) != 2:
            return real_load(conn, directory, *args, on_start=on_start, **kw)

        def kill_while_loading(pid):
            if on_start:
                on_start(pid)

            def later():
                time.sleep(0.2)
                killed["pid"] = target_server().pid
                os.kill(killed["pid"], signal.SIGKILL)

            threading.Thread(target=later, daemon=True).start()

        return real_load(conn, directory, *args, on_start=kill_while_loading, **kw)

    monkeypatch.setattr(migrate, "load", load_killing_the_second)
    try:
        run_dm_phase(RunContext.open(study, progress=False, record=False))
        runs = Store.for_study(study).runs("dmloadkill").sort_values("seq")
        assert killed and len(runs) == 3, runs[["run_key", "status", "error"]]
        assert list(runs["status"]) == ["ok", "failed", "ok"], runs[["status", "error"]]
        err = runs["error"].iloc[1]
        assert "\n" not in err and "Traceback" not in err and "load failed" in err, err
        counts = _counts(short_data / "dmloadkill" / "results.sqlite")
        assert counts["runs"] == counts["dm_runs"] == 3  # the failed run recorded too
    finally:
        embedded().stop()
        target_server().stop()


def _children_left(data: Path) -> list[str]:
    """Processes other than the servers that still run with ``data`` as their data directory
    (a notebook kernel, sysbench, mydumper...)."""
    import psutil

    left = []
    for p in psutil.process_iter(["name", "cmdline", "environ"]):
        try:
            env = p.info["environ"] or {}
        except psutil.Error:
            continue
        if env.get("TIBENCH_DATA") == str(data) and p.info["name"] != "mariadbd":
            left.append(" ".join(p.info["cmdline"] or [p.info["name"]]))
    return left


@pytest.mark.slow
def test_sigterm_stops_the_server_the_run_started(short_data, tmp_path):
    """SIGTERM to ``tibench run`` mid-sweep: exit 130 and one line, the runs measured so far kept,
    and the embedded server it started stopped again (it was not running before)."""
    import shutil
    import signal
    import time

    if not shutil.which("sysbench"):
        pytest.skip("sysbench is not installed (make setup installs it)")
    data = short_data
    p = tmp_path / "sw.yaml"
    p.write_text(
        "study: swterm\nworkloads: [oltp_point_select]\nthreads: [1]\nrepeats: 6\n"
        "duration_s: 2\nsample_resources: false\ndataset: {tables: 1, table_size: 1000}\n"
    )
    db = data / "swterm" / "results.sqlite"
    assert _embedded_pid(data) is None
    cmd = [sys.executable, "-m", "tibenchlib.cli", "run", str(p), "--in-process"]
    env = {**os.environ, "TIBENCH_DATA": str(data)}
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and proc.poll() is None:
            if _counts(db).get("runs", 0) >= 1:
                break
            time.sleep(0.2)
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 130, err
        assert [x for x in err.splitlines() if "tibench: error:" in x] == [
            "tibench: error: interrupted: measured runs are in the catalog; run again to resume"
        ], err
        assert "Traceback" not in err
        kept = _rows(db, "SELECT status FROM runs")
        assert kept and all(r[0] == "ok" for r in kept)
        assert _embedded_pid(data) is None, "the server this run started is stopped"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        _tibench("server", "stop", data=data)


@pytest.mark.slow
@pytest.mark.parametrize("how", ["--in-process", "notebook"])
def test_sigterm_during_a_dm_sync_run_leaves_the_replica_applying(short_data, tmp_path, how):
    """SIGTERM to ``tibench run`` while sysbench writes on the source with the replica's SQL
    thread stopped, in this process or in the phase notebook's kernel: the SQL thread runs
    again, the user sees the phase's line and one error line (no kernel or zmq traceback), no
    kernel or tool is left running, and the runs measured before are in the catalog."""
    import shutil
    import signal
    import time

    from tibenchlib.dm.servers import target_server
    from tibenchlib.dm.sync import replica_status

    for tool in ("mydumper", "myloader", "sysbench"):
        if not shutil.which(tool):
            pytest.skip(f"{tool} is not installed (make setup installs it)")
    data = short_data
    p = tmp_path / "dm.yaml"
    p.write_text(
        "study: dmterm\nphases: [dm]\nsample_resources: false\n"
        "dm: {tables: 1, table_size: 2000, repeats: 1, load: {threads: [1]},"
        " sync: {workers: [1], workloads: [oltp_insert], duration_s: 8, lag: false}}\n"
    )
    db = data / "dmterm" / "results.sqlite"
    env = {**os.environ, "TIBENCH_DATA": str(data)}
    # --keep-server: the replica's state is read afterwards (without it the servers this run
    # started are stopped, as they were found; the bad-input tests check that)
    cmd = [sys.executable, "-m", "tibenchlib.cli", "run", str(p), "--phase", "dm", "--keep-server"]
    cmd += [how] if how.startswith("--") else []
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + 300
        raw = data / "dmterm" / "raw" / "dm"
        while time.monotonic() < deadline and proc.poll() is None:
            writing = [x for x in raw.glob("sync*/sysbench.log")] if raw.exists() else []
            if writing and writing[0].stat().st_size > 0:
                break
            time.sleep(0.1)
        assert proc.poll() is None, proc.communicate()
        time.sleep(1)  # sysbench writes, the SQL thread is stopped
        before = _counts(db)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 130, err
        shown = "tibench: error: interrupted: measured runs are in the catalog; run again to resume"
        assert [x for x in err.splitlines() if "error" in x.lower()] == [shown], err
        for noise in ("Traceback", "zmq", "Exception ignored", "KeyboardInterrupt", "Kernel"):
            assert noise not in err, err
        if how == "notebook":  # the kernel's logs stay out of the terminal in a batch run
            assert [x for x in err.splitlines() if x.strip()] == ["tibench: [1/1] dm", shown]
        assert not _children_left(data), _children_left(data)
        after = _counts(db)
        assert after["runs"] == before["runs"] >= 1  # the full run measured before is kept
        assert after["dm_runs"] == before["dm_runs"]
        tgt = target_server()
        eng = tgt.conninfo().engine(database="")
        try:
            st = replica_status(eng)
        finally:
            eng.dispose()
        assert st.get("Slave_SQL_Running") == "Yes", st
        assert st.get("Slave_IO_Running") == "Yes", st
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        _tibench("server", "stop", data=data)
        _tibench("server", "stop", "--name", "dm-target", data=data)
