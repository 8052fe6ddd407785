"""Phase numa on the private server: real runs under verified bindings, rows as documented,
bad policies refused before anything runs."""

from __future__ import annotations

import json

import pytest

from tibenchlib import numa, phases
from tibenchlib.binding import BindingError
from tibenchlib.params import parse_study
from tibenchlib.phase import RunContext
from tibenchlib.store import Store

ISSUE_COLUMNS = [
    "workload", "threads", "baseline_policy", "candidate_policy", "n_baseline", "n_candidate",
    "baseline_tps", "candidate_tps", "improvement_pct", "ci_low_pct", "ci_high_pct", "p_value",
    "p_adjusted", "verdict", "baseline_p95_ms", "candidate_p95_ms", "binding_verified",
    "dips_baseline", "dips_candidate",
]  # fmt: skip


def _study(**numa_kw):
    return parse_study(
        {
            "study": "numa-t",
            "dataset": {"tables": 1, "table_size": 500},
            "numa": {
                "policies": ["unbound", "cpus:0"],
                "workloads": ["oltp_point_select"],
                "threads": [2],
                "repeats": 2,
                "duration_s": 1,
                **numa_kw,
            },
        }
    )


def test_plan_alternates_policies_and_puts_unbound_first():
    s = _study(policies=["cpus:0", "node:0"], repeats=2)
    assert numa.policies(s) == ["unbound", "cpus:0", "node:0"]
    keys = [x.run_key for x in numa.plan(s)]
    # a pre-period run of unbound (never compared), then rounds of every policy once each, in
    # orders balanced for what precedes each
    assert keys[0] == "numa-pre/unbound/oltp_point_select/t2/r0"
    for r in (1, 2):
        assert {x.arm for x in numa.plan(s) if x.repeat == r} == set(numa.policies(s))
    assert len(keys) == 7 and len(set(keys)) == 7
    assert [x.run_key for x in numa.compared_plan(s)] == keys[1:]


@pytest.mark.slow
def test_numa_phase_runs_verifies_and_reports(data_dir, sysbench_bin):
    study = _study()
    rows = phases.run_phase(study, "numa", progress=False)
    assert set(ISSUE_COLUMNS) <= set(rows.columns)
    assert len(rows) == 1
    r = rows.iloc[0]
    assert (r.baseline_policy, r.candidate_policy) == ("unbound", "cpus:0")
    assert (r.n_baseline, r.n_candidate) == (2, 2) and r.binding_verified
    assert r.baseline_tps > 0 and r.candidate_tps > 0
    store = Store.for_study(study)
    b = store.read("bindings", "numa-t")
    assert set(b["policy"]) == {"unbound", "cpus:0"} and b["verified"].all()
    assert b.loc[b["policy"] == "cpus:0", "cpus_allowed"].str.contains("0").all()
    runs = store.runs("numa-t", phase="numa")
    assert len(runs) == 4 and set(runs["arm"]) == {"unbound", "cpus:0"}
    smp = store.read("samples", "numa-t")
    cores = smp[smp["source"] == "server"].merge(runs[["run_key", "arm"]], on="run_key")
    assert (cores.loc[cores["arm"] == "cpus:0", "cores_allowed"] == 1).all()
    mem = numa.memory_table(store, study)
    assert set(mem["when"]) == {"before", "after"}
    rows_json = json.loads((data_dir / "numa-t/results/numa.json").read_text())
    assert rows_json[0]["candidate_policy"] == "cpus:0"
    # run again: nothing re-run
    before = runs.set_index("run_key")["started_at"]
    phases.run_phase(study, "numa", progress=False)
    assert store.runs("numa-t", phase="numa").set_index("run_key")["started_at"].equals(before)


def test_impossible_policy_is_refused_before_any_run(data_dir):
    study = _study(policies=["unbound", "node:7"])
    with pytest.raises(BindingError, match="node 7"):
        phases.run_phase(study, "numa", progress=False)
    assert not len(Store.for_study(study).runs("numa-t"))


def test_real_cluster_needs_one_policy_label():
    s = parse_study({"study": "x", "target": {"kind": "url", "url": "mysql+pymysql://r@h:4000/d"}})
    with pytest.raises(ValueError, match="one policy at a time"):
        numa.run_numa_phase(RunContext.open(s, progress=False, store=Store("sqlite://")))
