"""The ``dm`` phase's plan: which knob settings run, as which arms, in which order.

Report 003 tuned one knob at a time, the others fixed. So does this plan: every knob of the
``dm:`` section with more than one setting is swept, the other knobs at their base setting (the
first of each list); each setting is an arm (``load.threads=16``). The full-migration runs
(``full``: dump + load + verification) come first, every arm once per round in an order that
changes from round to round (:func:`tibenchlib.runorder.arm_order`); the sync runs (``sync``: the
replica's apply throughput per worker-count and sysbench workload) follow, on a replica set up
once from a fresh migration.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from .. import paths
from ..params import Study
from ..runorder import arm_order
from ..store import Store

#: The full-migration knobs: ``(knob, unit section, field)``.
FULL_KNOBS = (
    ("dump.threads", "dump", "threads"),
    ("dump.rows", "dump", "rows"),
    ("dump.statement_size", "dump", "statement_size"),
    ("load.threads", "load", "threads"),
    ("load.queries_per_transaction", "load", "queries_per_transaction"),
)
SYNC_KNOB = "sync.workers"
#: The arm of a unit whose knobs all have one setting.
BASE = "base"


def setting_label(value) -> str:
    """A setting as its arm shows it: ``off`` for ``rows: null``."""
    return "off" if value is None else str(value)


@dataclass(frozen=True)
class DmSpec:
    """One planned run of the ``dm`` phase."""

    unit: str  # full (dump + load) or sync
    knob: str
    setting: str
    workload: str  # full: "full"; sync: the sysbench workload replayed
    repeat: int
    seq: int = 0
    value: object = None  # the knob's value (None: rows off, or the base arm)

    @property
    def arm(self) -> str:
        return f"{self.unit}.{BASE}" if self.knob == BASE else f"{self.knob}={self.setting}"

    @property
    def run_key(self) -> str:
        return f"dm/{self.arm}/{self.workload}/r{self.repeat}"


def full_arms(study: Study) -> list[tuple[str, object]]:
    """``(knob, value)`` of every full-migration arm: each swept knob's settings in the params'
    order, or the one base arm when no knob is swept."""
    p = study.dm
    out = []
    for knob, section, name in FULL_KNOBS:
        values = list(getattr(getattr(p, section), name))
        if len(values) > 1:
            out += [(knob, v) for v in values]
    return out or [(BASE, None)]


def sync_arms(study: Study) -> list[tuple[str, object]]:
    workers = list(study.dm.sync.workers)
    if not workers or not study.dm.sync.workloads:
        return []
    return [(SYNC_KNOB, w) for w in workers]


def settings_for(study: Study, knob: str, value) -> dict:
    """Every knob's value for one arm: the base settings with ``knob`` set to ``value``."""
    p = study.dm
    s = {k: getattr(getattr(p, sec), name)[0] for k, sec, name in FULL_KNOBS}
    s[SYNC_KNOB] = p.sync.workers[0] if p.sync.workers else None
    if knob != BASE:
        s[knob] = value
    return s


def plan(study: Study, arms: list[str] | None = None) -> list[DmSpec]:
    """The phase's runs in execution order (see the module's doc); ``arms`` keeps only those."""
    p = study.dm
    specs: list[tuple] = []
    full = {_arm("full", k, v): (k, v) for k, v in full_arms(study)}
    sync = {_arm("sync", k, v): (k, v) for k, v in sync_arms(study)}
    if arms:
        full = {a: kv for a, kv in full.items() if a in arms}
        sync = {a: kv for a, kv in sync.items() if a in arms}
    for unit, by_arm, workloads in (
        ("full", full, ["full"]),
        ("sync", sync, list(p.sync.workloads)),
    ):
        if not by_arm:
            continue
        for r in range(1, p.repeats + 1):
            for a in arm_order(list(by_arm), r):
                k, v = by_arm[a]
                specs += [(unit, k, setting_label(v), w, r, v) for w in workloads]
    return [DmSpec(u, k, s, w, r, i, v) for i, (u, k, s, w, r, v) in enumerate(specs)]


def run_dir(study: str, spec: DmSpec) -> Path:
    return paths.raw_run_dir(study, "dm", spec.run_key.removeprefix("dm/"))


def planned_runs(store: Store, study: Study, specs: list[DmSpec] | None = None) -> pd.DataFrame:
    """``dm_runs`` of the planned runs (``specs``, default the study's whole plan: runs of
    settings no longer in the params are left out), with the run loop's ``seq`` and
    ``attempts``."""
    if specs is None:
        specs = plan(study)
    df = store.read("dm_runs", study.study)
    runs = store.runs(study.study, phase="dm")
    if len(df) and len(runs):
        df = df.merge(runs[["run_key", "seq", "attempts"]], on="run_key", how="left")
    if len(df):
        df = df[df["run_key"].isin({s.run_key for s in specs})]
    return df.sort_values("seq").reset_index(drop=True) if "seq" in df else df


def _arm(unit: str, knob: str, value) -> str:
    return DmSpec(unit, knob, setting_label(value), "", 0).arm


def arm_labels(study: Study) -> list[str]:
    """The phase's arms, in plan order of their first run."""
    return list(dict.fromkeys(s.arm for s in plan(study)))


#: Rough seconds of one full-migration run beyond moving the data (tools' start, verification).
FULL_OVERHEAD_S = 2.0
#: Rough migration speed of the embedded pair on a small host (rows per second, dump + load).
ROWS_PER_S = 40_000
#: Bytes per sysbench row in a mydumper dump.
BYTES_PER_ROW = 200


def estimate(study: Study, arms: list[str] | None = None) -> dict:
    """Dry-run entry: rough figures from the data set's size (the tools' speed is what the
    phase measures)."""
    p = study.dm
    specs = plan(study, arms)
    rows = p.tables * p.table_size
    full_s = FULL_OVERHEAD_S + rows / ROWS_PER_S
    n_full = sum(s.unit == "full" for s in specs)
    n_sync = len(specs) - n_full
    sync_s = p.sync.duration_s * (2 if p.sync.lag else 1) + 2 * FULL_OVERHEAD_S
    eta = 15 + n_full * full_s + (full_s + n_sync * sync_s if n_sync else 0)
    disk = 2 * rows * BYTES_PER_ROW + len(specs) * 20_000
    return {
        "runs": len(specs),
        "eta_s": eta,
        "disk_bytes": int(disk),
        "note": f"rough: {n_full} dump+load runs of {rows:,} rows, {n_sync} sync runs "
        f"of {p.sync.duration_s} s; a second private MariaDB as the target",
    }
