"""YCSB and TPC-C runs whose clients are a Kubernetes Job (``ycsb.clients_job``,
``tpcc.clients_job``): the study-file keys, and real phase runs through the fake ``kubectl`` in
its running mode. go-ycsb and go-tpc are not installed here: the pods' tool is a stand-in that
prints a real recorded output (tests/fixtures/go-ycsb, tests/fixtures/go-tpc-tpcc; see their
SOURCES.md), a different one per pod, so the merged figures can be checked against the sum of
the pods' own."""

from __future__ import annotations

from pathlib import Path

import kube_fake
import pytest
import yaml

from tibenchlib.params import ParamsError, load_study, parse_study
from tibenchlib.parse.gotpc import parse_tpcc_output
from tibenchlib.parse.ycsb import parse_ycsb_file
from tibenchlib.store import Store
from tibenchlib.target import open_arm
from tibenchlib.tpcc import phase as tpcc_phase
from tibenchlib.ycsb import phase as ycsb_phase

HERE = Path(__file__).parent
POD = HERE / "fixtures" / "kubernetes" / "pod-docs-nginx-kube-worker-1.yaml"
K8S = {"namespace": "tidb-cluster", "cluster": "basic"}
JOB = {"pods": 2, "image": "pingcap/go-ycsb:latest"}
INSERTING = {
    "recordcount": 100,
    "maxexecutiontime_s": 2,
    "readproportion": 0.5,
    "updateproportion": 0,
    "insertproportion": 0.5,
}
YCSB_LOGS = [
    HERE / "fixtures" / "go-ycsb" / "go-ycsb-run-2023-new-format-total-kubebench.txt",
    HERE / "fixtures" / "go-ycsb" / "go-ycsb-run-2020-old-format-with-properties.txt",
]
GOTPC_LOGS = [
    HERE / "fixtures" / "go-tpc-tpcc" / "go-tpc-tpcc-run-x86-with-err-lines.txt",
    HERE / "fixtures" / "go-tpc-tpcc" / "go-tpc-tpcc-run-riscv-maxprocs-line.txt",
]


def study(**extra):
    base = {"study": "kt", "target": {"kubernetes": K8S}}
    return parse_study({**base, **extra})


@pytest.mark.parametrize(
    "extra, line",
    [
        ({"target": {}, "ycsb": {"clients_job": JOB}}, "ycsb.clients_job needs target.kubernetes"),
        (
            {"target": {}, "tpcc": {"clients_job": JOB, "threads": [2]}},
            "tpcc.clients_job needs target.kubernetes",
        ),
        ({"ycsb": {"clients_job": JOB, "clients": 2}}, "clients_job: the run's clients are"),
        ({"ycsb": {"clients_job": JOB, "clients": ["local"]}}, "clients_job: the run's clients"),
        ({"ycsb": {"clients_job": JOB, "tool": "ycsb"}}, "give tool: go-ycsb"),
        ({"ycsb": {"clients_job": {**JOB, "pods": 0}}}, "ycsb.clients_job.pods"),
        (
            {"ycsb": {"clients_job": JOB, "workloads": {"ins": INSERTING}}},
            "workloads.ins: insertproportion > 0 with clients=2",
        ),
        ({"ycsb": {"clients_job": {"pods": 2}}}, "ycsb.clients_job.image"),
        (
            {"tpcc": {"clients_job": JOB, "clients": 2, "threads": [2]}},
            "clients_job: the run's clients are",
        ),
        ({"tpcc": {"clients_job": JOB, "tool": "sysbench", "threads": [2]}}, "give tool: go-tpc"),
        ({"tpcc": {"clients_job": JOB, "threads": [1, 4]}}, "threads: 1 threads cannot be shared"),
        (
            {"tpcc": {"clients_job": {**JOB, "endpoint": "x"}, "threads": [2]}},
            "'x' is not host:port",
        ),
    ],
)
def test_bad_phase_clients_job_is_one_line_naming_the_field(extra, line):
    with pytest.raises(ParamsError) as e:
        study(**extra)
    assert line in str(e.value)


def test_phase_clients_job_is_read():
    s = study(
        ycsb={"clients_job": JOB, "tool": "go-ycsb"}, tpcc={"clients_job": JOB, "threads": [2, 4]}
    )
    assert (s.ycsb.clients_job.pods, s.tpcc.clients_job.image) == (2, JOB["image"])
    assert s.clients_job is None  # the sweep's own stays unset


def _stand_in(bin_dir: Path, tool: str, outputs: list[Path], args_dir: Path) -> None:
    """``tool`` on PATH: notes its arguments, then prints pod ``i``'s recorded output; a pod
    given the wrong password (the fake's ``FAKE_KUBECTL_BAD_PASSWORD``) prints nothing and
    exits 1."""
    cases = "\n".join(f'  {i}) cat "{p}" ;;' for i, p in enumerate(outputs))
    script = f"""#!/bin/sh
printf '%s\\n' "$@" > "{args_dir}/{tool}-$JOB_COMPLETION_INDEX.args"
[ "$TIBENCH_PASSWORD" = not-the-password ] && exit 1
case "$JOB_COMPLETION_INDEX" in
{cases}
esac
"""
    exe = bin_dir / tool
    exe.write_text(script)
    exe.chmod(0o755)


@pytest.fixture
def cluster(tmp_path, monkeypatch):
    """The fake kubectl in its running mode, the stand-ins for go-ycsb and go-tpc on PATH."""
    record = kube_fake.install(tmp_path, monkeypatch)
    run = tmp_path / "cluster"
    run.mkdir()
    args = tmp_path / "args"
    args.mkdir()
    monkeypatch.setenv("FAKE_KUBECTL_RUN", str(run))
    monkeypatch.setenv("FAKE_KUBECTL_PODS", str(POD))
    _stand_in(tmp_path / "bin", "go-ycsb", YCSB_LOGS, args)
    _stand_in(tmp_path / "bin", "go-tpc", GOTPC_LOGS, args)
    return lambda: kube_fake.calls(record), args


def _study(tmp_path, mariadb, monkeypatch, name):
    c = mariadb.conninfo()
    monkeypatch.setenv("TB_KUBE_TOOL_PW", c.password or "")
    f = tmp_path / "study.yaml"
    job = {**JOB, "endpoint": "target", "start_lead_s": 1}
    f.write_text(
        yaml.safe_dump(
            {
                "study": name,
                "target": {
                    "kind": "url",
                    "url": f"mysql+pymysql://{c.user}@127.0.0.1:{c.port}/sbtest",
                    "password_env": "TB_KUBE_TOOL_PW",
                    "kubernetes": K8S,
                },
                "arms": [{"label": "a"}],
                "ycsb": {
                    "workloads": {"ru": {"recordcount": 1000, "maxexecutiontime_s": 2}},
                    "threads": [2],
                    "repeats": 1,
                    "tool": "go-ycsb",
                    "clients_job": job,
                },
                "tpcc": {
                    "threads": [3],
                    "repeats": 1,
                    "duration_s": 2,
                    "consistency": False,
                    "clients_job": job,
                },  # fmt: skip
            }
        )
    )
    return load_study(f), c


def _verbs(calls):
    return [" ".join(c["argv"][2:4]) for c in calls]


def _no_password(calls, password):
    assert password
    assert all(password not in " ".join(c["argv"]) for c in calls)
    for c in calls:
        for doc in yaml.safe_load_all(c["stdin"] or ""):
            if doc and doc["kind"] == "Job":
                box = doc["spec"]["template"]["spec"]["containers"][0]
                assert password not in " ".join([*box["command"], *box["args"]])


def test_ycsb_run_as_a_job_merges_the_pods_logs(tmp_path, data_dir, mariadb, monkeypatch, cluster):
    calls, args = cluster
    s, conn = _study(tmp_path, mariadb, monkeypatch, "kube-ycsb")
    spec = ycsb_phase.plan(s)[0]
    rec = ycsb_phase.run_one(open_arm(s, "a"), spec)
    assert rec.status == "ok", rec.error
    each = [parse_ycsb_file(p).summary for p in YCSB_LOGS]
    # counts and throughput summed over the pods; no percentile averaged over two clients
    assert rec.tps == pytest.approx(sum(e["throughput_ops_s"] for e in each))
    assert rec.events == sum(sum(e["operations"].values()) for e in each)
    assert rec.threads == 2 * 2 and rec.lat_p95_ms is None
    ops = Store.for_study(s).read("ycsb_ops", s.study).set_index("operation")
    for op in ("READ", "UPDATE"):
        assert ops.loc[op, "count"] == sum(e["operations"][op] for e in each)
    hosts = Store.for_study(s).read("run_hosts", s.study)
    assert list(hosts["host"]) == ["pod0", "pod1"]
    assert list(hosts["threads"]) == [2, 2]  # go-ycsb's threadcount is per client
    assert list(hosts["tps"]) == pytest.approx([e["throughput_ops_s"] for e in each])
    assert [Path(p).name for p in hosts["log_path"]] == ["pod0.log", "pod1.log"]
    assert (hosts["start_delay_ms"] >= 0).all() and hosts["error"].isna().all()
    # each pod got the run's properties and its password file, not the password
    pod_args = (args / "go-ycsb-0.args").read_text().splitlines()
    assert pod_args[:2] == ["run", "mysql"] and "threadcount=2" in pod_args
    assert pod_args[-2] == "-P" and pod_args[-1].endswith("db.properties")
    assert "pods of Job tibench-kube-ycsb-" in rec.command
    assert _verbs(calls())[-2:] == ["delete job", "delete secret"]
    _no_password(calls(), conn.password)
    saved = [p for p in Path(data_dir).rglob("*") if p.is_file()]
    assert not [p for p in saved if conn.password.encode() in p.read_bytes()]


def _tpcc_ctx(s):
    ctx = open_arm(s, "a")
    ctx.tpcc_ready = {1}  # the data set is not this test's subject: no go-tpc prepare
    return ctx


def test_tpcc_run_as_a_job_merges_the_pods_logs(tmp_path, data_dir, mariadb, monkeypatch, cluster):
    calls, args = cluster
    s, conn = _study(tmp_path, mariadb, monkeypatch, "kube-tpcc")
    spec = tpcc_phase.plan(s)[0]
    rec = tpcc_phase.run_one(_tpcc_ctx(s), spec, "go-tpc")
    assert rec.status == "ok", rec.error
    each = [parse_tpcc_output(p.read_text(), str(p)).summary for p in GOTPC_LOGS]
    runs = Store.for_study(s).read("tpcc_runs", s.study).iloc[0]
    assert runs["tpmc"] == pytest.approx(sum(e["tpmc"] for e in each))
    assert runs["tpm_total"] == pytest.approx(sum(e["tpm_total"] for e in each))
    assert runs["clients"] == 2
    assert rec.events == sum(sum(e["transactions"].values()) for e in each)
    assert rec.lat_p95_ms is None  # go-tpc prints percentiles: two pods' are not averaged
    hosts = Store.for_study(s).read("run_hosts", s.study)
    assert list(hosts["host"]) == ["pod0", "pod1"]
    assert list(hosts["threads"]) == [2, 1]  # 3 threads shared, the first pod takes the rest
    assert list(hosts["tps"]) == pytest.approx([e["tpm_total"] / 60 for e in each])
    # each pod's share as --threads=, the password from the Secret after the arguments
    a0 = (args / "go-tpc-0.args").read_text().splitlines()
    a1 = (args / "go-tpc-1.args").read_text().splitlines()
    assert a0[0] == "tpcc" and "-T" not in a0 and "run" in a0
    assert (a0[-3], a1[-3]) == ("--threads=2", "--threads=1") and a0[-2] == "-p"
    assert _verbs(calls())[-2:] == ["delete job", "delete secret"]
    _no_password(calls(), conn.password)


def test_a_failed_pod_fails_the_tpcc_run_and_the_job_is_deleted(
    tmp_path, data_dir, mariadb, monkeypatch, cluster
):
    calls, _ = cluster
    s, conn = _study(tmp_path, mariadb, monkeypatch, "kube-tpcc-fail")
    monkeypatch.setenv("FAKE_KUBECTL_BAD_PASSWORD", "1")
    rec = tpcc_phase.run_one(_tpcc_ctx(s), tpcc_phase.plan(s)[0], "go-tpc")
    assert rec.status == "failed" and "\n" not in rec.error
    assert rec.error.startswith("Job tibench-kube-tpcc-fail-")
    assert "-1-fake1 (Failed, exit 1)" in rec.error
    hosts = Store.for_study(s).read("run_hosts", s.study).set_index("host")
    assert "Failed, exit 1" in hosts.loc["pod1", "error"]
    names = [c["argv"][4] for c in calls() if _verbs([c])[0].startswith("delete")]
    assert _verbs(calls())[-2:] == ["delete job", "delete secret"]
    assert names[0] == names[1] == rec.error.split()[1]
    _no_password(calls(), conn.password)


def test_a_failed_pod_fails_the_ycsb_run(tmp_path, data_dir, mariadb, monkeypatch, cluster):
    calls, _ = cluster
    s, _ = _study(tmp_path, mariadb, monkeypatch, "kube-ycsb-fail")
    monkeypatch.setenv("FAKE_KUBECTL_BAD_PASSWORD", "0")
    rec = ycsb_phase.run_one(open_arm(s, "a"), ycsb_phase.plan(s)[0])
    assert rec.status == "failed" and "\n" not in rec.error
    assert "-0-fake0 (Failed, exit 1)" in rec.error
    assert _verbs(calls())[-2:] == ["delete job", "delete secret"]


def test_the_estimates_count_each_runs_start_lead():
    def eta(lead):
        job = {**JOB, "start_lead_s": lead}
        s = study(ycsb={"clients_job": job, "threads": [1, 2], "repeats": 2},
                  tpcc={"clients_job": job, "threads": [2, 4], "repeats": 3})  # fmt: skip
        return ycsb_phase.estimate(s)["eta_s"], tpcc_phase.estimate(s)["eta_s"]

    (y1, t1), (y31, t31) = eta(1), eta(31)
    assert (y31 - y1, t31 - t1) == (30 * 4, 30 * 6)  # 2 threads × 2 repeats; 2 × 3


def test_a_pod_late_for_the_start_is_a_warning_of_the_run(
    tmp_path, data_dir, mariadb, monkeypatch, cluster
):
    monkeypatch.setattr("tibenchlib.kube.sweep_job.LATE_S", -1.0)  # every pod counts as late
    s, _ = _study(tmp_path, mariadb, monkeypatch, "kube-late")
    y = ycsb_phase.run_one(open_arm(s, "a"), ycsb_phase.plan(s)[0])
    t = tpcc_phase.run_one(_tpcc_ctx(s), tpcc_phase.plan(s)[0], "go-tpc")
    for rec in (y, t):
        assert rec.status == "ok", rec.error
        late = [w for w in rec.warnings if "after the agreed start" in w]
        assert [w.split()[0] for w in late] == ["pod0", "pod1"]
        assert all("clients_job.start_lead_s" in w for w in late)


def test_ycsb_pods_per_second_series_are_summed(tmp_path, data_dir, mariadb, monkeypatch, cluster):
    _, args = cluster
    _stand_in(tmp_path / "bin", "go-ycsb", [YCSB_LOGS[0], YCSB_LOGS[0]], args)  # same output
    s, _ = _study(tmp_path, mariadb, monkeypatch, "kube-ycsb-iv")
    rec = ycsb_phase.run_one(open_arm(s, "a"), ycsb_phase.plan(s)[0])
    assert rec.status == "ok", rec.error
    iv = Store.for_study(s).intervals(s.study, [rec.run_key])
    one = parse_ycsb_file(YCSB_LOGS[0]).intervals
    one = one[(one["operation"] == "TOTAL") & (one["source"] != "timeseries")]
    assert len(iv) == rec.n_intervals > 0
    # each second the two pods' TOTAL lines summed: twice the one output's, at the same step
    doubled = [round(2 * x, 6) for x in one["ops_s"]]
    assert all(round(x, 6) in doubled for x in iv["tps"]), (list(iv["tps"]), doubled)
