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


@pytest.mark.parametrize("name", registry.NAMES)
def test_every_phase_entry_resolves_all_its_refs(name):
    p = registry.get(name)
    for field in ("function_ref", "estimate_ref", "stored_ref", "results_ref", "progress_ref"):
        assert getattr(p, field), f"{name}: {field} is empty"
    for field, ref in p.refs.items():
        module, sep, attr = ref.partition(":")
        assert sep and module and attr, f"{name}: {field} '{ref}' is not module:function"
        assert callable(registry._resolve(ref)), f"{name}: {field} '{ref}'"
    assert p.title("en") and p.title("zh"), name
    assert p.title("zh") != p.title("en") or p.title("en").replace("-", "").isalnum()


def test_run_counting_phases_plan_their_runs_and_others_do_not_pretend():
    study = parse_study({"study": "reg"})
    for p in registry.PHASES:
        if p.plan_ref is None:
            with pytest.raises(ValueError, match=f"phase '{p.name}' has no planned runs"):
                p.planned_runs(study, None)


#: Where a phase genuinely needs its own code outside the registry: (module, phase) → count.
_OWN_CODE = {
    # compare never measures: it is computed from the sweep's runs, and says so when they are not
    ("tibenchlib/notebook.py", "compare"): 2,
    # the report shows the comparison's tables under the compare phase
    ("tibenchlib/report/html.py", "compare"): 2,
    # the sweep's run keys carry no phase prefix (catalogs written before the other phases)
    ("tibenchlib/sysbench/runner.py", "sweep"): 1,
}


def _phase_name_branches(path) -> list[str]:
    """The phase names a module compares a ``phase`` name or attribute with."""
    import ast

    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        named = any(
            (isinstance(s, ast.Name) and "phase" in s.id)
            or (isinstance(s, ast.Attribute) and "phase" in s.attr)
            for s in sides
        )
        if not named:
            continue
        for s in sides:
            consts = s.elts if isinstance(s, ast.Tuple | ast.List | ast.Set) else [s]
            for c in consts:
                if isinstance(c, ast.Constant) and c.value in registry.NAMES:
                    found.append(c.value)
    return found


def test_no_module_outside_the_registry_branches_on_a_phase_name():
    from collections import Counter
    from pathlib import Path

    import tibenchlib

    root = Path(tibenchlib.__file__).parent
    seen = Counter()
    for path in sorted(root.rglob("*.py")):
        rel = f"tibenchlib/{path.relative_to(root).as_posix()}"
        if rel == "tibenchlib/registry.py":
            continue
        for name in _phase_name_branches(path):
            seen[(rel, name)] += 1
    extra = {k: n for k, n in seen.items() if n > _OWN_CODE.get(k, 0)}
    assert not extra, f"branches on a phase name outside the registry: {extra}"


def test_the_branch_finder_sees_a_chain(tmp_path):
    src = tmp_path / "m.py"
    src.write_text(
        'def f(phase, s):\n    if phase == "dm":\n        return 1\n'
        '    if s.phase in ("numa", "tpcc"):\n        return 2\n',
        encoding="utf-8",
    )
    assert sorted(_phase_name_branches(src)) == ["dm", "numa", "tpcc"]
