"""sysbench command lines as the reports write them: a measured run, a warm-up run, a prepare;
never the password."""

from __future__ import annotations

import yaml

from tibenchlib.db import ConnInfo
from tibenchlib.params import load_study
from tibenchlib.sysbench.command import (
    client_seeds,
    run_seeds,
    seeded,
    study_command,
    sysbench_command,
)
from tibenchlib.sysbench.runner import RunSpec
from tibenchlib.tools import display_command

CONN = ConnInfo("127.0.0.1", 3307, "tibench", "sbtest", password="n0t-in-argv")
CONNECT = [
    "--db-driver=mysql",
    "--mysql-host=127.0.0.1",
    "--mysql-port=3307",
    "--mysql-user=tibench",
    "--mysql-db=sbtest",
]


def _study(tmp_path, **kw):
    p = {
        "study": "cmd",
        "dataset": {"tables": 16, "table_size": 10000},
        "workloads": ["oltp_point_select"],
        "threads": [8],
        "duration_s": 600,
        "report_interval_s": 10,
        "percentile": 99,
        "histogram": True,
        "rand_type": "uniform",
        "extra_args": ["--db-ps-mode=disable"],
        "arms": [{"label": "a"}],
    }
    p.update(kw)
    f = tmp_path / "study.yaml"
    f.write_text(yaml.safe_dump(p))
    return load_study(f)


def test_a_measured_run_has_the_reports_options(tmp_path):
    cmd = study_command(_study(tmp_path), CONN, "oltp_point_select", 8, 600, "/x/cred.cnf")
    assert cmd == [
        "sysbench",
        "oltp_point_select",
        "--config-file=/x/cred.cnf",
        *CONNECT,
        "--tables=16",
        "--table-size=10000",
        "--threads=8",
        "--time=600",
        "--report-interval=10",
        "--percentile=99",
        "--histogram=on",
        "--rand-type=uniform",
        "--db-ps-mode=disable",
        "run",
    ]


def test_a_warmup_run_reports_every_second_without_percentile_or_histogram(tmp_path):
    cmd = study_command(
        _study(tmp_path), CONN, "oltp_read_write", 4, 20, "/x/cred.cnf", report=False
    )
    assert "--report-interval=1" in cmd and "--time=20" in cmd and "--threads=4" in cmd
    assert not [a for a in cmd if a.startswith(("--percentile", "--histogram"))]
    # the same data set, distribution and extra options as the measured runs
    assert {"--tables=16", "--table-size=10000", "--rand-type=uniform", "--db-ps-mode=disable"} <= (
        set(cmd)
    )
    assert cmd[-1] == "run"


def test_prepare_takes_no_run_options_and_no_command_shows_the_password():
    cmd = sysbench_command(
        "oltp_common",
        CONN,
        action="prepare",
        tables=2,
        table_size=500,
        threads=2,
        time_s=60,
        report_interval_s=1,
        histogram=True,
        config_file="/x/cred.cnf",
    )
    assert cmd == [
        "sysbench",
        "oltp_common",
        "--config-file=/x/cred.cnf",
        *CONNECT,
        "--tables=2",
        "--table-size=500",
        "--threads=2",
        "prepare",
    ]
    shown = display_command(cmd)
    assert "n0t-in-argv" not in " ".join(cmd) + shown
    assert "--config-file=<0600 credentials file>" in shown and "/x/cred.cnf" not in shown


def test_one_client_keeps_sysbench_s_own_seed():
    assert client_seeds(1, "oltp_point_select/t8/r1", 1) == [None]
    cmd = ["sysbench", "oltp_point_select", "--threads=8", "run"]
    assert seeded(cmd, None) == cmd


def test_several_clients_each_get_their_own_seed_the_arms_of_a_round_the_same(tmp_path):
    s = _study(tmp_path, threads=[8], clients=4, arms=[{"label": "a"}, {"label": "b"}])
    a1 = run_seeds(s, RunSpec("a", "oltp_point_select", 8, 1), 4)
    assert len(set(a1)) == 4 and all(0 < x < 2**31 for x in a1)
    # the same run in the other arm replays the same requests (common random numbers) ...
    assert run_seeds(s, RunSpec("b", "oltp_point_select", 8, 1), 4) == a1
    # ... the next round, another workload or thread count, or another study seed do not
    others = [
        run_seeds(s, RunSpec("a", "oltp_point_select", 8, 2), 4),
        run_seeds(s, RunSpec("a", "oltp_read_only", 8, 1), 4),
        run_seeds(s, RunSpec("a", "oltp_point_select", 4, 1), 4),
        run_seeds(s.model_copy(update={"seed": 2}), RunSpec("a", "oltp_point_select", 8, 1), 4),
    ]
    for o in others:
        assert not set(o) & set(a1), o
    # the command: one --rand-seed, just before the action, in place of the user's
    cmd = study_command(s, CONN, "oltp_point_select", 2, 600, "/p/cfg")
    out = seeded([*cmd[:-1], "--rand-seed=9", cmd[-1]], a1[0])
    assert out[-2:] == [f"--rand-seed={a1[0]}", "run"]
    assert [x for x in out if x.startswith("--rand-seed")] == [f"--rand-seed={a1[0]}"]


def test_the_user_s_seed_is_where_the_clients_seeds_start():
    assert client_seeds(1, "k", 3, ["--db-ps-mode=disable", "--rand-seed=41"]) == [41, 42, 43]
    # sysbench's 0 ("the current time") would give every client the same seed: derived instead
    derived = client_seeds(1, "k", 3, ["--rand-seed=0"])
    assert derived == client_seeds(1, "k", 3) and len(set(derived)) == 3
    assert client_seeds(1, "k", 2, ["--rand-seed=2147483647"]) == [2**31 - 1, 1]
