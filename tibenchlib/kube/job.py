"""The clients of one run as a Kubernetes Job: pure builders of its manifests.

A Job of N pods (``parallelism = completions = N``) in ``Indexed`` completion mode: each pod
runs one client (sysbench, go-ycsb or go-tpc) and knows its index from ``JOB_COMPLETION_INDEX``
(the Job controller sets it; ``$(JOB_COMPLETION_INDEX)`` in an argument is expanded by the
kubelet). The cluster's own scheduler places the pods.

The password is never in the manifest's command or arguments: it lives in a Secret (built by
:func:`secret_manifest` and sent to ``kubectl apply`` on standard input), reaches the container
as the variable ``TIBENCH_PASSWORD`` through ``secretKeyRef``, and a one-line ``/bin/sh``
wrapper writes it to a 0600 file in a memory-backed ``emptyDir`` that the tool reads
(sysbench's ``--config-file``, go-ycsb's ``-P``). go-tpc has no such file: it takes the
password as ``-p``, so inside its pod (not on this host) the password is in go-tpc's command
line, as when tibench runs go-tpc locally.

Field names are those of the Kubernetes API reference (``batch/v1`` Job, ``core/v1`` Pod and
Secret); ``tests/test_kube_job.py`` checks every manifest against the Kubernetes Python
client's models.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence

__all__ = [
    "PASSWORD_KEY",
    "PASSWORD_VAR",
    "START_MARK",
    "TOOLS",
    "job_labels",
    "job_manifest",
    "job_name",
    "label_value",
    "secret_manifest",
]

PASSWORD_VAR = "TIBENCH_PASSWORD"
PASSWORD_KEY = "password"
#: The container's private folder (a memory-backed emptyDir), named by ``TIBENCH_DIR``.
PRIVATE_DIR = "/run/tibench"

#: Per tool: the ``sh -c`` wrapper (``$0`` is the tool, ``"$@"`` its arguments). Each writes
#: the password where the tool reads it, readable by the pod's user only, then replaces itself
#: with the tool. go-ycsb's property file gets ``\`` doubled, as tibench's local go-ycsb runs do.
TOOLS: dict[str, str] = {
    "sysbench": (
        r"""umask 077 && printf 'mysql-password=%s\n' "$TIBENCH_PASSWORD" """
        r'> "$TIBENCH_DIR/sysbench.cfg" '
        r'&& exec "$0" --config-file="$TIBENCH_DIR/sysbench.cfg" "$@"'
    ),
    "go-ycsb": (
        r"umask 077 && { printf 'mysql.password='; "
        r"""printf '%s' "$TIBENCH_PASSWORD" | sed 's/\\/\\\\/g'; printf '\n'; } """
        r'> "$TIBENCH_DIR/db.properties" && exec "$0" "$@" -P "$TIBENCH_DIR/db.properties"'
    ),
    "go-tpc": r'exec "$0" "$@" -p "$TIBENCH_PASSWORD"',
}

#: The line a pod prints just before its tool starts: the start barrier's actual start (epoch
#: seconds on the pod's node, nanoseconds where ``date`` has ``%N``).
START_MARK = "tibench-start:"

#: The start barrier: wait (polling ``date`` every 50 ms; every second where ``sleep`` takes
#: no fraction) until ``TIBENCH_START_AT`` (epoch seconds), then print :data:`START_MARK` and
#: the actual start, so every pod starts its tool within about 50 ms of the agreed instant on
#: its node's clock.
BARRIER = (
    r'while [ "$(date +%s)" -lt "$TIBENCH_START_AT" ]; do sleep 0.05 2>/dev/null || sleep 1; '
    r"done; "
    r't=$(date +%s.%N); case "$t" in *N*) t=$(date +%s);; esac; '
    f'echo "{START_MARK} $t"; '
)

#: Per tool: the option giving a client its share of the run's threads.
SHARE_OPTION = {"sysbench": "--threads=", "go-tpc": "--threads="}

#: Each pod's share, the word at its index in ``TIBENCH_SHARES``, added to the tool's arguments.
SHARE = (
    r"i=0; for n in $TIBENCH_SHARES; do "
    r'[ "$i" -eq "$JOB_COMPLETION_INDEX" ] && set -- "$@" "{option}$n"; i=$((i + 1)); done; '
)

#: Each pod's sysbench seed, the word at its index in ``TIBENCH_SEEDS``: ``--rand-seed=`` after
#: the tool's arguments (see :func:`tibenchlib.sysbench.command.client_seeds`).
SEED = (
    r"i=0; for n in $TIBENCH_SEEDS; do "
    r'[ "$i" -eq "$JOB_COMPLETION_INDEX" ] && set -- "$@" "--rand-seed=$n"; i=$((i + 1)); done; '
)


def _per_pod(tool: str, clients: int, args, shares, seeds, env: list[dict]) -> str:
    """The wrapper's words giving each pod its share of threads and its seed (both checked):
    their variables appended to ``env``, their script returned."""
    script = ""
    if shares is not None:
        if tool not in SHARE_OPTION:
            raise ValueError(f"shares: {tool} takes no per-pod share of threads here")
        if len(shares) != clients or any(int(n) < 1 for n in shares):
            raise ValueError(f"shares: {list(shares)} is not one positive share per pod")
        env.append({"name": "TIBENCH_SHARES", "value": " ".join(str(int(n)) for n in shares)})
        script = SHARE.format(option=SHARE_OPTION[tool])
    if seeds is not None:
        if tool != "sysbench":
            raise ValueError(f"seeds: {tool} takes no per-pod --rand-seed here")
        if len(seeds) != clients or any(not 0 < int(n) < 2**31 for n in seeds):
            raise ValueError(f"seeds: {list(seeds)} is not one seed in 1..2^31-1 per pod")
        if any(str(a).startswith("--rand-seed=") for a in args):
            raise ValueError("seeds: args already carry a --rand-seed")
        env.append({"name": "TIBENCH_SEEDS", "value": " ".join(str(int(n)) for n in seeds)})
        script = SEED + script
    return script


def label_value(text: str) -> str:
    """``text`` as a valid label value (at most 63 of ``[A-Za-z0-9._-]``, alphanumeric at both
    ends): other characters become ``-``; a longer value keeps a hash of the whole."""
    v = re.sub(r"[^A-Za-z0-9._-]", "-", text).strip("-._")
    if len(v) > 63:
        digest = hashlib.sha256(text.encode()).hexdigest()[:8]
        v = v[:54].rstrip("-._") + "-" + digest
    return v


def job_name(study: str, run_key: str) -> str:
    """A Job (and Secret) name for one run: ``tibench-<study>-<hash of study and run key>``,
    a DNS label of at most 63 characters (the Job controller copies it into a label)."""
    digest = hashlib.sha256(f"{study}\0{run_key}".encode()).hexdigest()[:10]
    slug = re.sub(r"[^a-z0-9-]", "-", study.lower()).strip("-")[:40].strip("-")
    return f"tibench-{slug}-{digest}" if slug else f"tibench-{digest}"


def job_labels(study: str, run_key: str) -> dict[str, str]:
    """The labels naming the study and run on the Job, its pods and its Secret."""
    return {
        "app.kubernetes.io/managed-by": "tibench",
        "tibench/study": label_value(study),
        "tibench/run-key": label_value(run_key),
    }


def secret_manifest(
    name: str, namespace: str, password: str | None, labels: Mapping[str, str]
) -> dict:
    """The Secret holding the target's password (an empty one when the target has none).
    ``stringData`` is the API's write-only plain-text form; the API server stores it base64
    encoded in ``data``."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
        "type": "Opaque",
        "stringData": {PASSWORD_KEY: password or ""},
    }


def job_manifest(
    *,
    name: str,
    namespace: str,
    tool: str,
    image: str,
    args: Sequence[str],
    clients: int,
    secret: str,
    labels: Mapping[str, str],
    annotations: Mapping[str, str] | None = None,
    deadline_s: int | None = None,
    ttl_s: int = 3600,
    start_at: int | None = None,
    shares: Sequence[int] | None = None,
    seeds: Sequence[int] | None = None,
) -> dict:
    """The Job running ``clients`` copies of ``tool`` with ``args`` (password-free).

    Parameters
    ----------
    tool
        ``sysbench``, ``go-ycsb`` or ``go-tpc``: the executable in ``image`` (which needs
        ``/bin/sh`` for the wrapper).
    args
        The tool's arguments; ``$(JOB_COMPLETION_INDEX)`` in one is the pod's index.
    clients
        N: ``parallelism`` and ``completions``.
    deadline_s
        ``activeDeadlineSeconds``: past it the Job fails and its pods are stopped (a client
        that hangs does not hold the cluster).
    ttl_s
        ``ttlSecondsAfterFinished``: the cluster deletes a finished Job even if tibench was
        killed before deleting it.
    start_at
        The start barrier (epoch seconds): each pod waits until then and prints
        :data:`START_MARK` with its actual start before the tool starts (:data:`BARRIER`).
    shares
        Each pod's share of the run's threads, by index (sysbench and go-tpc; a go-ycsb pod's
        ``threadcount`` is per client): pod ``i`` gets ``--threads=<shares[i]>`` after
        ``args``, so ``args`` carry no ``--threads`` (go-tpc: no ``-T``).
    seeds
        sysbench only: each pod's ``--rand-seed``, by index, after ``args`` (which then carry
        none), so that pods started in the same second do not replay the same requests.

    A failed pod is not retried (``backoffLimit: 0``): a client restarted late would start
    out of step with the others and its figures would not add up with theirs.
    """
    if tool not in TOOLS:
        raise ValueError(f"tool: {tool!r} is not one of {', '.join(TOOLS)}")
    if not isinstance(clients, int) or clients < 1:
        raise ValueError(f"clients: {clients!r} is not a positive number of pods")
    env = [
        {
            "name": PASSWORD_VAR,
            "valueFrom": {"secretKeyRef": {"name": secret, "key": PASSWORD_KEY}},
        },
        {"name": "TIBENCH_DIR", "value": PRIVATE_DIR},
    ]
    script = _per_pod(tool, clients, args, shares, seeds, env) + TOOLS[tool]
    if start_at is not None:
        env.append({"name": "TIBENCH_START_AT", "value": str(int(start_at))})
        script = BARRIER + script
    container = {
        "name": tool,
        "image": image,
        "command": ["/bin/sh", "-c", script, tool],
        "args": [str(a) for a in args],
        "env": env,
        "volumeMounts": [{"name": "tibench-private", "mountPath": PRIVATE_DIR}],
    }
    spec = {
        "completionMode": "Indexed",
        "completions": clients,
        "parallelism": clients,
        "backoffLimit": 0,
        "ttlSecondsAfterFinished": ttl_s,
        "template": {
            "metadata": {"labels": dict(labels)},
            "spec": {
                "restartPolicy": "Never",
                "containers": [container],
                "volumes": [{"name": "tibench-private", "emptyDir": {"medium": "Memory"}}],
            },
        },
    }
    if deadline_s is not None:
        spec["activeDeadlineSeconds"] = int(deadline_s)
    metadata = {"name": name, "namespace": namespace, "labels": dict(labels)}
    if annotations:
        metadata["annotations"] = dict(annotations)
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata, "spec": spec}
