"""The run record: one status rule, one percentile rule, the catalog's columns from the record."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from tibenchlib.parse.sysbench import histogram_percentiles, parse_sysbench_file
from tibenchlib.record import (
    CATALOG_COLUMNS,
    RESULT_COLUMNS,
    RunRecord,
    decide_status,
    outcome_status,
    p95_rule,
)
from tibenchlib.store import Store
from tibenchlib.sysbench.record import record_from_parsed
from tibenchlib.tools import Outcome

LOGS = Path(__file__).parent / "fixtures" / "sysbench"


def test_status_rule_exit_code_timeout_and_missing_overrule_the_checks():
    assert decide_status(("ok", None)) == ("ok", None)
    assert decide_status(("ok", None), returncode=None) == ("ok", None)  # log read from disk
    assert decide_status(("ok", None), returncode=139, tool="sysbench") == (
        "failed",
        "sysbench exited 139",
    )
    assert decide_status(("failed", "FATAL: x"), returncode=1, tool="sysbench") == (
        "failed",
        "FATAL: x; sysbench exited 1",
    )
    assert decide_status(("ok", None), timed_out=True, wall_s=61.4) == (
        "failed",
        "timeout after 61 s",
    )
    assert decide_status(("degenerate", "stalled"), missing="sysbench") == (
        "failed",
        "sysbench is not installed",
    )


def test_outcome_status_is_the_status_rule_with_how_the_process_ended(tmp_path):
    log = tmp_path / "x.log"
    assert outcome_status(("ok", None), None, "go-tpc") == ("ok", None)  # a log read from disk
    segv = Outcome(139, log, 0.0, 3.0)
    assert outcome_status(("failed", "no summary"), segv, "go-tpc") == (
        "failed",
        "no summary; go-tpc exited 139",
    )
    late = Outcome(None, log, 0.0, 61.4, timed_out=True)
    assert outcome_status(("ok", None), late, "YCSB") == ("failed", "timeout after 61 s")
    gone = Outcome(None, log, 0.0, 0.0, missing="go-ycsb")
    assert outcome_status(("ok", None), gone, "YCSB") == ("failed", "go-ycsb is not installed")


def test_percentile_rule_histogram_first_then_printed_95_only():
    assert p95_rule({95: 1.5}, 95, 1.6) == 1.5
    assert p95_rule({}, 95, 1.6) == 1.6
    assert p95_rule({}, 99, 3.0) is None
    assert p95_rule({}, None, None) is None


def test_unknown_status_is_refused():
    with pytest.raises(ValueError, match="run k: status 'no_summary'"):
        RunRecord(study="s", run_key="k", status="no_summary")


def test_record_from_a_real_log_and_a_segfault_exit(tmp_path):
    f = LOGS / "mariadb" / "point_select-t2-ri1-hist.txt"
    parsed = parse_sysbench_file(f)
    out = Outcome(0, f, 100.0, 111.0)
    rec, iv = record_from_parsed(parsed, study="s", run_key="a/w/t2/r1", arm="a", outcome=out)
    assert rec.status == "ok" and rec.threads == 2 and rec.wall_s == 11.0
    assert rec.lat_p95_ms == histogram_percentiles(parsed.histogram, (95,))[95]
    assert rec.n_intervals == len(iv) > 0
    crashed, _ = record_from_parsed(
        parsed, study="s", run_key="k", outcome=Outcome(139, f, 100.0, 111.0)
    )
    assert (crashed.status, crashed.error) == ("failed", "sysbench exited 139")


def test_catalog_columns_come_from_the_record_and_warnings_round_trip(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'c.sqlite'}")
    from tibenchlib.store import runs

    assert [c.name for c in runs.columns] == CATALOG_COLUMNS
    assert "warnings_json" in CATALOG_COLUMNS and "warnings" not in CATALOG_COLUMNS
    assert set(RESULT_COLUMNS) - {"warnings"} <= set(CATALOG_COLUMNS)
    rec = RunRecord(study="s", run_key="k", tps=10.0, warnings=["a", "b"])
    store.record_run(rec, pd.DataFrame({"t": [1.0], "tps": [10.0]}))
    got = store.runs("s")
    assert got.loc[0, "warnings"] == ["a", "b"] and "warnings_json" not in got
    assert got.loc[0, "tps"] == 10.0
