"""The notebooks' sections: each leads with the table or figure that answers its question and a
sentence in words, details below (collapsed where long). Each function displays; it returns what
a notebook's checks need."""

from __future__ import annotations

import pandas as pd

from .. import paths
from ..binding import format_cpulist, numa_nodes
from ..envcapture import config_diff as capture_diff
from ..envcapture import environment_tables
from ..findings import render, sweep_findings
from ..notebook import current_lang, run_command, shown_path
from ..numa import cpu_table, memory_table, policies
from ..phases import failed_runs_summary
from ..rounds import round_effects, round_notes
from ..saturation import saturation as find_saturation
from ..stability import dip_events, stability_by_run
from ..stats import summarize_cells, summarize_improvement
from ..steady import steady_state_table
from ..store import Store
from ..sweep import sweep_table
from ..topology import binding_snippet, check_block_cache, topology_instances
from ..tpch import phase as tpch_phase
from ..tpch import scaling as tpch_scaling
from ..warmup import warmup_summary, warmup_table
from . import plots
from . import tables as T
from . import words as W
from .comparison import export as export_tables
from .diagnosis import study_diagnosis
from .display import details, quiet, say, show
from .kubernetes import kubernetes_view
from .scaling import tpch_verdicts
from .tpch_queries import tpch_overall_table, tpch_query_table

# -- 00 environment ----------------------------------------------------------------------------


def environment(session, summary: pd.DataFrame) -> dict:
    """Each arm's server and the client host; the reports' environment tables below."""

    lang = session.lang
    L = T.labels(lang)
    if not len(summary):
        say(W.say("env_none", lang, cmd=session.command))
        return {}
    keep = ["arm", "flavor", "version", "cpu_model", "sockets", "physical_cores",
            "logical_cpus", "numa_nodes", "memory_bytes", "os"]  # fmt: skip
    head = summary[[c for c in keep if c in summary]].copy()
    if "memory_bytes" in head:
        head["memory_bytes"] = [T.fmt_num(x / 2**30, 1) if T._ok(x) else "n/a"
                                for x in head["memory_bytes"]]  # fmt: skip
    head = head.rename(
        columns={
            "arm": L["arm"],
            "flavor": L["flavor"],
            "version": L["version"],
            "memory_bytes": L["memory"],
            "cpu_model": L["cpu"],
            "sockets": L["sockets"],
            "physical_cores": L["cores"],
            "logical_cpus": L["logical_cpus"],
            "numa_nodes": L["numa_nodes"],
            "os": L["os"],
        }  # fmt: skip
    ).astype(str)
    arms = ", ".join(
        W.say("env_arm_runs", lang, arm=r.arm, flavor=r.flavor, version=r.version)
        for r in summary.itertuples()
    )
    say(W.say("env_captured", lang, n=len(summary), arms=arms))
    show(head.replace({"None": "n/a", "nan": "n/a"}), lang)
    captures = Store.for_study(session.study).environment_captures(session.study.study)
    for arm in session.arms:
        if arm not in captures:
            continue
        say(W.say("env_arm", lang, arm=arm))
        for name, table in environment_tables(captures[arm], lang).items():
            what = W.say(f"env_{name}", lang) if f"env_{name}" in W.SENTENCES else name
            details(W.say("rows", lang, what=what, n=len(table)), table, lang=lang)
    return captures


def kubernetes(session, captures: dict) -> dict:
    """Each arm's TiDB Operator cluster (``target.kubernetes``): a sentence naming it, its
    components, its pods collapsed; nothing for an arm without one. Returns the views by arm."""
    lang = session.lang
    views = {
        a: v for a in session.arms if a in captures and (v := kubernetes_view(captures[a], lang))
    }
    for arm, v in views.items():
        say(W.say("env_arm", lang, arm=arm) + "\n\n" + v.sentence)
        for line in v.unavailable:
            say(line)
        if len(v.components):
            show(v.components, lang)
        if len(v.pods):
            details(W.say("env_kube_pods_rows", lang, n=len(v.pods)), v.pods, lang=lang)
    return views


# -- 01 prepare --------------------------------------------------------------------------------
def prepare(session, steps: pd.DataFrame) -> None:
    """Time per arm and step, then every step."""
    lang = session.lang
    L = T.labels(lang)
    if not len(steps):
        say(W.say("prep_none", lang, cmd=session.command))
        return
    ds = session.study.dataset
    t = steps.groupby(["arm", "step"], as_index=False, sort=False).agg(
        seconds=("seconds", "sum"), status=("status", lambda s: ", ".join(sorted(set(s))))
    )
    t = T.sort_by_arm(t, "arm", session.arms)
    bad = steps[~steps["status"].isin(["ok", "skipped"])]
    say(
        W.say(
            "prep_summary",
            lang,
            tables=ds.tables,
            rows=ds.table_size,
            arms=t["arm"].nunique(),
            seconds=T.fmt_num(steps["seconds"].sum()),
        )
        + (W.say("prep_ok", lang) if not len(bad) else W.say("prep_bad", lang, n=len(bad)))
    )
    show(
        pd.DataFrame(
            {
                L["arm"]: t["arm"],
                L["step"]: T.step_names(t["step"], lang),
                L["seconds"]: [T.fmt_num(x) for x in t["seconds"]],
                L["status"]: t["status"],
            }
        ),
        lang,
    )
    details(W.say("prep_every", lang, n=len(steps)), steps, lang=lang)


# -- 02 sweep ----------------------------------------------------------------------------------
def sweep(session, runs: pd.DataFrame, all_runs: pd.DataFrame) -> pd.DataFrame:
    """The reports' table with intervals, throughput and latency against threads."""

    lang = session.lang
    counts = runs["status"].value_counts() if len(runs) else pd.Series(dtype=int)
    if not len(all_runs):
        say(W.say("sweep_none", lang, cmd=session.command))
        return pd.DataFrame()
    table = sweep_table(all_runs)
    say(
        W.say(
            "sweep_summary",
            lang,
            n=len(runs),
            counts=", ".join(W.say("count", lang, n=v, what=k) for k, v in counts.items()),
            repeats=session.study.repeats,
        )
    )
    show(T.sweep_table(table, lang, session.arms), lang)
    order = T.arm_order(list(all_runs["arm"]), session.arms)
    for metric, key in (("tps", "ylabel_tps"), ("lat_p95_ms", "ylabel_p95")):
        cells = summarize_cells(all_runs, metric=metric)
        cells = T.sort_by_arm(cells, "arm", order, then=("workload", "threads"))
        plots.metric_vs_threads(cells, ylabel=W.say(key, lang), lang=lang)
    return table


def sweep_diagnostics(session, all_runs: pd.DataFrame) -> None:
    """Interval TPS of the first repeats, and MSER-5 / batch means inside each run."""

    lang = session.lang
    catalog = Store.for_study(session.study)
    ok = all_runs[all_runs["status"] == "ok"] if len(all_runs) else all_runs
    if not len(ok):
        say(W.say("diag_none", lang))
        return
    first = ok[ok["repeat"] == 1]
    iv = catalog.intervals(session.study.study, first["run_key"])
    for w in session.study.workloads:
        if (first["workload"] == w).any():
            plots.interval_tps(iv, first, workload=w, lang=session.lang)
    steady = quiet(
        steady_state_table, catalog.intervals(session.study.study, ok["run_key"]), by="run_key"
    )
    steady = ok[["run_key", "tps"]].merge(steady, on="run_key")
    cols = ["run_key", "tps", "steady_tps", "cut_s", "interval_cv", "bm_ci_low", "bm_ci_high"]
    view = steady[cols].round(3).assign(warnings=list(steady["warnings"]))
    details(W.say("diag_inside", lang, n=len(view)), view, lang=lang)


def rounds_and_warmup(session, all_runs: pd.DataFrame) -> pd.DataFrame:
    """Whether a round (one pass over every cell) ran apart from the others — warm-up or drift
    on a shared host moves a whole round — and how each arm opening was warmed up."""

    lang = session.lang
    ok = all_runs[all_runs["status"] == "ok"] if len(all_runs) else all_runs
    effects = quiet(round_effects, ok) if len(ok) else pd.DataFrame()
    notes = round_notes(effects) if len(effects) else []
    if not len(effects):
        say(W.say("rounds_few", lang))
    elif notes:
        say(W.say("rounds_apart", lang, notes=W.notes(notes, lang)))
    else:
        say(W.say("rounds_fine", lang, n=len(effects)))
    if len(effects):
        shown = effects.round(3)
        if "note" in shown:
            shown = shown.assign(note=[W.note(x, lang) for x in shown["note"]])
        details(W.say("rounds_details", lang, n=len(effects)), shown, lang=lang)
    wu = warmup_summary(warmup_table(Store.for_study(session.study), session.study.study))
    if len(wu):
        steady = int(wu["steady"].fillna(False).astype(bool).sum())
        say(W.say("warmup", lang, n=len(wu), steady=steady, seconds=wu["seconds"].sum()))
        details(W.say("warmup_details", lang, n=len(wu)), wu, lang=lang)
    return effects


def failed_runs(runs: pd.DataFrame, session=None, phase: str = "sweep") -> None:
    """Failed and degenerate runs in words (how many, the first error, the command that
    retries them), the list below; retried runs are counted by their ``attempts``."""

    lang = session.lang if session is not None else current_lang()
    bad = runs[runs["status"] != "ok"] if len(runs) else runs
    retried = int((runs["attempts"].fillna(1) > 1).sum()) if "attempts" in runs else 0
    again = W.say("retried", lang, n=retried) if retried else ""
    if not len(bad):
        say(W.say("all_ok", lang) + again)
        return
    summary = None
    if session is not None and lang == "en":
        summary = failed_runs_summary(session.study, phase, runs)
    elif session is not None:
        first = bad.iloc[0]
        summary = W.say(
            "failed_first",
            lang,
            phase=phase,
            bad=len(bad),
            runs=len(runs),
            key=first["run_key"],
            error=first.get("error") or first["status"],
            log=first.get("log_path"),
            cmd=run_command(shown_path(session.params_file), phase),
        )
    say((summary + ". " if summary else "") + W.say("failed", lang, n=len(bad)) + again)
    cols = [c for c in ("run_key", "status", "attempts", "error", "log_path") if c in bad]
    details(W.say("failed_details", lang), bad[cols], lang=lang)


# -- 03 compare --------------------------------------------------------------------------------
def pairs_of(cmp: pd.DataFrame) -> list[tuple[str, str]]:
    if not len(cmp):
        return []
    return list(dict.fromkeys(zip(cmp["baseline"], cmp["candidate"], strict=True)))


def compare(session, cmp: pd.DataFrame, export: bool = True) -> None:
    """Per pair: the summary sentence, the reports' table per workload, the plots; each table
    also written as CSV and Markdown under ``results/compare/`` (``export``)."""

    lang = session.lang
    delta = session.study.compare.delta_pct
    if not len(cmp):
        say(W.say("cmp_none", lang, cmd=session.command.replace("compare", "sweep")))
        return
    runs = Store.for_study(session.study).runs(session.study.study, phase="sweep")
    cells = summarize_cells(runs, metric="tps")
    for a, b in pairs_of(cmp):
        pair = cmp[(cmp["baseline"] == a) & (cmp["candidate"] == b)]
        summ = summarize_improvement(pair)
        say(W.say("cmp_pair", lang, a=a, b=b))
        say(
            ("" if lang == "zh" else " ").join(
                W.say(
                    "cmp_workload",
                    lang,
                    workload=r.workload,
                    imp=T.fmt_pct_ci(
                        r.geomean_improvement_pct, r.geo_ci_low_pct, r.geo_ci_high_pct, lang=lang
                    ),
                )
                for r in summ.itertuples()
            )
            + W.say("cmp_verdicts", lang, delta=delta)
        )
        for w, rows in pair.groupby("workload", sort=False):
            say(f"**{w}**")
            table = T.compare_table(rows, lang)
            show(table, lang)
            if export:
                export_tables(
                    T.plain(table, lang),
                    paths.compare_export(session.study.study, f"{a}_vs_{b}_{w}"),
                )
        order = [x for x in (a, b) if x in set(cells["arm"])]
        plots.metric_vs_threads(
            T.sort_by_arm(cells[cells["arm"].isin(order)], "arm", order, then=("threads",)),
            ylabel="TPS",
            title=W.say("cmp_plot_title", lang, a=a, b=b),
            lang=lang,
        )
        plots.improvement_bars(
            pair, delta_pct=delta, title=W.say("cmp_bars_title", lang, a=a, b=b), lang=lang
        )


def saturation(session, cmp: pd.DataFrame) -> None:
    """Each arm's saturation, one sentence per workload, step tables collapsed."""

    runs = Store.for_study(session.study).runs(session.study.study, phase="sweep")
    arms = list(dict.fromkeys(x for p in pairs_of(cmp) for x in p))
    lang = session.lang
    if not arms or not len(runs):
        say(W.say("sat_none", lang))
        return
    # the sentence the report's findings say, read off the diagnosis (one computed state), so
    # saturation here and the diagnosis never disagree; the curve's steps below
    said = {
        (f.values["workload"], f.values["arm"]): render(f, lang)
        for f in sweep_findings(quiet(study_diagnosis, session.study, lang="en"))
        if f.key.startswith("f_sat")
    }
    for arm in arms:
        for w in session.study.workloads:
            f = quiet(find_saturation, runs, workload=w, arm=arm, lang=lang)
            say(said.get((w, arm)) or f"**{w}, `{arm}`** — {f['sentence']}")
            details(W.say("sat_steps", lang), f["steps"], lang=lang)
            if f["warnings"]:
                say("\n".join(f"- {W.note(x, lang)}" for x in f["warnings"]))


def config_diff(session, cmp: pd.DataFrame) -> None:
    captures = Store.for_study(session.study).environment_captures(session.study.study)
    for a, b in pairs_of(cmp):
        if a in captures and b in captures:
            d = capture_diff(captures, a, b).rename(
                columns={"setting": T.labels(session.lang)["setting"]}
            )
            say(W.say("cfg_differ", session.lang, a=a, b=b, n=len(d)))
            show(d.astype(str), session.lang, empty=W.say("cfg_equal", session.lang))
        else:
            env = session.command.replace("--phase compare", "--phase environment")
            say(W.say("cfg_none", session.lang, a=a, b=b, cmd=env))


# -- 04 numa -----------------------------------------------------------------------------------
def numa_machine(session, sys_root: str = "/sys") -> None:
    """What node binding can show on this machine, in words."""

    lang = session.lang
    nodes = numa_nodes(sys_root)
    if len(nodes) <= 1:
        cpus = format_cpulist(nodes["cpus"].iloc[0]) if len(nodes) else W.say("all_cpus", lang)
        text = W.say("numa_one_node", lang, cpus=cpus)
    else:
        text = W.say("numa_nodes", lang, n=len(nodes))
    say(text)


def numa(session, rows: pd.DataFrame) -> pd.DataFrame:
    """Each policy against unbound (table, sentence, TPS plot); bindings, memory and CPU below."""

    lang = session.lang
    catalog = Store.for_study(session.study)
    runs = catalog.runs(session.study.study, phase="numa")
    if not len(rows):
        say(W.say("numa_none", lang, cmd=session.command))
        return runs
    better = rows[rows["verdict"].isin(["better", "worse"])]
    say(
        W.say("numa_summary", lang, n=len(rows))
        + (
            W.say("numa_differ", lang, n=len(better), delta=session.study.compare.delta_pct)
            if len(better)
            else W.say("numa_same", lang)
        )
    )
    order = policies(session.study)
    show(T.numa_table(T.sort_by_arm(rows, "candidate_policy", order), lang), lang)
    cells = T.sort_by_arm(summarize_cells(runs, metric="tps"), "arm", order, then=("threads",))
    plots.metric_vs_threads(cells, ylabel="TPS", title=W.say("numa_plot_title", lang), lang=lang)
    binds = catalog.read("bindings", session.study.study)
    cols = ["policy", "pid", "verified", "cpus_allowed", "mem_policy", "detail"]
    details(W.say("numa_bindings", lang, n=len(binds)), binds[cols], lang=lang)
    details(W.say("numa_memory", lang), memory_table(catalog, session.study), lang=lang)
    details(W.say("numa_cpu", lang), cpu_table(catalog, session.study), lang=lang)
    return runs


def numa_stability(session, runs: pd.DataFrame) -> pd.DataFrame:
    """Dips, floors and level shifts of every run; the two worst runs drawn."""

    lang = session.lang
    if not len(runs):
        say(W.say("stab_none", lang))
        return pd.DataFrame()
    iv = Store.for_study(session.study).intervals(session.study.study, list(runs["run_key"]))
    stab = quiet(stability_by_run, iv, by="run_key")
    n_dips = int(stab["n_events"].sum())
    floor = W.say("stab_floor", lang, n=int(stab["n_floor_events"].sum())) if n_dips else ""
    say(W.say("stab_summary", lang, n=n_dips, runs=len(stab), floor=floor))
    cols = ["run_key", "mean_tps", "cv", "n_events", "n_floor_events", "lost_pct",
            "change_points"]  # fmt: skip
    view = stab[cols].round(3).assign(warnings=list(stab["warnings"]))
    details(W.say("stab_every", lang, n=len(view)), view, lang=lang)
    worst = stab.sort_values(["n_events", "cv"], ascending=False).head(2)
    for key in worst["run_key"]:
        one = iv[iv["run_key"] == key].sort_values("t")
        plots.tps_with_dips(
            one, quiet(dip_events, one), title=W.say("stab_worst", lang, key=key), lang=lang
        )
    return stab


def topology(session) -> None:
    n = session.study.numa
    if not n.topology_file:
        say(W.say("topo_none", session.lang))
        return
    inst = topology_instances(n.topology_file)
    show(inst.astype(str), session.lang)
    if n.host_memory_gb and n.host_numa_nodes:
        checked, warns = check_block_cache(inst, int(n.host_memory_gb * 2**30), n.host_numa_nodes)
        show(checked.astype(str), session.lang)
        say(
            "\n".join(f"- {W.note(w, session.lang)}" for w in warns)
            or W.say("topo_fits", session.lang)
        )
    say(f"```\n{binding_snippet(inst, n.host_numa_nodes)}\n```")


# -- 05 TPC-H scaling --------------------------------------------------------------------------
def tpch_description(session) -> str:
    p = session.study.tpch_scaling
    lang = session.lang
    text = W.say(
        "tpch_about",
        lang,
        sf=p.scale_factor,
        arms=", ".join(p.arms),
        repeats=p.repeats,
        modes=", ".join(p.modes),
        timeout=p.query_timeout_s,
    )
    if session.study.target.kind == "embedded":
        text += "\n\n" + W.say("tpch_standin", lang)
    return text


def tpch(session, rows: pd.DataFrame) -> dict:
    """Every arm over all queries (the headline), whole query sets, per-query charts."""

    lang = session.lang
    study = session.study
    runs = tpch_phase.runs_frame(Store.for_study(study), study)
    if not len(runs):
        say(W.say("tpch_none", lang, cmd=session.command))
        return {"runs": runs, "measured": runs, "order": [], "summary": pd.DataFrame()}
    measured = runs[~runs["warmup"]]
    order = [a for a in tpch_phase.arm_labels(study) if a in set(measured["arm"])]
    embedded = study.target.kind == "embedded"
    units = {a: float(tpch_phase.arm_cores(a)) for a in order} if embedded else None
    summary = quiet(tpch_scaling.query_summary, measured, order, units=units)
    overall = quiet(tpch_scaling.overall_summary, measured, order, units=units)
    base = order[0] if order else "?"
    say(W.say("tpch_overall", lang, n=summary["query"].nunique(), base=base))
    show(tpch_overall_table(overall, lang, base=base), lang)
    say(W.say("tpch_sets", lang))
    elapsed = quiet(tpch_phase.elapsed_summary, measured, order)
    show(T.tpch_elapsed_table(elapsed, lang, base=base), lang)
    for mode in study.tpch_scaling.modes:
        plots.query_times(summary, mode=mode, lang=lang)
        if len(order) > 1:
            plots.query_improvement(summary, mode=mode, lang=lang)
    if len(order) > 1:
        plots.speedup(overall, units or tpch_scaling.arm_units(order), lang=lang)
    details(
        W.say("tpch_every", lang, n=len(summary)),
        tpch_query_table(summary, lang, base=base),
        lang=lang,
    )
    return {"runs": runs, "measured": measured, "order": order, "summary": summary}


def tpch_problems(session, found: dict) -> None:
    summary, runs = found["summary"], found["runs"]
    lang = session.lang
    if not len(runs):
        return

    tpch_verdicts(summary, found["order"][0] if found["order"] else "?", lang)
    bad = runs[(runs["status"] != "ok") | (runs["verified"] == False)]  # noqa: E712
    if len(bad):
        say(W.say("tpch_bad", lang, n=len(bad)))
        cols = ["arm", "mode", "query", "stream", "rep", "status", "verify_detail", "error"]
        details(W.say("tpch_bad_details", lang), bad[[c for c in cols if c in bad]], lang=lang)
    else:
        say(W.say("tpch_all_ok", lang))


def tpch_seed002(lang: str | None = None) -> pd.DataFrame:
    """Report 002's per-query times and improvements, recomputed (n = 1: no intervals); headers
    in ``lang``, by default the language of the notebook's study."""

    lang = lang or current_lang()
    seed = tpch_scaling.load_seed002()
    s = tpch_scaling.query_summary(tpch_scaling.seed002_runs(seed), ["3", "4", "5"])
    wide = s.pivot(index="query", columns="arm", values=["mean_s", "improvement_pct"])
    out = pd.DataFrame({W.say("seed_query", lang): [f"Q{q}" for q in wide.index]})
    for arm in ["3", "4", "5"]:
        out[W.say("seed_time", lang, arm=arm)] = [T.fmt_num(x, 2) for x in wide[("mean_s", arm)]]
    for arm in ["4", "5"]:
        out[W.say("seed_saved", lang, arm=arm)] = [
            T.fmt_pct_ci(x, digits=2, lang=lang).replace(" " + W.say("no_interval", lang), "")
            for x in wide[("improvement_pct", arm)]
        ]
    show(out, lang)
    return s
