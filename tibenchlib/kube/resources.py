"""Pure readers of ``kubectl get … -o yaml`` (or ``-o json``) output: a TidbCluster's
components and a namespace's pods as tidy tables.

Field paths are the documented ones, never guessed from one output:

- TidbCluster (TiDB Operator API reference, ``pingcap.com/v1alpha1``): ``spec.version`` and, per
  component, ``spec.<component>.{image, baseImage, version, replicas, requests, limits}``
  (``image`` is the old, deprecated full image; ``baseImage`` + a version is the current form),
  and the ready count ``status.<component>.statefulSet.readyReplicas`` that ``kubectl get tc``
  prints in its READY column;
- Pod (Kubernetes API reference, ``core/v1``): ``metadata.{name, labels, annotations}``,
  ``spec.nodeName``, ``spec.containers[].{name, image, resources}``, ``status.{phase, hostIP,
  startTime}`` and ``status.containerStatuses[].{name, imageID, restartCount, state}``.

A field the output lacks is left empty (None), never filled in: the public outputs these
readers are tested on are fragments, and none of them has a TidbCluster ``status``.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping
from typing import Any

import pandas as pd
import yaml

__all__ = [
    "COMPONENTS",
    "COMPLETION_INDEX",
    "component_table",
    "image_version",
    "job_pods",
    "load_objects",
    "pod_table",
    "rfc3339_epoch",
]

#: The TidbCluster's components, in the order ``kubectl get tc`` and the reports show them.
COMPONENTS = ("pd", "tikv", "tidb", "tiflash", "ticdc", "tiproxy", "pump")

#: Where the Job controller writes an Indexed Job pod's index (annotation, and label since
#: Kubernetes 1.28).
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"

COMPONENT_COLUMNS = [
    "cluster", "namespace", "component", "image", "version", "replicas", "ready_replicas",
    "cpu_request", "cpu_limit", "memory_request", "memory_limit", "storage_request",
]  # fmt: skip
POD_COLUMNS = [
    "pod", "component", "node", "phase", "host_ip", "started", "container", "image",
    "image_id", "restarts", "cpu_request", "cpu_limit", "memory_request", "memory_limit",
]  # fmt: skip


def load_objects(text: str, what: str = "kubectl output") -> list[dict]:
    """The objects in one ``kubectl get -o yaml|json`` output: a single object, or the items of
    a ``List``. JSON is read as YAML (it is a subset). Anything else raises ``ValueError``
    naming ``what``."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ValueError(f"{what}: not YAML or JSON ({e.__class__.__name__})") from None
    if data is None:
        return []
    if not isinstance(data, Mapping):
        raise ValueError(f"{what}: expected a Kubernetes object or List, got {type(data).__name__}")
    if "items" in data:
        items = data.get("items") or []
        if not isinstance(items, list) or not all(isinstance(i, Mapping) for i in items):
            raise ValueError(f"{what}: items is not a list of objects")
        return [dict(i) for i in items]
    if "kind" not in data:
        raise ValueError(f"{what}: no kind: not a Kubernetes object")
    return [dict(data)]


def _get(obj: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(key)
    return obj


def _text(v: Any) -> str | None:
    return None if v is None else str(v)


def image_version(image: str | None) -> str | None:
    """The tag of a container image (``pingcap/pd:v2.1.8`` → ``v2.1.8``); None without a tag
    or for a digest-only reference. A registry port (``host:5000/pd``) is not a tag."""
    if not image:
        return None
    ref = image.split("@", 1)[0]
    name, sep, tag = ref.rpartition(":")
    if not sep or "/" in tag:
        return None
    return tag or None


def component_table(obj: Mapping) -> pd.DataFrame:
    """One TidbCluster object (from :func:`load_objects`) as one row per component it
    declares: image, version, desired and ready replicas, requests and limits.

    The image is ``spec.<c>.image`` when given (its tag is the version), else
    ``spec.<c>.baseImage`` with ``spec.<c>.version`` or ``spec.version``. Quantities stay as
    Kubernetes writes them (``200m``, ``1Gi``).
    """
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    rows = []
    for c in COMPONENTS:
        cs = spec.get(c)
        if not isinstance(cs, Mapping):
            continue
        image = cs.get("image")
        version = image_version(image) if image else None
        if not image and cs.get("baseImage"):
            v = cs.get("version") or spec.get("version")
            image = f"{cs['baseImage']}:{v}" if v else cs["baseImage"]
            version = _text(v)
        rows.append(
            {
                "cluster": _get(obj, "metadata", "name"),
                "namespace": _get(obj, "metadata", "namespace"),
                "component": c,
                "image": _text(image),
                "version": version,
                "replicas": cs.get("replicas"),
                "ready_replicas": _get(status, c, "statefulSet", "readyReplicas"),
                "cpu_request": _text(_get(cs, "requests", "cpu")),
                "cpu_limit": _text(_get(cs, "limits", "cpu")),
                "memory_request": _text(_get(cs, "requests", "memory")),
                "memory_limit": _text(_get(cs, "limits", "memory")),
                "storage_request": _text(_get(cs, "requests", "storage")),
            }
        )
    return pd.DataFrame(rows, columns=COMPONENT_COLUMNS)


def rfc3339_epoch(value: Any) -> float | None:
    """An API timestamp (``2022-02-17T21:51:01Z``, or the datetime YAML made of an unquoted
    one) as epoch seconds; None if absent or unreadable."""
    if isinstance(value, _dt.datetime):
        t = value
    elif isinstance(value, str) and value:
        try:
            t = _dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
    else:
        return None
    if t.tzinfo is None:
        t = t.replace(tzinfo=_dt.UTC)
    return t.timestamp()


def _started(pod: Mapping, container: str | None) -> float | None:
    """When the container started: its terminated or running state's ``startedAt``, else the
    pod's ``status.startTime``."""
    for cs in _get(pod, "status", "containerStatuses") or []:
        if container is None or cs.get("name") == container:
            state = cs.get("state") or {}
            for s in ("terminated", "running"):
                t = rfc3339_epoch(_get(state, s, "startedAt"))
                if t is not None:
                    return t
    return rfc3339_epoch(_get(pod, "status", "startTime"))


def pod_table(pods: list[Mapping]) -> pd.DataFrame:
    """Pods (from :func:`load_objects`) as one row per container: the pod's component label
    (``app.kubernetes.io/component``), node, phase, host IP and start, and the container's
    image (as specified), image ID (as pulled), restarts, requests and limits."""
    rows = []
    for p in pods:
        statuses = {cs.get("name"): cs for cs in _get(p, "status", "containerStatuses") or []}
        for c in _get(p, "spec", "containers") or []:
            st = statuses.get(c.get("name"), {})
            rows.append(
                {
                    "pod": _get(p, "metadata", "name"),
                    "component": _get(p, "metadata", "labels", "app.kubernetes.io/component"),
                    "node": _get(p, "spec", "nodeName"),
                    "phase": _get(p, "status", "phase"),
                    "host_ip": _get(p, "status", "hostIP"),
                    "started": _started(p, c.get("name")),
                    "container": c.get("name"),
                    "image": c.get("image"),
                    "image_id": st.get("imageID"),
                    "restarts": st.get("restartCount"),
                    "cpu_request": _text(_get(c, "resources", "requests", "cpu")),
                    "cpu_limit": _text(_get(c, "resources", "limits", "cpu")),
                    "memory_request": _text(_get(c, "resources", "requests", "memory")),
                    "memory_limit": _text(_get(c, "resources", "limits", "memory")),
                }
            )
    return pd.DataFrame(rows, columns=POD_COLUMNS)


def _index(pod: Mapping) -> int | None:
    for where in ("annotations", "labels"):
        v = _get(pod, "metadata", where, COMPLETION_INDEX)
        if v is not None:
            try:
                return int(v)
            except (TypeError, ValueError):
                return None
    return None


def _exit_code(pod: Mapping) -> int | None:
    for cs in _get(pod, "status", "containerStatuses") or []:
        code = _get(cs, "state", "terminated", "exitCode")
        if code is not None:
            return int(code)
    return None


def _finished(pod: Mapping) -> float | None:
    for cs in _get(pod, "status", "containerStatuses") or []:
        t = rfc3339_epoch(_get(cs, "state", "terminated", "finishedAt"))
        if t is not None:
            return t
    return None


def job_pods(pods: list[Mapping]) -> pd.DataFrame:
    """An Indexed Job's pods: ``index`` (the completion index, None when the pod has none),
    ``pod``, ``node``, ``phase``, ``started`` and ``finished`` (the container's, epoch
    seconds), ``exit_code``; sorted by index then name."""
    rows = [
        {
            "index": _index(p),
            "pod": _get(p, "metadata", "name"),
            "node": _get(p, "spec", "nodeName"),
            "phase": _get(p, "status", "phase"),
            "started": _started(p, None),
            "finished": _finished(p),
            "exit_code": _exit_code(p),
        }
        for p in pods
    ]
    cols = ["index", "pod", "node", "phase", "started", "finished", "exit_code"]
    df = pd.DataFrame(rows, columns=cols)
    df["index"] = df["index"].astype("Int64")
    return df.sort_values(["index", "pod"], na_position="last", ignore_index=True)
