"""A fake ``kubectl`` for the tests, installed on PATH by :func:`install`.

It records every call's argv and standard input (``FAKE_KUBECTL_RECORD``). ``get``, ``logs``
and ``version`` replay recorded real outputs (tests/fixtures/kubernetes, tests/fixtures/sysbench)
named by ``FAKE_KUBECTL_<WHAT>``; ``apply``, ``wait`` and ``delete`` print nothing and answer by
their exit status, the ``wait`` for the condition ``FAKE_KUBECTL_SCENARIO`` at once.

With ``FAKE_KUBECTL_RUN`` (a folder) it runs the Jobs it is given instead, on this machine: for
``apply`` it starts each pod's container command (the manifest's ``/bin/sh`` wrapper, so the
real ``sysbench`` on PATH) with the container's environment, the Secret's password (a wrong
one for the index in ``FAKE_KUBECTL_BAD_PASSWORD``), ``JOB_COMPLETION_INDEX`` and a private
``TIBENCH_DIR``; the pod's output is its log, so ``logs`` returns real sysbench output. ``wait``
answers from the pods' exits, ``get pods`` lists them as the recorded real Pod
(``FAKE_KUBECTL_PODS``) with the fields of a Job's pod set by the fake (name, index, phase,
container state and times), and ``delete job`` stops pods still running.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path

FAKE = r"""
import copy, datetime, json, os, signal, subprocess, sys, time
import yaml

COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"

if sys.argv[1:2] == ["--pod"]:  # one pod of a Job: run its container, note its exit
    spec = json.loads(sys.argv[2])
    status = {"started": time.time()}
    with open(spec["log"], "wb") as log:
        p = subprocess.run(spec["argv"], env=spec["env"], stdout=log, stderr=subprocess.STDOUT)
    status.update(exit=p.returncode, finished=time.time())
    with open(spec["status"] + ".tmp", "w") as f:
        json.dump(status, f)
    os.replace(spec["status"] + ".tmp", spec["status"])
    sys.exit(0)

argv = sys.argv[1:]
stdin = sys.stdin.read() if argv[-2:] == ["-f", "-"] else None
with open(os.environ["FAKE_KUBECTL_RECORD"], "a") as f:
    f.write(json.dumps({"argv": argv, "stdin": stdin}) + "\n")
rest, i = [], 0
while i < len(argv):
    if argv[i] in ("--context", "--namespace"):
        i += 2
        continue
    rest.append(argv[i])
    i += 1
verb = rest[0]
run_dir = os.environ.get("FAKE_KUBECTL_RUN")


def rfc3339(t):
    return datetime.datetime.fromtimestamp(int(t), datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def pods_of(job):
    path = os.path.join(run_dir, job + ".json")
    return json.load(open(path)) if os.path.exists(path) else []


def exits(pods):
    out = []
    for p in pods:
        if os.path.exists(p["status"]):
            out.append(json.load(open(p["status"])))
        else:
            out.append(None)
    return out


if run_dir and verb == "apply":
    docs = list(yaml.safe_load_all(stdin))
    password = next(d for d in docs if d["kind"] == "Secret")["stringData"]["password"]
    bad = os.environ.get("FAKE_KUBECTL_BAD_PASSWORD")
    for job in (d for d in docs if d["kind"] == "Job"):
        name = job["metadata"]["name"]
        c = job["spec"]["template"]["spec"]["containers"][0]
        pods = []
        for i in range(job["spec"]["completions"]):
            pod = f"{name}-{i}-fake{i}"
            private = os.path.join(run_dir, pod)
            os.makedirs(private, mode=0o700)
            env = {"PATH": os.environ["PATH"], "JOB_COMPLETION_INDEX": str(i)}
            for e in c["env"]:
                if "valueFrom" in e:
                    env[e["name"]] = "not-the-password" if bad == str(i) else password
                else:
                    env[e["name"]] = e["value"]
            env["TIBENCH_DIR"] = private  # the pod's emptyDir
            args = [a.replace("$(JOB_COMPLETION_INDEX)", str(i)) for a in c["args"]]
            spec = {
                "argv": c["command"] + args,
                "env": env,
                "log": os.path.join(run_dir, pod + ".log"),
                "status": os.path.join(run_dir, pod + ".status"),
            }
            proc = subprocess.Popen(
                [sys.executable, __file__, "--pod", json.dumps(spec)], start_new_session=True
            )
            pods.append({"pod": pod, "pid": proc.pid, "container": c["name"],
                         "created": time.time(), **spec})
        with open(os.path.join(run_dir, name + ".json"), "w") as f:
            json.dump(pods, f)
    sys.exit(0)
if run_dir and verb == "wait":
    name = rest[1].split("/", 1)[1]
    cond = next(a for a in rest if a.startswith("--for=condition=")).rsplit("=", 1)[1]
    limit = time.time() + float(next(a for a in rest if a.startswith("--timeout="))[10:-1])
    while time.time() < limit:
        ex = exits(pods_of(name))
        failed = any(e is not None and e["exit"] != 0 for e in ex)
        complete = bool(ex) and all(e is not None and e["exit"] == 0 for e in ex)
        if (cond == "failed" and failed) or (cond == "complete" and complete):
            sys.exit(0)
        time.sleep(0.1)
    print(f"error: timed out waiting for the condition on jobs/{name}", file=sys.stderr)
    sys.exit(1)
if run_dir and verb == "get" and rest[1] == "pods":
    name = rest[rest.index("-l") + 1].split("=", 1)[1]
    template = yaml.safe_load(open(os.environ["FAKE_KUBECTL_PODS"]))
    items = []
    for i, (p, e) in enumerate(zip(pods_of(name), exits(pods_of(name)))):
        pod = copy.deepcopy(template)
        pod["metadata"]["name"] = p["pod"]
        pod["metadata"]["labels"] = {"job-name": name, COMPLETION_INDEX: str(i)}
        pod["metadata"]["annotations"] = {COMPLETION_INDEX: str(i)}
        cs = pod["status"]["containerStatuses"][0]
        cs["name"] = p["container"]
        if e is None:
            pod["status"]["phase"] = "Running"
            cs["state"] = {"running": {"startedAt": rfc3339(p["created"])}}
        else:
            pod["status"]["phase"] = "Succeeded" if e["exit"] == 0 else "Failed"
            cs["state"] = {"terminated": {"exitCode": e["exit"], "startedAt": rfc3339(e["started"]),
                                          "finishedAt": rfc3339(e["finished"])}}
        items.append(pod)
    yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}, sys.stdout)
    sys.exit(0)
if run_dir and verb == "logs":
    path = os.path.join(run_dir, rest[1] + ".log")
    if not os.path.exists(path):
        print(f'Error from server (NotFound): pods "{rest[1]}" not found', file=sys.stderr)
        sys.exit(1)
    sys.stdout.write(open(path, errors="replace").read())
    sys.exit(0)
if run_dir and verb == "delete" and rest[1] == "job":
    for p in pods_of(rest[2]):
        if not os.path.exists(p["status"]):
            try:
                os.killpg(p["pid"], signal.SIGKILL)
            except ProcessLookupError:
                pass
    sys.exit(0)

scenario = os.environ.get("FAKE_KUBECTL_SCENARIO", "complete")
if verb == "wait":
    cond = next(a for a in rest if a.startswith("--for=condition=")).rsplit("=", 1)[1]
    if cond == scenario:
        sys.exit(0)
    if scenario == "timeout":
        sys.exit(1)
    time.sleep(120)
    sys.exit(1)
if verb in ("get", "logs", "version"):
    key = "FAKE_KUBECTL_" + (rest[1] if verb == "get" else verb).upper()
    path = os.environ.get(key)
    if not path:
        print(f"fake kubectl: no recorded output for {verb} ({key} unset)", file=sys.stderr)
        sys.exit(1)
    sys.stdout.write(open(path).read())
sys.exit(0)
"""


def install(tmp_path: Path, monkeypatch) -> Path:
    """The fake as ``kubectl`` first on PATH; returns the file its calls are recorded in."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    exe = bin_dir / "kubectl"
    exe.write_text(f"#!{sys.executable}\n" + textwrap.dedent(FAKE))
    exe.chmod(0o755)
    record = tmp_path / "calls.jsonl"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_KUBECTL_RECORD", str(record))
    return record


def calls(record: Path) -> list[dict]:
    """The fake's calls so far: ``argv`` and ``stdin`` each."""
    if not record.exists():
        return []
    return [json.loads(ln) for ln in record.read_text().splitlines()]
