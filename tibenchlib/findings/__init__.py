"""A study's findings, as data: what each phase's analysis says, rendered by the report, the
notebooks and ``tibench findings`` alike.

:data:`PHASE_FINDINGS` maps a phase's name to ``f(study, store) -> list[Finding]``: each reads the
phase's rows from the catalog and hands them to a pure function of this package (DataFrames in,
findings out). :func:`study_findings` runs them all; :func:`save` writes
``results/findings.json``.
"""

from __future__ import annotations

import dataclasses
import json
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from .. import paths
from ..compare import compare_arms_table
from ..compare_phase import COMPARE
from ..dm.analysis import recommendation, result_rows, unit_rows
from ..dm.phase import DM, planned_runs
from ..numa import NUMA, analyze
from ..phase import Phase
from ..registry import PHASES, get
from ..report.diagnosis import study_diagnosis
from ..report.words import LANGS, say
from ..rounds import round_effects
from ..stats import _valid_mask, summarize_cells
from ..store import Store
from ..sweep import SWEEP
from ..tpcc.phase import TPCC, summarize
from ..tpch import passes, scaling
from ..tpch.phase import TPCH_SCALING, arm_cores, arm_labels, runs_frame
from ..ycsb.phase import YCSB
from . import caveats as C
from .compare import compare_findings, rounds_needed
from .dm import dm_findings
from .numa import numa_findings, numa_on_host
from .peak import peak_findings
from .record import Caveat, Figure, Finding
from .render import (
    NOTE_HEAD,
    caveat_marks,
    caveat_notes,
    figure_text,
    impossible,
    marked,
    render,
    render_all,
    terminal_text,
)
from .sweep import round_findings, sweep_findings
from .tpch import tpch_findings

__all__ = [
    "PHASE_FINDINGS",
    "Caveat",
    "Figure",
    "Finding",
    "caveat_marks",
    "caveat_notes",
    "compare_findings",
    "dm_findings",
    "figure_text",
    "impossible",
    "load",
    "markdown",
    "numa_findings",
    "numa_on_host",
    "peak_findings",
    "phase_findings",
    "render",
    "render_all",
    "round_findings",
    "rounds_needed",
    "save",
    "show",
    "study_findings",
    "sweep_findings",
    "terminal_text",
    "tpch_findings",
]


def _quiet(fn, *a, **kw):
    # curve fits and small-n intervals raise numpy warnings that the findings already carry
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*a, **kw)


def _with(f: Finding, caveats: Iterable[Caveat | None], **changes) -> Finding:
    """``f`` with ``caveats`` added (None left out, each key once) and any field changed."""
    have = {c.key for c in f.caveats}
    new = [c for c in caveats if c is not None and c.key not in have]
    return dataclasses.replace(f, caveats=(*f.caveats, *new), **changes)


def _arm_caveat(study, label: str) -> Caveat | None:
    arm = next((a for a in study.arms if a.label == label), None)
    if arm is None:
        return None
    kind = arm.target.kind if arm.target is not None else None
    return C.arm_meaning(arm.label, arm.server_options, arm.cpu_binding, kind)


def _arms_said(study, found: list[Finding]) -> list[Finding]:
    """Each finding that names an arm (``values["arm"]``), with what that arm means."""
    return [_with(f, [_arm_caveat(study, str(f.values.get("arm", "")))]) for f in found]


def _sweep(study, store: Store) -> list[Finding]:
    runs = store.runs(study.study, phase="sweep")
    if not len(runs):
        return []
    out = _arms_said(study, sweep_findings(_quiet(study_diagnosis, study, lang="en")))
    ok = runs[_valid_mask(runs, "tps")]
    return out + (round_findings(_quiet(round_effects, ok)) if len(ok) else [])


def _compare(study, store: Store) -> list[Finding]:
    runs = store.runs(study.study, phase="sweep")
    if not len(runs) or study.compare is None or len(study.arms) < 2:
        return []  # one arm: nothing to compare
    iv = store.intervals(study.study, runs["run_key"])
    cmp = _quiet(compare_arms_table, runs, study, intervals=iv)
    return [
        _with(
            f, [_arm_caveat(study, f.values.get("base")), _arm_caveat(study, f.values.get("cand"))]
        )
        for f in compare_findings(cmp, study.compare.delta_pct)
    ]


def _numa(study, store: Store) -> list[Finding]:
    if not len(store.runs(study.study, phase="numa")):
        return []
    delta = study.compare.delta_pct if study.compare is not None else 2.0
    found = numa_findings(_quiet(analyze, study, store), delta)
    nodes, host_cpus = _numa_host(store.environment_captures(study.study))
    binds = store.read("bindings", study.study)
    seen = {}
    if len(binds):
        for r in binds.dropna(subset=["cpus_allowed"]).itertuples():
            seen[r.policy] = r.cpus_allowed
    return numa_on_host(found, nodes, host_cpus, seen)


def _numa_host(captures: dict) -> tuple[int | None, int | None]:
    """(NUMA nodes, logical CPUs) of the measured host, from its environment capture."""
    for cap in captures.values():
        host = cap.get("host") if isinstance(cap, dict) else None
        if not isinstance(host, dict):
            continue
        numa = host.get("numa") if isinstance(host.get("numa"), dict) else {}
        cpu = host.get("cpu") if isinstance(host.get("cpu"), dict) else {}
        nodes, logical = numa.get("node_count"), cpu.get("logical")
        if isinstance(nodes, int) or isinstance(logical, int):
            return (
                nodes if isinstance(nodes, int) else None,
                logical if isinstance(logical, int) else None,
            )
    return None, None


def _tpch(study, store: Store) -> list[Finding]:
    runs = runs_frame(store, study)
    if not len(runs):
        return []
    order = [a for a in arm_labels(study) if a in set(runs["arm"])]
    units = {a: float(arm_cores(a)) for a in order} if study.target.kind == "embedded" else None
    r = runs[~runs["warmup"]]
    summary = _quiet(scaling.query_summary, r, order, units=units)
    overall = _quiet(scaling.overall_summary, r, order, units=units)
    compared = _quiet(passes.compare_passes, passes.pass_table(r, order), order)
    return tpch_findings(summary, overall, order[0], compared, stand_in=units is not None)


def _dm(study, store: Store) -> list[Finding]:
    if not len(store.read("dm_runs", study.study)):
        return []
    units = unit_rows(planned_runs(store, study))
    found = dm_findings(_quiet(result_rows, units), _quiet(recommendation, units))
    if study.dm.master_url:  # a real DM cluster: nothing stands in
        return found
    return [_with(f, [C.dm_stand_in(str(f.values.get("unit", "")))]) for f in found]


def _ycsb(study, store: Store) -> list[Finding]:
    runs = store.runs(study.study, phase="ycsb")
    if not len(runs):
        return []
    # the throughput cells the notebook's table shows (report.ycsb.cells), without the latency
    c = _quiet(summarize_cells, runs, metric="tps", keys=["workload", "arm", "threads"])
    c["workload"] = [f"YCSB {w}" for w in c["workload"]]  # workload "a" alone says little
    return _arms_said(study, peak_findings(c, "ycsb", "ops/s", "ycsb: throughput table"))


def _tpcc_cell(workload: str, warehouses: int, lang: str) -> str:
    mode = say("f_tpcc_wait" if workload == "tpcc_wait" else "f_tpcc_nowait", lang)
    return say(
        "f_tpcc_cell_one" if warehouses == 1 else "f_tpcc_cell", lang, mode=mode, wh=warehouses
    )


def _tpcc(study, store: Store) -> list[Finding]:
    rows = _quiet(summarize, study, store)
    if not len(rows):
        return []
    c = pd.DataFrame(
        {
            # said in each language: the workload's names (tpcc, tpcc_wait) are internal
            "workload": [
                {lg: _tpcc_cell(w, int(n), lg) for lg in LANGS}
                for w, n in zip(rows["workload"], rows["warehouses"], strict=True)
            ],
            "arm": rows["arm"],
            "threads": rows["threads"],
            "n": rows["n"],
            "mean": rows["tpmc"],
            "ci_low": rows["tpmc_ci_low"],
            "ci_high": rows["tpmc_ci_high"],
        }
    )
    t = study.tpcc
    cells = {
        _tpcc_cell(w, int(n), "en"): (w == "tpcc_wait", int(n))
        for w, n in zip(rows["workload"], rows["warehouses"], strict=True)
    }
    tools = dict(zip(rows["arm"], rows["tool"], strict=True))
    out = []
    for f in peak_findings(c, "tpcc", "tpmC", "tpcc: tpmC table"):
        wait, wh = cells.get(f.values["workload"]["en"], (False, 1))
        tool = str(tools.get(f.values["arm"], "sysbench"))
        lua = tool == "sysbench"
        cav = [C.tpcc_not_audited(tool, t.items if lua else None, t.customers if lua else None)]
        if wait and t.wait_scale != 1:
            tpmc = f.figure.estimate if f.figure is not None else None
            cav.insert(0, C.tpcc_wait_scaled(t.wait_scale, tpmc, wh))
        out.append(_with(f, cav))
    return _arms_said(study, out)


#: Each phase's findings from the catalog, by phase object (phases without findings absent):
#: what :func:`phase_findings` returns for a phase.
PHASE_FINDINGS: dict[Phase, Callable[..., list[Finding]]] = {
    SWEEP: _sweep,
    COMPARE: _compare,
    NUMA: _numa,
    TPCH_SCALING: _tpch,
    DM: _dm,
    YCSB: _ycsb,
    TPCC: _tpcc,
}


def phase_findings(study, phase: Phase, store: Store | None = None) -> list[Finding]:
    """One phase's findings (empty for a phase with none, or nothing measured): what the phase
    object's entry in :data:`PHASE_FINDINGS` returns (the findings ask the phase object; the
    phase knows nothing of the findings)."""
    fn = PHASE_FINDINGS.get(phase)
    return fn(study, store or Store.for_study(study)) if fn else []


def study_findings(study, store: Store | None = None) -> dict[str, list[Finding]]:
    """Every phase's findings through :func:`phase_findings`, in the study's
    phase order, by phase name (phases without findings left out)."""
    store = store or Store.for_study(study)
    return {p.name: phase_findings(study, p, store) for p in PHASES if p in PHASE_FINDINGS}


def save(study_name: str, found: dict[str, list[Finding]]) -> Path:
    """Write ``results/findings.json``: ``{phase: [finding, …]}`` with each finding's sentence
    in en and zh beside its data."""
    out = paths.findings_file(study_name)
    out.parent.mkdir(parents=True, exist_ok=True)
    data = {
        p: [{**f.to_dict(), "text": {lg: render(f, lg) for lg in ("en", "zh")}} for f in fs]
        for p, fs in found.items()
    }
    out.write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")
    return out


def load(study_name: str) -> dict[str, list[Finding]]:
    """Read ``results/findings.json`` back as records."""
    data = json.loads(paths.findings_file(study_name).read_text(encoding="utf-8"))
    return {
        p: [Finding.from_dict({k: v for k, v in d.items() if k != "text"}) for d in fs]
        for p, fs in data.items()
    }


def markdown(found: list[Finding], lang: str = "en") -> str:
    """One phase's findings as a notebook shows them (Markdown): a heading, one item per
    finding marked with its notes, then the notes (what stands in or is scaled)."""
    notes = caveat_notes(found)
    lines = [say("f_phase_head", lang), "", *(f"- {marked(f, notes, lang)}" for f in found)]
    if notes:
        head = NOTE_HEAD[lang]
        # two spaces end a Markdown line: one note per line
        lines += ["", *(f"{head.format(n=i)}{c.say(lang)}  " for i, c in enumerate(notes, 1))]
    return "\n".join(lines)


def show(session) -> list[Finding]:
    """Display a notebook's phase's findings, one sentence each in the session's language, as
    the report opens with them; returns them (for the notebook's checks)."""
    # import inside: IPython is there only within a notebook kernel
    from IPython.display import Markdown, display

    lang = session.lang
    found = phase_findings(session.study, get(session.phase), Store.for_study(session.study))
    text = markdown(found, lang) if found else say("f_phase_none", lang)
    display(Markdown(text))
    return found
