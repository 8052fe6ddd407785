"""The reports' published tables recomputed (tibenchlib.published) and the notebook that shows
them, committed with outputs that nbval checks exactly."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from tibenchlib import published as P

ROOT = Path(__file__).resolve().parent.parent
NB = ROOT / "notebooks" / P.NOTEBOOK


@pytest.mark.parametrize(
    ("value", "text", "ok"),
    [
        (5.055, "5.055", True),
        (5.0572, "5.06", True),
        (2.675, "2.68", True),  # half-up, as people round; Python's round() gives 2.67
        (-1.927882, "-1.93", True),
        (14.557, "14.5", False),
        (4.5006, "4.50", True),
        (4.5006, "4.5", True),
        (0.16, "0.16%", True),
        (7.0, "7", True),
        (7.6, "7", False),
    ],
)
def test_agrees_rounds_half_up_at_the_published_precision(value, text, ok):
    assert P.agrees(value, text) is ok


def test_seed000_every_improvement_recomputed():
    t = P.reproduce_seed000()
    assert len(t) == 24 and t["agrees"].all()
    # the plain formula, independently of compare_table
    plain = (t["v6.0.0 TPS"] / t["v5.1.4 TPS"] - 1) * 100
    pd.testing.assert_series_equal(plain, t["improvement_pct"], check_names=False)
    row = t[(t.workload == "oltp_point_select") & (t.threads == 150)].iloc[0]
    assert row["TPS 提升(%) published"] == "-1.93" and row["recomputed"] == "-1.93"


def test_seed000_summary_is_the_mean_of_rounded_percentages():
    s = P.reproduce_seed000_summary().set_index("workload")
    assert s.loc["oltp_point_select", "mean of the column"] == pytest.approx(5.055)
    # the unrounded mean would have been printed 5.057: the report averaged rounded figures
    assert not P.agrees(s.loc["oltp_point_select", "mean of unrounded %"], "5.055")
    assert s["agrees"].all()


def test_seed002_all_gains_recomputed():
    t = P.reproduce_seed002()
    assert len(t) == 44 and t["agrees"].all()
    q9 = t[(t["query"] == "Q9") & (t["TiFlash instances"] == "3 → 5")].iloc[0]
    assert q9["improvement_pct"] == pytest.approx((29.87 - 18.11) / 29.87 * 100)


def test_seed003_import_speeds_and_where_they_differ():
    t = P.reproduce_seed003_import_speed()
    assert len(t) == 13
    assert t["within_rounding"].all()
    differ = t[~t["agrees"]]
    # 3.78 GB × 1024 / 265.9 s = 14.557 printed 14.5; / 262.3 s = 14.757 printed 14.7 (twice)
    assert sorted(differ["import time (s)"]) == ["262.3", "262.3", "265.9"]
    load = t[t["table"] == "load_data"].iloc[0]
    assert load["speed_mb_s"] == pytest.approx(38.14 * 1024 / 2346.9) and load["agrees"]


def test_seed003_rows_and_tables():
    b = P.reproduce_seed003_bytes_per_row()
    assert b["bytes per row"].between(201, 205).all()
    assert P.seed003_dump_speedup()["speedup"] == pytest.approx(191.03 / 72.22)
    w = P.seed003_table("sync_workers")
    assert list(w.columns)[0] == "worker_count" and w["worker_count"].tolist()[-1] == "1024"
    with pytest.raises(ValueError, match="no table 'nope'.*pool_size"):
        P.seed003_table("nope")


def test_agreement_sentence_names_the_differences():
    df = pd.DataFrame({"agrees": [True, False, True]})
    s = P.agreement_sentence(df, "speeds")
    assert s.startswith("2 of 3 published speeds agree") and "1 differ" in s


def test_reproduced_notebook_is_committed_with_deterministic_outputs():
    nb = json.loads(NB.read_text(encoding="utf-8"))
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert all(c["execution_count"] is not None for c in code), "execute it before committing"
    shown = [o for c in code for o in c["outputs"]]
    assert shown and not [o for o in shown if o["output_type"] == "error"]
    text = json.dumps(shown)
    # nothing that changes between runs: memory addresses, timestamps, images with random ids
    assert not re.search(r"0x[0-9a-f]{6,}|\d{4}-\d\d-\d\dT\d\d:|image/png|image/svg", text)
    assert "44 of 44 published per-query gains agree" in text
    assert all("execution" not in c.get("metadata", {}) for c in code)


def test_make_test_checks_the_notebook_without_lax():
    mk = (ROOT / "Makefile").read_text()
    line = next(ln for ln in mk.splitlines() if P.NOTEBOOK in ln and "$(PYTEST)" in ln)
    assert "--nbval " in line and "--nbval-lax" not in line
