"""Kubernetes (report 001's TiDB Operator cluster): capture and clients as a Job.

- :mod:`.kubectl`: running ``kubectl`` for one namespace, context and kubeconfig;
- :mod:`.resources`: pure readers of ``kubectl get -o yaml|json`` (TidbCluster components,
  pods, an Indexed Job's pods);
- :mod:`.capture`: the environment phase's collector (:func:`capture_kubernetes`);
- :mod:`.job`: pure builders of the clients' Job and its password Secret;
- :mod:`.runner`: :func:`run_job` (apply, wait, logs, delete) and :func:`merge_sysbench`.
- :mod:`.sweep_job`: a sweep run's clients as a Job (``clients_job``): thread shares, start
  barrier, the pods' logs merged and recorded per pod in ``run_hosts``.
- :mod:`.tool_jobs`: a YCSB or TPC-C run's clients as a Job of go-ycsb or go-tpc pods
  (``ycsb.clients_job``, ``tpcc.clients_job``), merged by the phases' own multi-client paths.
"""

from __future__ import annotations

from .capture import capture_kubernetes, kubernetes_tables
from .job import job_labels, job_manifest, job_name, secret_manifest
from .kubectl import Kubectl, KubectlError
from .resources import component_table, job_pods, load_objects, pod_table
from .runner import JobFailed, JobOutcome, merge_sysbench, run_job

__all__ = [
    "JobFailed",
    "JobOutcome",
    "Kubectl",
    "KubectlError",
    "capture_kubernetes",
    "component_table",
    "job_labels",
    "job_manifest",
    "job_name",
    "job_pods",
    "kubernetes_tables",
    "load_objects",
    "merge_sysbench",
    "pod_table",
    "run_job",
    "secret_manifest",
]
