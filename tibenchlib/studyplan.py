"""A study as a whole: its phases in order, the arms each phase knows, what a run would cost
(the dry run) and what is done, failed and pending (``tibench runs``).

Each phase's own plan and estimate live next to its code (``sweep.plan``/``sweep.estimate``,
``numa.estimate``, ``tpch.phase.estimate``...); this module only calls them in phase order.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from . import paths, registry
from .params import PHASES, ParamsError, Study, load_study, parse_study


# -- selection ---------------------------------------------------------------------------------
def ordered_phases(study: Study, requested: list[str] | None = None) -> list[str]:
    """The phases to run in the study's order (environment → … → tpch_scaling), whatever order
    they were asked in; unknown names are a :class:`ParamsError` listing the phases."""
    if not requested:
        return [p for p in PHASES if p in study.phases]
    unknown = [p for p in requested if p not in PHASES]
    if unknown:
        raise ParamsError(f"unknown phase '{unknown[0]}' (phases: {', '.join(PHASES)})")
    return [p for p in PHASES if p in requested]


def phase_arms(study: Study, phase: str) -> list[str]:
    """The arm labels a phase runs: the study's arms, the NUMA policies, or the TPC-H arms."""
    return registry.get(phase).arm_labels(study)


def check_arms(study: Study, phases: list[str], arms: list[str] | None) -> None:
    """Every ``--arm`` must name an arm of at least one selected phase; else a
    :class:`ParamsError` naming the arms that are."""
    if not arms:
        return
    groups: dict[tuple[str, ...], list[str]] = {}
    for p in phases:
        groups.setdefault(tuple(phase_arms(study, p)), []).append(p)
    everything = {a for labels in groups for a in labels}
    for a in arms:
        if a not in everything:
            known = "; ".join(f"{', '.join(v)} ({', '.join(ps)})" for v, ps in groups.items() if v)
            raise ParamsError(f"no arm '{a}' in study '{study.study}'; its arms: {known}")


def arms_for(study: Study, phase: str, arms: list[str] | None) -> list[str] | None:
    """The ``--arm`` selection as one phase sees it: ``None`` for all, ``[]`` when none of the
    selected arms belongs to this phase (the phase then has nothing to do)."""
    if not arms:
        return None
    labels = phase_arms(study, phase)
    return [a for a in arms if a in labels]


# -- dry run -----------------------------------------------------------------------------------
def estimate_phase(study: Study, phase: str, arms: list[str] | None = None) -> dict:
    """One phase's dry-run entry: ``phase, runs, eta_s, disk_bytes, note`` (the sweep's also
    carries its planned runs under ``specs``), from the phase's estimate in the registry."""
    return registry.get(phase).estimate(study, arms)


def dry_run(study: Study, phases: list[str], arms: list[str] | None = None) -> dict:
    """What running ``phases`` would do and cost, phase by phase, and in total. Writes nothing."""
    entries = []
    for p in phases:
        sel = arms_for(study, p, arms)
        if sel == []:
            entries.append(
                {"phase": p, "runs": 0, "eta_s": 0.0, "disk_bytes": 0, "note": "no selected arm"}
            )
            continue
        entries.append(estimate_phase(study, p, sel))
    specs = next((e.pop("specs") for e in entries if "specs" in e), [])
    return {
        "study": study.study,
        "phases": entries,
        # the sweep's runs in execution order, as before per-phase entries existed
        "runs": [s.__dict__ | {"run_key": s.run_key} for s in specs],
        "eta_s": sum(e["eta_s"] for e in entries),
        "disk_bytes": sum(e["disk_bytes"] for e in entries),
    }


def human_duration(seconds: float) -> str:
    """``1 h 05 min``, ``12 min``, ``40 s``."""
    s = round(seconds)
    if s < 60:
        return f"{s} s"
    h, m = divmod(round(s / 60), 60)
    return f"{h} h {m:02d} min" if h else f"{m} min"


def human_bytes(n: float) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} B"


# -- progress: done, failed, pending -----------------------------------------------------------
def study_from(ref: str | Path) -> Study:
    """A study from its params file, or by name from the parameters its catalog recorded."""
    p = Path(ref)
    if p.suffix in (".yaml", ".yml") or p.is_file():
        return load_study(p)
    from .store import Store, default_url

    db = paths.catalog_file(str(ref))
    if not db.is_file():
        raise ParamsError(
            f"study '{ref}' has no catalog ({db}); give its params file instead "
            "(tibench runs PARAMS) or set --data-dir"
        )
    df = Store(default_url(str(ref))).read("studies", str(ref))
    if not len(df):
        raise ParamsError(f"{db}: no parameters recorded for study '{ref}'")
    return parse_study(json.loads(df["params_json"].iloc[0]), f"{db} (study '{ref}')")


_OK = "ok"


def progress(study: Study) -> pd.DataFrame:
    """One row per phase × arm: ``phase, arm, unit, planned, done, failed, pending``.

    ``done`` counts what the catalog holds as measured and good, ``failed`` what it holds as
    failed (or degenerate, or timed out), ``pending`` what the plan has and the catalog does not.
    """
    from .store import Store, default_url

    url = study.results_url or default_url(study.study)
    # a study that never ran has no catalog: read an empty one rather than create its folder
    fresh = url.startswith("sqlite:///") and not Path(url[len("sqlite:///") :]).is_file()
    store = Store("sqlite://" if fresh else url)
    rows: list[dict] = []

    def add(phase, arm, unit, planned, done, failed):
        pending = max(planned - done - failed, 0) if planned is not None else 0
        rows.append(
            {
                "phase": phase,
                "arm": arm,
                "unit": unit,
                "planned": planned,
                "done": done,
                "failed": failed,
                "pending": pending,
            }
        )

    for phase in ordered_phases(study):
        registry.get(phase).progress(study, store, add)
    return pd.DataFrame(
        rows, columns=["phase", "arm", "unit", "planned", "done", "failed", "pending"]
    )


def environment_progress(study: Study, store, add) -> None:
    phase = "environment"
    have = set(store.read("environment", study.study)["arm"])
    for a in phase_arms(study, phase):
        add(phase, a, "captures", 1, int(a in have), 0)


def prepare_progress(study: Study, store, add) -> None:
    phase = "prepare"
    steps = store.read("prepare_steps", study.study)
    if len(steps):  # the ycsb phase's own load/verify steps are not sysbench's prepare
        steps = steps[~steps["step"].str.startswith("ycsb_")]
    for a in phase_arms(study, phase):
        mine = steps[steps["arm"] == a] if len(steps) else steps
        bad = int(len(mine) and (mine["status"] == "failed").any())
        add(phase, a, "data sets", 1, int(len(mine) > 0 and not bad), bad)


def compare_progress(study: Study, store, add) -> None:
    done = paths.phase_results(study.study, "compare").is_file()
    add("compare", "", "tables", 1, int(done), 0)


def sweep_progress(study: Study, store, add) -> None:
    _runs_progress(study, store, "sweep", add)


def numa_progress(study: Study, store, add) -> None:
    _runs_progress(study, store, "numa", add)


def dm_progress(study: Study, store, add) -> None:
    _runs_progress(study, store, "dm", add)


def ycsb_progress(study: Study, store, add) -> None:
    _runs_progress(study, store, "ycsb", add)


def tpch_scaling_progress(study: Study, store, add) -> None:
    _tpch_progress(study, store, add)


def sweep_specs(study: Study, store) -> list:
    """The sweep's planned runs: with adaptive repeats, the rounds decided so far and the next."""
    if study.adaptive is not None:
        from .sweep import adaptive_specs

        return adaptive_specs(study, store.runs(study.study, phase="sweep"))
    from .sweep import plan

    return plan(study)


def numa_specs(study: Study, store) -> list:
    from .numa import plan

    return plan(study)


def dm_specs(study: Study, store) -> list:
    from .dm.plan import plan

    return plan(study)


def ycsb_specs(study: Study, store) -> list:
    from .ycsb.phase import plan

    return plan(study)


def _runs_progress(study: Study, store, phase: str, add) -> None:
    specs = registry.get(phase).planned_runs(study, store)
    runs = store.runs(study.study, phase=phase)
    status = dict(zip(runs["run_key"], runs["status"], strict=True)) if len(runs) else {}
    for a in dict.fromkeys(s.arm for s in specs):
        keys = [s.run_key for s in specs if s.arm == a]
        done = sum(status.get(k) == _OK for k in keys)
        failed = sum(k in status and status[k] != _OK for k in keys)
        add(phase, a, "runs", len(keys), done, failed)


def _tpch_progress(study: Study, store, add) -> None:
    p = study.tpch_scaling
    q = store.read("tpch_queries", study.study)
    embedded = study.is_embedded()
    for a in phase_arms(study, "tpch_scaling"):
        if embedded:
            from .tpch.phase import arm_cores

            streams = arm_cores(a)
        else:
            streams = p.streams
        planned = sum(
            len(p.queries) * p.repeats * (streams if m == "throughput" else 1) for m in p.modes
        )
        mine = q[(q["arm"] == a) & (q["repeat"] > 0)] if len(q) else q
        done = int((mine["status"] == _OK).sum()) if len(mine) else 0
        add("tpch_scaling", a, "queries", planned, done, len(mine) - done)
