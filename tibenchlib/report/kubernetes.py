"""The environment section's Kubernetes part: an arm's captured TidbCluster and pods
(:func:`tibenchlib.kube.kubernetes_tables`) as the notebook and the HTML report show them, in
English or Chinese. An arm whose target has no ``kubernetes`` section shows nothing."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping
from dataclasses import dataclass, field

import pandas as pd

from ..kube import kubernetes_tables
from ..kube.resources import POD_COLUMNS
from . import words as W

__all__ = ["COMPONENT_LABELS", "KubeView", "kubernetes_view"]

#: The components table's headers (the capture's columns, in order).
COMPONENT_LABELS = {
    "en": {
        "component": "Component",
        "version": "Version",
        "image": "Image",
        "replicas": "Replicas",
        "ready_replicas": "Ready",
        "cpu_request": "CPU request",
        "cpu_limit": "CPU limit",
        "memory_request": "Memory request",
        "memory_limit": "Memory limit",
        "storage_request": "Storage request",
    },
    "zh": {
        "component": "组件",
        "version": "版本",
        "image": "镜像",
        "replicas": "副本数",
        "ready_replicas": "就绪副本数",
        "cpu_request": "CPU 请求",
        "cpu_limit": "CPU 上限",
        "memory_request": "内存请求",
        "memory_limit": "内存上限",
        "storage_request": "存储请求",
    },
}


@dataclass
class KubeView:
    """What the environment section shows of one arm's cluster: a sentence naming it, its
    components (headers in the reader's language), its pods (the capture's columns, starts
    in UTC) and a sentence per part that could not be captured."""

    sentence: str
    components: pd.DataFrame
    pods: pd.DataFrame
    unavailable: list[str] = field(default_factory=list)


def _utc(t) -> str | None:
    if t is None or pd.isna(t):
        return None
    return _dt.datetime.fromtimestamp(float(t), _dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def kubernetes_view(capture: Mapping, lang: str = "en") -> KubeView | None:
    """One arm's saved capture → its :class:`KubeView`, or None when it has no ``kubernetes``
    section."""
    k = capture.get("kubernetes")
    if not isinstance(k, Mapping):
        return None
    kubectl = k.get("kubectl")
    context = k.get("context")
    sentence = W.say(
        "env_kube",
        lang,
        cluster=k.get("cluster"),
        namespace=k.get("namespace"),
        context=W.say("env_kube_context", lang, context=context) if context else "",
        kubectl=kubectl if isinstance(kubectl, str) else "?",
    )
    tables = kubernetes_tables(k)
    comp = tables["components"]
    labels = COMPONENT_LABELS["zh" if lang == "zh" else "en"]
    comp = comp[[c for c in labels if c in comp]].astype(object)
    comp = comp.where(comp.notna(), "n/a").rename(columns=labels)
    pods = tables["pods"]
    pods = pods[[c for c in POD_COLUMNS if c in pods]].astype(object)
    if "started" in pods:
        pods = pods.assign(started=[_utc(t) for t in pods["started"]])
    pods = pods.where(pods.notna(), "")
    missing = [
        W.say(
            "env_kube_unavailable",
            lang,
            what=W.say(f"env_kube_{part}", lang),
            reason=v["unavailable"],
        )
        for part in ("components", "pods")
        if isinstance(v := k.get(part), Mapping) and "unavailable" in v
    ]
    return KubeView(sentence, comp, pods, missing)
