"""The catalog when something is wrong with it: a corrupt page, an empty file, a read-only folder,
a damaged JSON value, another process holding it locked. Each is one line naming the file, and
nothing measured is lost."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import tibench

from tibenchlib import store as storemod
from tibenchlib.params import parse_study
from tibenchlib.store import CatalogBusy, CatalogError, Store

READERS = ["runs", "findings", "report", "diagnose"]


def _catalog(db: Path, study: str = "s", n: int = 40) -> None:
    """A healthy catalog of ``n`` sweep runs, checkpointed into the main file."""
    db.parent.mkdir(parents=True, exist_ok=True)
    s = Store(f"sqlite:///{db}")
    s.record_study(study, parse_study({"study": study}).public_dump())
    for i in range(n):
        s.record_run(_run(study, f"k{i}", 100.0 + i, repeat=i + 1))
    s.engine.dispose()
    c = sqlite3.connect(db)
    c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    c.close()  # the last connection: SQLite removes -wal and -shm


def _run(study: str, key: str, tps: float, repeat: int = 1) -> dict:
    return {
        "study": study, "run_key": key, "arm": "default", "phase": "sweep",
        "workload": "oltp_point_select", "threads": 1, "repeat": repeat, "seq": repeat,
        "status": "ok", "tps": tps, "warnings": [],
    }  # fmt: skip


def _one_line(r) -> str:
    lines = [x for x in r.stderr.splitlines() if x.startswith("tibench: error:")]
    assert len(lines) == 1, r.stderr
    assert "Traceback" not in r.stderr and "[SQL" not in r.stderr, r.stderr
    return lines[0]


def _cli(command: str, ref: str, data: Path):
    return tibench(command, ref, env={"TIBENCH_DATA": str(data)})


def test_a_corrupt_page_is_named_by_every_reader(tmp_path):
    db = tmp_path / "s" / "results.sqlite"
    _catalog(db)
    with sqlite3.connect(db) as c:
        (root,) = c.execute("SELECT rootpage FROM sqlite_master WHERE name = 'runs'").fetchone()
        (size,) = c.execute("PRAGMA page_size").fetchone()
    with open(db, "r+b") as f:  # the runs table's b-tree page, its header overwritten
        f.seek((root - 1) * size)
        f.write(b"\xff" * 64)
    damaged = db.read_bytes()
    for command in READERS:
        r = _cli(command, "s", tmp_path)
        assert r.returncode == 2, (command, r.stderr)
        line = _one_line(r)
        assert f"{db} is damaged" in line and ".recover" in line, line
    assert db.read_bytes() == damaged


def test_an_empty_catalog_is_refused_by_every_reader_and_left_empty(tmp_path):
    db = tmp_path / "s" / "results.sqlite"
    db.parent.mkdir()
    db.write_bytes(b"")
    params = tmp_path / "s.yaml"
    params.write_text("study: s\n")
    for command in READERS:
        for ref in ("s", str(params)):
            r = _cli(command, ref, tmp_path)
            assert r.returncode == 2, (command, ref, r.stdout, r.stderr)
            assert f"{db} is empty (0 bytes)" in _one_line(r)
    assert db.stat().st_size == 0
    assert not (tmp_path / "s" / "report").exists()


@pytest.fixture
def read_only_data(tmp_path):
    """A data folder holding a healthy study, on a read-only bind mount (as root, whom file
    modes do not stop) or with its modes taken away (as anyone else)."""
    src = tmp_path / "src"
    _catalog(src / "s" / "results.sqlite")
    if os.geteuid() != 0:
        for p in (src / "s", src):
            p.chmod(0o555)
        (src / "s" / "results.sqlite").chmod(0o444)
        yield src
        for p in (src, src / "s"):
            p.chmod(0o755)
        return
    ro = tmp_path / "ro"
    ro.mkdir()
    if subprocess.run(["mount", "--bind", str(src), str(ro)], capture_output=True).returncode:
        pytest.skip("cannot bind-mount here")
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(ro)], check=True)
        yield ro
    finally:
        # lazily: this process's engines may still hold the catalog open
        subprocess.run(["umount", "-l", str(ro)], check=True)


def test_a_study_in_a_read_only_folder_is_read(read_only_data):
    db = read_only_data / "s" / "results.sqlite"
    before = db.read_bytes()
    with pytest.raises(OSError):
        (read_only_data / "s" / "probe").write_text("x")
    r = _cli("runs", "s", read_only_data)
    assert r.returncode == 0, r.stderr
    assert "sweep" in r.stdout and "move it aside" not in r.stderr
    r = _cli("findings", "s", read_only_data)
    assert r.returncode == 0, r.stderr
    assert "move it aside" not in r.stderr
    store = Store(f"sqlite:///{db}")
    assert store.read_only and len(store.runs("s")) == 40
    store.engine.dispose()
    assert db.read_bytes() == before
    assert sorted(p.name for p in db.parent.iterdir()) == ["results.sqlite"]


def test_a_damaged_json_value_names_its_table_and_row(tmp_path):
    db = tmp_path / "s" / "results.sqlite"
    _catalog(db, n=5)
    with sqlite3.connect(db) as c:
        c.execute("UPDATE runs SET warnings_json = '[\"cut' || ' short' WHERE run_key = 'k3'")
    line = _one_line(r := _cli("runs", "s", tmp_path))
    assert r.returncode == 2
    assert f"{db} is damaged (table runs, study s, run k3): a JSON value does not decode" in line
    with sqlite3.connect(db) as c:
        c.execute('UPDATE studies SET params_json = \'{"study" "s"}\'')
    line = _one_line(r := _cli("findings", "s", tmp_path))
    assert r.returncode == 2 and f"{db} is damaged (table studies, study s)" in line


def _hold(db: Path, seconds: float) -> subprocess.Popen:
    """Another process holding ``db`` under BEGIN EXCLUSIVE for ``seconds``."""
    code = (
        "import sqlite3, sys, time\n"
        f"c = sqlite3.connect({str(db)!r}, isolation_level=None)\n"
        "c.execute('BEGIN EXCLUSIVE')\n"
        "print('held', flush=True)\n"
        f"time.sleep({seconds})\n"
    )
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "held"
    return p


@pytest.fixture
def short_waits(monkeypatch):
    monkeypatch.setattr(storemod, "BUSY_TIMEOUT_S", 0.3)
    monkeypatch.setenv("TIBENCH_CATALOG_WAIT_S", "1")


def test_a_run_measured_while_the_catalog_is_held_is_written_when_it_frees(
    tmp_path, short_waits, monkeypatch
):
    db = tmp_path / "s" / "results.sqlite"
    _catalog(db, n=1)
    monkeypatch.setenv("TIBENCH_CATALOG_WAIT_S", "10")
    holder = _hold(db, 2)
    try:
        store = Store(f"sqlite:///{db}")
        t0 = time.monotonic()
        store.record_arm("s", "late arm")  # any write waits, not only a run's
        assert time.monotonic() - t0 > 1.0  # it waited for the holder
        store.record_run(_run("s", "late", 302.0))
    finally:
        holder.wait(10)
    store = Store(f"sqlite:///{db}")
    assert store.runs("s", run_key="late")["tps"].tolist() == [302.0]
    assert "late arm" in set(store.read("arms", "s")["arm"])


def test_a_wait_that_is_not_a_number_is_named(tmp_path, monkeypatch):
    monkeypatch.setenv("TIBENCH_CATALOG_WAIT_S", "abc")
    store = Store(f"sqlite:///{tmp_path / 'results.sqlite'}")
    with pytest.raises(CatalogError, match=r"TIBENCH_CATALOG_WAIT_S='abc': expected seconds"):
        store.record_run(_run("s", "k", 1.0))


def test_a_held_catalog_is_one_line_and_the_measured_run_is_kept(tmp_path, short_waits):
    db = tmp_path / "s" / "results.sqlite"
    _catalog(db, n=1)
    holder = _hold(db, 4)
    try:
        with pytest.raises(CatalogBusy) as e:
            Store(f"sqlite:///{db}").record_run(_run("s", "late", 302.0))
        line = str(e.value)
        assert "\n" not in line and "INSERT" not in line and "[SQL" not in line
        assert f"{db} is locked by another process (held by pid {holder.pid} " in line
        kept = tmp_path / "s" / storemod.PENDING_FOLDER / "s__late.json"
        assert f"kept in {kept}" in line
        assert json.loads(kept.read_text())["run"]["tps"] == 302.0
    finally:
        holder.wait(10)
    store = Store(f"sqlite:///{db}")  # the next open writes what was kept
    assert store.runs("s", run_key="late")["tps"].tolist() == [302.0]
    assert not kept.parent.exists()
