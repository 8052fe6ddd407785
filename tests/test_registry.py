"""One phase registry of phase objects: every list of phases reads it, each phase is one object
in its own module, run the same way by ``run_phase``."""

from __future__ import annotations

import ast
import inspect

import pandas as pd
import pytest

from tibenchlib import paths, phasenames, phases, registry, studyplan
from tibenchlib.findings import phase_findings
from tibenchlib.notebook import PHASE_NOTEBOOKS
from tibenchlib.params import PHASES, parse_study
from tibenchlib.phase import Phase, RunContext
from tibenchlib.store import Store


def test_every_list_of_phases_is_the_registry():
    assert PHASES == phasenames.NAMES == registry.NAMES == tuple(PHASE_NOTEBOOKS)
    for p in registry.PHASES:
        assert isinstance(p, Phase), p
        assert (paths.notebook_file(p.notebook)).is_file(), p.notebook
        assert registry.get(p.name) is p


@pytest.mark.parametrize("name", registry.NAMES)
def test_each_phase_object_lives_in_its_own_module(name, tmp_path, monkeypatch):
    monkeypatch.setenv("TIBENCH_DATA", str(tmp_path))  # the findings open the catalog
    p = registry.get(name)
    module = type(p).__module__
    assert module.startswith("tibenchlib.") and module not in ("tibenchlib.phase",)
    # the methods a phase must give are its own, not the base class's placeholders
    for method in ("estimate", "results"):
        assert getattr(type(p), method) is not getattr(Phase, method), f"{name}: {method}"
    # a phase runs with its own method, or the base's around its module's measuring function
    assert type(p).run is not Phase.run or p.measure_runs is not None, f"{name}: run"
    assert p.title("en") and p.title("zh"), name
    assert p.title("zh") != p.title("en") or p.title("en").replace("-", "").isalnum()
    # nothing measured: nothing found
    assert p.summary and phase_findings(parse_study({"study": "reg"}), p) == []


def test_the_registry_holds_objects_not_strings():
    src = inspect.getsource(registry)
    assert '"tibenchlib.' not in src and "import_module" not in src


def test_run_phase_takes_exactly_the_explicit_keywords():
    sig = inspect.signature(phases.run_phase)
    kinds = {p.kind for p in sig.parameters.values()}
    assert (
        inspect.Parameter.VAR_KEYWORD not in kinds and inspect.Parameter.VAR_POSITIONAL not in kinds
    )
    kw = [n for n, p in sig.parameters.items() if p.kind == inspect.Parameter.KEYWORD_ONLY]
    assert tuple(kw) == ("yes", "arms", "redo", "progress")


def test_a_mistyped_keyword_raises_instead_of_being_dropped():
    study = parse_study({"study": "reg"})
    with pytest.raises(TypeError, match="rdo"):
        phases.run_phase(study, "compare", rdo=True)
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


def test_run_counting_phases_plan_their_runs_and_others_do_not_pretend():
    study = parse_study({"study": "reg", "numa": {"policies": ["node:0"]}})
    store = Store("sqlite://")
    counting = {p.name for p in registry.PHASES if p.plan(study, store) is not None}
    assert counting == {"sweep", "numa", "dm", "ycsb", "tpcc"}
    for name in counting:
        specs = registry.get(name).plan(study, store)
        assert specs and all(s.run_key and s.arm for s in specs), name


def test_progress_of_an_empty_catalog_lists_every_phase_as_pending():
    study = parse_study({"study": "reg", "phases": list(registry.NAMES)})
    df = studyplan.progress(study)
    assert set(df["phase"]) == set(registry.NAMES)
    assert (df["done"] == 0).all() and (df["failed"] == 0).all()
    sweep = df[df["phase"] == "sweep"]
    assert sweep["planned"].sum() == len(registry.get("sweep").plan(study, Store("sqlite://")))


def test_run_phase_runs_compare_in_one_context_and_writes_its_results(monkeypatch, tmp_path):
    """The generic run: the phase's ``run`` gets one context whose store is the one it reads;
    its rows are written as the phase's result files."""
    monkeypatch.setenv("TIBENCH_DATA", str(tmp_path))
    study = parse_study({"study": "reg"})
    seen = []

    class Echo(Phase):
        name = "compare"

        def run(self, ctx, *, arms=None, redo=False):
            seen.append(ctx)
            ctx.runs = pd.DataFrame(
                {"run_key": ["a", "b"], "status": ["ok", "ok"], "error": [None, None]}
            )
            return pd.DataFrame({"arm": ["x"], "value": [1.5]})

    monkeypatch.setitem(registry._BY_NAME, "compare", Echo())
    df = phases.run_phase(study, "compare", progress=False)
    (ctx,) = seen
    assert isinstance(ctx, RunContext) and isinstance(ctx.store, Store)
    assert ctx.private_dir == paths.private_dir("reg") and ctx.progress is False
    assert phases.read_results(study, "compare") == [{"arm": "x", "value": 1.5}]
    assert pd.read_csv(paths.phase_results("reg", "compare", "csv")).equals(df)


def test_run_phase_applies_the_failed_runs_rule_to_the_runs_the_phase_measured(
    monkeypatch, tmp_path
):
    monkeypatch.setenv("TIBENCH_DATA", str(tmp_path))
    study = parse_study({"study": "reg"})

    class Failing(Phase):
        name = "sweep"

        def run(self, ctx, *, arms=None, redo=False):
            ctx.runs = pd.DataFrame(
                {
                    "run_key": ["a", "b", "c"],
                    "status": ["failed", "failed", "ok"],
                    "error": ["boom", "boom", None],
                    "log_path": ["l", "l", "l"],
                }
            )
            return pd.DataFrame({"arm": ["x"]})

    monkeypatch.setitem(registry._BY_NAME, "sweep", Failing())
    with pytest.raises(phases.PhaseFailed, match="sweep: 2 of 3 runs failed.*first: a: boom"):
        phases.run_phase(study, "sweep", progress=False)
    # the rows are written before the rule is applied: nothing measured is lost
    assert phases.read_results(study, "sweep") == [{"arm": "x"}]


@pytest.mark.parametrize(
    "failed,n,fails", [(1, 5, False), (1, 6, False), (2, 9, True), (0, 3, False)]
)
def test_the_failed_runs_rule_is_more_than_a_fifth_of_the_runs(failed, n, fails):
    runs = pd.DataFrame({"status": ["failed"] * failed + ["ok"] * (n - failed)})
    assert phases.too_many_failed(runs) is fails
    assert phases.too_many_failed(pd.DataFrame()) is False


def test_a_phase_that_hands_over_no_runs_is_held_to_the_rule_on_the_catalogs(monkeypatch, tmp_path):
    """A phase whose ``run`` leaves ``ctx.runs`` unset (TPC-H blocks) had no failed-runs rule:
    its failed runs in the catalog now fail it past the limit, as the notebook's check does."""
    from tibenchlib.record import RunRecord

    monkeypatch.setenv("TIBENCH_DATA", str(tmp_path))
    study = parse_study({"study": "reg"})

    class Blocks(Phase):
        name = "tpch_scaling"

        def __init__(self, statuses):
            self.statuses = statuses

        def run(self, ctx, *, arms=None, redo=False):
            for i, st in enumerate(self.statuses):
                ctx.store.record_run(
                    RunRecord(
                        study="reg", run_key=f"b{i}", phase=self.name, arm="x", seq=i,
                        status=st, error=None if st == "ok" else "the server stopped answering",
                    )
                )  # fmt: skip
            return pd.DataFrame({"arm": ["x"]})

    monkeypatch.setitem(registry._BY_NAME, "tpch_scaling", Blocks(["failed", "ok", "ok"]))
    with pytest.raises(phases.PhaseFailed, match="tpch_scaling: 1 of 3 runs failed.*first: b0"):
        phases.run_phase(study, "tpch_scaling", progress=False)
    assert phases.failed_runs_verdict(study, "tpch_scaling")[0] is True
    monkeypatch.setitem(registry._BY_NAME, "tpch_scaling", Blocks(["ok"] * 3))
    phases.run_phase(study, "tpch_scaling", progress=False)  # the failed block run again
    assert phases.failed_runs_verdict(study, "tpch_scaling") == (False, None)


def test_phase_notebooks_apply_the_librarys_failed_runs_rule():
    """A notebook's checks assert the library's rule (``failed_runs_verdict``), never a share
    of their own: a notebook that failed a phase the library passed ended ``tibench run``
    with exit 1 where ``--in-process`` ended with 0."""
    import json
    import re

    for phase, nb in PHASE_NOTEBOOKS.items():
        cells = json.loads((paths.notebooks_dir() / nb).read_text())["cells"]
        code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
        assert not re.search(r"ok\.mean\(\)|runs failed or cannot be trusted", code), nb
        if registry.get(phase).measures and phase in (
            "sweep",
            "numa",
            "tpch_scaling",
            "ycsb",
            "tpcc",
        ):
            assert f'failed_runs_verdict(session.study, "{phase}")' in code, nb


#: Where code outside a phase's own module names the phase: (module, phase) → count, each with
#: its reason.
_OWN_CODE = {
    # compare never measures: it is computed from the sweep's runs, and says so when they are not
    ("tibenchlib/notebook.py", "compare"): 2,
    # the sweep's run keys carry no phase prefix (catalogs written before the other phases)
    ("tibenchlib/sysbench/runner.py", "sweep"): 1,
    # the A/B comparison and adaptive repeats are defined over the sweep's runs only: a catalog
    # holding other phases' runs must not enter their statistics
    ("tibenchlib/compare.py", "sweep"): 2,
    ("tibenchlib/adaptive.py", "sweep"): 2,
    # a data set's step named "prepare" (sysbench's own word for loading), translated for the
    # report's step column: a step, not the phase
    ("tibenchlib/report/tables.py", "prepare"): 1,
    # the public API's map of names to submodules (``tibenchlib.numa``...), not phases
    ("tibenchlib/__init__.py", "compare"): 1,
    ("tibenchlib/__init__.py", "numa"): 1,
    ("tibenchlib/__init__.py", "ycsb"): 1,
    ("tibenchlib/__init__.py", "tpcc"): 1,
    # the host capture's NUMA topology collector, not the phase
    ("tibenchlib/envcapture/host.py", "numa"): 1,
    # the same section of a client host's capture (read over SSH)
    ("tibenchlib/hosts/capture.py", "numa"): 1,
}


def _own_place(phase) -> str:
    """Where a phase's own code lives: its package (``tibenchlib/dm/``) or its module."""
    parts = type(phase).__module__.split(".")[1:]
    return "tibenchlib/" + ("/".join(parts[:-1]) + "/" if len(parts) > 1 else parts[0] + ".py")


def _names_phase(node) -> bool:
    """A ``phase`` name, attribute or subscript (``runs["phase"]``)."""
    if isinstance(node, ast.Name):
        return "phase" in node.id
    if isinstance(node, ast.Attribute):
        return "phase" in node.attr
    if isinstance(node, ast.Subscript):
        key = node.slice
        return isinstance(key, ast.Constant) and isinstance(key.value, str) and "phase" in key.value
    return False


def _phase_name_branches(path) -> list[str]:
    """The phase names a module compares a phase name, attribute or column with, and those it
    uses as the keys of a dict."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Dict):
            found += [
                k.value
                for k in node.keys
                if isinstance(k, ast.Constant) and k.value in registry.NAMES
            ]
            continue
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        if not any(_names_phase(s) for s in sides):
            continue
        for s in sides:
            consts = s.elts if isinstance(s, ast.Tuple | ast.List | ast.Set) else [s]
            for c in consts:
                if isinstance(c, ast.Constant) and c.value in registry.NAMES:
                    found.append(c.value)
    return found


def test_no_module_outside_a_phase_branches_on_its_name():
    from collections import Counter
    from pathlib import Path

    import tibenchlib

    own = {p.name: _own_place(p) for p in registry.PHASES}
    root = Path(tibenchlib.__file__).parent
    seen = Counter()
    for path in sorted(root.rglob("*.py")):
        rel = f"tibenchlib/{path.relative_to(root).as_posix()}"
        for name in _phase_name_branches(path):
            if not rel.startswith(own[name]):
                seen[(rel, name)] += 1
    extra = {k: n for k, n in seen.items() if n > _OWN_CODE.get(k, 0)}
    assert not extra, f"names a phase outside its own module: {extra}"
    stale = {k: n for k, n in _OWN_CODE.items() if seen[k] < n}
    assert not stale, f"exceptions no longer needed: {stale}"


def test_the_branch_finder_sees_chains_columns_and_dict_keys(tmp_path):
    src = tmp_path / "m.py"
    src.write_text(
        'def f(phase, s, runs):\n    if phase == "dm":\n        return 1\n'
        '    if s.phase in ("numa", "tpcc"):\n        return 2\n'
        '    tpcc = runs["phase"] == "ycsb"\n'
        '    units = {"sweep": "TPS", "other": 1}\n'
        '    return runs["workload"] == "tpcc"\n',
        encoding="utf-8",
    )
    assert sorted(_phase_name_branches(src)) == ["dm", "numa", "sweep", "tpcc", "ycsb"]
