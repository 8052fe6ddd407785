"""The Kubernetes capture shown: notebook 00's section and the HTML report's environment
section, in English and Chinese, from a capture the collector made of recorded real kubectl
outputs (through the fake kubectl); nothing shown for an arm without ``target.kubernetes``."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import kube_fake
import pytest

from tibenchlib import phases
from tibenchlib.kube.capture import capture_kubernetes, kubernetes_tables
from tibenchlib.kube.resources import POD_COLUMNS
from tibenchlib.params import KubernetesTarget, parse_study
from tibenchlib.report import sections
from tibenchlib.report.html import build_report
from tibenchlib.report.kubernetes import COMPONENT_LABELS, kubernetes_view

HERE = Path(__file__).parent
K8S = HERE / "fixtures" / "kubernetes"
TC = K8S / "tidbcluster-v2.1.8-stability-cluster1-issue501-fragment.yaml"
POD = K8S / "pod-docs-nginx-kube-worker-1.yaml"
TARGET = {"namespace": "stability-cluster1", "cluster": "stability-cluster1"}


@pytest.fixture
def fake(tmp_path, monkeypatch):
    record = kube_fake.install(tmp_path, monkeypatch)
    monkeypatch.setenv("FAKE_KUBECTL_PODS", str(POD))
    monkeypatch.setenv("FAKE_KUBECTL_TIDBCLUSTER", str(TC))
    monkeypatch.setenv("FAKE_KUBECTL_VERSION", str(K8S / "kubectl-v1.32.4-version-client.txt"))
    return lambda: kube_fake.calls(record)


@pytest.fixture
def capture(fake):
    return {"kubernetes": capture_kubernetes(KubernetesTarget(**TARGET, context="kind-kind"))}


def test_view_in_english(capture):
    v = kubernetes_view(capture, "en")
    assert v.sentence == (
        "Kubernetes: TidbCluster `stability-cluster1` in namespace `stability-cluster1` "
        "(context `kind-kind`), read with kubectl v1.32.4-dispatcher."
    )
    assert list(v.components.columns[:3]) == ["Component", "Version", "Image"]
    assert list(v.components["Component"]) == ["pd", "tidb"]
    assert v.pods.loc[0, "node"] == "kube-worker-1"
    assert v.pods.loc[0, "started"] == "2022-02-17 21:51:05 UTC"  # the container's startedAt
    assert v.unavailable == []
    assert list(v.pods.columns) == POD_COLUMNS  # the capture's order, not the saved JSON's
    assert v.components.loc[0, "Ready"] == "n/a"  # not in the output: shown as such
    assert v.pods.loc[0, "component"] == ""


def test_view_in_chinese(capture):
    v = kubernetes_view(capture, "zh")
    assert "命名空间" in v.sentence and "stability-cluster1" in v.sentence
    raw = kubernetes_tables(capture)["components"].columns
    zh = COMPONENT_LABELS["zh"]
    assert list(v.components.columns) == [zh[c] for c in zh if c in raw]
    assert v.components.columns[0] == "组件" and len(v.components.columns) == 10


def test_nothing_without_kubernetes_and_reasons_for_what_was_not_captured(capture):
    assert kubernetes_view({"host": {}}, "en") is None
    part = {**capture["kubernetes"], "pods": {"unavailable": "kubectl get pods exited with 1"}}
    v = kubernetes_view({"kubernetes": part}, "en")
    assert v.unavailable == ["Kubernetes pods not captured: kubectl get pods exited with 1"]
    assert v.pods.empty and len(v.components) == 2


def test_notebook_section_shows_each_arm_with_a_cluster_only(capture, monkeypatch):
    shown = []
    monkeypatch.setattr(sections, "say", lambda text: shown.append(("say", text)))
    monkeypatch.setattr(sections, "show", lambda t, lang: shown.append(("show", list(t.columns))))
    monkeypatch.setattr(
        sections, "details", lambda s, t, lang: shown.append(("details", s, len(t)))
    )
    session = SimpleNamespace(lang="zh", arms=["a", "b"])
    views = sections.kubernetes(session, {"a": capture, "b": {"host": {}}})
    assert list(views) == ["a"]
    assert shown[0][0] == "say" and shown[0][1].startswith("### 测试组 `a`")
    assert shown[1] == ("show", list(views["a"].components.columns))
    assert shown[2] == ("details", "Kubernetes Pod，每个容器一行（1 行）", 1)
    shown.clear()
    assert sections.kubernetes(session, {"b": {"host": {}}}) == {} and shown == []


@pytest.mark.slow
def test_report_environment_section_holds_the_cluster(fake, mariadb, data_dir, monkeypatch):
    conn = mariadb.conninfo()
    monkeypatch.setenv("TIBENCH_KUBE_TEST_PW", conn.password or "")
    study = parse_study(
        {
            "study": "kube-report",
            "target": {
                "kind": "url",
                "url": f"mysql+pymysql://{conn.user}@127.0.0.1:{conn.port}/sbtest",
                "password_env": "TIBENCH_KUBE_TEST_PW",
                "kubernetes": TARGET,
            },
            "phases": ["environment"],
        }
    )
    phases.run_phase(study, "environment", progress=False)
    en = build_report(study.study, lang="en").read_text()
    assert "TidbCluster stability-cluster1 in namespace stability-cluster1" in en
    assert "<th>Component</th>" in en or ">Component<" in en
    assert "Kubernetes pods, one row per container (1 rows)" in en
    zh = build_report(study.study, lang="zh").read_text()
    assert "命名空间 stability-cluster1 中的 TidbCluster stability-cluster1" in zh
    assert ">组件<" in zh
