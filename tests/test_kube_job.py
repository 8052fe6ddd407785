"""The clients' Job and Secret manifests, checked against the Kubernetes API's own models (the
Kubernetes Python client's ``V1Job``/``V1Secret``: a field name the API does not have is
dropped on the way through, so the round trip differs) and against kubectl's own Job."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from kubernetes.client import ApiClient

from tibenchlib.kube.job import (
    PASSWORD_VAR,
    TOOLS,
    job_labels,
    job_manifest,
    job_name,
    label_value,
    secret_manifest,
)

FIX = Path(__file__).parent / "fixtures" / "kubernetes"
API = ApiClient()


def round_trip(manifest: dict, kind: str) -> dict:
    model = API.deserialize(json.dumps(manifest), kind, "application/json")
    return API.sanitize_for_serialization(model)


def make(tool="sysbench", clients=3, **kw):
    labels = job_labels("report 001", "sweep|oltp_read_only|t=8|r=1")
    return job_manifest(
        name=job_name("report 001", "sweep|oltp_read_only|t=8|r=1"),
        namespace="tidb-cluster",
        tool=tool,
        image=kw.pop("image", "perconalab/sysbench:1.0.20"),
        args=kw.pop("args", ["oltp_read_only", "--threads=8", "run"]),
        clients=clients,
        secret="tibench-secret",
        labels=labels,
        **kw,
    )


def test_the_round_trip_catches_a_misspelled_field():
    good = make()
    bad = {**good, "spec": {**good["spec"], "completionmode": "Indexed"}}
    assert round_trip(good, "V1Job") == good
    assert round_trip(bad, "V1Job") != bad


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_job_matches_the_api_schema(tool):
    job = make(tool, deadline_s=900, annotations={"tibench/run-key": "sweep|t=8"})
    assert round_trip(job, "V1Job") == job


def test_secret_matches_the_api_schema():
    s = secret_manifest("tibench-x", "tidb-cluster", "s3cr3t", job_labels("a", "b"))
    assert round_trip(s, "V1Secret") == s
    assert s["stringData"] == {"password": "s3cr3t"}
    assert secret_manifest("x", "ns", None, {})["stringData"] == {"password": ""}


@pytest.mark.parametrize("n", [1, 4, 16])
def test_n_pods_indexed(n):
    spec = make(clients=n)["spec"]
    assert spec["parallelism"] == spec["completions"] == n
    assert spec["completionMode"] == "Indexed"
    assert spec["backoffLimit"] == 0
    assert spec["template"]["spec"]["restartPolicy"] == "Never"


def test_password_only_through_secret_key_ref():
    job = make()
    c = job["spec"]["template"]["spec"]["containers"][0]
    assert c["env"][0] == {
        "name": PASSWORD_VAR,
        "valueFrom": {"secretKeyRef": {"name": "tibench-secret", "key": "password"}},
    }
    assert [e["name"] for e in c["env"]] == [PASSWORD_VAR, "TIBENCH_DIR"]
    text = yaml.safe_dump(job)
    assert "s3cr3t" not in text and "stringData" not in text
    # sysbench and go-ycsb read it from a file in a memory-backed emptyDir
    assert {"name": "TIBENCH_DIR", "value": "/run/tibench"} in c["env"]
    assert c["volumeMounts"] == [{"name": "tibench-private", "mountPath": "/run/tibench"}]
    assert job["spec"]["template"]["spec"]["volumes"] == [
        {"name": "tibench-private", "emptyDir": {"medium": "Memory"}}
    ]


FAKE_TOOL = """
import json, os, sys
argv, files = sys.argv[1:], {}
for i, a in enumerate(argv):
    path = a.split("=", 1)[1] if a.startswith("--config-file=") else (
        argv[i + 1] if a == "-P" else None)
    if path:
        files[path] = [open(path).read(), oct(os.stat(path).st_mode & 0o777)]
print(json.dumps({"argv": argv, "files": files}))
"""
AWKWARD = 'p\\w$"x y'  # a backslash, a dollar, a quote and a space


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_the_wrapper_hands_the_password_over_as_the_tool_reads_it(tool, tmp_path):
    """The container's command, run by this host's /bin/sh with a stand-in tool that prints
    its arguments and the files they name."""
    bin_dir, private = tmp_path / "bin", tmp_path / "private"
    bin_dir.mkdir()
    private.mkdir()
    exe = bin_dir / tool
    exe.write_text(f"#!{sys.executable}\n{FAKE_TOOL}")
    exe.chmod(0o755)
    c = make(tool, args=["run", "$(JOB_COMPLETION_INDEX)"])["spec"]["template"]["spec"][
        "containers"
    ][0]
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", PASSWORD_VAR: AWKWARD, "TIBENCH_DIR": str(private)}
    res = subprocess.run([*c["command"], *c["args"]], env=env, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    got = json.loads(res.stdout)
    if tool == "sysbench":
        cfg = f"{private}/sysbench.cfg"
        assert got["argv"] == [f"--config-file={cfg}", "run", "$(JOB_COMPLETION_INDEX)"]
        assert got["files"] == {cfg: [f"mysql-password={AWKWARD}\n", "0o600"]}
    elif tool == "go-ycsb":
        props = f"{private}/db.properties"
        assert got["argv"] == ["run", "$(JOB_COMPLETION_INDEX)", "-P", props]
        escaped = AWKWARD.replace("\\", "\\\\")
        assert got["files"] == {props: [f"mysql.password={escaped}\n", "0o600"]}
    else:  # go-tpc has no password file: its own command line, inside its pod
        assert got["argv"] == ["run", "$(JOB_COMPLETION_INDEX)", "-p", AWKWARD]
    if tool != "go-tpc":
        assert not any(AWKWARD in a for a in got["argv"])


def test_command_wraps_the_tool_and_keeps_args():
    c = make(args=["oltp_read_only", "--rand-seed=$(JOB_COMPLETION_INDEX)", "run"])["spec"][
        "template"
    ]["spec"]["containers"][0]
    assert c["command"][:2] == ["/bin/sh", "-c"] and c["command"][3] == "sysbench"
    assert c["args"] == ["oltp_read_only", "--rand-seed=$(JOB_COMPLETION_INDEX)", "run"]
    assert c["name"] == "sysbench"


def test_same_skeleton_as_kubectls_own_job():
    ref = yaml.safe_load((FIX / "job-kubectl-v1.32.4-create-dry-run-client.yaml").read_text())
    ours = make()
    assert (ours["apiVersion"], ours["kind"]) == (ref["apiVersion"], ref["kind"])
    rc = ref["spec"]["template"]["spec"]["containers"][0]
    oc = ours["spec"]["template"]["spec"]["containers"][0]
    assert {"name", "image", "command"} <= set(rc) and {"name", "image", "command"} <= set(oc)
    assert (
        ours["spec"]["template"]["spec"]["restartPolicy"]
        == ref["spec"]["template"]["spec"]["restartPolicy"]
    )
    # the documentation's Job as the API server returns it reads into the same model
    docs = yaml.safe_load((FIX / "job-docs-pi-running.yaml").read_text())
    model = API.deserialize(json.dumps(docs), "V1Job", "application/json")
    assert model.spec.completion_mode == "NonIndexed" and model.status.active == 1


def test_labels_name_the_study_and_run():
    job = make()
    labels = job["metadata"]["labels"]
    assert labels["tibench/study"] == "report-001"
    assert labels["tibench/run-key"] == "sweep-oltp_read_only-t-8-r-1"
    assert job["spec"]["template"]["metadata"]["labels"] == labels
    assert len(job["metadata"]["name"]) <= 63
    assert job_name("s", "a") != job_name("s", "b")


def test_label_value_rules():
    assert label_value("a b/c") == "a-b-c"
    long = label_value("x" * 100)
    assert len(long) <= 63 and long[-1].isalnum()
    assert label_value("x" * 100) != label_value("x" * 99 + "y")


def test_bad_arguments():
    with pytest.raises(ValueError, match="tool: 'mysqlslap'"):
        make("mysqlslap")
    with pytest.raises(ValueError, match="clients: 0"):
        make(clients=0)


def test_job_with_barrier_and_shares_matches_the_api_schema():
    job = make(clients=3, args=["oltp_read_only", "run"], start_at=1764160000, shares=[3, 3, 2])
    assert round_trip(job, "V1Job") == job
    env = {
        e["name"]: e.get("value") for e in job["spec"]["template"]["spec"]["containers"][0]["env"]
    }
    assert env["TIBENCH_START_AT"] == "1764160000" and env["TIBENCH_SHARES"] == "3 3 2"
