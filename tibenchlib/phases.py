"""The study's phases as functions: what each notebook calls and what ``tibench run`` reports.

Each phase takes a validated :class:`~tibenchlib.params.Study`, does its work through the other
modules, writes its result rows to ``data/<study>/results/<phase>.json`` (and ``.csv``) and
returns them as a DataFrame. The JSON file is what ``tibench run --json`` prints.
"""

from __future__ import annotations

import functools
import json
import logging
from pathlib import Path

import numpy as np
import pandas as pd

from . import paths, registry
from .params import Study
from .record import result_rows
from .store import Store

log = logging.getLogger(__name__)

#: A phase fails (:class:`PhaseFailed`) when more than this share of its planned runs failed;
#: below it the failed runs are logged and the phase's results stand on the runs that worked.
FAILED_SHARE_LIMIT = 0.2


class PhaseFailed(RuntimeError):
    """Too many runs of a phase failed; the message says how many, the first error and the
    command that retries them."""


def failed_runs_summary(study: Study, phase: str, runs: pd.DataFrame) -> str | None:
    """One sentence on a phase's failed and degenerate runs, or None when every run was ok."""
    if not len(runs) or "status" not in runs:
        return None
    bad = runs[runs["status"] != "ok"]
    if not len(bad):
        return None
    first = bad.iloc[0]
    params = study._source or "PARAMS.yaml"
    return (
        f"{phase}: {len(bad)} of {len(runs)} runs failed or were degenerate; first: "
        f"{first['run_key']}: {first['error'] or first['status']} (log {first['log_path']}); "
        f"retry them with: tibench run {params} --phase {phase}"
    )


def check_failed_runs(study: Study, phase: str, runs: pd.DataFrame) -> str | None:
    """Log the failed-runs summary, or raise :class:`PhaseFailed` past the limit."""
    msg = failed_runs_summary(study, phase, runs)
    if msg is None:
        return None
    if (runs["status"] != "ok").mean() > FAILED_SHARE_LIMIT:
        raise PhaseFailed(msg)
    log.warning("%s", msg)
    return msg


def _locked(func):
    """Run a phase that measures or writes under the study's lock (see :mod:`.lock`)."""

    @functools.wraps(func)
    def wrapper(study: Study, *args, **kw):
        from .lock import study_lock

        with study_lock(study.study):
            return func(study, *args, **kw)

    return wrapper


def results_dir(study: Study | str) -> Path:
    name = study if isinstance(study, str) else study.study
    return paths.results_dir(name)


def write_results(study: Study, phase: str, df: pd.DataFrame) -> Path:
    """Write a phase's rows as JSON (records, nulls for missing) and CSV."""
    name = study if isinstance(study, str) else study.study
    p = paths.phase_results(name, phase)
    p.parent.mkdir(parents=True, exist_ok=True)
    records = json.loads(df.replace({np.nan: None}).to_json(orient="records", default_handler=str))
    p.write_text(json.dumps(records, indent=1, ensure_ascii=False))
    df.to_csv(paths.phase_results(name, phase, "csv"), index=False)
    return p


def read_results(study: Study | str, phase: str) -> list[dict]:
    p = paths.phase_results(study if isinstance(study, str) else study.study, phase)
    if not p.exists():
        raise FileNotFoundError(f"{p}: phase '{phase}' has not produced results")
    return json.loads(p.read_text())


# -- phases ------------------------------------------------------------------------------------
@_locked
def environment(
    study: Study,
    *,
    yes: bool = False,
    arms: list[str] | None = None,
    redo: bool = False,
    progress: bool = True,
) -> pd.DataFrame:
    """Capture client host and database of every arm; saved as JSON and in the catalog."""
    from .envcapture import capture_database, capture_host, host_summary, save_capture
    from .target import open_arm

    store = Store.for_study(study, record=True)
    rows = []
    for label in arms or [a.label for a in study.arms]:
        ctx = open_arm(study, label, yes=yes, store=store)
        data_dir = ctx.server.datadir if ctx.server else paths.study_dir(study.study)
        eng = ctx.engine()
        try:
            cap = {
                "arm": label,
                "target": ctx.conn.masked_url(),
                "host": capture_host(data_dir=data_dir),
                "database": capture_database(eng, ctx.info.flavor),
            }
        finally:
            eng.dispose()
        save_capture(cap, paths.environment_file(study.study, label))
        store.record_environment(study.study, label, cap)
        rows.append(
            {
                "arm": label,
                "flavor": ctx.info.flavor,
                "version": ctx.info.version,
                **host_summary(cap["host"]),
            }
        )
    df = pd.DataFrame(rows)
    write_results(study, "environment", df)
    return df


@_locked
def prepare(
    study: Study,
    *,
    yes: bool = False,
    arms: list[str] | None = None,
    redo: bool = False,
    progress: bool = True,
) -> pd.DataFrame:
    """Prepare / ANALYZE / warm up / verify on every distinct target of the study."""
    from .sysbench.prepare import prepare as prepare_arm
    from .target import open_arm

    store = Store.for_study(study, record=True)
    out = []
    seen: set[str] = set()
    for label in arms or [a.label for a in study.arms]:
        ctx = open_arm(study, label, yes=yes, store=store)
        # Arms on the same target share its tables: prepare once, verify on the others.
        target = ctx.conn.masked_url()
        steps = prepare_arm(ctx, force=redo if target not in seen else False, progress=progress)
        seen.add(target)
        out.append(steps.assign(arm=label))
    df = pd.concat(out, ignore_index=True)[
        ["arm", "step", "table_name", "status", "seconds", "detail"]
    ]
    write_results(study, "prepare", df)
    return df


@_locked
def sweep(
    study: Study,
    *,
    yes: bool = False,
    arms: list[str] | None = None,
    redo: bool = False,
    progress: bool = True,
) -> pd.DataFrame:
    """Run or resume the sysbench sweep; rows are the planned runs from the catalog."""
    from .sweep import sweep as run_sweep

    runs = run_sweep(study, arms=arms, redo=redo, yes=yes, progress=progress)
    df = result_rows(runs)
    write_results(study, "sweep", df)
    check_failed_runs(study, "sweep", runs)
    return df


def compare(
    study: Study,
    *,
    yes: bool = False,
    arms: list[str] | None = None,
    redo: bool = False,
    progress: bool = True,
) -> pd.DataFrame:
    """A/B comparison of the study's arm pairs over the sweep's runs (Fieller, Welch, Holm);
    it measures nothing, so the keywords change nothing."""
    from .compare import compare_arms_table

    runs = Store.for_study(study).runs(study.study, phase="sweep")
    if not len(runs):
        raise RuntimeError(f"study '{study.study}' has no sweep runs: run phase sweep first")
    iv = Store.for_study(study).intervals(study.study, runs["run_key"])
    df = compare_arms_table(runs, study, intervals=iv)
    if study.adaptive is not None:
        from .adaptive import adaptive_comparison

        df = adaptive_comparison(df, runs, study)
    write_results(study, "compare", df)
    return df


#: Rough seconds the compare phase takes (statistics over the catalog; no database work).
COMPARE_S = 5.0


def compare_estimate(study: Study, arms: list[str] | None = None) -> dict:
    """Dry-run entry of the compare phase: statistics only."""
    return {
        "runs": 0,
        "eta_s": COMPARE_S,
        "disk_bytes": 0,
        "note": "statistics over the sweep's runs",
    }


@_locked
def numa(
    study: Study,
    *,
    yes: bool = False,
    arms: list[str] | None = None,
    redo: bool = False,
    progress: bool = True,
) -> pd.DataFrame:
    """Binding policies against unbound: see :mod:`tibenchlib.numa`."""
    from .numa import run_numa_phase

    df = run_numa_phase(study, yes=yes, arms=arms, redo=redo, progress=progress)
    write_results(study, "numa", df)
    runs = Store.for_study(study).runs(study.study, phase="numa")
    check_failed_runs(study, "numa", runs)
    return df


@_locked
def tpch_scaling(
    study: Study,
    *,
    yes: bool = False,
    arms: list[str] | None = None,
    redo: bool = False,
    progress: bool = True,
) -> pd.DataFrame:
    """TPC-H over scaling arms: see :mod:`tibenchlib.tpch.phase`."""
    from .tpch.phase import run_tpch_phase

    df = run_tpch_phase(study, yes=yes, arms=arms, redo=redo, progress=progress)
    write_results(study, "tpch_scaling", df)
    return df


@_locked
def dm(
    study: Study,
    *,
    yes: bool = False,
    arms: list[str] | None = None,
    redo: bool = False,
    progress: bool = True,
) -> pd.DataFrame:
    """DM load tuning (dump, load, sync knobs): see :mod:`tibenchlib.dm.phase`; rows per unit ×
    knob × setting × workload (:func:`tibenchlib.dm.analysis.result_rows`)."""
    from .dm.analysis import result_rows as dm_rows
    from .dm.analysis import unit_rows
    from .dm.phase import run_dm_phase

    done = run_dm_phase(study, yes=yes, arms=arms, redo=redo, progress=progress)
    df = dm_rows(unit_rows(done))
    write_results(study, "dm", df)
    check_failed_runs(study, "dm", Store.for_study(study).runs(study.study, phase="dm"))
    return df


@_locked
def ycsb(
    study: Study,
    *,
    yes: bool = False,
    arms: list[str] | None = None,
    redo: bool = False,
    progress: bool = True,
) -> pd.DataFrame:
    """YCSB workloads × thread ladder × repeats: see :mod:`tibenchlib.ycsb.phase`."""
    from .ycsb.phase import result_table, run_ycsb_phase

    runs = run_ycsb_phase(study, yes=yes, arms=arms, redo=redo, progress=progress)
    df = result_table(runs)
    write_results(study, "ycsb", df)
    check_failed_runs(study, "ycsb", runs)
    return df


@_locked
def tpcc(
    study: Study,
    *,
    yes: bool = False,
    arms: list[str] | None = None,
    redo: bool = False,
    progress: bool = True,
) -> pd.DataFrame:
    """TPC-C runs (tpmC per cell with intervals): see :mod:`tibenchlib.tpcc.phase`."""
    from .tpcc.phase import run_tpcc_phase

    df = run_tpcc_phase(study, yes=yes, arms=arms, redo=redo, progress=progress)
    write_results(study, "tpcc", df)
    runs = Store.for_study(study).runs(study.study, phase="tpcc")
    check_failed_runs(study, "tpcc", runs)
    return df


#: The phase functions by name, in :data:`tibenchlib.registry.PHASES` order.
PHASE_FUNCS = {p.name: globals()[p.function_ref.partition(":")[2]] for p in registry.PHASES}
assert all(p.function_ref.startswith(__name__ + ":") for p in registry.PHASES)


def run_phase(study: Study, phase: str, **kw) -> pd.DataFrame:
    """Run one phase under the study's lock (re-entrant for ``tibench run``'s own lock)."""
    from .lock import study_lock

    registry.get(phase)  # an unknown phase: a ValueError listing the phases
    unknown = sorted(set(kw) - set(registry.PHASE_KEYWORDS))
    if unknown:
        raise TypeError(
            f"phase '{phase}': unknown keyword(s) {', '.join(unknown)} "
            f"(a phase takes {', '.join(registry.PHASE_KEYWORDS)})"
        )
    with study_lock(study.study):
        return PHASE_FUNCS[phase](study, **kw)
