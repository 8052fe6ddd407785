"""One phase registry: every list of phases reads it, phase functions take explicit keywords."""

from __future__ import annotations

import inspect

import pytest

from tibenchlib import paths, phases, registry, studyplan
from tibenchlib.notebook import PHASE_NOTEBOOKS
from tibenchlib.params import PHASES, parse_study


def test_every_list_of_phases_is_the_registry():
    assert PHASES == registry.NAMES == tuple(phases.PHASE_FUNCS) == tuple(PHASE_NOTEBOOKS)
    for p in registry.PHASES:
        assert phases.PHASE_FUNCS[p.name] is p.function
        assert (paths.notebooks_dir() / p.notebook).is_file(), p.notebook


@pytest.mark.parametrize("name", registry.NAMES)
def test_phase_functions_take_exactly_the_explicit_keywords(name):
    sig = inspect.signature(inspect.unwrap(registry.get(name).function))
    kinds = {p.kind for p in sig.parameters.values()}
    assert (
        inspect.Parameter.VAR_KEYWORD not in kinds and inspect.Parameter.VAR_POSITIONAL not in kinds
    )
    kw = [n for n, p in sig.parameters.items() if p.kind == inspect.Parameter.KEYWORD_ONLY]
    assert tuple(kw) == registry.PHASE_KEYWORDS


def test_a_mistyped_keyword_raises_instead_of_being_dropped():
    study = parse_study({"study": "reg"})
    with pytest.raises(TypeError, match="phase 'compare': unknown keyword.* rdo"):
        phases.run_phase(study, "compare", rdo=True)
    with pytest.raises(TypeError, match="lang"):
        phases.compare(study, lang="zh")
    with pytest.raises(ValueError, match=r"unknown phase 'swep' \(phases: environment, prepare"):
        registry.get("swep")


def test_dry_run_covers_every_phase_from_the_registry():
    study = parse_study({"study": "reg", "numa": {"policies": ["node:0"]}})
    plan = studyplan.dry_run(study, list(registry.NAMES))
    assert [e["phase"] for e in plan["phases"]] == list(registry.NAMES)
    for e in plan["phases"]:
        assert e["eta_s"] >= 0 and e["disk_bytes"] >= 0 and e["note"], e
    sweep = next(e for e in plan["phases"] if e["phase"] == "sweep")
    assert sweep["runs"] == len(plan["runs"]) > 0
    assert studyplan.phase_arms(study, "numa")[0] == "unbound"
    assert studyplan.phase_arms(study, "sweep") == [a.label for a in study.arms]
