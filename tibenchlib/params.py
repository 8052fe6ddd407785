"""Study parameters: a YAML file validated into typed models.

Every phase reads the same :class:`Study`. Unknown keys, wrong types and impossible values are
collected into one :class:`ParamsError` that names every offending field, before anything runs.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from . import registry
from .db import mask_url, mask_urls, url_has_password

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
#: The phases a study may run, in order (see :mod:`tibenchlib.registry`).
PHASES = registry.NAMES

Workload = Literal[SYSBENCH_WORKLOADS]  # type: ignore[valid-type]
PosInt = Annotated[int, Field(gt=0)]
NonNegFloat = Annotated[float, Field(ge=0)]
Scalar = str | int | float | bool


class ParamsError(ValueError):
    """A study file that cannot run; the message lists every offending field."""


#: Fields holding a URL: their values are shown masked in every message.
URL_FIELDS = frozenset({"url", "results_url", "prometheus_url", "pd_url"})


def _refuse_password(url: str | None, env_field: str) -> str | None:
    if url and url_has_password(url):
        raise ValueError(
            f"the URL {mask_url(url)} carries a password; drop it and export the password in "
            f"the variable named by {env_field} instead"
        )
    return url


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TLS(_Model):
    """TLS for the database connection (TiDB Cloud, or a cluster with TLS on)."""

    ca: str | None = None
    cert: str | None = None
    key: str | None = None
    verify_identity: bool = False


class Target(_Model):
    """Which database to drive.

    ``embedded`` starts tibench's own MariaDB; a ``url`` drives anything MySQL-compatible.
    The password never lives in the file: it is read from the environment variable named by
    ``password_env``.
    """

    kind: Literal["embedded", "url"] = "embedded"
    url: str | None = None
    password_env: str = "TIBENCH_PASSWORD"
    database: str = "sbtest"
    tls: TLS = TLS()
    server_options: dict[str, Scalar] = {}
    cpu_binding: str | None = None

    @field_validator("url")
    @classmethod
    def _no_password_in_url(cls, v: str | None) -> str | None:
        return _refuse_password(v, "password_env")

    @model_validator(mode="after")
    def _url_when_url(self) -> Target:
        if self.kind == "url" and not self.url:
            raise ValueError("kind 'url' needs url, e.g. mysql+pymysql://root@10.0.1.8:4000/sbtest")
        if self.kind == "embedded" and self.url:
            raise ValueError("url is only for kind 'url' (the embedded server has its own)")
        return self

    @property
    def password(self) -> str | None:
        return os.environ.get(self.password_env)


class Dataset(_Model):
    """The sysbench tables: ``--tables`` × ``--table-size``."""

    tables: PosInt = 2
    table_size: PosInt = 10_000
    prepare_threads: PosInt = 2
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
    exclude_rounds: list[PosInt] = []
    #: the run figure compared: sysbench's whole-run TPS, or the steady-state TPS after the
    #: MSER-5 warm-up cut (tibenchlib.steady); the other is shown when they disagree
    input: Literal["whole_run", "steady_state"] = "whole_run"


class NumaParams(_Model):
    policies: list[str] = ["unbound", "node:0", "cpus:0"]
    workloads: list[Workload] = ["oltp_point_select"]
    threads: list[PosInt] = [2]
    repeats: PosInt = 3
    duration_s: PosInt = 5
    topology_file: str | None = None
    host_memory_gb: Annotated[float, Field(gt=0)] | None = None
    host_numa_nodes: PosInt | None = None


class TpchParams(_Model):
    scale_factor: Annotated[float, Field(gt=0)] = 0.01
    repeats: PosInt = 3
    query_timeout_s: Annotated[float, Field(gt=0)] = 60.0
    queries: list[Annotated[int, Field(ge=1, le=22)]] = list(range(1, 23))
    arms: list[str] = ["cpus:0", "unbound"]
    modes: list[Literal["power", "throughput"]] = ["power", "throughput"]
    streams: PosInt = 2
    session_settings: dict[str, Scalar] = {}
    tiflash_replicas: PosInt | None = None
    pd_url: str | None = None
    scale_out_commands: dict[str, str] = {}


class Study(_Model):
    """A whole study: target, data set, sweep and one section per phase."""

    study: Annotated[str, Field(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9_.-]+$")]
    description: str = ""
    lang: Literal["en", "zh"] = "en"  # language of the notebooks' tables and sentences
    target: Target = Target()
    results_url: str | None = None
    results_password_env: str = "TIBENCH_RESULTS_PASSWORD"
    allow_destructive: bool = False

    dataset: Dataset = Dataset()
    workloads: Annotated[list[Workload], Field(min_length=1)] = ["oltp_point_select"]
    threads: Annotated[list[PosInt], Field(min_length=1)] = [1, 2, 4]
    threads_by_workload: dict[Workload, Annotated[list[PosInt], Field(min_length=1)]] = {}
    duration_s: PosInt = 10
    report_interval_s: PosInt = 1
    percentile: Annotated[float, Field(gt=0, lt=100)] = 95
    rand_type: Literal["uniform", "gaussian", "special", "pareto"] = "uniform"
    histogram: bool = True
    extra_args: list[str] = []
    repeats: PosInt = 3
    cooldown_s: NonNegFloat = 0
    warmup_s: NonNegFloat = 0
    warmup_max_runs: PosInt = 3
    order: Literal["interleaved", "sequential", "random"] = "interleaved"
    seed: int = 1
    run_timeout_s: Annotated[float, Field(gt=0)] | None = None
    sample_resources: bool = True
    prometheus_url: str | None = None

    #: The params file this study was read from (None when built in code).
    _source: str | None = PrivateAttr(default=None)

    arms: Annotated[list[Arm], Field(min_length=1)] = [Arm(label="default")]
    phases: list[Literal[PHASES]] = list(PHASES)  # type: ignore[valid-type]
    compare: CompareParams = CompareParams()
    numa: NumaParams = NumaParams()
    tpch_scaling: TpchParams = TpchParams()

    @field_validator("study")
    @classmethod
    def _not_a_relative_dir(cls, v: str) -> str:
        if set(v) == {"."}:
            raise ValueError(f"'{v}' is not a study name (it names a directory, not a study)")
        if v in ("server", "reference"):
            raise ValueError(f"'{v}' is reserved for tibench's own files under data/")
        return v

    @field_validator("results_url")
    @classmethod
    def _no_password_in_results_url(cls, v: str | None) -> str | None:
        return _refuse_password(v, "results_password_env")

    @property
    def results_password(self) -> str | None:
        return os.environ.get(self.results_password_env)

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
        bad = [r for r in self.compare.exclude_rounds if r > self.repeats]
        if bad:
            raise ValueError(
                f"compare.exclude_rounds {bad}: the study has rounds 1–{self.repeats} (repeats)"
            )
        if len(set(self.compare.exclude_rounds)) >= self.repeats:
            raise ValueError("compare.exclude_rounds leaves no round to compare")
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


def _format_errors(err: ValidationError, source: str) -> str:
    lines = []
    for e in err.errors():
        loc = ".".join(str(p) for p in e["loc"]) or "(top level)"
        msg = e["msg"]
        if e["type"] == "extra_forbidden":
            msg = "unknown key"
        elif e["type"] == "literal_error":
            msg = f"{msg}; got {e.get('input')!r}"
        elif e["type"] == "value_error" and e["loc"] and e["loc"][-1] in URL_FIELDS:
            pass  # the message shows the URL, masked
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
    if not p.is_file():
        raise ParamsError(f"{p}: no such params file")
    try:
        data = yaml.safe_load(p.read_text()) or {}
    except yaml.YAMLError as e:
        raise ParamsError(f"{p}: not valid YAML: {e}") from None
    if overrides:
        data = {**data, **overrides}
    study = parse_study(data, str(p))
    study._source = str(p)
    return study
