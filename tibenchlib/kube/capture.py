"""The environment phase's Kubernetes collector: the TidbCluster resource named by
``target.kubernetes``, its pods and their nodes, read with ``kubectl`` and stored as records
(one per component, one per pod container). Like every collector it never raises: kubectl
missing, a call refused, an output that cannot be read, each becomes an unavailable value.

Only the tables are kept, not kubectl's raw output: a pod spec may hold environment values."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from ..envcapture.record import unavailable
from ..envcapture.software import tool_version
from .kubectl import Kubectl, KubectlError
from .resources import component_table, load_objects, pod_table

__all__ = ["capture_kubernetes", "kubernetes_tables"]


def _records(df: pd.DataFrame) -> list[dict]:
    return df.astype(object).where(df.notna(), None).to_dict("records")


def capture_kubernetes(k8s, kubectl: Kubectl | None = None) -> dict:
    """``target.kubernetes`` (namespace, cluster[, context, kubeconfig_env]) → the capture's
    ``kubernetes`` section: ``kubectl`` (its client version), ``components`` (from ``kubectl
    get tidbcluster <cluster> -o yaml``) and ``pods`` (``kubectl get pods -l
    app.kubernetes.io/instance=<cluster> -o yaml``), each a list of records or an unavailable
    value."""
    kc = kubectl or Kubectl.for_target(k8s)
    out: dict[str, Any] = {
        "namespace": k8s.namespace,
        "cluster": k8s.cluster,
        "context": k8s.context,
    }
    if not kc.installed():
        reason = "kubectl is not installed: the TidbCluster and its pods were not captured"
        out["kubectl"] = out["components"] = out["pods"] = unavailable(reason)
        return out
    try:
        printed = kc.run(["version", "--client"])
        out["kubectl"] = tool_version(printed) or unavailable(f"no version in: {printed!r}")
    except KubectlError as e:
        out["kubectl"] = unavailable(str(e))
    calls = {
        "components": ["get", "tidbcluster", k8s.cluster, "-o", "yaml"],
        "pods": ["get", "pods", "-l", f"app.kubernetes.io/instance={k8s.cluster}", "-o", "yaml"],
    }
    for key, args in calls.items():
        try:
            objs = load_objects(kc.run(args), f"kubectl {' '.join(args)}")
        except (KubectlError, ValueError) as e:
            out[key] = unavailable(str(e))
            continue
        if key == "components":
            tcs = [o for o in objs if o.get("kind") == "TidbCluster"]
            if not tcs:
                out[key] = unavailable(f"kubectl {' '.join(args)}: no TidbCluster in the output")
                continue
            out[key] = _records(pd.concat([component_table(o) for o in tcs], ignore_index=True))
        else:
            out[key] = _records(pod_table(objs))
    return out


def kubernetes_tables(capture: Mapping) -> dict[str, pd.DataFrame]:
    """A saved capture's ``kubernetes`` section (or the whole capture) as its two tables,
    ``components`` and ``pods``; an unavailable part is an empty table."""
    k = capture.get("kubernetes", capture)
    out = {}
    for key in ("components", "pods"):
        v = k.get(key) if isinstance(k, Mapping) else None
        out[key] = pd.DataFrame(v) if isinstance(v, list) else pd.DataFrame()
    return out
