"""The sweep's clients as a Kubernetes Job (``clients_job``): the study-file key, the pods'
start barrier and thread shares in the wrapper, and real sweep runs through a fake ``kubectl``
whose pods run the real sysbench here against the session's MariaDB (so the pods' logs are real
sysbench output)."""

from __future__ import annotations

import math
import os
import subprocess
import time
from pathlib import Path

import kube_fake
import pytest
import yaml
from helpers import sysbench_seed

from tibenchlib import phases
from tibenchlib.db import ConnInfo
from tibenchlib.hosts.tables import contributions
from tibenchlib.kube.job import BARRIER, START_MARK, job_manifest
from tibenchlib.kube.sweep_job import pod_conn
from tibenchlib.params import ParamsError, load_study, parse_study
from tibenchlib.parse.sysbench import parse_sysbench_file
from tibenchlib.store import Store
from tibenchlib.sweep import phase_estimate
from tibenchlib.sysbench.command import run_seeds
from tibenchlib.sysbench.runner import RunSpec, run_one
from tibenchlib.target import open_arm

HERE = Path(__file__).parent
POD = HERE / "fixtures" / "kubernetes" / "pod-docs-nginx-kube-worker-1.yaml"
K8S = {"namespace": "tidb-cluster", "cluster": "basic"}
JOB = {"pods": 2, "image": "perconalab/sysbench:1.0.20"}


def study(**extra):
    base = {"study": "kj", "target": {"kubernetes": K8S}, "threads": [2, 4], "clients_job": JOB}
    return parse_study({**base, **extra})


def test_clients_job_is_read_with_its_defaults():
    cj = study().clients_job
    assert (cj.pods, cj.image, cj.namespace, cj.endpoint, cj.start_lead_s) == (
        2, "perconalab/sysbench:1.0.20", None, None, 30,
    )  # fmt: skip


@pytest.mark.parametrize(
    "extra, line",
    [
        ({"target": {}}, "clients_job needs target.kubernetes"),
        (
            {"arms": [{"label": "a", "target": {"kind": "url", "url": "mysql://r@h:4000/d"}}]},
            "clients_job needs arms[a].target.kubernetes",
        ),
        ({"clients": 2}, "clients_job: the sweep's clients are the Job's pods"),
        ({"threads": [1, 4]}, "threads: 1 threads cannot be shared by clients_job.pods=2"),
        ({"clients_job": {**JOB, "pods": 0}}, "clients_job.pods"),
        ({"clients_job": {"pods": 2}}, "clients_job.image"),
        ({"clients_job": {**JOB, "image": "a b"}}, "clients_job.image"),
        ({"clients_job": {**JOB, "namespace": "Bad_NS"}}, "clients_job.namespace"),
        ({"clients_job": {**JOB, "endpoint": "basic-tidb"}}, "'basic-tidb' is not host:port"),
        ({"clients_job": {**JOB, "start_lead_s": 0}}, "clients_job.start_lead_s"),
        ({"clients_job": {**JOB, "replicas": 2}}, "clients_job.replicas"),
    ],
)
def test_bad_clients_job_is_one_line_naming_the_field(extra, line):
    with pytest.raises(ParamsError) as e:
        study(**extra)
    assert line in str(e.value)


def test_pod_connection_defaults_to_the_operators_tidb_service():
    conn = ConnInfo("127.0.0.1", 4000, "root", "sbtest", password="pw")
    s = study()
    assert (pod_conn(s, "default", conn).host, pod_conn(s, "default", conn).port) == (
        "basic-tidb.tidb-cluster.svc", 4000,
    )  # fmt: skip
    s = study(clients_job={**JOB, "endpoint": "target"})
    assert pod_conn(s, "default", conn) == conn
    s = study(clients_job={**JOB, "endpoint": "10.0.0.7:4001"})
    assert (pod_conn(s, "default", conn).host, pod_conn(s, "default", conn).port) == (
        "10.0.0.7", 4001,
    )  # fmt: skip


def _run_wrapper(tmp_path, index: int, start_at: int, shares=(3, 2), seeds=None):
    """The Job's container command run with /bin/sh, a stand-in ``sysbench`` that prints its
    arguments, as pod ``index``."""
    tool = tmp_path / "sysbench"
    tool.write_text('#!/bin/sh\nprintf "%s\\n" "$@"\n')
    tool.chmod(0o755)
    job = job_manifest(
        name="j", namespace="ns", tool="sysbench", image="i", args=["oltp_point_select", "run"],
        clients=2, secret="j", labels={}, start_at=start_at, shares=list(shares), seeds=seeds,
    )  # fmt: skip
    c = job["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e.get("value", "pw") for e in c["env"]}
    env.update(PATH=os.environ["PATH"], JOB_COMPLETION_INDEX=str(index), TIBENCH_DIR=str(tmp_path))
    argv = [*c["command"][:-1], str(tool), *c["args"]]
    t0 = time.time()
    out = subprocess.run(argv, env=env, capture_output=True, text=True, check=True).stdout
    return out.splitlines(), t0, time.time()


def test_wrapper_waits_for_the_start_instant_and_prints_its_actual_start(tmp_path):
    start_at = int(time.time()) + 2
    lines, _, done = _run_wrapper(tmp_path, 1, start_at)
    assert lines[0].startswith(START_MARK)
    actual = float(lines[0].split()[1])
    assert start_at <= actual < start_at + 0.5  # the barrier held, then let go at once
    assert done >= start_at
    # pod 1's share, after the tool's own arguments; the password file before them
    assert lines[1:] == [f"--config-file={tmp_path}/sysbench.cfg", "oltp_point_select", "run",
                         "--threads=2"]  # fmt: skip


def test_wrapper_past_start_instant_starts_at_once(tmp_path):
    lines, t0, done = _run_wrapper(tmp_path, 0, int(time.time()) - 5)
    assert done - t0 < 1.0
    assert lines[-1] == "--threads=3"


def test_each_pod_gets_its_own_seed_beside_its_share(tmp_path):
    for index, seed in ((0, 17), (1, 2**31 - 1)):
        lines, _, _ = _run_wrapper(tmp_path, index, 0, seeds=[17, 2**31 - 1])
        assert lines[-2:] == [f"--rand-seed={seed}", f"--threads={(3, 2)[index]}"]
    kw = dict(name="j", namespace="ns", image="i", clients=2, secret="j", labels={})
    for bad, match in (
        (dict(tool="go-tpc", args=[], seeds=[1, 2]), "go-tpc takes no per-pod --rand-seed"),
        (dict(tool="sysbench", args=[], seeds=[1]), "one seed in 1..2"),
        (dict(tool="sysbench", args=[], seeds=[0, 1]), "one seed in 1..2"),
        (dict(tool="sysbench", args=["--rand-seed=3", "run"], seeds=[1, 2]), "already carry"),
    ):
        with pytest.raises(ValueError, match=match):
            job_manifest(**bad, **kw)


def test_shares_need_one_positive_share_per_pod():
    kw = dict(name="j", namespace="ns", image="i", args=[], clients=2, secret="j", labels={})
    with pytest.raises(ValueError, match="shares"):
        job_manifest(tool="sysbench", shares=[2], **kw)
    with pytest.raises(ValueError, match="shares"):
        job_manifest(tool="go-ycsb", shares=[1, 1], **kw)


@pytest.fixture
def running_fake(tmp_path, monkeypatch):
    """The fake kubectl in its running mode: its pods run the Job's command here."""
    record = kube_fake.install(tmp_path, monkeypatch)
    run = tmp_path / "cluster"
    run.mkdir()
    monkeypatch.setenv("FAKE_KUBECTL_RUN", str(run))
    monkeypatch.setenv("FAKE_KUBECTL_PODS", str(POD))
    return lambda: kube_fake.calls(record)


def _sweep_study(tmp_path, mariadb, monkeypatch, name):
    c = mariadb.conninfo()
    monkeypatch.setenv("TB_KUBE_SWEEP_PW", c.password or "")
    f = tmp_path / "study.yaml"
    f.write_text(
        yaml.safe_dump(
            {
                "study": name,
                "target": {
                    "kind": "url",
                    "url": f"mysql+pymysql://{c.user}@127.0.0.1:{c.port}/sbkube",
                    "password_env": "TB_KUBE_SWEEP_PW",
                    "kubernetes": K8S,
                },
                "allow_destructive": True,
                "dataset": {"tables": 2, "table_size": 1000},
                "workloads": ["oltp_point_select"],
                "threads": [3],
                "clients_job": {**JOB, "endpoint": "target", "start_lead_s": 2},
                "duration_s": 3,
                "report_interval_s": 1,
                "repeats": 2,
                "arms": [{"label": "a"}],
                "sample_resources": False,
                "phases": ["prepare", "sweep"],
            }
        )
    )
    return load_study(f), c


def _verbs(calls):
    return [" ".join(c["argv"][2:4]) for c in calls]


def _barrier_lateness_ms(pods: int = 2) -> float:
    """How late the start barrier itself releases on this machine at this moment, outside any
    Job: ``pods`` copies of the same shell loop side by side, the agreed start a second or two
    ahead (as a Job's pods wait for it); the latest one's delay. On an idle host a few tens of
    ms (the loop polls every 50 ms); on a host whose CPUs other work keeps busy, its ``date``
    and ``sleep`` children start late and it grows to hundreds."""
    start_at = math.ceil(time.time()) + 1
    env = {**os.environ, "TIBENCH_START_AT": str(start_at)}
    procs = [
        subprocess.Popen(["sh", "-c", BARRIER], env=env, stdout=subprocess.PIPE, text=True)
        for _ in range(pods)
    ]
    marks = [p.communicate(timeout=30)[0].split() for p in procs]
    assert all(m[0] == START_MARK for m in marks), marks
    return max(float(m[1]) - start_at for m in marks) * 1000


@pytest.mark.slow
def test_sweep_runs_its_clients_as_a_job(
    tmp_path, data_dir, sysbench_bin, mariadb, monkeypatch, running_fake
):
    s, conn = _sweep_study(tmp_path, mariadb, monkeypatch, "kube-sweep")
    phases.run_phase(s, "prepare", progress=False)
    phases.run_phase(s, "sweep", progress=False)
    late_ms = _barrier_lateness_ms()
    store = Store.for_study(s)
    runs = store.runs(s.study, phase="sweep")
    assert list(runs["status"]) == ["ok", "ok"], list(runs["error"])
    hosts = store.read("run_hosts", s.study)
    assert len(hosts) == 4
    for key, g in hosts.groupby("run_key"):
        run = runs.set_index("run_key").loc[key]
        assert list(g["host"]) == ["pod0", "pod1"]
        assert list(g["threads"]) == [2, 1]  # 3 threads shared, the first pod takes the rest
        assert g["destination"].str.contains("-fake").all()
        assert (g["returncode"] == 0).all() and g["error"].isna().all()
        # each pod's log is real sysbench output with its share and its actual start first
        logs = [Path(p) for p in g["log_path"]]
        assert [p.name for p in logs] == ["pod0.log", "pod1.log"]
        each = [parse_sysbench_file(p) for p in logs]
        assert [p.summary["threads"] for p in each] == [2, 1]
        spec = RunSpec("a", "oltp_point_select", 3, int(key[-1]))
        assert [sysbench_seed(p) for p in logs] == run_seeds(s, spec, 2)  # each pod its own
        starts = [float(p.read_text().splitlines()[0].split()[1]) for p in logs]
        assert list(g["started_at"]) == pytest.approx(starts)
        # the barrier: nobody before the agreed instant, everybody within half a second of it
        # beyond what the barrier loop alone takes on this machine now (measured beside it: a
        # shared host's load delays the loop's own children, not the Job's release)
        assert (g["start_delay_ms"] >= 0).all()
        assert (g["start_delay_ms"] < 500 + late_ms).all(), (list(g["start_delay_ms"]), late_ms)
        assert run["tps"] == pytest.approx(sum(p.summary["tps"] for p in each), rel=1e-6)
        assert run["events"] == sum(p.summary["events"] for p in each)
        assert run["tps"] > 0 and "2 pods of Job tibench-kube-sweep-" in run["command"]
        assert list(g["tps"]) == pytest.approx([p.summary["tps"] for p in each])
    c = contributions(runs, hosts)
    assert list(c["host"]) == ["pod0", "pod1"] and list(c["n"]) == [2, 2]
    assert c["tps_share"].sum() == pytest.approx(1.0)
    calls = running_fake()
    assert _verbs(calls).count("apply -f") == 2
    assert _verbs(calls)[-2:] == ["delete job", "delete secret"]
    assert all(conn.password not in " ".join(c["argv"]) for c in calls)
    leaks = [p for p in Path(data_dir).rglob("*") if p.is_file() and conn.password.encode()
             in p.read_bytes()]  # fmt: skip
    assert not leaks, leaks


@pytest.mark.slow
def test_a_failed_pod_fails_the_run_and_the_job_is_deleted(
    tmp_path, data_dir, sysbench_bin, mariadb, monkeypatch, running_fake
):
    s, _ = _sweep_study(tmp_path, mariadb, monkeypatch, "kube-fail")
    phases.run_phase(s, "prepare", progress=False)
    monkeypatch.setenv("FAKE_KUBECTL_BAD_PASSWORD", "1")  # pod 1 is refused by the server
    rec = run_one(open_arm(s, "a"), RunSpec("a", "oltp_point_select", 3, 1))
    assert rec.status == "failed"
    assert "\n" not in rec.error
    assert rec.error.startswith("Job tibench-kube-fail-") and "failed" in rec.error
    assert "-1-fake1 (Failed, exit 1)" in rec.error
    log1 = Path(rec.log_path).with_name("pod1.log")
    assert "Access denied" in log1.read_text()  # sysbench's own words, kept
    names = [c["argv"][4] for c in running_fake() if _verbs([c])[0].startswith("delete")]
    assert _verbs(running_fake())[-2:] == ["delete job", "delete secret"]
    assert names[0] == names[1] == rec.error.split()[1]


def test_the_estimate_counts_each_runs_start_lead():
    base = study(clients_job={**JOB, "start_lead_s": 1})
    later = study(clients_job={**JOB, "start_lead_s": 31})
    assert phase_estimate(later)["eta_s"] - phase_estimate(base)["eta_s"] == 30 * 6  # 2×3 runs
