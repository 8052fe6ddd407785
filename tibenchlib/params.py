"""Study parameters: a YAML file validated into typed models.

Every phase reads the same :class:`Study`. Unknown keys, wrong types and impossible values are
collected into one :class:`ParamsError` that names every offending field, before anything runs.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    PrivateAttr,
    Tag,
    ValidationError,
    field_validator,
    model_validator,
)

from . import phasenames
from .db import env_secret, keep_from_children, mask_url, mask_urls, url_has_password
from .hosts.spec import LOCAL, parse_destination
from .paths import RESERVED_NAMES, params_examples_dir
from .ycsb_workload import Workload as YcsbWorkload

SYSBENCH_WORKLOADS = (
    "oltp_point_select",
    "oltp_read_only",
    "oltp_write_only",
    "oltp_read_write",
    "oltp_update_index",
    "oltp_update_non_index",
    "oltp_insert",
    "oltp_delete",
    "select_random_points",
    "select_random_ranges",
)
#: Workloads that change data: the ones a reset between cells protects.
WRITE_WORKLOADS = frozenset(
    {
        "oltp_write_only",
        "oltp_read_write",
        "oltp_update_index",
        "oltp_update_non_index",
        "oltp_insert",
        "oltp_delete",
    }
)
#: The phases a study may run, in order (:mod:`tibenchlib.registry` holds the phases).
PHASES = phasenames.NAMES

Workload = Literal[SYSBENCH_WORKLOADS]  # type: ignore[valid-type]
PosInt = Annotated[int, Field(gt=0)]

# Upper bounds of every count a study gives: far above any real study, low enough that a typo
# (an extra zero, 1e9) is refused before the dry run plans it. docs/failures.md
# ("Upper bounds") lists them.
#: rounds (repeats) of a cell, and the most an adaptive rule may run
MAX_REPEATS = 1000
#: client threads of a run (and the pool sizes of DM's units, MariaDB's replica workers)
MAX_THREADS = 100_000
#: TPC-C warehouses of one data set
MAX_WAREHOUSES = 100_000
#: client processes of a run
MAX_CLIENTS = 1024
#: seconds of one run (a week)
MAX_DURATION_S = 7 * 24 * 3600
#: sysbench tables of a data set, and DM's
MAX_TABLES = 100_000
#: rows of one table (sysbench, DM)
MAX_TABLE_ROWS = 10_000_000_000
#: TPC-H scale factor (SF 100,000 is 100 TB, the largest the specification defines)
MAX_SCALE_FACTOR = 100_000
#: TPC-H throughput-test streams
MAX_STREAMS = 1000

RepeatCount = Annotated[int, Field(gt=0, le=MAX_REPEATS)]
ThreadCount = Annotated[int, Field(gt=0, le=MAX_THREADS)]
Seconds = Annotated[int, Field(gt=0, le=MAX_DURATION_S)]
TimeoutS = Annotated[float, Field(gt=0, le=MAX_DURATION_S)]
ClientCount = Annotated[int, Field(gt=0, le=MAX_CLIENTS)]
Scalar = str | int | float | bool


class ParamsError(ValueError):
    """A study file that cannot run; the message lists every offending field."""


#: Fields holding a URL: their values are shown masked in every message.
URL_FIELDS = frozenset(
    {"url", "results_url", "prometheus_url", "pd_url", "master_url", "source_url"}
)


def _refuse_password(url: str | None, env_field: str) -> str | None:
    if url and url_has_password(url):
        raise ValueError(
            f"the URL {mask_url(url)} carries a password; drop it and export the password in "
            f"the variable named by {env_field} instead"
        )
    return url


def _no_password(env_field: str) -> AfterValidator:
    """A URL field's check: no password in the URL (it goes in the variable ``env_field``)."""
    return AfterValidator(lambda url: _refuse_password(url, env_field))


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TLS(_Model):
    """TLS for the database connection (TiDB Cloud, or a cluster with TLS on)."""

    ca: str | None = None
    cert: str | None = None
    key: str | None = None
    verify_identity: bool = False


#: The name of an environment variable (a ``*_env`` field): never the secret itself.
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SECRET_KEYS = ("password", "token", "bearer", "secret")


def env_var_name(v: str | None, holding: str) -> str | None:
    """``v`` when it is an environment variable's name (or None); the error says what the
    variable should hold."""
    if v is not None and not _ENV_NAME.match(v):
        raise ValueError(
            "is not an environment variable's name: give the name of the variable holding "
            + holding
        )
    return v


class HttpAccess(_Model):
    """TLS and authentication for an HTTP service of the cluster (Prometheus, PD, DM's
    OpenAPI): ``prometheus_http``, ``tpch_scaling.pd_http``, ``dm.master_http``.

    Secrets never live in the file: ``token_env`` names the variable holding a bearer token,
    ``password_env`` the one holding ``user``'s password (HTTP basic authentication).
    """

    #: CA file verifying the service's certificate (default: the system's CAs)
    ca: str | None = None
    #: client certificate and its key (mutual TLS)
    cert: str | None = None
    key: str | None = None
    #: false: accept any certificate (a test cluster's self-signed one)
    verify: bool = True
    user: str | None = None
    password_env: str | None = None
    token_env: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _no_literal_secret(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for k in data:
                if str(k).lower() in _SECRET_KEYS:
                    raise ValueError(
                        f"{k}: a secret is never written in the study file; export it and give "
                        "the variable's name in token_env (a bearer token) or password_env"
                    )
        return data

    @field_validator("password_env", "token_env")
    @classmethod
    def _env_name(cls, v: str | None) -> str | None:
        return env_var_name(v, "the secret, never the secret itself")

    def model_post_init(self, context: Any) -> None:
        # the secret is read only at the first request, after tools may have started: the
        # variables are kept out of every child's environment from the moment the file names them
        for name in (self.password_env, self.token_env):
            if name:
                keep_from_children(name)

    @model_validator(mode="after")
    def _consistent(self) -> HttpAccess:
        if self.key and not self.cert:
            raise ValueError("key needs cert (the client certificate it belongs to)")
        if self.password_env and not self.user:
            raise ValueError("password_env needs user (basic authentication)")
        if self.token_env and self.user:
            raise ValueError("give token_env (a bearer token) or user/password_env, not both")
        return self


#: A Kubernetes object name: a DNS-1123 label (namespaces) or subdomain (a TidbCluster's name).
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(
    r"^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)


def _k8s_name(v: str, rule: re.Pattern, what: str) -> str:
    if not rule.match(v):
        raise ValueError(f"is not a {what}, starting and ending with a letter or digit")
    return v


class KubernetesTarget(_Model):
    """``target.kubernetes``: the TiDB Operator cluster behind the target (report 001).

    ``namespace`` and ``cluster`` name the TidbCluster resource; ``context`` picks a kubeconfig
    context (default: the current one); ``kubeconfig_env`` names the variable holding the
    kubeconfig file's path (default: kubectl's own ``KUBECONFIG`` or ``~/.kube/config``).
    """

    namespace: str
    cluster: str
    context: Annotated[str, Field(min_length=1)] | None = None
    kubeconfig_env: str | None = None

    @field_validator("namespace")
    @classmethod
    def _namespace(cls, v: str) -> str:
        what = "Kubernetes namespace name: lower-case letters, digits and '-', at most 63"
        return _k8s_name(v, _DNS_LABEL, what)

    @field_validator("cluster")
    @classmethod
    def _cluster(cls, v: str) -> str:
        return _k8s_name(
            v, _DNS_SUBDOMAIN, "TidbCluster name: lower-case letters, digits, '-', '.'"
        )

    @field_validator("kubeconfig_env")
    @classmethod
    def _kubeconfig_env(cls, v: str | None) -> str | None:
        return env_var_name(v, "the kubeconfig file's path")


class ClientsJob(_Model):
    """``clients_job`` (of the sweep, ``ycsb`` or ``tpcc``): each run's clients as one
    Kubernetes Job of ``pods`` pods, in the cluster of ``target.kubernetes``
    (:mod:`tibenchlib.kube.sweep_job`, :mod:`tibenchlib.kube.tool_jobs`).

    ``image`` holds the tool (``sysbench``, ``go-ycsb`` or ``go-tpc``) and ``/bin/sh``;
    ``namespace`` is the Job's (default: the target's); ``endpoint`` is the ``host:port`` the
    pods connect to (default: TiDB Operator's Service ``<cluster>-tidb.<namespace>.svc:4000``;
    ``target``: the address tibench itself uses); ``start_lead_s`` is the time from sending
    the Job to the pods' common start, room for scheduling and pulling the image.
    """

    pods: Annotated[int, Field(ge=1, le=MAX_CLIENTS)]
    image: Annotated[str, Field(min_length=1, pattern=r"^\S+$")]
    namespace: str | None = None
    endpoint: str | None = None
    start_lead_s: Annotated[int, Field(ge=1, le=3600)] = 30

    @field_validator("namespace")
    @classmethod
    def _namespace(cls, v: str | None) -> str | None:
        what = "Kubernetes namespace name: lower-case letters, digits and '-', at most 63"
        return v if v is None else _k8s_name(v, _DNS_LABEL, what)

    @field_validator("endpoint")
    @classmethod
    def _endpoint(cls, v: str | None) -> str | None:
        if v is not None and v != "target" and not _ENDPOINT.match(v):
            raise ValueError(f"{v!r} is not host:port (e.g. basic-tidb.tidb-cluster.svc:4000)")
        return v


class Target(_Model):
    """Which database to drive.

    ``embedded`` starts tibench's own MariaDB; a ``url`` drives anything MySQL-compatible.
    The password never lives in the file: it is read from the environment variable named by
    ``password_env``.
    """

    kind: Literal["embedded", "url"] = "embedded"
    url: Annotated[str | None, _no_password("password_env")] = None
    password_env: str = "TIBENCH_PASSWORD"
    database: str = "sbtest"
    tls: TLS = TLS()
    server_options: dict[str, Scalar] = {}
    cpu_binding: str | None = None
    #: the TiDB Operator cluster behind the target: captured by the environment phase
    kubernetes: KubernetesTarget | None = None

    @model_validator(mode="after")
    def _url_when_url(self) -> Target:
        if self.kind == "url" and not self.url:
            raise ValueError("kind 'url' needs url, e.g. mysql+pymysql://root@10.0.1.8:4000/sbtest")
        if self.kind == "embedded" and self.url:
            raise ValueError("url is only for kind 'url' (the embedded server has its own)")
        return self

    @property
    def password(self) -> str | None:
        return env_secret(self.password_env)


class Dataset(_Model):
    """The sysbench tables: ``--tables`` × ``--table-size``."""

    tables: Annotated[int, Field(gt=0, le=MAX_TABLES)] = 2
    table_size: Annotated[int, Field(gt=0, le=MAX_TABLE_ROWS)] = 10_000
    prepare_threads: ThreadCount = 2
    analyze: bool = True
    warmup: bool = True
    force: bool = False
    reset: Literal["none", "reprepare"] = "none"


class Arm(_Model):
    """One side of a comparison: a label, and what differs (server options, binding, target)."""

    label: Annotated[str, Field(min_length=1, pattern=r"^[A-Za-z0-9_.:+-]+$")]
    server_options: dict[str, Scalar] = {}
    cpu_binding: str | None = None
    target: Target | None = None


class CompareParams(_Model):
    baseline: str | None = None
    candidate: str | None = None
    metric: Literal["tps", "lat_p95_ms"] = "tps"
    delta_pct: Annotated[float, Field(gt=0, lt=100)] = 2.0
    lang: Literal["en", "zh"] = "en"
    pairs: list[tuple[str, str]] = []
    #: rounds (repeats) left out of the comparison, e.g. [1] after a warm-up or drift note
    exclude_rounds: list[RepeatCount] = []
    #: the run figure compared: sysbench's whole-run TPS, or the steady-state TPS after the
    #: MSER-5 warm-up cut (tibenchlib.steady); the other is shown when they disagree
    input: Literal["whole_run", "steady_state"] = "whole_run"


class AdaptiveRepeats(_Model):
    """``repeats: {min, max, target_halfwidth_pct, futility}`` (or ``repeats: auto``): each cell
    runs ``min`` rounds, then one more at a time until its interval decides against
    ±``compare.delta_pct`` (a single arm: is within ±``target_halfwidth_pct``) or no decision is
    within reach, at most ``max`` (:mod:`tibenchlib.adaptive`)."""

    #: the first look; the interval at each look has the df of the rounds used
    min: Annotated[int, Field(ge=2, le=MAX_REPEATS)] = 5
    max: RepeatCount = 10
    #: without a margin (a single arm): stop once the interval is within ±this percent
    target_halfwidth_pct: Annotated[float, Field(gt=0, lt=100)] = 2.0
    #: stop a cell "out of reach" when its chance of a decision by max is below this (0: never)
    futility: Annotated[float, Field(ge=0, lt=1)] = 0.10

    @model_validator(mode="after")
    def _max_not_below_min(self) -> AdaptiveRepeats:
        if self.max < self.min:
            raise ValueError(f"max ({self.max}) is below min ({self.min})")
        return self

    def __str__(self) -> str:
        return f"{self.min}–{self.max} (adaptive, ±{self.target_halfwidth_pct:g}%)"


def _repeats_kind(v: Any) -> str:
    return "adaptive" if isinstance(v, dict | AdaptiveRepeats) else "fixed"


#: ``repeats``: a number of rounds, or the adaptive rule (a mapping, or ``auto``).
Repeats = Annotated[
    Annotated[RepeatCount, Tag("fixed")] | Annotated[AdaptiveRepeats, Tag("adaptive")],
    Discriminator(_repeats_kind),
]


class NumaParams(_Model):
    policies: list[str] = ["unbound", "node:0", "cpus:0"]
    workloads: list[Workload] = ["oltp_point_select"]
    threads: list[ThreadCount] = [2]
    repeats: RepeatCount = 3
    duration_s: Seconds = 5
    topology_file: str | None = None
    host_memory_gb: Annotated[float, Field(gt=0)] | None = None
    host_numa_nodes: Annotated[int, Field(gt=0, le=1024)] | None = None


class TpchParams(_Model):
    scale_factor: Annotated[float, Field(gt=0, le=MAX_SCALE_FACTOR)] = 0.01
    repeats: RepeatCount = 3
    query_timeout_s: TimeoutS = 60.0
    queries: list[Annotated[int, Field(ge=1, le=22)]] = list(range(1, 23))
    arms: list[str] = ["cpus:0", "unbound"]
    modes: list[Literal["power", "throughput"]] = ["power", "throughput"]
    streams: Annotated[int, Field(gt=0, le=MAX_STREAMS)] = 2
    session_settings: dict[str, Scalar] = {}
    tiflash_replicas: Annotated[int, Field(gt=0, le=100)] | None = None
    pd_url: Annotated[str | None, _no_password("tpch_scaling.pd_http.password_env")] = None
    pd_http: HttpAccess = HttpAccess()
    scale_out_commands: dict[str, str] = {}


#: sysbench workloads the DM sync unit replays on the source (report 003: insert-only, write-only).
DM_SYNC_WORKLOADS = ("oltp_insert", "oltp_write_only")


class DmDumpParams(_Model):
    """mydumper's knobs (DM's dump unit); each list is the settings swept, its first the base."""

    threads: Annotated[list[ThreadCount], Field(min_length=1)] = [2]
    #: ``--rows`` (single-table concurrent export); null = off, one chunk per table
    rows: Annotated[
        list[Annotated[int, Field(gt=0, le=MAX_TABLE_ROWS)] | None], Field(min_length=1)
    ] = [None]
    #: ``--statement-size`` in bytes (≥ 1 KB): sets the rows per INSERT statement
    statement_size: Annotated[list[Annotated[int, Field(ge=1000)]], Field(min_length=1)] = [
        1_000_000
    ]


class DmLoadParams(_Model):
    """myloader's knobs (DM's load unit): ``threads`` is DM's pool-size."""

    threads: Annotated[list[ThreadCount], Field(min_length=1)] = [2]
    queries_per_transaction: Annotated[
        list[Annotated[int, Field(gt=0, le=1_000_000)]], Field(min_length=1)
    ] = [1000]


class DmSyncParams(_Model):
    """The sync unit: worker-count (MariaDB ``slave_parallel_threads`` on the embedded
    default, DM's ``worker-count`` on a real cluster), replayed sysbench traffic."""

    workers: list[ThreadCount] = [4]
    mode: Literal["optimistic", "conservative", "aggressive", "minimal", "none"] = "optimistic"
    batch: Annotated[int, Field(gt=0, le=1_000_000)] = 100  # DM's syncer batch (real DM only)
    workloads: list[Literal[DM_SYNC_WORKLOADS]] = list(DM_SYNC_WORKLOADS)  # type: ignore[valid-type]
    threads: ThreadCount = 2  # sysbench threads writing on the source
    duration_s: Seconds = 3
    lag: bool = True  # also trace the lag with the SQL thread on, while sysbench writes


class DmParams(_Model):
    """Phase ``dm``: DM load tuning (report 003). Every knob with more than one setting is swept
    with the others at their base (first) setting; each setting is an arm."""

    database: Annotated[str, Field(pattern=r"^[A-Za-z0-9_]+$")] = "dmtest"
    tables: Annotated[int, Field(gt=0, le=MAX_TABLES)] = 2
    table_size: Annotated[int, Field(gt=0, le=MAX_TABLE_ROWS)] = 5000
    prepare_threads: ThreadCount = 2
    repeats: RepeatCount = 3
    timeout_s: TimeoutS = 600.0
    keep_dump: bool = False
    dump: DmDumpParams = DmDumpParams()
    load: DmLoadParams = DmLoadParams()
    sync: DmSyncParams = DmSyncParams()
    #: a real DM master's OpenAPI (DM ≥ 5.3), e.g. http://10.0.1.9:8261
    master_url: Annotated[str | None, _no_password("dm.master_http.password_env")] = None
    master_http: HttpAccess = HttpAccess()
    source_name: str | None = None  # the DM source (``operate-source``) the task reads
    #: the DM source's MySQL, for sysbench (sync runs) and the verification of every run
    source_url: Annotated[str | None, _no_password("dm.source_password_env")] = None
    source_password_env: str = "TIBENCH_SOURCE_PASSWORD"
    task_name: str = "tibench-dm"
    poll_s: Annotated[float, Field(gt=0)] = 2.0
    #: how tasks reach DM: ``openapi`` (DM ≥ 5.3), ``dmctl`` with a task file (any DM; the
    #: only way to set mydumper's rows and statement size), ``auto``: see docs/phases.md (real DM)
    api: Literal["auto", "openapi", "dmctl"] = "auto"
    #: the cluster's DM version (``v1.0.7``, ``5.4.0``): it decides the task file's dialect
    #: (DM 1.0: black-white-list, rows and statement size as mydumper extra-args) and, with
    #: ``api: auto``, dmctl below 5.3; null: a current DM
    version: Annotated[str, Field(pattern=r"^v?\d+(\.\d+){0,2}$")] | None = None

    @model_validator(mode="after")
    def _source_with_master(self) -> DmParams:
        if self.master_url and not (self.source_name and self.source_url):
            raise ValueError(
                "master_url needs source_name (the DM source the task reads) and source_url "
                "(its MySQL, e.g. mysql+pymysql://root@10.0.1.7:3306/sbtest, to verify each run)"
            )
        return self

    @property
    def source_password(self) -> str | None:
        return env_secret(self.source_password_env)


def _jvm_option(v: str) -> str:
    if not re.fullmatch(r"-[A-Za-z0-9:+=._/,%-]+", v):
        raise ValueError(f"{v!r} is not one JVM option (a word starting with -)")
    if v in ("-cp", "-classpath", "-jar") or v.startswith("--class-path"):
        raise ValueError(f"{v}: the class path is tibench's to give")
    return v


#: one JVM option (``-Xmx4g``, ``-XX:+UseSerialGC``, ``-Dkey=value``): one word starting with
#: ``-``, not the class path nor a jar
JvmOption = Annotated[str, AfterValidator(_jvm_option)]


class YcsbParams(_Model):
    """The ``ycsb`` phase: YCSB core workloads by name × a thread ladder × repeats.

    Each workload takes YCSB's own property names (:class:`tibenchlib.ycsb.Workload`: the
    proportions, ``requestdistribution``, ``recordcount``, ``operationcount`` and/or
    ``maxexecutiontime_s``…); an unknown key is an error naming it. Workloads on the same
    ``table`` share one loaded data set, so they must agree on its shape.
    """

    workloads: Annotated[
        dict[Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]+$")], YcsbWorkload],
        Field(min_length=1),
    ] = {"read_update": YcsbWorkload(recordcount=1000, maxexecutiontime_s=5)}
    #: client threads per client process (a run's ``threads`` is this × ``clients``)
    threads: Annotated[list[ThreadCount], Field(min_length=1)] = [1, 2, 4]
    repeats: RepeatCount = 3
    load_threads: ThreadCount = 2
    #: options for the Java YCSB's JVM, before its class path (``-Xmx4g`` for thousands of
    #: threads; ``-XX:TieredStopAtLevel=1`` for runs of a few seconds, which spend more CPU
    #: compiling than running); go-ycsb takes none
    jvm_options: list[JvmOption] = []
    #: client processes started together per run (report 004), merged into one run: a number
    #: (on this machine), or client hosts (``local``, ``user@host[:port]``, a mapping with
    #: ``key`` and ``java``), one client each
    clients: (
        Annotated[int, Field(ge=1, le=64)]
        | Annotated[list[ClientHost], Field(min_length=1, max_length=64)]
    ) = 1
    #: ``host:port`` per client on a cluster (one per tidb-server); empty: the arm's target
    endpoints: list[Annotated[str, Field(pattern=r"^[A-Za-z0-9_.\-\[\]:]+:\d+$")]] = []
    #: ``auto``: go-ycsb for a cluster when on PATH, the Java YCSB otherwise
    tool: Literal["auto", "ycsb", "go-ycsb"] = "auto"
    run_timeout_s: TimeoutS | None = None
    #: the study's arms the phase runs (empty: every arm)
    arms: list[str] = []
    #: each run's clients as a Kubernetes Job of go-ycsb pods (needs ``target.kubernetes``)
    clients_job: ClientsJob | None = None

    @field_validator("clients", mode="before")
    @classmethod
    def _hosts(cls, v):
        return client_hosts_before(v)

    @property
    def client_hosts(self) -> list[ClientHost] | None:
        """The clients as hosts (``local`` or SSH), or None when ``clients`` is a number."""
        return list(self.clients) if isinstance(self.clients, list) else None

    @property
    def n_clients(self) -> int:
        return len(self.clients) if isinstance(self.clients, list) else self.clients

    @model_validator(mode="after")
    def _consistent(self) -> YcsbParams:
        if self.clients_job is not None:
            if self.clients != 1 or self.endpoints:
                raise ValueError(
                    "clients_job: the run's clients are the Job's pods; leave clients and "
                    "endpoints out"
                )
            if self.tool == "ycsb":
                raise ValueError("clients_job: the Job's pods run go-ycsb; give tool: go-ycsb")
        if self.client_hosts and (self.endpoints or self.tool == "go-ycsb"):
            raise ValueError(
                "clients: client hosts run the Java YCSB against the arm's target: give "
                "neither endpoints nor tool: go-ycsb with them"
            )
        if self.endpoints and len(self.endpoints) != self.n_clients:
            raise ValueError(
                f"endpoints: {len(self.endpoints)} given for clients={self.n_clients} "
                "(one host:port per client, or none)"
            )
        inserting = [n for n, w in self.workloads.items() if w.insertproportion > 0]
        n = self.clients_job.pods if self.clients_job else self.n_clients
        if n > 1 and inserting:
            raise ValueError(
                f"workloads.{inserting[0]}: insertproportion > 0 with clients={n}: "
                "every YCSB client inserts the same keys (each counts from recordcount), so "
                "their inserts collide; use one client with more threads"
            )
        shapes: dict[str, tuple[str, tuple]] = {}
        for name, w in self.workloads.items():
            shape = (w.recordcount, w.fieldcount, w.fieldlength)
            seen = shapes.setdefault(w.table, (name, shape))
            if seen[1] != shape:
                raise ValueError(
                    f"workloads.{name} and workloads.{seen[0]} share table {w.table} but not "
                    "its recordcount/fieldcount/fieldlength: give one of them another table"
                )
        return self


_ENDPOINT = re.compile(r"^[A-Za-z0-9_.\-\[\]:]+:\d{1,5}$")


class ClientHost(_Model):
    """One client of a sweep, YCSB or TPC-C run: ``local`` (this machine) or an SSH destination
    ``user@host[:port]``. ``sysbench`` (the sweep, TPC-C's Lua driver) and ``java`` (YCSB's
    Java binding): the tool's path on that host (default: its PATH);
    ``key``: the private key file on this machine (default: the SSH agent and ``~/.ssh``);
    ``known_hosts``: the file holding the host's key (default: ``~/.ssh/known_hosts``)."""

    host: str
    sysbench: str | None = None
    java: str | None = None
    key: str | None = None
    known_hosts: str | None = None

    @field_validator("host")
    @classmethod
    def _destination(cls, v: str) -> str:
        if v != LOCAL:
            parse_destination(v)
        return v

    @property
    def local(self) -> bool:
        return self.host == LOCAL


def _is_host_entry(e) -> bool:
    return isinstance(e, dict) or e == LOCAL or (isinstance(e, str) and "@" in e)


def client_hosts_before(v, field: str = "clients"):
    """A ``clients`` list naming hosts (``local``, ``user@host[:port]`` or a mapping with
    ``host``) as :class:`ClientHost` mappings; a password anywhere is refused naming its field."""
    if not isinstance(v, list) or not any(_is_host_entry(e) for e in v):
        return v
    out = []
    for i, e in enumerate(v):
        if not _is_host_entry(e):
            raise ValueError(
                f"{field}[{i}]: {e!r} is an endpoint among client hosts: give every client as "
                "'local' or user@host[:port]"
            )
        e = {"host": e} if isinstance(e, str) else dict(e)
        secret = [k for k in e if "pass" in str(k).lower() or "secret" in str(k).lower()]
        if secret:
            raise ValueError(
                f"{field}[{i}].{secret[0]}: a password never goes in the study file; give key: "
                "<private key file> or let the SSH agent authenticate"
            )
        host = e.get("host")
        if isinstance(host, str) and host != LOCAL:
            try:
                parse_destination(host)
            except ValueError as err:
                raise ValueError(f"{field}[{i}].host: {err}") from None
        out.append(e)
    return out


def check_endpoints(v):
    """A ``clients`` value: a number, or a non-empty list of ``host:port`` endpoints."""
    if isinstance(v, list) and not any(isinstance(e, ClientHost) for e in v):
        if not v:
            raise ValueError("clients: give a number or at least one host:port endpoint")
        bad = [e for e in v if not _ENDPOINT.match(e)]
        if bad:
            raise ValueError(f"clients: {bad[0]!r} is not host:port (e.g. 10.0.1.8:4000)")
    return v


#: ``clients`` of the sweep and TPC-C: a number (the target that many times), client hosts
#: (``local``, ``user@host[:port]``, a mapping), or ``host:port`` endpoints (one client each)
Clients = Annotated[
    ClientCount
    | Annotated[list[ClientHost], Field(min_length=1, max_length=MAX_CLIENTS)]
    | Annotated[list[str], Field(max_length=MAX_CLIENTS)],
    BeforeValidator(client_hosts_before),
    AfterValidator(check_endpoints),
]


class _HasClients:
    """``client_hosts`` and ``n_clients`` of a section with a ``clients`` key."""

    @property
    def client_hosts(self) -> list[ClientHost] | None:
        """The clients as hosts (``local`` or SSH), or None when ``clients`` is a number or a
        list of target endpoints."""
        if isinstance(self.clients, list) and self.clients:
            if isinstance(self.clients[0], ClientHost):
                return list(self.clients)
        return None

    @property
    def n_clients(self) -> int:
        """How many clients a run starts."""
        return self.clients if isinstance(self.clients, int) else len(self.clients)


class TpccParams(_HasClients, _Model):
    """The ``tpcc`` phase: TPC-C-like on the embedded default (the sysbench Lua driver),
    go-tpc / ``tiup bench tpcc`` on a cluster.

    ``threads`` is the total of a run: with several ``clients`` it is split among them as
    evenly as possible. ``clients``: a number (that many clients on the target, the same server
    several times) or a list of ``host:port`` endpoints (one client each, e.g. one per
    tidb-server; user, database and password are the target's). ``items`` and ``customers``
    default to the specification's (100,000 and 3,000 per district); smaller values make a
    small data set for tests and demos. ``wait`` lists the modes to run: ``false`` (no keying
    or think times, go-tpc's default) and/or ``true`` (the specification's keying and think
    times, go-tpc's ``--wait``), times ``wait_scale`` with the Lua driver.
    """

    warehouses: Annotated[
        list[Annotated[int, Field(gt=0, le=MAX_WAREHOUSES)]], Field(min_length=1)
    ] = [1]
    threads: Annotated[list[ThreadCount], Field(min_length=1)] = [1, 2]
    duration_s: Seconds = 10
    repeats: RepeatCount = 3
    wait: Annotated[list[bool], Field(min_length=1)] = [False]
    wait_scale: Annotated[float, Field(gt=0, le=1)] = 1.0
    clients: Clients = 1
    items: Annotated[int, Field(ge=1000, le=100_000)] = 100_000
    customers: Annotated[int, Field(ge=10, le=3_000)] = 3_000
    report_interval_s: Seconds = 1
    tool: Literal["auto", "sysbench", "go-tpc"] = "auto"
    database: Annotated[str, Field(pattern=r"^[A-Za-z0-9_]{1,50}$")] = "tpcc"
    consistency: bool = True
    arms: list[str] = []
    #: each run's clients as a Kubernetes Job of go-tpc pods (needs ``target.kubernetes``)
    clients_job: ClientsJob | None = None

    @field_validator("warehouses", mode="before")
    @classmethod
    def _one_or_more(cls, v):
        return [v] if isinstance(v, int) and not isinstance(v, bool) else v

    @model_validator(mode="after")
    def _hosts_tool(self) -> TpccParams:
        job = self.clients_job
        if job is not None:
            if self.clients != 1:
                raise ValueError(
                    "clients_job: the run's clients are the Job's pods; leave clients out"
                )
            if self.tool == "sysbench":
                raise ValueError("clients_job: the Job's pods run go-tpc; give tool: go-tpc")
            few = [t for t in self.threads if t < job.pods]
            if few:
                raise ValueError(
                    f"threads: {few[0]} threads cannot be shared by clients_job.pods={job.pods} "
                    "pods (each needs at least one)"
                )
        if self.client_hosts and self.tool == "go-tpc":
            raise ValueError(
                "clients: client hosts run the sysbench Lua driver (go-tpc takes the password "
                "only on its command line): give tool: sysbench or auto with them"
            )
        return self


class Study(_HasClients, _Model):
    """A whole study: target, data set, sweep and one section per phase."""

    study: Annotated[str, Field(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9_.-]+$")]
    description: str = ""
    #: the description in Chinese, for the zh report and notebooks (``description`` is English)
    description_zh: str = ""
    lang: Literal["en", "zh"] = "en"  # language of the notebooks' tables and sentences
    target: Target = Target()
    results_url: Annotated[str | None, _no_password("results_password_env")] = None
    results_password_env: str = "TIBENCH_RESULTS_PASSWORD"
    allow_destructive: bool = False

    dataset: Dataset = Dataset()
    workloads: Annotated[list[Workload], Field(min_length=1)] = ["oltp_point_select"]
    threads: Annotated[list[ThreadCount], Field(min_length=1)] = [1, 2, 4]
    threads_by_workload: dict[Workload, Annotated[list[ThreadCount], Field(min_length=1)]] = {}
    #: sysbench clients per sweep run: a number (the target that many times) or host:port
    #: endpoints (one client each); ``threads`` stay the run's total, shared among them
    clients: Clients = 1
    #: the sweep's clients as a Kubernetes Job of N pods (needs ``target.kubernetes``)
    clients_job: ClientsJob | None = None
    #: client hosts whose sysbench versions differ may run together (else pre-flight refuses)
    allow_mixed_versions: bool = False
    duration_s: Seconds = 10
    report_interval_s: Seconds = 1
    percentile: Annotated[float, Field(gt=0, lt=100)] = 95
    rand_type: Literal["uniform", "gaussian", "special", "pareto"] = "uniform"
    histogram: bool = True
    extra_args: list[str] = []
    repeats: Repeats = 3
    cooldown_s: Annotated[float, Field(ge=0, le=MAX_DURATION_S)] = 0
    warmup_s: Annotated[float, Field(ge=0, le=MAX_DURATION_S)] = 0
    warmup_max_runs: RepeatCount = 3
    order: Literal["interleaved", "sequential", "random"] = "interleaved"
    seed: int = 1
    run_timeout_s: TimeoutS | None = None
    sample_resources: bool = True
    prometheus_url: Annotated[str | None, _no_password("prometheus_http.password_env")] = None
    prometheus_http: HttpAccess = HttpAccess()

    #: The params file this study was read from (None when built in code).
    _source: str | None = PrivateAttr(default=None)

    arms: Annotated[list[Arm], Field(min_length=1)] = [Arm(label="default")]
    phases: list[Literal[PHASES]] = list(PHASES)  # type: ignore[valid-type]
    compare: CompareParams = CompareParams()
    numa: NumaParams = NumaParams()
    tpch_scaling: TpchParams = TpchParams()
    dm: DmParams = DmParams()
    ycsb: YcsbParams = YcsbParams()
    tpcc: TpccParams = TpccParams()

    @field_validator("study")
    @classmethod
    def _not_a_relative_dir(cls, v: str) -> str:
        if set(v) == {"."}:
            raise ValueError(f"'{v}' is not a study name (it names a directory, not a study)")
        if v.startswith("-"):
            # the name is typed in commands (tibench report NAME), where it would read as an option
            raise ValueError(
                f"'{v}' starts with '-', which commands would read as an option; "
                "start the study name with a letter or digit"
            )
        if v in RESERVED_NAMES:
            raise ValueError(
                f"'{v}' is reserved for tibench's own files under data/ "
                f"({', '.join(RESERVED_NAMES)} are not study names)"
            )
        return v

    @field_validator("description_zh")
    @classmethod
    def _chinese(cls, v: str) -> str:
        if v.strip() and not re.search(r"[\u4e00-\u9fff]", v):
            raise ValueError(
                "has no Chinese characters: it is the Chinese description "
                "(the English one goes in description)"
            )
        return v

    def description_in(self, lang: str) -> str:
        """The study's description in ``lang``: ``description_zh`` in Chinese (nothing when the
        study file has none, rather than English inside a Chinese document), else
        ``description``."""
        return self.description_zh.strip() if lang == "zh" else self.description

    @property
    def results_password(self) -> str | None:
        return env_secret(self.results_password_env)

    def public_dump(self) -> dict:
        """The parameters as JSON-ready data with every URL masked: what the catalog keeps."""
        return mask_urls(self.model_dump(mode="json"))

    @field_validator("extra_args")
    @classmethod
    def _no_secrets_in_args(cls, v: list[str]) -> list[str]:
        for a in v:
            if re.match(r"--mysql-(password|user|host|port|db)\b", a):
                raise ValueError(f"{a.split('=')[0]} comes from target, not extra_args")
        return v

    @model_validator(mode="after")
    def _arms_consistent(self) -> Study:
        labels = [a.label for a in self.arms]
        dup = sorted({x for x in labels if labels.count(x) > 1})
        if dup:
            raise ValueError(f"arm labels must be unique: {', '.join(dup)} repeated")
        for side in ("baseline", "candidate"):
            name = getattr(self.compare, side)
            if name is not None and name not in labels:
                raise ValueError(f"compare.{side} '{name}' is not an arm ({', '.join(labels)})")
        return self

    @model_validator(mode="after")
    def _excluded_rounds_exist(self) -> Study:
        bad = [r for r in self.compare.exclude_rounds if r > self.max_rounds]
        if bad:
            raise ValueError(
                f"compare.exclude_rounds {bad}: the study has rounds 1–{self.max_rounds} (repeats)"
            )
        if len(set(self.compare.exclude_rounds)) >= self.max_rounds:
            raise ValueError("compare.exclude_rounds leaves no round to compare")
        return self

    @field_validator("repeats", mode="before")
    @classmethod
    def _auto_repeats(cls, v: Any) -> Any:
        return {} if v == "auto" else v

    @model_validator(mode="after")
    def _adaptive_needs_rounds(self) -> Study:
        if self.adaptive is None:
            return self
        if self.order == "sequential":
            raise ValueError(
                "repeats: adaptive stops cells round by round: order must be 'interleaved' or "
                "'random', not 'sequential'"
            )
        if self.compare.exclude_rounds:
            raise ValueError(
                "compare.exclude_rounds cannot be used with adaptive repeats: the first "
                f"{self.adaptive.min} rounds fix how many rounds each cell needs"
            )
        return self

    @property
    def adaptive(self) -> AdaptiveRepeats | None:
        """The adaptive-repeats rule, or None when ``repeats`` is a plain number."""
        return self.repeats if isinstance(self.repeats, AdaptiveRepeats) else None

    @property
    def max_rounds(self) -> int:
        """The most rounds (repeats) the sweep may run: ``repeats``, or its adaptive ``max``."""
        return self.repeats.max if isinstance(self.repeats, AdaptiveRepeats) else self.repeats

    @model_validator(mode="after")
    def _sweep_clients_consistent(self) -> Study:
        threads = [t for ts in [self.threads, *self.threads_by_workload.values()] for t in ts]
        # client hosts (SSH destinations) are given in the same list: no endpoint check for them
        clients = self.clients if self.client_hosts is None else None
        _check_clients("", threads, self.n_clients, clients, self.target.kind)
        return self

    @model_validator(mode="after")
    def _phase_jobs_need_kubernetes(self) -> Study:
        for section in ("ycsb", "tpcc"):
            if getattr(self, section).clients_job is not None:
                self._job_needs_kubernetes(f"{section}.clients_job")
        return self

    def _job_needs_kubernetes(self, field: str) -> None:
        """Every arm's target names its Kubernetes cluster, where the Job ``field`` runs."""
        for arm in self.arms:
            if self.target_for(arm).kubernetes is None:
                where = f"arms[{arm.label}].target" if arm.target else "target"
                raise ValueError(f"{field} needs {where}.kubernetes (the cluster the Job runs in)")

    @model_validator(mode="after")
    def _clients_job_consistent(self) -> Study:
        job = self.clients_job
        if job is None:
            return self
        if self.clients != 1:
            raise ValueError(
                "clients_job: the sweep's clients are the Job's pods; leave clients out"
            )
        self._job_needs_kubernetes("clients_job")
        threads = [t for ts in [self.threads, *self.threads_by_workload.values()] for t in ts]
        few = [t for t in threads if t < job.pods]
        if few:
            raise ValueError(
                f"threads: {few[0]} threads cannot be shared by clients_job.pods={job.pods} "
                "pods (each needs at least one)"
            )
        return self

    @model_validator(mode="after")
    def _ycsb_arms_known(self) -> Study:
        labels = [a.label for a in self.arms]
        unknown = [a for a in self.ycsb.arms if a not in labels]
        if unknown:
            raise ValueError(f"ycsb.arms: '{unknown[0]}' is not an arm ({', '.join(labels)})")
        return self

    @model_validator(mode="after")
    def _tpcc_consistent(self) -> Study:
        t = self.tpcc
        labels = [a.label for a in self.arms]
        unknown = [a for a in t.arms if a not in labels]
        if unknown:
            raise ValueError(f"tpcc.arms: '{unknown[0]}' is not an arm ({', '.join(labels)})")
        clients = t.clients if t.client_hosts is None else None  # hosts: no endpoint check
        _check_clients("tpcc.", t.threads, t.n_clients, clients, self.target.kind)
        return self

    def arm(self, label: str) -> Arm:
        for a in self.arms:
            if a.label == label:
                return a
        raise ParamsError(
            f"no arm '{label}' in study '{self.study}' ({[a.label for a in self.arms]})"
        )

    def target_for(self, arm: Arm) -> Target:
        return arm.target or self.target

    def threads_for(self, workload: str) -> list[int]:
        """The thread ladder of one workload (the reports use another ladder for read-write)."""
        return list(self.threads_by_workload.get(workload, self.threads))

    def is_embedded(self, arm: Arm | None = None) -> bool:
        return (self.target_for(arm) if arm else self.target).kind == "embedded"


_UNION_TAGS = ("fixed", "adaptive")


def _format_errors(err: ValidationError, source: str) -> str:
    lines = []
    for e in err.errors():
        # the tags of a tagged union (``repeats: 3`` or ``repeats: {min: …}``) are not keys the
        # user wrote: ``repeats.fixed`` is shown as ``repeats``
        loc_ = e["loc"]
        parts = [
            str(p)
            for i, p in enumerate(loc_)
            if not (i and loc_[i - 1] == "repeats" and p in _UNION_TAGS)
        ]
        loc = ".".join(parts) or "(top level)"
        msg = e["msg"]
        if e["type"] == "extra_forbidden":
            msg = "unknown key"
        elif e["type"] == "literal_error":
            msg = f"{msg}; got {e.get('input')!r}"
        elif e["type"] == "value_error" and e["loc"] and e["loc"][-1] in URL_FIELDS:
            pass  # the message shows the URL, masked
        elif loc_ and str(loc_[-1]).endswith("_env"):
            pass  # what was given may be the secret itself: never shown
        elif "input" in e and not isinstance(e["input"], dict | list):
            shown = e["input"]
            if isinstance(shown, str) and "://" in shown:
                shown = mask_url(shown)
            msg = f"{msg} (got {shown!r})"
        lines.append(f"  - {loc}: {msg}")
    n = len(lines)
    return f"{source}: {n} problem{'s' if n > 1 else ''}, nothing was run:\n" + "\n".join(lines)


def parse_study(data: Any, source: str = "<params>") -> Study:
    """Validate a mapping into a :class:`Study`, raising one :class:`ParamsError` for all faults."""
    if not isinstance(data, dict):
        raise ParamsError(f"{source}: expected a mapping of parameters, got {type(data).__name__}")
    try:
        return Study.model_validate(data)
    except ValidationError as e:
        raise ParamsError(_format_errors(e, source)) from None


class _UniqueKeyLoader(yaml.SafeLoader):
    """YAML's safe loader, refusing a key given twice in one mapping (PyYAML keeps the last
    silently: ``study:`` twice would run the second study without a word)."""

    def construct_mapping(self, node, deep=False):
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            if isinstance(key, str | int | float | bool) and key in seen:
                raise ParamsError(
                    f"line {line}: key '{key}' given twice (first on line {seen[key]}); keep one"
                )
            if isinstance(key, str | int | float | bool):
                seen[key] = line
        return super().construct_mapping(node, deep=deep)


def read_params_file(path: str | Path) -> Any:
    """The YAML data of a params file; :class:`ParamsError` naming the file when it is missing,
    a directory, not a regular file (a pipe, a device), not UTF-8 text (a binary or UTF-16
    file), not YAML (naming the line), more than one YAML document, or gives a key twice."""
    p = Path(path)
    if p.is_dir():
        raise ParamsError(f"{p}: is a directory, not a params file (give the YAML file in it)")
    raw = _read_regular(p)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        utf16 = raw[:2] in (b"\xff\xfe", b"\xfe\xff")
        why = "UTF-16 text" if utf16 else f"not UTF-8 text (byte {e.start} is 0x{raw[e.start]:02x})"
        raise ParamsError(f"{p}: {why}: save the params file as UTF-8 YAML") from None
    if "\0" in text:
        raise ParamsError(f"{p}: holds NUL bytes, a binary file, not a params file (UTF-8 YAML)")
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 (a SafeLoader)
    except ParamsError as e:
        raise ParamsError(f"{p}: {e}") from None
    except yaml.YAMLError as e:
        raise ParamsError(f"{p}: {_yaml_problem(e)}") from None


#: What a params file may be: the kinds of file that are not one, as :func:`stat.S_IFMT` says.
_NOT_REGULAR = {
    stat.S_IFIFO: "a pipe (FIFO)",
    stat.S_IFCHR: "a device",
    stat.S_IFBLK: "a device",
    stat.S_IFSOCK: "a socket",
}


def _read_regular(p: Path) -> bytes:
    """The bytes of ``p``, refused (:class:`ParamsError`) unless it is a regular file.

    Opened without blocking and checked on the open file: opening a FIFO for reading would wait
    for a writer, ``/dev/zero`` never ends, and a check of the path before the open could be
    answered by another file than the one read.
    """
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise ParamsError(f"{p}: no such params file{_examples_hint()}") from None
    except OSError as e:
        raise ParamsError(f"{p}: cannot be read ({e.strerror})") from None
    with os.fdopen(fd, "rb") as fh:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = _NOT_REGULAR.get(stat.S_IFMT(mode), "not a file")
            raise ParamsError(f"{p}: is {kind}, not a regular file: give the study's YAML file")
        return fh.read()


def _yaml_problem(e: yaml.YAMLError) -> str:
    """One line for a YAML syntax error: the line it is on and what to do, where PyYAML writes
    several lines naming ``"<unicode string>"`` (the text, not the file)."""
    mark = getattr(e, "problem_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    problem = " ".join(str(getattr(e, "problem", None) or e).split())
    context = " ".join(str(getattr(e, "context", None) or "").split())
    if "'\\t'" in problem or "tab character" in problem:
        return f"{where}a tab character: YAML is indented with spaces, never tabs"
    if "another document" in problem or "single document" in context:
        return (
            f"{where}a second YAML document ('---'): a params file holds one study; "
            "keep one and save the other as a file of its own"
        )
    return f"not valid YAML, {where}{problem}" + (f" ({context})" if context else "")


def load_study(path: str | Path, overrides: dict[str, Any] | None = None) -> Study:
    """Read and validate a study YAML file.

    Parameters
    ----------
    path
        The YAML file.
    overrides
        Top-level keys replacing the file's (e.g. from a notebook's parameters cell).
    """
    p = Path(path)
    data = read_params_file(p) or {}
    if overrides:
        data = {**data, **overrides}
    study = parse_study(data, str(p))
    study._source = str(p)
    return study


def _check_clients(prefix: str, threads, n_clients: int, clients, target_kind: str) -> None:
    """Every thread count can be shared by the clients (at least one thread each), and
    endpoints are given only for a url target; ``prefix`` names the section in the error."""
    few = [t for t in threads if t < n_clients]
    if few:
        raise ValueError(
            f"{prefix}threads: {few[0]} threads cannot be shared by {n_clients} clients "
            "(threads are the run's total, at least one per client)"
        )
    if isinstance(clients, list) and target_kind == "embedded":
        raise ValueError(
            f"{prefix}clients: endpoints are for a url target; on the embedded server give a "
            "number (the same server that many times)"
        )


def _examples_hint() -> str:
    """Where the example study files are (in the clone, or shipped with an installed tibench)."""
    d = params_examples_dir()
    names = sorted(f.name for f in d.glob("*.yaml")) if d.is_dir() else []
    if not names:
        return ""
    return f" (the example studies are in {d}: {', '.join(names)}; copy one to start from)"
