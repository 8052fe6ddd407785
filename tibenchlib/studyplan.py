"""A study as a whole: its phases in order, the arms each phase knows, what a run would cost
(the dry run) and what is done, failed and pending (``tibench runs``).

Each phase's plan, estimate and progress are its object's (:mod:`tibenchlib.registry`); this
module only asks them in phase order.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from . import paths, registry
from .params import PHASES, ParamsError, Study, load_study, parse_study
from .store import Store, default_url


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
    return registry.get(phase).arms(study)


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


def embedded_servers(study: Study, phases: list[str]) -> list[str]:
    """The embedded servers a run of ``phases`` may measure on, by name, each once (each
    phase's :meth:`~tibenchlib.phase.Phase.embedded_servers`). A run holds their leases from
    its first phase to its last."""
    names: list[str] = []
    for p in phases:
        names += [n for n in registry.get(p).embedded_servers(study) if n not in names]
    return names


# -- dry run -----------------------------------------------------------------------------------
#: Seconds every phase costs besides its own work: its notebook's kernel starting and importing
#: the library, then the analysis, tables and figures (measured on the demo: 4-6 s a phase on 2
#: idle cores' worth of CPU, 10-15 s on a host at load 10).
PHASE_FIXED_S = 5.0


def estimate_phase(study: Study, phase: str, arms: list[str] | None = None) -> dict:
    """One phase's dry-run entry: ``phase, runs, eta_s, disk_bytes, note`` (the sweep's also
    carries its planned runs under ``specs``), from the phase's estimate in the registry, plus
    :data:`PHASE_FIXED_S`."""
    est = registry.get(phase).estimate(study, arms)
    return {"phase": phase, **est, "eta_s": est["eta_s"] + PHASE_FIXED_S}


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
    # a pipe or a device given as the study (/dev/null) is a params path that load_study refuses
    if p.suffix in (".yaml", ".yml") or p.is_file() or (p.exists() and not p.is_dir()):
        return load_study(p)
    db = paths.catalog_file(str(ref))
    if not db.is_file():
        raise ParamsError(
            f"study '{ref}' has no catalog ({db}); give its params file instead "
            "(tibench runs PARAMS) or set --data-dir"
        )
    store = Store(default_url(str(ref)), reading=True)
    df = store.read("studies", str(ref))
    if not len(df):
        raise ParamsError(f"{db}: no parameters recorded for study '{ref}'")
    params = store.json_value(df["params_json"].iloc[0], f"table studies, study {ref}")
    return parse_study(params, f"{db} (study '{ref}')")


def progress(study: Study) -> pd.DataFrame:
    """One row per phase × arm: ``phase, arm, unit, planned, done, failed, pending``.

    ``done`` counts what the catalog holds as measured and good, ``failed`` what it holds as
    failed (or degenerate, or timed out), ``pending`` what the plan has and the catalog does not.
    """
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
