"""The Job runner and the environment collector against a fake ``kubectl`` on PATH. The fake
records every call's argv and standard input and replays recorded real outputs only
(tests/fixtures/kubernetes, tests/fixtures/sysbench); for apply, wait and delete it prints
nothing and answers by its exit status, which is all the runner reads of them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import kube_fake
import psutil
import pytest

from tibenchlib.kube.capture import capture_kubernetes, kubernetes_tables
from tibenchlib.kube.job import job_labels, job_manifest, job_name, secret_manifest
from tibenchlib.kube.kubectl import Kubectl, KubectlError
from tibenchlib.kube.runner import JobFailed, merge_sysbench, run_job
from tibenchlib.params import KubernetesTarget
from tibenchlib.parse.sysbench import parse_sysbench_file

HERE = Path(__file__).parent
K8S = HERE / "fixtures" / "kubernetes"
POD = K8S / "pod-docs-nginx-kube-worker-1.yaml"
TC = K8S / "tidbcluster-v2.1.8-stability-cluster1-issue501-fragment.yaml"
LOG_A = HERE / "fixtures" / "sysbench" / "mariadb" / "point_select-t2-ri1-hist.txt"
LOG_B = HERE / "fixtures" / "sysbench" / "mariadb" / "write_only-t2-ri1-hist.txt"
PASSWORD = "Pw-0f-the-target"


@pytest.fixture
def fake(tmp_path, monkeypatch):
    record = kube_fake.install(tmp_path, monkeypatch)
    monkeypatch.setenv("FAKE_KUBECTL_PODS", str(POD))
    monkeypatch.setenv("FAKE_KUBECTL_LOGS", str(LOG_A))
    monkeypatch.setenv("FAKE_KUBECTL_TIDBCLUSTER", str(TC))
    monkeypatch.setenv("FAKE_KUBECTL_VERSION", str(K8S / "kubectl-v1.32.4-version-client.txt"))
    return lambda: kube_fake.calls(record)


def manifests(clients=1, args=("oltp_point_select", "--threads=2", "run")):
    name = job_name("report-001", "sweep|point_select|t=2|r=1")
    labels = job_labels("report-001", "sweep|point_select|t=2|r=1")
    job = job_manifest(
        name=name, namespace="tidb-cluster", tool="sysbench", image="perconalab/sysbench:1.0.20",
        args=list(args), clients=clients, secret=name, labels=labels, deadline_s=120,
    )  # fmt: skip
    return job, secret_manifest(name, "tidb-cluster", PASSWORD, labels)


KC = Kubectl(namespace="tidb-cluster", context="kind-kind")


def verbs(calls):
    """Each call's first two words after the global ``--context``/``--namespace`` flags."""
    out = []
    for c in calls:
        argv, rest = c["argv"], []
        while argv:
            if argv[0] in ("--context", "--namespace"):
                argv = argv[2:]
            else:
                rest, argv = argv, []
        out.append(" ".join(rest[:2]))
    return out


def test_success_applies_waits_reads_logs_and_deletes(fake, tmp_path):
    job, secret = manifests()
    out = run_job(KC, job=job, secret=secret, log_dir=tmp_path / "raw", timeout_s=60, poll_s=0.05)
    calls = fake()
    # the wait that loses the race may be stopped before it starts: only its order is loose
    waits = [c["argv"] for c in calls if verbs([c])[0].startswith("wait")]
    assert any("--for=condition=complete" in a for a in waits) and len(waits) <= 2
    assert [v for v in verbs(calls) if not v.startswith("wait")] == [
        "apply -f", "get pods", "logs nginx-deployment-67d4bdd6f5-w6kd7",
        "delete job", "delete secret",
    ]  # fmt: skip
    assert verbs(calls).index("apply -f") < verbs(calls).index(
        f"wait job/{job['metadata']['name']}"
    )
    for c in calls:
        assert c["argv"][:4] == ["--context", "kind-kind", "--namespace", "tidb-cluster"]
        assert PASSWORD not in " ".join(c["argv"])  # never on a command line
    # the password travels once, on apply's standard input, inside the Secret only
    docs = calls[0]["stdin"].split("\n---\n")
    assert [PASSWORD in d for d in docs] == [True, False]
    assert out.logs[0].read_text() == LOG_A.read_text()  # kept whole under the run's folder
    assert out.logs[0].parent == tmp_path / "raw"
    assert out.started == {0: 1645134665.0}  # the container's running.startedAt
    assert any("no completion index" in w for w in out.warnings)
    merged = merge_sysbench(out)
    assert merged.summary["tps"] == parse_sysbench_file(LOG_A).summary["tps"]


def test_failed_job_names_the_pod_keeps_the_log_and_deletes(fake, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_KUBECTL_SCENARIO", "failed")
    job, secret = manifests()
    with pytest.raises(JobFailed) as e:
        run_job(KC, job=job, secret=secret, log_dir=tmp_path, timeout_s=60, poll_s=0.05)
    msg = str(e.value)
    assert "\n" not in msg and "failed" in msg
    assert "nginx-deployment-67d4bdd6f5-w6kd7 (Running" in msg
    assert (tmp_path / f"{job['metadata']['name']}-0.log").read_text() == LOG_A.read_text()
    assert verbs(fake())[-2:] == ["delete job", "delete secret"]


def test_timeout_fails_the_run(fake, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_KUBECTL_SCENARIO", "timeout")
    job, secret = manifests()
    with pytest.raises(JobFailed, match="did not finish in 5 s"):
        run_job(KC, job=job, secret=secret, log_dir=tmp_path, timeout_s=5, poll_s=0.05)
    assert verbs(fake())[-2:] == ["delete job", "delete secret"]


def test_a_client_without_a_pod_fails_the_run(fake, tmp_path):
    job, secret = manifests(clients=2)  # the replayed listing has one pod
    with pytest.raises(JobFailed, match=r"no log for client\(s\) \[1\]"):
        run_job(KC, job=job, secret=secret, log_dir=tmp_path, timeout_s=60, poll_s=0.05)
    assert verbs(fake())[-2:] == ["delete job", "delete secret"]


def test_password_in_arguments_is_refused_before_anything_is_applied(fake, tmp_path):
    job, secret = manifests(args=("oltp_point_select", f"--mysql-password={PASSWORD}", "run"))
    with pytest.raises(ValueError, match="the password is in the Job's arguments"):
        run_job(KC, job=job, secret=secret, log_dir=tmp_path, timeout_s=60)
    assert fake() == []


def test_kubectl_missing(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    job, secret = manifests()
    with pytest.raises(KubectlError, match="^kubectl is not installed"):
        run_job(KC, job=job, secret=secret, log_dir=tmp_path, timeout_s=60)
    k8s = KubernetesTarget(namespace="tidb-cluster", cluster="basic")
    cap = capture_kubernetes(k8s)
    why = "kubectl is not installed: the TidbCluster and its pods were not captured"
    assert cap["kubectl"] == cap["components"] == cap["pods"] == {"unavailable": why}


# The runner as a terminal starts it: Ctrl-C raises KeyboardInterrupt. A process started in
# the background by a shell without job control inherits SIGINT ignored (and Python then
# installs no handler), so the child sets the terminal's disposition itself.
CHILD = r"""
import signal
import sys
signal.signal(signal.SIGINT, signal.default_int_handler)
from tibenchlib.kube.job import job_labels, job_manifest, secret_manifest
from tibenchlib.kube.kubectl import Kubectl
from tibenchlib.kube.runner import run_job
labels = job_labels("s", "r")
job = job_manifest(name="tibench-s-x", namespace="ns", tool="sysbench", image="i",
                   args=["run"], clients=1, secret="tibench-s-x", labels=labels)
try:
    secret = secret_manifest("tibench-s-x", "ns", "pw", labels)
    run_job(Kubectl(namespace="ns"), job=job, secret=secret, log_dir=sys.argv[1],
            timeout_s=600, poll_s=0.05)
except KeyboardInterrupt:
    sys.exit(130)
"""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_while_waiting_deletes_the_job_and_secret(fake, tmp_path, monkeypatch, sig):
    monkeypatch.setenv("FAKE_KUBECTL_SCENARIO", "hang")
    env = {**os.environ, "PYTHONPATH": str(HERE.parent)}
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path)], env=env)
    try:
        deadline = time.monotonic() + 60
        while sum(v.startswith("wait") for v in verbs(fake())) < 2:
            assert time.monotonic() < deadline, "the Job was never waited for"
            assert child.poll() is None, "the runner ended early"
            time.sleep(0.05)
        waits = psutil.Process(child.pid).children(recursive=True)
        assert len(waits) == 2  # the two kubectl wait calls
        child.send_signal(sig)
        assert child.wait(timeout=60) == 130
        _, alive = psutil.wait_procs(waits, timeout=10)
        assert alive == []  # nothing left running here either
    finally:
        if child.poll() is None:
            child.kill()
    assert verbs(fake())[-2:] == ["delete job", "delete secret"]


def test_merge_of_two_pods_logs(tmp_path):
    from tibenchlib.kube.runner import JobOutcome

    a, b = tmp_path / "j-0.log", tmp_path / "j-1.log"
    a.write_text(LOG_A.read_text())
    b.write_text(LOG_B.read_text())
    out = JobOutcome("j", None, {0: a, 1: b}, {0: 1000.0, 1: 1000.2})
    merged = merge_sysbench(out)
    pa, pb = parse_sysbench_file(LOG_A), parse_sysbench_file(LOG_B)
    assert merged.summary["events"] == pa.summary["events"] + pb.summary["events"]
    assert merged.summary["client_tps"] == [pa.summary["tps"], pb.summary["tps"]]
    assert merged.histogram["count"].sum() == 37866 + 3183
    # per-second throughput summed over the slots both pods reported
    assert merged.intervals["tps"].iloc[0] == pytest.approx(
        pa.intervals["tps"].iloc[0] + pb.intervals["tps"].iloc[0]
    )


def test_capture_tables_from_the_cluster(fake, monkeypatch, tmp_path):
    monkeypatch.setenv("MY_KUBECONFIG", str(tmp_path / "kubeconfig"))
    k8s = KubernetesTarget(
        namespace="stability-cluster1", cluster="stability-cluster1", context="kind-kind",
        kubeconfig_env="MY_KUBECONFIG",
    )  # fmt: skip
    cap = capture_kubernetes(k8s)
    assert cap["namespace"] == "stability-cluster1" and cap["context"] == "kind-kind"
    assert cap["kubectl"] == "v1.32.4-dispatcher"
    assert [r["component"] for r in cap["components"]] == ["pd", "tidb"]
    assert cap["components"][0]["version"] == "v2.1.8"
    assert cap["components"][0]["ready_replicas"] is None
    assert cap["pods"][0]["node"] == "kube-worker-1"
    json.dumps(cap)  # saved as JSON as it is
    argvs = [c["argv"] for c in fake()]
    assert argvs.pop(0) == ["--context", "kind-kind", "--namespace", "stability-cluster1",
                            "version", "--client"]  # fmt: skip
    assert argvs == [
        ["--context", "kind-kind", "--namespace", "stability-cluster1",
         "get", "tidbcluster", "stability-cluster1", "-o", "yaml"],
        ["--context", "kind-kind", "--namespace", "stability-cluster1",
         "get", "pods", "-l", "app.kubernetes.io/instance=stability-cluster1", "-o", "yaml"],
    ]  # fmt: skip
    tables = kubernetes_tables({"kubernetes": cap})
    assert list(tables["components"]["memory_limit"]) == ["2Gi", "8Gi"]
    assert list(tables["pods"]["phase"]) == ["Running"]


def test_capture_failures_are_unavailable_values(fake, monkeypatch):
    monkeypatch.delenv("FAKE_KUBECTL_TIDBCLUSTER")
    cap = capture_kubernetes(KubernetesTarget(namespace="ns", cluster="basic"))
    assert cap["components"]["unavailable"].startswith(
        "kubectl get tidbcluster basic -o yaml exited with 1: fake kubectl: no recorded output"
    )
    assert cap["pods"][0]["pod"] == "nginx-deployment-67d4bdd6f5-w6kd7"
    monkeypatch.setenv("FAKE_KUBECTL_TIDBCLUSTER", str(POD))  # a pod where a TidbCluster is due
    cap = capture_kubernetes(KubernetesTarget(namespace="ns", cluster="basic"))
    assert "no TidbCluster in the output" in cap["components"]["unavailable"]
    unset = KubernetesTarget(namespace="ns", cluster="basic", kubeconfig_env="NO_SUCH_VAR_X")
    cap = capture_kubernetes(unset)
    assert cap["pods"] == {
        "unavailable": "target.kubernetes.kubeconfig_env: NO_SUCH_VAR_X is not set "
        "(export it with the kubeconfig file's path)"
    }
    assert kubernetes_tables(cap)["pods"].empty


def test_environment_phase_captures_the_cluster(fake, mariadb, data_dir, monkeypatch):
    """The environment phase, on a url target with ``kubernetes``: the saved capture and the
    catalog hold the cluster's tables, and the password is in neither."""
    from tibenchlib import paths, phases
    from tibenchlib.params import parse_study

    conn = mariadb.conninfo()
    monkeypatch.setenv("TIBENCH_KUBE_TEST_PW", conn.password or "")
    study = parse_study(
        {
            "study": "kube-env",
            "target": {
                "kind": "url",
                "url": f"mysql+pymysql://{conn.user}@127.0.0.1:{conn.port}/sbtest",
                "password_env": "TIBENCH_KUBE_TEST_PW",
                "kubernetes": {"namespace": "stability-cluster1", "cluster": "stability-cluster1"},
            },
        }
    )
    phases.run_phase(study, "environment", progress=False)
    text = paths.environment_file(study.study, study.arms[0].label).read_text()
    cap = json.loads(text)["kubernetes"]
    assert [r["component"] for r in cap["components"]] == ["pd", "tidb"]
    assert cap["pods"][0]["node"] == "kube-worker-1"
    if conn.password:
        assert conn.password not in text
    assert [" ".join(c["argv"][2:5]) for c in fake()] == [
        "version --client",
        "get tidbcluster stability-cluster1",
        "get pods -l",
    ]
