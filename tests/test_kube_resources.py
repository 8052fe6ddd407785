"""The readers of kubectl output, on real outputs (tests/fixtures/kubernetes/SOURCES.md), and
``target.kubernetes`` in the study file."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tibenchlib.kube.resources import (
    component_table,
    image_version,
    job_pods,
    load_objects,
    pod_table,
    rfc3339_epoch,
)
from tibenchlib.params import ParamsError, parse_study

FIX = Path(__file__).parent / "fixtures" / "kubernetes"
TC_501 = FIX / "tidbcluster-v2.1.8-stability-cluster1-issue501-fragment.yaml"
TC_567 = FIX / "tidbcluster-list-v3.0.0-rc.1-stability-cluster2-issue567-fragment.yaml"
TC_1623 = FIX / "tidbcluster-list-baseimage-upgrade-cluster-issue1623-fragment.yaml"
POD = FIX / "pod-docs-nginx-kube-worker-1.yaml"


def test_every_fixture_has_a_sources_row():
    sources = (FIX / "SOURCES.md").read_text()
    files = sorted(p.name for p in FIX.iterdir() if p.name != "SOURCES.md")
    assert files, "no fixtures"
    for name in files:
        assert f"`{name}`" in sources, name


def test_single_object_and_list_both_read():
    single = load_objects(TC_501.read_text())
    listed = load_objects(TC_567.read_text())
    assert [o["kind"] for o in single] == ["TidbCluster"]
    assert [o["kind"] for o in listed] == ["TidbCluster"]
    assert listed[0]["metadata"]["name"] == "stability-cluster2"


def test_json_output_reads_like_yaml():
    obj = load_objects(TC_501.read_text())[0]
    as_json = json.dumps(obj, default=str)  # kubectl -o json of the same object
    assert component_table(load_objects(as_json)[0]).equals(component_table(obj))


@pytest.mark.parametrize(
    "text, msg",
    [
        ("- a\n- b\n", "expected a Kubernetes object or List"),
        ("items: 3\n", "items is not a list"),
        ("foo: 1\n", "no kind"),
        ("{: bad", "not YAML or JSON"),
    ],
)
def test_bad_output_is_one_line_naming_it(text, msg):
    with pytest.raises(ValueError, match=msg) as e:
        load_objects(text, "kubectl get tidbcluster basic")
    assert str(e.value).startswith("kubectl get tidbcluster basic: ")
    assert "\n" not in str(e.value)


def test_components_of_the_v2_1_8_cluster():
    df = component_table(load_objects(TC_501.read_text())[0]).set_index("component")
    assert list(df.index) == ["pd", "tidb"]  # the fragment ends before tikv
    assert df.loc["pd", "image"] == "pingcap/pd:v2.1.8"
    assert df.loc["pd", "version"] == "v2.1.8"
    assert df.loc["tidb", "version"] == "v2.1.8"
    assert df.loc["pd", "replicas"] == 3 and df.loc["tidb", "replicas"] == 2
    assert (df.loc["pd", "cpu_request"], df.loc["pd", "cpu_limit"]) == ("200m", "1000m")
    assert (df.loc["tidb", "memory_request"], df.loc["tidb", "memory_limit"]) == ("1Gi", "8Gi")
    assert df.loc["pd", "storage_request"] == "1Gi"
    assert pd.isna(df.loc["tidb", "storage_request"])
    assert set(df["cluster"]) == {"stability-cluster1"}
    assert set(df["namespace"]) == {"stability-cluster1"}
    # no fixture has a status block: the ready count stays empty, never guessed
    assert df["ready_replicas"].isna().all()


def test_fragment_with_only_an_image():
    df = component_table(load_objects(TC_567.read_text())[0])
    assert df[["component", "version"]].values.tolist() == [["pd", "v3.0.0-rc.1"]]
    assert df["replicas"].isna().all() and df["cpu_request"].isna().all()


def test_base_image_without_version_leaves_version_empty():
    df = component_table(load_objects(TC_1623.read_text())[0])
    assert df["image"].tolist() == ["pingcap/pd"]
    assert df["version"].isna().all()


def test_base_image_with_cluster_version():
    obj = load_objects(TC_1623.read_text())[0]
    obj["spec"]["version"] = "v8.5.0"
    df = component_table(obj)
    assert df[["image", "version"]].values.tolist() == [["pingcap/pd:v8.5.0", "v8.5.0"]]


def test_status_ready_replicas_read_from_the_documented_path():
    # the path kubectl get tc prints as READY (tidb-operator PR #361's printer column)
    obj = load_objects(TC_501.read_text())[0]
    obj["status"] = {"pd": {"statefulSet": {"readyReplicas": 2}}}
    df = component_table(obj).set_index("component")
    assert df.loc["pd", "ready_replicas"] == 2 and pd.isna(df.loc["tidb", "ready_replicas"])


@pytest.mark.parametrize(
    "image, tag",
    [
        ("pingcap/pd:v2.1.8", "v2.1.8"),
        ("pingcap/pd", None),
        ("registry:5000/pingcap/tikv", None),
        ("registry:5000/pingcap/tikv:v8.5.0", "v8.5.0"),
        ("docker.io/library/nginx@sha256:2834dc50", None),
        (None, None),
    ],
)
def test_image_version(image, tag):
    assert image_version(image) == tag


def test_pod_table_on_the_docs_pod():
    df = pod_table(load_objects(POD.read_text()))
    assert len(df) == 1
    row = df.iloc[0]
    assert row["pod"] == "nginx-deployment-67d4bdd6f5-w6kd7"
    assert row["node"] == "kube-worker-1"
    assert row["phase"] == "Running"
    assert row["host_ip"] == "192.168.0.113"
    assert row["image"] == "nginx"
    assert row["image_id"].startswith("docker.io/library/nginx@sha256:2834dc50")
    assert row["restarts"] == 0
    assert (row["cpu_request"], row["memory_limit"]) == ("500m", "128Mi")
    # the container's running.startedAt, not the pod's startTime four seconds earlier
    assert row["started"] == rfc3339_epoch("2022-02-17T21:51:05Z")
    assert row["component"] is None  # not a TiDB Operator pod: no component label


def test_job_pods_without_completion_index():
    df = job_pods(load_objects(POD.read_text()))
    assert df["index"].isna().all()
    assert df["node"].tolist() == ["kube-worker-1"]
    assert df["exit_code"].isna().all()  # still running


def test_rfc3339():
    assert rfc3339_epoch("1970-01-01T00:01:00Z") == 60.0
    unquoted = yaml.safe_load("t: 2019-05-18T21:15:47Z")["t"]
    assert rfc3339_epoch(unquoted) == rfc3339_epoch("2019-05-18T21:15:47Z")
    assert rfc3339_epoch("yesterday") is None and rfc3339_epoch(None) is None


URL = "mysql+pymysql://root@127.0.0.1:4000/sbtest"


def test_target_kubernetes_in_the_study_file():
    s = parse_study(
        {
            "study": "k",
            "target": {
                "kind": "url",
                "url": URL,
                "kubernetes": {"namespace": "tidb-cluster", "cluster": "tidb-cluster"},
            },
        }
    )
    k = s.target.kubernetes
    assert (k.namespace, k.cluster, k.context, k.kubeconfig_env) == (
        "tidb-cluster", "tidb-cluster", None, None,
    )  # fmt: skip
    assert parse_study({"study": "k"}).target.kubernetes is None


def test_target_kubernetes_one_line_per_bad_field():
    bad = {"namespace": "Tidb_Cluster", "cluster": "-x", "kubeconfig_env": "a b", "extra": 1}
    with pytest.raises(ParamsError) as e:
        parse_study({"study": "k", "target": {"kubernetes": bad}}, "s.yaml")
    lines = str(e.value).splitlines()
    assert lines[0] == "s.yaml: 4 problems, nothing was run:"
    fields = sorted(ln.split(":")[0].strip(" -") for ln in lines[1:])
    assert fields == [
        "target.kubernetes.cluster",
        "target.kubernetes.extra",
        "target.kubernetes.kubeconfig_env",
        "target.kubernetes.namespace",
    ]
    with pytest.raises(ParamsError, match="target.kubernetes.namespace: Field required"):
        parse_study({"study": "k", "target": {"kubernetes": {"cluster": "basic"}}})
