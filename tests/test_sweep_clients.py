"""Several sysbench clients in one sweep run: the study's ``clients`` parameter."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
import yaml
from helpers import sysbench_seed

from tibenchlib.params import ParamsError, parse_study

URL = {"kind": "url", "url": "mysql+pymysql://root@10.0.0.9:4000/sbtest"}


@pytest.mark.parametrize(
    "extra, where",
    [
        ({"clients": 0}, "clients"),
        ({"clients": []}, "at least one host:port endpoint"),
        ({"clients": ["db1"], "target": URL}, "'db1' is not host:port"),
        ({"threads": [1, 4], "clients": 2}, "threads: 1 threads cannot be shared by 2 clients"),
        (
            {"threads": [4], "threads_by_workload": {"oltp_point_select": [2]}, "clients": 3},
            "threads: 2 threads cannot be shared by 3 clients",
        ),
        ({"threads": [2], "clients": ["10.0.0.1:4000"]}, "endpoints are for a url target"),
    ],
)
def test_bad_sweep_clients_name_the_field(extra, where):
    with pytest.raises(ParamsError) as e:
        parse_study({"study": "t", **extra})
    assert where in str(e.value)


def test_one_client_is_the_default():
    s = parse_study({"study": "t"})
    assert s.clients == 1 and s.n_clients == 1


def test_clients_as_a_number_or_endpoints():
    assert parse_study({"study": "t", "threads": [2, 4], "clients": 2}).n_clients == 2
    s = parse_study(
        {
            "study": "t",
            "target": URL,
            "threads": [4],
            "clients": ["10.0.0.1:4000", "10.0.0.2:4000", "10.0.0.3:4000"],
        }
    )
    assert s.n_clients == 3


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.slow
def test_two_clients_in_one_sweep_run(tmp_path, data_dir, sysbench_bin, mariadb):
    from tibenchlib import phases
    from tibenchlib.multiclient import merge_histograms
    from tibenchlib.params import load_study
    from tibenchlib.parse.sysbench import histogram_percentiles, parse_sysbench_file
    from tibenchlib.sysbench.command import run_seeds
    from tibenchlib.sysbench.runner import RunSpec, client_logs, run_one
    from tibenchlib.target import open_arm

    c = mariadb.conninfo()
    f = tmp_path / "study.yaml"
    f.write_text(
        yaml.safe_dump(
            {
                "study": "mc",
                "target": {
                    "kind": "url",
                    "url": f"mysql+pymysql://{c.user}@127.0.0.1:{c.port}/sbclients",
                    "password_env": "TB_CLIENTS_PW",
                },
                "allow_destructive": True,
                "dataset": {"tables": 2, "table_size": 1000},
                "workloads": ["oltp_point_select"],
                "threads": [2],
                "clients": 2,
                "duration_s": 2,
                "report_interval_s": 1,
                "repeats": 1,
                "arms": [{"label": "a"}],
                "sample_resources": False,
            }
        )
    )
    os.environ["TB_CLIENTS_PW"] = c.password
    try:
        study = load_study(f)
        assert study.n_clients == 2
        phases.run_phase(study, "prepare", progress=False)
        ctx = open_arm(study, "a")
        spec = RunSpec("a", "oltp_point_select", 2, 1)
        rec = run_one(ctx, spec)
        logs = client_logs("mc", spec, 2)
        assert len(logs) == 2 and all(p.is_file() for p in logs)
        each = [parse_sysbench_file(p) for p in logs]
        assert [p.summary["threads"] for p in each] == [1, 1]
        assert rec.status == "ok", rec.error
        tps = sum(p.summary["tps"] for p in each)
        assert rec.tps == pytest.approx(tps, rel=1e-6) and rec.tps > 0
        merged = histogram_percentiles(merge_histograms([p.histogram for p in each]), [95])
        assert len(each[0].histogram) and len(each[1].histogram)
        assert rec.lat_p95_ms == pytest.approx(merged[95])
        assert rec.events == sum(p.summary["events"] for p in each)
        assert "and 1 more clients" in rec.command
        # started in the same second, each client replays its own requests (sysbench's words)
        seeds = [sysbench_seed(p) for p in logs]
        assert seeds == run_seeds(study, spec, 2) and len(set(seeds)) == 2, seeds

        # one client on a closed port: the run fails, both clients' logs stay
        ctx.study = study.model_copy(
            update={"clients": [f"127.0.0.1:{c.port}", f"127.0.0.1:{_closed_port()}"]}
        )
        bad_spec = RunSpec("a", "oltp_point_select", 2, 2)
        bad = run_one(ctx, bad_spec)
        assert bad.status == "failed"
        assert "client 1" in bad.error
        bad_logs = client_logs("mc", bad_spec, 2)
        assert all(p.is_file() for p in bad_logs)
        assert parse_sysbench_file(bad_logs[0]).summary["status"] == "ok"
        assert "Can't connect" in bad_logs[1].read_text() or (
            parse_sysbench_file(bad_logs[1]).summary["status"] != "ok"
        )
    finally:
        del os.environ["TB_CLIENTS_PW"]
    leaks = [
        p
        for p in Path(data_dir).rglob("*")
        if p.is_file() and c.password.encode() in p.read_bytes()
    ]
    assert not leaks, leaks
