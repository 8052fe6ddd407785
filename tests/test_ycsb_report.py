"""Notebook 07's tables: cell means and t intervals recomputed plainly, failed runs excluded,
per-operation figures, headers in en and zh."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as st

from tibenchlib.report import ycsb as R


def _runs():
    rows = []
    tps = {1: [100.0, 110.0, 90.0], 4: [300.0, 320.0, 310.0]}
    for t, vals in tps.items():
        for r, v in enumerate(vals, start=1):
            rows.append(
                {"run_key": f"ycsb/a/w/t{t}/r{r}", "workload": "w", "arm": "a", "threads": t,
                 "repeat": r, "status": "ok", "tps": v, "lat_avg_ms": 1.0 * t,
                 "lat_p95_ms": 2.0 * t + r, "lat_p99_ms": 3.0 * t + r}
            )  # fmt: skip
    rows.append({**rows[-1], "run_key": "ycsb/a/w/t4/r4", "repeat": 4, "status": "failed",
                 "tps": 1.0})  # fmt: skip
    return pd.DataFrame(rows)


def _t(values):
    """t interval of a positive mean on the log scale (delta method), back-transformed."""
    v = np.asarray(values)
    h = st.t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / (np.sqrt(len(v)) * v.mean())
    return v.mean(), v.mean() * np.exp(-h), v.mean() * np.exp(h)


def test_cells_are_log_t_intervals_over_ok_runs():
    c = R.cells(_runs()).set_index("threads")
    m, lo, hi = _t([300.0, 320.0, 310.0])
    assert c.loc[4, "n"] == 3 and c.loc[4, "n_failed"] == 1
    assert (c.loc[4, "tps"], c.loc[4, "tps_ci_low"], c.loc[4, "tps_ci_high"]) == pytest.approx(
        (m, lo, hi)
    )
    m, lo, hi = _t([13.0, 14.0, 15.0])  # 3 × 4 + r
    assert (c.loc[4, "lat_p99_ms"], c.loc[4, "lat_p99_ms_ci_low"]) == pytest.approx((m, lo))


@pytest.mark.parametrize(
    "lang, header", [("en", "ops/s [95% CI]"), ("zh", "每秒操作数 [95% 置信区间]")]
)
def test_tables_speak_the_studys_language(lang, header):
    t = R.cells_table(R.cells(_runs()), lang)
    assert header in t.columns and len(t) == 2
    assert R.words(lang)["p99_ci"] in t.columns
    with pytest.raises(ValueError, match="lang"):
        R.words("fr")


def test_operation_cells_leave_cleanup_and_failed_runs_out():
    runs = _runs()
    ops = []
    for r in runs.itertuples():
        for op, p95 in (("READ", 1.0 + r.repeat), ("CLEANUP", 50.0), ("ALL", 2.0)):
            ops.append({"run_key": r.run_key, "workload": "w", "arm": "a", "threads": r.threads,
                        "repeat": r.repeat, "operation": op, "count": 100, "errors": 0,
                        "avg_ms": 1.0, "p95_ms": p95, "p99_ms": p95 + 1})  # fmt: skip
    oc = R.op_cells(pd.DataFrame(ops), runs)
    assert set(oc["operation"]) == {"READ", "ALL"}
    read4 = oc[(oc["operation"] == "READ") & (oc["threads"] == 4)].iloc[0]
    assert read4["n"] == 3 and read4["p95_ms"] == pytest.approx(3.0)  # 2, 3, 4; r4 failed
    t = R.op_table(oc, "zh")
    assert "操作" in t.columns and len(t) == 4
