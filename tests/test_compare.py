"""Comparison tables: seed 000's published tables reproduced, inputs, formatting, export."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tibenchlib.compare import (
    JSON_COLUMNS,
    compare_arms_table,
    compare_from_csv,
    compare_log_dirs,
    compare_table,
    load_summary_csv,
    runs_from_log_dirs,
)
from tibenchlib.report.comparison import (
    export,
    format_ci,
    report_summary,
    report_table,
    to_markdown,
)
from tibenchlib.stats import summarize_improvement

FIX = Path(__file__).parent / "fixtures"
SEED = FIX / "seed000"
LOGS = FIX / "sysbench" / "mariadb"


@pytest.fixture(scope="module")
def seed_cmp() -> pd.DataFrame:
    return compare_from_csv(SEED / "summary.csv", "v5.1.4", "v6.0.0")


# -- seed 000 ---------------------------------------------------------------------------------


def test_seed000_improvement_column_to_the_rounding(seed_cmp):
    pub = pd.read_csv(SEED / "published_improvement.csv")
    got = seed_cmp.merge(pub, on=["workload", "threads"], validate="1:1")
    assert len(got) == 24
    # plain recomputation from the CSV's TPS figures
    raw = pd.read_csv(SEED / "summary.csv").pivot_table(
        index=["workload", "threads"], columns="arm", values="tps"
    )
    plain = (raw["v6.0.0"] / raw["v5.1.4"] - 1) * 100
    np.testing.assert_allclose(
        got.set_index(["workload", "threads"])["improvement_pct_x"], plain.loc[
            got.set_index(["workload", "threads"]).index
        ]
    )  # fmt: skip
    np.testing.assert_array_equal(got["improvement_pct_x"].round(2), got["improvement_pct_y"])
    assert (got["published"] == got["improvement_pct_x"].map(lambda x: f"{x:.2f}%")).all()


def test_seed000_summary_means(seed_cmp):
    pub = pd.read_csv(SEED / "published_summary.csv", dtype={"table7_pct": str}).set_index(
        "workload"
    )
    col = pd.read_csv(SEED / "published_improvement.csv").groupby("workload")["improvement_pct"]
    s = summarize_improvement(seed_cmp).set_index("workload")
    # point select: 5.055 is the mean of the rounded column, 5.057 the mean from TPS figures
    assert round(col.mean()["oltp_point_select"], 3) == 5.055 == pub.loc["oltp_point_select",
                                                                         "section_pct"]  # fmt: skip
    assert round(s.loc["oltp_point_select", "mean_improvement_pct"], 3) == 5.057
    for wl, row in pub.iterrows():
        assert abs(col.mean()[wl] - row["section_pct"]) <= 0.005 + 1e-9  # printed rounded
        assert f"{s.loc[wl, 'mean_improvement_pct']:.2f}" == row["table7_pct"]
    # and the geometric mean the reports do not print
    raw = pd.read_csv(SEED / "summary.csv")
    ps = raw[raw["workload"] == "oltp_point_select"].pivot(
        index="threads", columns="arm", values="tps"
    )
    g = np.exp(np.log(ps["v6.0.0"] / ps["v5.1.4"]).mean())
    assert s.loc["oltp_point_select", "geomean_improvement_pct"] == pytest.approx((g - 1) * 100)
    assert np.isnan(s.loc["oltp_point_select", "geo_ci_low_pct"])


def test_seed000_single_runs_get_no_invented_intervals(seed_cmp):
    assert (seed_cmp["verdict"] == "n/a").all()
    assert seed_cmp[["ci_low_pct", "ci_high_pct", "p_value", "p_adjusted"]].isna().all().all()
    rows = json.loads(seed_cmp[JSON_COLUMNS].to_json(orient="records"))
    assert list(rows[0]) == JSON_COLUMNS
    assert rows[0]["workload"] == "oltp_point_select" and rows[0]["threads"] == 150
    assert rows[0]["ci_low_pct"] is None and rows[0]["p_adjusted"] is None
    assert rows[0]["baseline_tps"] == 296958 and rows[0]["n_baseline"] == 1
    t = report_table(seed_cmp[seed_cmp["workload"] == "oltp_point_select"])
    assert list(t.columns) == [
        "Threads", "v5.1.4 TPS", "v6.0.0 TPS", "v5.1.4 95% latency (ms)",
        "v6.0.0 95% latency (ms)", "TPS improvement (%)", "p (Holm)", "Verdict", "Notes",
    ]  # fmt: skip
    assert t.iloc[0].tolist()[:8] == [
        150, "296958", "291233", "0.75", "0.73", "-1.93% [n/a] (n=1+1)", "n/a", "n/a (n=1)"
    ]  # fmt: skip


def test_seed000_tables_in_chinese_keep_report_order(seed_cmp):
    t = report_table(seed_cmp, lang="zh")
    assert list(t.columns[:3]) == ["测试场景", "压测线程", "v5.1.4 TPS"]
    assert "TPS 提升(%)" in t.columns and "结论" in t.columns
    assert list(dict.fromkeys(t["测试场景"])) == [
        "oltp_point_select", "oltp_update_non_index", "oltp_update_index", "oltp_read_write"
    ]  # fmt: skip
    s = report_summary(seed_cmp, lang="zh")
    assert s.iloc[0, 1] == "+5.06%" and s.iloc[0, 2] == "+4.99% [n/a]"


# -- replicated data ---------------------------------------------------------------------------


def _csv(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "t.csv"
    p.write_text(text)
    return p


def test_replicated_csv_known_answer_and_format(tmp_path):
    p = _csv(
        tmp_path,
        "workload,threads,arm,tps,lat_p95_ms,repeat\n"
        + "".join(
            f"w,8,{arm},{v},{lat},{i + 1}\n"
            for arm, vals, lat in (("A", [1000, 1020, 990], 10), ("B", [1050, 1068, 1041], 9))
            for i, v in enumerate(vals)
        ),
    )
    cmp = compare_table(p, "A", "B")
    r = cmp.iloc[0]
    # Welch's t on min(n) - 1 = 2 df and Fieller on the same df: three runs a side reach 0
    assert r["verdict"] == "inconclusive" and round(r["p_value"], 4) == 0.0526
    assert report_table(cmp)["TPS improvement (%)"][0] == "+4.95% [-0.1, +10.3] (n=3+3)"
    lat = compare_table(p, "A", "B", metric="lat_p95_ms").iloc[0]
    assert lat["improvement_pct"] == pytest.approx(10.0)  # 10 ms -> 9 ms: 10 % lower
    assert "95% latency" not in " ".join(
        report_table(compare_table(p, "A", "B", metric="lat_p95_ms")).columns
    )


def test_format_ci():
    assert format_ci(5.0612, 2.01, 8.24, 3, 3) == "+5.06% [+2.0, +8.2] (n=3+3)"
    assert format_ci(-1.234, -3.0, 0.55) == "-1.23% [-3.0, +0.6]"
    assert format_ci(1.88, None, None, 1, 1) == "+1.88% [n/a] (n=1+1)"
    assert format_ci(1.88, float("nan"), 2.0) == "+1.88% [n/a]"
    assert format_ci(None) == "n/a"


# -- bad input --------------------------------------------------------------------------------


def test_load_summary_csv_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.csv"):
        load_summary_csv(tmp_path / "nope.csv")
    p = _csv(tmp_path, "workload,threads,arm\nw,8,A\n")
    with pytest.raises(ValueError, match=r"t\.csv: missing column\(s\) tps"):
        load_summary_csv(p)
    p = _csv(tmp_path, "workload,threads,arm,tps\nw,8,A,1000\nw,8,B,fast\n")
    with pytest.raises(ValueError, match="column 'tps', data row 2: 'fast'"):
        load_summary_csv(p)
    p = _csv(tmp_path, "workload,threads,arm,tps\nw,8,A,1000\nw,8,B,1100\n")
    with pytest.raises(ValueError, match="arm 'C' not found"):
        compare_table(p, "A", "C")
    with pytest.raises(ValueError, match="workload 'x' not found"):
        load_summary_csv(p, workload="x")


def test_load_summary_csv_lenient_parts(tmp_path):
    p = _csv(
        tmp_path,
        'workload, threads, arm, tps, note\nw,8,A,"296,958",x\nw,8,A,"297,000",y\n,16,B,5,z\n',
    )
    df = load_summary_csv(p)
    assert df["tps"].tolist() == [296958, 297000, 5]
    assert df["repeat"].tolist() == [1, 2, 1] and (df["status"] == "ok").all()
    assert pd.isna(df["workload"].iloc[2]) and "note" in df.columns
    cmp = compare_table(df.assign(arm=["A", "B", "B"], threads=8), "A", "B")
    assert cmp["workload"].isna().tolist() == [False, True]  # unknown workload stays null


# -- export -----------------------------------------------------------------------------------


def test_export_csv_and_markdown(tmp_path, seed_cmp):
    t = report_table(seed_cmp.head(2), lang="zh")
    csv, md = export(t, tmp_path / "out" / "table")
    assert csv.name == "table.csv" and md.name == "table.md"
    back = pd.read_csv(csv, encoding="utf-8-sig")
    assert list(back.columns) == list(t.columns) and len(back) == 2
    lines = md.read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("| 压测线程 | v5.1.4 TPS") and lines[1].startswith("|---|")
    assert len(lines) == 4
    raw_csv, _ = export(seed_cmp.head(1), tmp_path / "raw")  # list cells joined
    assert "n=1+1: point estimate only" in raw_csv.read_text(encoding="utf-8-sig")
    assert to_markdown(pd.DataFrame({"a": ["x|y"]})).splitlines()[2] == "| x\\|y |"


# -- sysbench logs ----------------------------------------------------------------------------


def _dirs(tmp_path: Path, base: list[str], cand: list[str]) -> tuple[Path, Path]:
    out = []
    for name, files in (("v1", base), ("v2", cand)):
        d = tmp_path / name
        d.mkdir()
        for f in files:
            shutil.copy(LOGS / f, d / f)
        out.append(d)
    return out[0], out[1]


def test_runs_from_log_dirs(tmp_path):
    from tibenchlib.parse.sysbench import histogram_percentiles, parse_sysbench_file

    b, c = _dirs(
        tmp_path,
        ["point_select-t2-ri1-hist.txt", "point_select-t2-report-json.txt",
         "point_select-t2-report-csv.txt", "read_write-t4-ri1-server-killed.txt",
         "read_write-t4-ri1-p99-hist.txt"],
        ["point_select-t2-events2000.txt", "point_select-t2-rate200-ri1.txt",
         "point_select-t2-percentile0.txt"],
    )  # fmt: skip
    runs = runs_from_log_dirs(b, c, workload="oltp_point_select")
    assert set(runs["arm"]) == {"v1", "v2"} and (runs["workload"] == "oltp_point_select").all()
    one = runs[runs["run_id"].str.endswith("point_select-t2-ri1-hist.txt")].iloc[0]
    parsed = parse_sysbench_file(LOGS / "point_select-t2-ri1-hist.txt")
    s = parsed.summary
    assert one["tps"] == s["tps"] and one["threads"] == 2
    # the one percentile rule: the histogram's p95 when the log has a histogram (the sweep's
    # figure), which sysbench prints rounded to 2 decimals
    assert one["lat_p95_ms"] == histogram_percentiles(parsed.histogram, (95,))[95]
    assert one["lat_p95_ms"] == pytest.approx(s["latency_ms"]["percentile_value"], abs=0.005)
    no_hist = runs[runs["run_id"].str.endswith("point_select-t2-report-csv.txt")].iloc[0]
    s2 = parse_sysbench_file(LOGS / "point_select-t2-report-csv.txt").summary
    assert s2["percentile"] == 95  # no histogram: sysbench's printed p95
    assert no_hist["lat_p95_ms"] == s2["latency_ms"]["percentile_value"]
    p99 = runs[runs["run_id"].str.endswith("p99-hist.txt")].iloc[0]
    # a printed 99th percentile is not a p95, but the log's histogram gives one
    p99_log = parse_sysbench_file(LOGS / "read_write-t4-ri1-p99-hist.txt")
    assert p99_log.summary["percentile"] == 99
    assert p99["lat_p95_ms"] == histogram_percentiles(p99_log.histogram, (95,))[95]
    assert p99["lat_p95_ms"] != p99_log.summary["latency_ms"]["percentile_value"]
    killed = runs[runs["run_id"].str.endswith("server-killed.txt")].iloc[0]
    assert killed["status"] == "failed" and killed["threads"] == 4
    cmp = compare_log_dirs(b, c, workload="oltp_point_select").set_index("threads")
    assert cmp.loc[2, "n_baseline"] == 3 and cmp.loc[2, "n_candidate"] == 3
    assert cmp.loc[4, "n_baseline"] == 1 and cmp.loc[4, "n_candidate"] == 0
    assert cmp.loc[4, "verdict"] == "n/a"
    assert any("1 failed" in w for w in cmp.loc[4, "warnings"])
    assert cmp.loc[2, "baseline_tps"] == pytest.approx(np.mean([12607.91, 7189.63, 6641.12]))


def test_log_dir_errors(tmp_path):
    b, c = _dirs(tmp_path, ["point_select-t2-ri1-hist.txt"], [])
    with pytest.raises(ValueError, match=r"v2: no sysbench logs .*empty directory"):
        runs_from_log_dirs(b, c)
    with pytest.raises(FileNotFoundError, match="missing"):
        runs_from_log_dirs(b, tmp_path / "missing")
    (c / "notes.txt").write_text("these are not sysbench results\n")
    with pytest.raises(ValueError, match=r"notes\.txt: no thread count"):
        runs_from_log_dirs(b, c)


# -- phase compare ----------------------------------------------------------------------------


def test_compare_arms_table_for_a_study():
    from tibenchlib.params import Arm, Study

    rows = [
        {"run_key": f"{arm}-{i}", "phase": "sweep", "workload": "oltp_point_select",
         "arm": arm, "threads": 2, "repeat": i + 1, "tps": v, "status": "ok"}
        for arm, vals in (("slow", [1000, 1020, 990]), ("fast", [1050, 1068, 1041]))
        for i, v in enumerate(vals)
    ]  # fmt: skip
    rows.append({**rows[0], "run_key": "numa-1", "phase": "numa", "tps": 1.0})
    study = Study(study="t", arms=[Arm(label="slow"), Arm(label="fast")])
    cmp = compare_arms_table(pd.DataFrame(rows), study)
    assert len(cmp) == 1 and cmp["baseline"][0] == "slow"
    assert cmp["verdict"][0] == "inconclusive"  # 3 runs a side: [-0.1, +10.3] reaches 0
    assert round(cmp["improvement_pct"][0], 2) == 4.95
    one = Study(study="t1", arms=[Arm(label="slow")])
    with pytest.raises(ValueError, match="one arm only"):
        compare_arms_table(pd.DataFrame(rows), one)


# -- one run check for every path -------------------------------------------------------------


def test_zero_throughput_is_degenerate_in_a_summary_csv(tmp_path):
    rows = [("A", v) for v in (820, 832, 844, 0)] + [("B", v) for v in (860, 870, 880)]
    p = _csv(tmp_path, "workload,threads,arm,tps\n" + "".join(f"w,8,{a},{v}\n" for a, v in rows))
    runs = load_summary_csv(p)
    assert list(runs["status"]) == ["ok"] * 3 + ["degenerate"] + ["ok"] * 3
    assert runs["error"].iloc[3].startswith("zero throughput")
    r = compare_table(p, "A", "B").iloc[0]
    # with the zero row averaged in, the baseline mean would be 624 and the improvement +39 %
    assert r["n_baseline"] == 3 and r["baseline_tps"] == pytest.approx(832.0)
    assert r["improvement_pct"] == pytest.approx((870 / 832 - 1) * 100)


def test_a_stalled_log_is_degenerate_in_log_dirs(tmp_path):
    good = ["point_select-t2-ri1-hist.txt", "point_select-t2-report-json.txt"]
    b, c = _dirs(
        tmp_path,
        [*good, "point_select-t2-ri1-table-locked.txt"],
        ["point_select-t2-events2000.txt", "point_select-t2-rate200-ri1.txt"],
    )
    runs = runs_from_log_dirs(b, c, workload="oltp_point_select")
    stalled = runs[runs["run_id"].str.endswith("table-locked.txt")].iloc[0]
    assert stalled["status"] == "degenerate" and stalled["error"].startswith("stalled")
    r = compare_log_dirs(b, c, workload="oltp_point_select").iloc[0]
    assert r["n_baseline"] == 2 and r["n_failed_baseline"] == 1
    ok_tps = runs[runs["run_id"].str.endswith(tuple(good))]["tps"]
    assert r["baseline_tps"] == pytest.approx(ok_tps.mean())


# -- the comparison's input: whole run or steady state ----------------------------------------


def _warmup_study(seed: int = 3):
    """Two arms, 5 rounds of 120 one-second intervals; the candidate starts cold (40 s at half
    speed, then +5 % over the baseline), the baseline is steady from the first second."""
    rng = np.random.default_rng(seed)
    runs, ivs = [], []
    for rnd in range(1, 6):
        for arm, level, cold in (("A", 1000.0, 0), ("B", 1050.0, 40)):
            key = f"{arm}-{rnd}"
            t = np.arange(1, 121.0)
            tps = level * (1 + 0.02 * rng.standard_normal(t.size))
            tps[:cold] *= 0.5
            ivs.append(pd.DataFrame({"run_key": key, "t": t, "tps": tps}))
            runs.append({"run_key": key, "workload": "oltp_point_select", "arm": arm,
                         "threads": 8, "repeat": rnd, "tps": tps.mean(),
                         "status": "ok"})  # fmt: skip
    return pd.DataFrame(runs), pd.concat(ivs, ignore_index=True)


def test_steady_state_input_removes_the_in_run_warm_up():
    from tibenchlib.compare import compare_inputs

    runs, iv = _warmup_study()
    steady = compare_inputs(runs, "A", "B", iv, "steady_state").iloc[0]
    whole = compare_inputs(runs, "A", "B", iv, "whole_run").iloc[0]
    assert steady["input"] == "steady_state" and whole["input"] == "whole_run"
    assert steady["improvement_pct"] == pytest.approx(5.0, abs=1.0)  # the true steady gain
    assert whole["improvement_pct"] < -5  # the cold start makes B look slower
    assert whole["other_improvement_pct"] == pytest.approx(steady["improvement_pct"])
    for r in (steady, whole):  # they disagree by far more than the interval: both shown
        assert any("differ by more than the interval" in w for w in r["warnings"])
    assert steady["verdict"] == "better" and whole["verdict"] == "worse"
    with pytest.raises(ValueError, match="compare.input must be one of"):
        compare_inputs(runs, "A", "B", iv, "steady")
    with pytest.raises(ValueError, match="no run has per-second intervals"):
        compare_inputs(runs, "A", "B", iv.iloc[:0], "steady_state")


def test_compare_arms_table_uses_compare_input(tmp_path):
    from tibenchlib.params import Arm, CompareParams, Study

    runs, iv = _warmup_study()
    arms = [Arm(label="A"), Arm(label="B")]
    study = Study(study="t", arms=arms, compare=CompareParams(input="steady_state"))
    got = compare_arms_table(runs.assign(phase="sweep"), study, intervals=iv).iloc[0]
    assert got["input"] == "steady_state" and got["improvement_pct"] > 0
    plain = compare_arms_table(runs.assign(phase="sweep"), Study(study="t", arms=arms)).iloc[0]
    assert plain["input"] == "whole_run" and plain["improvement_pct"] < 0
    with pytest.raises(ValueError, match="input"):
        CompareParams(input="middle")


def test_input_note_says_which_figure_and_why():
    from tibenchlib.compare import compare_inputs
    from tibenchlib.report.comparison import input_note

    runs, iv = _warmup_study()
    steady = compare_inputs(runs, "A", "B", iv, "steady_state")
    assert "steady-state TPS after the MSER-5" in input_note(steady)
    assert "In 1 cell(s) the two figures differ" in input_note(steady)
    whole = compare_inputs(runs, "A", "B", iv.iloc[:0].copy(), "whole_run")
    assert "whole-run TPS" in input_note(whole) and "differ" not in input_note(whole)
    assert "稳态 TPS" in input_note(steady, "zh") and "整个运行" in input_note(whole, "zh")


def test_paired_log_dirs_pair_by_the_round_in_the_names(tmp_path, capsys):
    """``--paired``: real sysbench logs, named by round, are compared within rounds; a name
    without a round is refused in one line; the output says what pairing assumes."""
    from tibenchlib.cli import main
    from tibenchlib.compare import PAIRED_NOTE
    from tibenchlib.parse.sysbench import parse_sysbench_file
    from tibenchlib.stats import PAIRED_METHOD, paired_ratio

    files = ["point_select-t2-ri1-hist.txt", "point_select-t2-report-json.txt",
             "point_select-t2-report-csv.txt"]  # fmt: skip
    cand = ["point_select-t2-events2000.txt", "point_select-t2-rate200-ri1.txt",
            "point_select-t2-percentile0.txt"]  # fmt: skip
    b, c = tmp_path / "v1", tmp_path / "v2"
    for d, names in ((b, files), (c, cand)):
        d.mkdir()
        for r, f in enumerate(names, 1):
            shutil.copy(LOGS / f, d / f"point_select_t2_r{r}.log")
    cmp = compare_log_dirs(b, c, workload="oltp_point_select", paired=True).iloc[0]
    tps = {
        d: [parse_sysbench_file(LOGS / f).summary["tps"] for f in names]
        for d, names in (("b", files), ("c", cand))
    }
    want = paired_ratio(tps["c"], tps["b"])
    assert cmp["method"] == PAIRED_METHOD and cmp["n_pairs"] == want["n_pairs"] == 3
    assert cmp["ratio"] == pytest.approx(want["ratio"])
    assert cmp["ratio_ci_low"] == pytest.approx(want["ci_low"])
    assert cmp["warnings"][0] == PAIRED_NOTE
    unpaired = compare_log_dirs(b, c, workload="oltp_point_select").iloc[0]
    assert unpaired["method"].startswith("Fieller") and unpaired["n_pairs"] == 0

    assert main(["compare", str(b), str(c), "--paired", "--workload", "oltp_point_select"]) == 0
    assert PAIRED_NOTE in capsys.readouterr().out
    (c / "point_select_t2_r3.log").rename(c / "point_select_t2_last.log")
    with pytest.raises(ValueError, match=r"point_select_t2_last\.log: no round number"):
        compare_log_dirs(b, c, paired=True)
    assert main(["compare", str(b), str(c), "--paired"]) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "no round number" in err


def test_the_two_inputs_note_is_said_in_chinese_and_never_shows_a_nan_interval():
    """The note that the whole-run and steady-state figures disagree: in the zh report it is
    Chinese (CI under load showed it in English there), and a figure without an interval (a
    steady-state cut that left one run per arm) is its estimate alone, not "[+nan, +nan]"."""
    import re

    from tibenchlib.compare import compare_inputs
    from tibenchlib.report.words import note

    runs, iv = _warmup_study()
    for inp in ("steady_state", "whole_run"):
        (w,) = [x for x in compare_inputs(runs, "A", "B", iv, inp).iloc[0]["warnings"]
                if "differ by more" in x]  # fmt: skip
        zh = note(w, "zh")
        assert "两者之差超过区间" in zh and not re.search(r"[a-z]{3,}", zh.replace("sysbench", ""))
    # per-second intervals of one candidate run only: its steady-state figure has no interval
    iv = iv[~iv["run_key"].isin([f"B-{r}" for r in range(2, 6)])]
    (w,) = [x for x in compare_inputs(runs, "A", "B", iv, "whole_run").iloc[0]["warnings"]
            if "differ by more" in x]  # fmt: skip
    assert re.search(r"steady-state TPS after the MSER-5 warm-up cut gives [+-][\d.]+%:", w), w
    assert "nan" not in w and "nan" not in note(w, "zh")
