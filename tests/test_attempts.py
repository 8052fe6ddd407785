"""A run's earlier attempts are moved aside, numbered, never overwritten."""

from __future__ import annotations

from pathlib import Path

from tibenchlib.attempts import earlier_attempts, set_aside
from tibenchlib.store import Store


def test_a_log_is_set_aside_with_the_next_number(tmp_path):
    log = tmp_path / "oltp_read_only.t8.r1.log"
    assert set_aside(log) == 1  # a first run: nothing to move
    for text in ("first", "second"):
        log.write_text(text)
        set_aside(log)
    assert not log.exists()
    kept = earlier_attempts(log)
    assert [p.name for p in kept] == ["oltp_read_only.t8.r1.attempt1.log",
                                      "oltp_read_only.t8.r1.attempt2.log"]  # fmt: skip
    assert [p.read_text() for p in kept] == ["first", "second"]
    assert set_aside(log) == 3  # the next attempt is the third


def test_a_run_folder_is_set_aside_whole(tmp_path):
    run = tmp_path / "threads=4" / "r1"
    run.mkdir(parents=True)
    (run / "myloader.log").write_text("one")
    assert set_aside(run, folder=True) == 2
    run.mkdir()
    (run / "myloader.log").write_text("two")
    assert set_aside(run, folder=True) == 3
    kept = earlier_attempts(run, folder=True)
    assert [p.name for p in kept] == ["r1.attempt1", "r1.attempt2"]
    assert [(p / "myloader.log").read_text() for p in kept] == ["one", "two"]
    # a log beside the folder is not one of its attempts
    (run.parent / "r1.attempt9.log").write_text("x")
    assert len(earlier_attempts(run, folder=True)) == 2


def test_a_failed_attempt_in_the_catalog_points_at_its_own_log(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'results.sqlite'}")
    log = tmp_path / "raw" / "default__oltp_point_select__t1__r1.log"
    log.parent.mkdir()
    row = {"study": "s", "run_key": "k", "arm": "a", "workload": "w", "threads": 1, "repeat": 1}
    for text, status in (("FATAL: connection lost", "failed"), ("tps 302", "ok")):
        n = set_aside(log)
        log.write_text(text)
        store.record_run({**row, "status": status, "log_path": str(log), "attempts": n})
    kept = store.attempts("s", "k")
    assert list(kept["status"]) == ["failed", "ok"]
    assert [Path(p).read_text() for p in kept["log_path"]] == ["FATAL: connection lost", "tps 302"]
    assert Path(kept["log_path"][0]).name == "default__oltp_point_select__t1__r1.attempt1.log"
    assert store.runs("s")["log_path"].tolist() == [str(log)]
