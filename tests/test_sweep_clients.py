"""Several sysbench clients in one sweep run: the study's ``clients`` parameter."""

from __future__ import annotations

import pytest

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


def test_several_sweep_clients_are_refused_before_anything_runs(tmp_path):
    from types import SimpleNamespace

    from tibenchlib.sysbench.runner import RunSpec, run_one

    s = parse_study({"study": "t", "threads": [2], "clients": 2})
    with pytest.raises(ValueError, match="clients: 2 sysbench clients per sweep run"):
        run_one(SimpleNamespace(study=s), RunSpec("a", "oltp_point_select", 2, 1))
