"""Each phase's results read back from the catalog: whether they are there, and their rows.

The registry (:mod:`tibenchlib.registry`) names these per phase (``stored_ref``,
``results_ref``); :func:`tibenchlib.notebook.phase_stored` and
:func:`tibenchlib.notebook.stored_results` call them. ``*_stored(study, store, arms) -> bool``,
``*_results(study, store, arms) -> DataFrame`` (the rows the phase function returns).
"""

from __future__ import annotations

import pandas as pd

from . import paths


def environment_stored(study, store, arms: list[str]) -> bool:
    caps = store.environment_captures(study.study)
    return all(a in caps for a in arms)


def prepare_stored(study, store, arms: list[str]) -> bool:
    return paths.phase_results(study.study, "prepare").is_file()


def sweep_stored(study, store, arms: list[str]) -> bool:
    runs = store.runs(study.study, phase="sweep")
    return bool(len(runs)) and bool(runs["arm"].isin(arms).any())


def numa_stored(study, store, arms: list[str]) -> bool:
    return bool(len(store.runs(study.study, phase="numa")))


def tpch_scaling_stored(study, store, arms: list[str]) -> bool:
    return bool(len(store.read("tpch_queries", study.study)))


def dm_stored(study, store, arms: list[str]) -> bool:
    return bool(len(store.read("dm_runs", study.study)))


def ycsb_stored(study, store, arms: list[str]) -> bool:
    runs = store.runs(study.study, phase="ycsb")
    return bool(len(runs)) and bool(runs["arm"].isin(arms).any())


def tpcc_stored(study, store, arms: list[str]) -> bool:
    return bool(len(store.runs(study.study, phase="tpcc")))


def environment_results(study, store, arms: list[str]) -> pd.DataFrame:
    from .envcapture import host_summary

    caps = store.environment_captures(study.study)
    rows = []
    for a in arms:
        if a in caps:
            c = caps[a]
            db = c.get("database", {})
            rows.append(
                {
                    "arm": a,
                    "flavor": db.get("flavor"),
                    "version": db.get("version"),
                    **host_summary(c.get("host", {})),
                }
            )
    return pd.DataFrame(rows)


def prepare_results(study, store, arms: list[str]) -> pd.DataFrame:
    from . import phases

    rows = pd.DataFrame(phases.read_results(study, "prepare"))
    return rows[rows["arm"].isin(arms)].reset_index(drop=True) if len(rows) else rows


def sweep_results(study, store, arms: list[str]) -> pd.DataFrame:
    from .record import result_rows
    from .sweep import plan

    runs = store.runs(study.study, phase="sweep")
    keys = {s.run_key for s in plan(study, arms=arms)}
    if not len(runs):
        return result_rows(runs)
    return result_rows(runs[runs["run_key"].isin(keys)])


def compare_results(study, store, arms: list[str]) -> pd.DataFrame:
    from . import phases
    from .notebook import phase_stored

    if not phase_stored(study, "sweep", arms):
        return pd.DataFrame()
    return phases.compare(study)


def numa_results(study, store, arms: list[str]) -> pd.DataFrame:
    from .numa import analyze

    return analyze(study, store)


def tpch_scaling_results(study, store, arms: list[str]) -> pd.DataFrame:
    from .tpch.phase import summarize

    return summarize(study, store)


def dm_results(study, store, arms: list[str]) -> pd.DataFrame:
    from .dm.analysis import result_rows, unit_rows
    from .dm.phase import planned_runs

    return result_rows(unit_rows(planned_runs(store, study)))


def ycsb_results(study, store, arms: list[str]) -> pd.DataFrame:
    from .ycsb.phase import plan as ycsb_plan
    from .ycsb.phase import result_table

    runs = store.runs(study.study, phase="ycsb")
    keys = {s.run_key for s in ycsb_plan(study, arms)}
    if len(runs):
        runs = runs[runs["run_key"].isin(keys)].reset_index(drop=True)
    return result_table(runs)


def tpcc_results(study, store, arms: list[str]) -> pd.DataFrame:
    from .tpcc.phase import summarize as tpcc_summary

    return tpcc_summary(study, store, arms)
