"""The command line: JSON on stdout, progress and errors on stderr, clear errors."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from unittest import mock

import pytest
from helpers import run_cli, tibench

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "tests" / "fixtures" / "sysbench"


def test_dry_run_prints_the_plan_eta_and_disk(tmp_path):
    r = tibench(
        "run",
        "params/ci.yaml",
        "--dry-run",
        "--json",
        "--phase",
        "sweep",
        env={"TIBENCH_DATA": str(tmp_path)},
    )
    assert r.returncode == 0, r.stderr
    plan = json.loads(r.stdout)
    # the rounds' runs and the pre-period's one
    assert plan["study"] == "ci" and len(plan["runs"]) == 2 * 2 * 2 * 3 + 1
    assert plan["eta_s"] > 0 and plan["disk_bytes"] > 0
    assert plan["runs"][0]["run_key"] == "sweep-pre/flush1/oltp_update_non_index/t2/r0"
    assert plan["runs"][1]["run_key"] == "flush1/oltp_point_select/t1/r1"
    assert [e["phase"] for e in plan["phases"]] == ["sweep"]
    assert not (tmp_path / "ci").exists(), "a dry run writes nothing"
    human = tibench("run", "params/seed-v514-vs-v600.yaml", "--dry-run", "--phase", "sweep")
    assert "145 runs" in human.stdout and "ETA" in human.stdout
    # 144 runs of 600 s and the pre-period's one, with 300 s cooldowns: 36 hours, in hours
    assert "ETA 35 h" in human.stdout or "ETA 36 h" in human.stdout


def test_bad_params_exit_2_with_every_field(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("study: x\nthreads: [0]\nduration_s: 0\n")
    r = run_cli("run", str(p), "--dry-run")  # the exit code a shell sees
    assert r.returncode == 2 and r.stdout == ""
    assert "2 problems" in r.stderr and "threads.0" in r.stderr and "duration_s" in r.stderr


def test_unknown_phase_is_an_error():
    r = tibench("run", "params/ci.yaml", "--phase", "nope", "--dry-run")
    assert r.returncode == 2 and "unknown phase 'nope'" in r.stderr


def test_phases_run_in_the_study_order_and_unknown_arms_are_named(tmp_path):
    env = {"TIBENCH_DATA": str(tmp_path)}
    r = tibench(
        "run", "params/demo.yaml", "--dry-run", "--json", "--phase", "compare", "--phase", "sweep",
        env=env,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert [e["phase"] for e in json.loads(r.stdout)["phases"]] == ["sweep", "compare"]
    r = tibench("run", "params/ci.yaml", "--dry-run", "--arm", "flush3", env=env)
    assert r.returncode == 2 and r.stdout == ""
    assert "no arm 'flush3' in study 'ci'" in r.stderr and "flush1, flush2" in r.stderr
    # a NUMA policy is an arm of the numa phase only
    r = tibench("run", "params/ci.yaml", "--dry-run", "--json", "--arm", "cpus:0", env=env)
    assert r.returncode == 0, r.stderr
    by_phase = {e["phase"]: e for e in json.loads(r.stdout)["phases"]}
    assert by_phase["sweep"]["runs"] == 0 and by_phase["sweep"]["note"] == "no selected arm"


def test_dry_run_estimates_every_phase(tmp_path):
    from tibenchlib import numa
    from tibenchlib.params import load_study

    r = tibench(
        "run", "params/demo.yaml", "--dry-run", "--json", env={"TIBENCH_DATA": str(tmp_path)}
    )
    assert r.returncode == 0, r.stderr
    plan = json.loads(r.stdout)
    study = load_study(ROOT / "params/demo.yaml")
    by_phase = {e["phase"]: e for e in plan["phases"]}
    assert list(by_phase) == [p for p in study.phases]
    assert by_phase["numa"]["runs"] == len(numa.plan(study))
    t = study.tpch_scaling
    assert (
        by_phase["tpch_scaling"]["runs"] > len(t.arms) * len(t.modes) * len(t.queries) * t.repeats
    )
    assert by_phase["tpch_scaling"]["eta_max_s"] >= by_phase["tpch_scaling"]["eta_s"]
    for e in plan["phases"]:
        assert e["eta_s"] > 0 and e["disk_bytes"] >= 0, e
    assert plan["eta_s"] == pytest.approx(sum(e["eta_s"] for e in plan["phases"]))
    # every phase pays its notebook's kernel, imports and figures besides its own work
    from tibenchlib.compare_phase import COMPARE_S
    from tibenchlib.studyplan import PHASE_FIXED_S

    assert by_phase["compare"]["eta_s"] == pytest.approx(COMPARE_S + PHASE_FIXED_S)
    assert plan["disk_bytes"] == sum(e["disk_bytes"] for e in plan["phases"])


def test_version_verbose_after_the_subcommand_and_every_option_has_help():
    import argparse

    from tibenchlib import __version__
    from tibenchlib.cli import build_parser

    r = run_cli("--version")  # the real entry point, in a child process
    assert r.returncode == 0 and r.stdout.strip() == f"tibench {__version__}"
    a = build_parser().parse_args(["run", "params/ci.yaml", "-v", "--dry-run"])
    assert a.verbose is True
    a = build_parser().parse_args(["-v", "run", "params/ci.yaml"])
    assert a.verbose is True
    parser = build_parser()
    (sub,) = [x for x in parser._actions if isinstance(x, argparse._SubParsersAction)]
    assert set(sub.choices) >= {"run", "runs", "server", "env", "parse", "compare"}
    for name, sp in [("tibench", parser), *sub.choices.items()]:
        assert sp.description and "``" not in sp.description, name
        for act in sp._actions:
            if isinstance(act, argparse._SubParsersAction):
                continue
            assert act.help and act.help != argparse.SUPPRESS, (name, act.dest)
            assert "``" not in act.help and ":func:" not in act.help, (name, act.dest)
        assert "``" not in sp.format_help(), name


def test_a_closed_pipe_ends_quietly(tmp_path):
    # thousands of plan lines: more than a pipe holds, so the writer meets the closed pipe
    p = tmp_path / "big.yaml"
    p.write_text("study: big\nthreads: [" + ", ".join(map(str, range(1, 61))) + "]\nrepeats: 60\n")
    r = subprocess.run(
        f"{sys.executable} -m tibenchlib.cli run {p} --dry-run --phase sweep | head -1",
        shell=True, capture_output=True, text=True, cwd=ROOT,
        env={**os.environ, "TIBENCH_DATA": str(tmp_path)},
    )  # fmt: skip
    assert r.stdout.startswith("study big: ETA")
    assert r.stderr == "", r.stderr


def test_parse_and_compare_print_aligned_tables(tmp_path):
    from tibenchlib.texttable import display_width

    files = sorted((FIX / "mariadb").glob("*-hist.txt"))[:3]
    r = tibench("parse", "sysbench", *map(str, files))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split()[:4] == ["file", "status", "threads", "tps"]
    assert len(lines) == 2 + len(files) and len({len(x) for x in lines[:2]}) == 1
    csv = tmp_path / "t.csv"
    csv.write_text(
        "workload,threads,arm,tps\n"
        + "".join(f"w,{t},A,{v * t}\n" for t in (8, 16) for v in (1000, 1020, 990))
        + "".join(f"w,{t},B,{v * t}\n" for t in (8, 16) for v in (1050, 1068, 1041))
    )
    r = tibench(
        "compare", "--table", str(csv), "--baseline", "A", "--candidate", "B", "--lang", "zh"
    )
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert "提升" in lines[0] and len(lines) == 4
    # every column starts at the same display position on every line: the rule line's gaps
    rule = lines[1]
    starts = [i for i in range(1, len(rule)) if rule[i] == "-" and rule[i - 1] == " "]
    for line in (lines[0], *lines[2:]):
        for s in starts:
            col = next(i for i in range(len(line) + 1) if display_width(line[:i]) >= s)
            assert line[col - 2 : col] == "  ", (line, s)


def test_display_width_counts_wide_characters_twice():
    from tibenchlib.texttable import display_width, format_table

    assert display_width("TPS 提升 (%)") == 12 and display_width("ab") == 2
    assert display_width("e\u0301") == 1  # e + combining acute accent
    out = format_table(["名称", "x"], [["提升", 1.5], ["ab", 22]])
    assert [display_width(line) for line in out.splitlines()] == [9, 9, 9, 9]  # 4 + 2 + len("1.5")


def test_runs_shows_done_failed_and_pending_per_phase_and_arm(tmp_path):
    from tibenchlib.params import load_study
    from tibenchlib.store import Store, default_url

    env = {"TIBENCH_DATA": str(tmp_path)}
    r = tibench("runs", "ci", env=env)
    assert r.returncode == 2 and "study 'ci' has no catalog" in r.stderr
    r = tibench("runs", "params/ci.yaml", "--json", env=env)
    assert r.returncode == 0, r.stderr
    fresh = json.loads(r.stdout)
    assert all(x["done"] == 0 and x["pending"] == x["planned"] for x in fresh)
    assert not (tmp_path / "ci").exists(), "reading progress creates no catalog"

    study = load_study(ROOT / "params/ci.yaml")
    with mock.patch.dict(os.environ, env):  # restores a TIBENCH_DATA set before, too
        store = Store(default_url("ci"))
    store.record_study("ci", study.model_dump(mode="json"))
    for i, (key, status) in enumerate(
        [("flush1/oltp_point_select/t1/r1", "ok"), ("flush1/oltp_point_select/t2/r1", "ok"),
         ("flush1/oltp_update_non_index/t1/r1", "degenerate")]
    ):  # fmt: skip
        arm, wl, t, rep = key.split("/")
        store.record_run(
            {"study": "ci", "run_key": key, "phase": "sweep", "arm": arm, "workload": wl,
             "threads": int(t[1:]), "repeat": int(rep[1:]), "seq": i, "status": status}
        )  # fmt: skip
    r = tibench("runs", "ci", "--json", env=env)
    assert r.returncode == 0, r.stderr
    rows = {(x["phase"], x["arm"]): x for x in json.loads(r.stdout)}
    f1 = rows[("sweep", "flush1")]
    assert (f1["planned"], f1["done"], f1["failed"], f1["pending"]) == (12, 2, 1, 9)
    assert rows[("sweep", "flush2")]["pending"] == 12
    human = tibench("runs", "ci", env=env).stdout.splitlines()
    assert human[1].split() == ["phase", "arm", "unit", "planned", "done", "failed", "pending"]
    assert any(line.split()[:2] == ["sweep", "flush1"] for line in human)


def test_a_failed_notebook_names_the_executed_copy_and_the_cell(tmp_path, monkeypatch):
    from papermill.exceptions import PapermillExecutionError

    from tibenchlib.cli import _notebook_failure

    monkeypatch.setenv("TIBENCH_DATA", str(tmp_path))
    e = PapermillExecutionError(
        cell_index=4, exec_count=3, source="df = sweep(study)\nshow(df)", ename="RuntimeError",
        evalue="no sweep runs", traceback=[],
    )  # fmt: skip
    msg = _notebook_failure("ci", "compare", e)
    assert "cell 4 (In [3]): df = sweep(study)" in msg
    assert "RuntimeError: no sweep runs" in msg
    assert str(tmp_path / "ci" / "notebooks" / "03_compare.ipynb") in msg


def test_a_missing_notebook_is_an_error_not_a_skip(tmp_path, monkeypatch, capsys):
    from tibenchlib import cli, paths

    monkeypatch.setattr(paths, "notebooks_dir", lambda: tmp_path / "nowhere")
    before = paths.data_dir()
    code = cli.main(["--data-dir", str(tmp_path), "run", "params/ci.yaml", "--phase", "compare"])
    assert code == 2
    assert "notebook not found" in capsys.readouterr().err
    assert not (tmp_path / "ci").exists()
    assert paths.data_dir() == before, "--data-dir outlived the command it was given to"


def test_data_dir_option_environment_and_installed_default(tmp_path, monkeypatch):
    from tibenchlib import paths

    monkeypatch.delenv("TIBENCH_DATA", raising=False)
    assert paths.data_dir() == paths.ROOT / "data"  # a clone writes into its own data/
    monkeypatch.setattr(paths, "IN_CLONE", False)
    monkeypatch.chdir(tmp_path)
    assert paths.data_dir() == tmp_path / "data"  # installed: the current directory's data/
    assert paths.notebooks_dir() == paths.SHARE / "notebooks"
    monkeypatch.setenv("TIBENCH_DATA", str(tmp_path / "elsewhere"))
    assert paths.data_dir() == tmp_path / "elsewhere"


def test_parse_sysbench_json():
    files = sorted((FIX / "mariadb").glob("*-hist.txt"))[:2]
    r = tibench("parse", "sysbench", *map(str, files), "--json")
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    assert [Path(x["file"]).name for x in rows] == [f.name for f in files]
    assert all(x["status"] == "ok" and x["tps"] > 0 for x in rows)
    r = tibench("parse", "sysbench", "/nonexistent.log", "--json")
    assert r.returncode == 2 and "/nonexistent.log: no such file" in r.stderr


def test_compare_table_json_and_errors(tmp_path):
    csv = tmp_path / "t.csv"
    csv.write_text(
        "workload,threads,arm,tps\n"
        + "".join(f"w,8,A,{v}\n" for v in (1000, 1020, 990))
        + "".join(f"w,8,B,{v}\n" for v in (1050, 1068, 1041))
    )
    r = tibench("compare", "--table", str(csv), "--baseline", "A", "--candidate", "B", "--json")
    assert r.returncode == 0, r.stderr
    (row,) = json.loads(r.stdout)
    assert row["improvement_pct"] == pytest.approx(4.95, abs=0.01)
    # Welch's t on the conservative min(n) - 1 = 2 df
    assert row["n_baseline"] == row["n_candidate"] == 3 and round(row["p_value"], 4) == 0.0526
    r = tibench("compare", "--table", str(csv), "--baseline", "A", "--candidate", "C", "--json")
    assert r.returncode == 1 and "C" in r.stderr
    (tmp_path / "bad.csv").write_text("workload,threads,tps\nw,8,1\n")
    r = tibench(
        "compare",
        "--table",
        str(tmp_path / "bad.csv"),
        "--baseline",
        "A",
        "--candidate",
        "B",
        "--json",
    )
    assert r.returncode == 1 and "arm" in r.stderr and "bad.csv" in r.stderr


@pytest.mark.slow
def test_server_start_status_stop(tmp_path):
    env = {"TIBENCH_DATA": str(tmp_path)}
    try:
        st = json.loads(tibench("server", "start", "--json", env=env).stdout)
        assert st["running"] and st["port"] and st["host"] == "127.0.0.1"
        again = json.loads(tibench("server", "status", "--json", env=env).stdout)
        assert again["pid"] == st["pid"]
    finally:
        stopped = json.loads(tibench("server", "stop", "--json", env=env).stdout)
    assert not stopped["running"]


def test_compare_study_arm_references(tmp_path):
    from tibenchlib.store import Store

    for study, arm, values in (
        ("v514", "tidb", (1000, 1020, 990)),
        ("v600", "tidb", (1050, 1068, 1041)),
    ):
        st = Store(f"sqlite:///{tmp_path / study / 'results.sqlite'}")
        for i, v in enumerate(values, 1):
            st.record_run(
                {
                    "study": study,
                    "run_key": f"{arm}/oltp_point_select/t8/r{i}",
                    "phase": "sweep",
                    "arm": arm,
                    "workload": "oltp_point_select",
                    "threads": 8,
                    "repeat": i,
                    "seq": i,
                    "status": "ok",
                    "tps": v,
                }
            )
    env = {"TIBENCH_DATA": str(tmp_path)}
    r = tibench("compare", "v514/tidb", "v600/tidb", "--json", env=env)
    assert r.returncode == 0, r.stderr
    (row,) = json.loads(r.stdout)
    assert row["workload"] == "oltp_point_select" and row["threads"] == 8
    assert row["improvement_pct"] == pytest.approx(4.95, abs=0.01)
    r = tibench("compare", "v514/tidb", "v600/nope", "--json", env=env)
    assert r.returncode == 1 and "arm 'nope' not found in study 'v600'" in r.stderr
    r = tibench("compare", "v514/tidb", "v999/tidb", "--json", env=env)
    assert r.returncode == 2 and "study 'v999' has no catalog" in r.stderr


def test_after_sigterm_the_interrupts_echoes_are_not_shown():
    """SIGTERM while a phase notebook runs: the kernel's shutdown makes papermill log "Kernel
    died" and asyncio a never-retrieved DeadKernelError (seen in CI under load), and SQLAlchemy's
    pool logs "Exception closing connection" with the interrupt's traceback when the signal
    lands while it closes one (seen in CI: test_faults' SIGTERM mid-sweep). The user gets only
    tibench's "interrupted" line. Before the signal those loggers are shown as ever, and other
    loggers after it."""
    import signal

    from tibenchlib import cli

    seen: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record):
            seen.append(record.getMessage())

    root = logging.getLogger()
    keep = Keep(level=logging.ERROR)
    root.addHandler(keep)
    echoes = ["papermill", "asyncio", "sqlalchemy.pool.impl.QueuePool"]
    try:
        logging.getLogger("papermill").error("Kernel died while waiting for execute reply.")
        assert seen == ["Kernel died while waiting for execute reply."]
        with pytest.raises(KeyboardInterrupt):
            cli._terminate(signal.SIGTERM, None)
        for name in echoes:
            logging.getLogger(name).error("Task exception was never retrieved")
        logging.getLogger("tibench.run").error("a line of tibench's own")
        assert seen == [
            "Kernel died while waiting for execute reply.",
            "a line of tibench's own",
        ]
    finally:
        root.removeHandler(keep)
        for h in root.handlers:
            h.removeFilter(cli._not_an_echo)


def test_ctrl_c_while_the_command_line_is_built_is_one_line(monkeypatch, capsys):
    """Ctrl-C before tibench's own handler is set (the parser is being built): exit 130 and one
    line, not a KeyboardInterrupt traceback (a server-start test hit it at 0.9 s under load)."""
    from tibenchlib import cli

    def interrupted():
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "build_parser", interrupted)
    assert cli.main(["runs", "x"]) == 130
    assert capsys.readouterr().err == "tibench: error: interrupted before anything ran\n"
