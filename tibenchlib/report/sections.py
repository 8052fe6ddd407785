"""The notebooks' sections: each leads with the table or figure that answers its question and a
sentence in words, details below (collapsed where long). Each function displays; it returns what
a notebook's checks need."""

from __future__ import annotations

import html
import warnings

import pandas as pd

from . import tables as T


def _display(*objs) -> None:
    from IPython.display import display

    display(*objs)


def say(text: str) -> None:
    """A sentence (Markdown) in the notebook."""
    from IPython.display import Markdown

    _display(Markdown(text))


def show(table: pd.DataFrame, lang: str = "en", empty: str = "Nothing to show.") -> None:
    """A formatted table in full (every row and column), or ``empty`` when it has no rows."""
    if table is None or not len(table):
        say(empty)
        return
    _display(T.styled(table, lang))


def details(summary: str, frame: pd.DataFrame, empty: str = "none") -> None:
    """A collapsed block holding a raw table (for the curious), shown in full when opened."""
    from IPython.display import HTML

    body = (
        frame.to_html(index=False, na_rep="", max_rows=None, max_cols=None)
        if len(frame)
        else f"<p>{html.escape(empty)}</p>"
    )
    _display(HTML(f"<details><summary>{html.escape(summary)}</summary>{body}</details>"))


def quiet(fn, *a, **kw):
    """Call ``fn`` with numpy's floating-point warnings (overflow in a fit's search) silenced:
    the functions report what matters about a fit in their own warnings."""
    import numpy as np

    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return fn(*a, **kw)


# -- 00 environment ----------------------------------------------------------------------------
def environment(session, summary: pd.DataFrame) -> dict:
    """Each arm's server and the client host; the reports' environment tables below."""
    from ..envcapture import environment_tables
    from ..store import Store

    L = T.labels(session.lang)
    if not len(summary):
        say(f"No environment captured yet: `{session.command}` captures it.")
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
            "memory_bytes": "Memory (GiB)",
            "cpu_model": "CPU",
            "sockets": "Sockets",
            "physical_cores": "Cores",
            "logical_cpus": "Logical CPUs",
            "numa_nodes": "NUMA nodes",
            "os": "OS",
        }  # fmt: skip
    ).astype(str)
    say(
        f"{len(summary)} arm(s) captured: "
        + ", ".join(f"`{r.arm}` runs {r.flavor} {r.version}" for r in summary.itertuples())
        + "."
    )
    show(head.replace({"None": "n/a", "nan": "n/a"}), session.lang)
    captures = Store.for_study(session.study).environment_captures(session.study.study)
    for arm in session.arms:
        if arm not in captures:
            continue
        say(f"### arm `{arm}`")
        for name, table in environment_tables(captures[arm]).items():
            details(f"{name} ({len(table)} rows)", table)
    return captures


# -- 01 prepare --------------------------------------------------------------------------------
def prepare(session, steps: pd.DataFrame) -> None:
    """Time per arm and step, then every step."""
    L = T.labels(session.lang)
    if not len(steps):
        say(f"No preparation recorded yet: `{session.command}` prepares the data set.")
        return
    ds = session.study.dataset
    t = steps.groupby(["arm", "step"], as_index=False, sort=False).agg(
        seconds=("seconds", "sum"), status=("status", lambda s: ", ".join(sorted(set(s))))
    )
    t = T.sort_by_arm(t, "arm", session.arms)
    bad = steps[~steps["status"].isin(["ok", "skipped"])]
    say(
        f"{ds.tables} tables × {ds.table_size:,} rows on {t['arm'].nunique()} arm(s), "
        f"{T.fmt_num(steps['seconds'].sum())} s of work in all; "
        + (
            "every step ok (skipped = the data set already matched)."
            if not len(bad)
            else f"{len(bad)} step(s) not ok: see below."
        )
    )
    show(
        pd.DataFrame(
            {
                L["arm"]: t["arm"],
                L["step"]: t["step"],
                L["seconds"]: [T.fmt_num(x) for x in t["seconds"]],
                L["status"]: t["status"],
            }
        ),
        session.lang,
    )
    details(f"every step ({len(steps)})", steps)


# -- 02 sweep ----------------------------------------------------------------------------------
def sweep(session, runs: pd.DataFrame, all_runs: pd.DataFrame) -> pd.DataFrame:
    """The reports' table with intervals, throughput and latency against threads."""
    from ..stats import summarize_cells
    from ..sweep import sweep_table
    from . import plots

    lang = session.lang
    counts = runs["status"].value_counts() if len(runs) else pd.Series(dtype=int)
    if not len(all_runs):
        say(f"No sweep runs in the catalog yet: `{session.command}` measures them.")
        return pd.DataFrame()
    table = sweep_table(all_runs)
    say(
        f"{len(runs)} runs ("
        + ", ".join(f"{v} {k}" for k, v in counts.items())
        + f"): mean TPS per workload, arm and thread count over the repeated runs, with Student "
        "t 95% intervals on the log scale, which stay above 0 as TPS and latency do "
        f"(n = runs per cell; {session.study.repeats} planned)."
    )
    show(T.sweep_table(table, lang, session.arms), lang)
    order = T.arm_order(list(all_runs["arm"]), session.arms)
    for metric, ylabel in (("tps", "TPS (sysbench)"), ("lat_p95_ms", "p95 latency (ms)")):
        cells = summarize_cells(all_runs, metric=metric)
        cells = T.sort_by_arm(cells, "arm", order, then=("workload", "threads"))
        plots.metric_vs_threads(cells, ylabel=ylabel, lang=lang)
    return table


def sweep_diagnostics(session, all_runs: pd.DataFrame) -> None:
    """Interval TPS of the first repeats, and MSER-5 / batch means inside each run."""
    from ..steady import steady_state_table
    from ..store import Store
    from . import plots

    catalog = Store.for_study(session.study)
    ok = all_runs[all_runs["status"] == "ok"] if len(all_runs) else all_runs
    if not len(ok):
        say("No run finished ok: nothing to diagnose.")
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
    view = steady[cols].round(3).assign(warnings=[T.fmt_notes(w) for w in steady["warnings"]])
    details(f"inside each run ({len(view)} runs)", view)


def rounds_and_warmup(session, all_runs: pd.DataFrame) -> pd.DataFrame:
    """Whether a round (one pass over every cell) ran apart from the others — warm-up or drift
    on a shared host moves a whole round — and how each arm opening was warmed up."""
    from ..rounds import round_effects, round_notes
    from ..store import Store
    from ..warmup import warmup_summary, warmup_table

    ok = all_runs[all_runs["status"] == "ok"] if len(all_runs) else all_runs
    effects = quiet(round_effects, ok) if len(ok) else pd.DataFrame()
    notes = round_notes(effects) if len(effects) else []
    if not len(effects):
        say("Fewer than two complete rounds: no round effect to estimate.")
    elif notes:
        say(
            "**Rounds that stand apart** (log TPS = cell + round, each round against the others, "
            "95% interval, Holm across rounds): "
            + "; ".join(notes)
            + ". `compare.exclude_rounds` in the study file leaves a round out of the comparison."
        )
    else:
        say(
            f"No round stands apart from the others ({len(effects)} rounds; log TPS = cell + "
            "round, 95% intervals, Holm across rounds)."
        )
    if len(effects):
        details(f"round effects ({len(effects)} rounds)", effects.round(3))
    wu = warmup_summary(warmup_table(Store.for_study(session.study), session.study.study))
    if len(wu):
        steady = int(wu["steady"].fillna(False).astype(bool).sum())
        say(
            f"Warm-up: {len(wu)} arm openings × workloads, {steady} reached a steady throughput "
            f"(MSER-5 / consecutive runs agreeing), {wu['seconds'].sum():,.0f} s in all."
        )
        details(f"warm-up runs per arm opening ({len(wu)})", wu)
    return effects


def failed_runs(runs: pd.DataFrame, session=None, phase: str = "sweep") -> None:
    """Failed and degenerate runs in words (how many, the first error, the command that
    retries them), the list below; retried runs are counted by their ``attempts``."""
    from ..phases import failed_runs_summary

    bad = runs[runs["status"] != "ok"] if len(runs) else runs
    retried = int((runs["attempts"].fillna(1) > 1).sum()) if "attempts" in runs else 0
    again = f" {retried} run(s) needed more than one attempt." if retried else ""
    if not len(bad):
        say("Every run finished ok and passed the checks." + again)
        return
    summary = failed_runs_summary(session.study, phase, runs) if session is not None else None
    say(
        (summary + ". " if summary else "")
        + f"{len(bad)} run(s) failed or cannot be trusted; they are counted, never averaged."
        + again
    )
    cols = [c for c in ("run_key", "status", "attempts", "error", "log_path") if c in bad]
    details("failed runs", bad[cols])


# -- 03 compare --------------------------------------------------------------------------------
def pairs_of(cmp: pd.DataFrame) -> list[tuple[str, str]]:
    if not len(cmp):
        return []
    return list(dict.fromkeys(zip(cmp["baseline"], cmp["candidate"], strict=True)))


def compare(session, cmp: pd.DataFrame, export: bool = True) -> None:
    """Per pair: the summary sentence, the reports' table per workload, the plots; each table
    also written as CSV and Markdown under ``results/compare/`` (``export``)."""
    from .. import paths
    from ..stats import summarize_cells, summarize_improvement
    from ..store import Store
    from . import plots
    from .comparison import export as write

    lang = session.lang
    delta = session.study.compare.delta_pct
    if not len(cmp):
        say(f"Nothing to compare yet: `{session.command.replace('compare', 'sweep')}` first.")
        return
    runs = Store.for_study(session.study).runs(session.study.study, phase="sweep")
    cells = summarize_cells(runs, metric="tps")
    for a, b in pairs_of(cmp):
        pair = cmp[(cmp["baseline"] == a) & (cmp["candidate"] == b)]
        summ = summarize_improvement(pair)
        say(f"## `{b}` against `{a}`")
        say(
            " ".join(
                f"**{r.workload}**: TPS "
                + T.fmt_pct_ci(r.geomean_improvement_pct, r.geo_ci_low_pct, r.geo_ci_high_pct)
                + " (geometric mean over thread counts, 95% interval)."
                for r in summ.itertuples()
            )
            + f" Verdicts per thread count against a practical threshold of ±{delta:g}% "
            "(Holm-adjusted Welch p):"
        )
        for w, rows in pair.groupby("workload", sort=False):
            say(f"**{w}**")
            table = T.compare_table(rows, lang)
            show(table, lang)
            if export:
                write(
                    T.plain(table, lang),
                    paths.compare_export(session.study.study, f"{a}_vs_{b}_{w}"),
                )
        order = [x for x in (a, b) if x in set(cells["arm"])]
        plots.metric_vs_threads(
            T.sort_by_arm(cells[cells["arm"].isin(order)], "arm", order, then=("threads",)),
            ylabel="TPS",
            title=f"{a} vs {b}: mean TPS with 95% t intervals",
            lang=lang,
        )
        plots.improvement_bars(pair, delta_pct=delta, title=f"{b} against {a}", lang=lang)


def saturation(session, cmp: pd.DataFrame) -> None:
    """Each arm's saturation, one sentence per workload, step tables collapsed."""
    from ..saturation import saturation as find
    from ..store import Store

    runs = Store.for_study(session.study).runs(session.study.study, phase="sweep")
    arms = list(dict.fromkeys(x for p in pairs_of(cmp) for x in p))
    if not arms or not len(runs):
        say("No sweep runs: no saturation to find.")
        return
    for arm in arms:
        for w in session.study.workloads:
            f = quiet(find, runs, workload=w, arm=arm, lang=session.lang)
            text = f["sentence"]
            say(f"**{w}, `{arm}`** — {text}")
            details("steps between thread counts", f["steps"])
            if f["warnings"]:
                say("\n".join(f"- {x}" for x in f["warnings"]))


def config_diff(session, cmp: pd.DataFrame) -> None:
    from ..envcapture import config_diff as diff
    from ..store import Store

    captures = Store.for_study(session.study).environment_captures(session.study.study)
    for a, b in pairs_of(cmp):
        if a in captures and b in captures:
            d = diff(captures, a, b)
            say(f"**`{a}` vs `{b}`**: {len(d)} setting(s) differ.")
            show(d.astype(str), session.lang, empty="The captured configurations are equal.")
        else:
            env = session.command.replace("--phase compare", "--phase environment")
            say(f"`{a}` vs `{b}`: no environment capture yet (`{env}` captures it).")


# -- 04 numa -----------------------------------------------------------------------------------
def numa(session, rows: pd.DataFrame) -> pd.DataFrame:
    """Each policy against unbound (table, sentence, TPS plot); bindings, memory and CPU below."""
    from ..numa import cpu_table, memory_table, policies
    from ..stats import summarize_cells
    from ..store import Store
    from . import plots

    lang = session.lang
    catalog = Store.for_study(session.study)
    runs = catalog.runs(session.study.study, phase="numa")
    if not len(rows):
        say(f"No NUMA runs to compare yet: `{session.command}` measures them.")
        return runs
    better = rows[rows["verdict"].isin(["better", "worse"])]
    say(
        f"{len(rows)} cell(s) compared with `unbound` (TPS change with its Fieller 95% interval, "
        "Holm-adjusted Welch p, and whether each binding was verified from `/proc`): "
        + (
            f"{len(better)} differ significantly beyond ±{session.study.compare.delta_pct:g}%."
            if len(better)
            else "no policy differs significantly."
        )
    )
    order = policies(session.study)
    show(T.numa_table(T.sort_by_arm(rows, "candidate_policy", order), lang), lang)
    cells = T.sort_by_arm(summarize_cells(runs, metric="tps"), "arm", order, then=("threads",))
    plots.metric_vs_threads(
        cells, ylabel="TPS", title="TPS per binding policy (95% t intervals)", lang=lang
    )
    binds = catalog.read("bindings", session.study.study)
    cols = ["policy", "pid", "verified", "cpus_allowed", "mem_policy", "detail"]
    details(f"the bindings as the kernel reports them ({len(binds)})", binds[cols])
    details(
        "memory per NUMA node (numastat), before and after each policy",
        memory_table(catalog, session.study),
    )
    details("server CPU against throughput", cpu_table(catalog, session.study))
    return runs


def numa_stability(session, runs: pd.DataFrame) -> pd.DataFrame:
    """Dips, floors and level shifts of every run; the two worst runs drawn."""
    from ..stability import dip_events, stability_by_run
    from ..store import Store
    from . import plots

    if not len(runs):
        say("No runs: no stability to show.")
        return pd.DataFrame()
    iv = Store.for_study(session.study).intervals(session.study.study, list(runs["run_key"]))
    stab = quiet(stability_by_run, iv, by="run_key")
    n_dips = int(stab["n_events"].sum())
    say(
        f"{n_dips} dip event(s) over {len(stab)} runs"
        + (f", {int(stab['n_floor_events'].sum())} to the floor" if n_dips else "")
        + "; the runs with the most are drawn."
    )
    cols = ["run_key", "mean_tps", "cv", "n_events", "n_floor_events", "lost_pct",
            "change_points"]  # fmt: skip
    view = stab[cols].round(3).assign(warnings=[T.fmt_notes(w) for w in stab["warnings"]])
    details(f"every run ({len(view)})", view)
    worst = stab.sort_values(["n_events", "cv"], ascending=False).head(2)
    for key in worst["run_key"]:
        one = iv[iv["run_key"] == key].sort_values("t")
        plots.tps_with_dips(
            one, quiet(dip_events, one), title=f"{key} (worst runs)", lang=session.lang
        )
    return stab


def topology(session) -> None:
    from ..topology import binding_snippet, check_block_cache, topology_instances

    n = session.study.numa
    if not n.topology_file:
        say("No `numa.topology_file` in the params: no TiUP topology to check.")
        return
    inst = topology_instances(n.topology_file)
    show(inst.astype(str), session.lang)
    if n.host_memory_gb and n.host_numa_nodes:
        checked, warns = check_block_cache(inst, int(n.host_memory_gb * 2**30), n.host_numa_nodes)
        show(checked.astype(str), session.lang)
        say("\n".join(f"- {w}" for w in warns) or "Every block cache fits its NUMA node.")
    say(f"```\n{binding_snippet(inst, n.host_numa_nodes)}\n```")


# -- 05 TPC-H scaling --------------------------------------------------------------------------
def tpch_description(session) -> str:
    p = session.study.tpch_scaling
    text = (
        f"TPC-H SF {p.scale_factor:g}, arms {', '.join(p.arms)}, {p.repeats} repeats, modes "
        f"{', '.join(p.modes)}, per-query timeout {p.query_timeout_s:g} s."
    )
    if session.study.target.kind == "embedded":
        text += (
            "\n\n**Local stand-in.** The embedded MariaDB has no TiFlash: the arms are CPU sets "
            "given to the server (`cpus:0` = 1 core, `unbound` = all cores) and stand in for "
            "instance counts. MariaDB runs each query on one thread, so *power* times (one query "
            "at a time) should not change between arms; *throughput* (one concurrent stream per "
            "core) should. Tables carry primary keys only, as in the report."
        )
    return text


def tpch(session, rows: pd.DataFrame) -> dict:
    """Every arm over all queries (the headline), whole query sets, per-query charts."""
    from ..store import Store
    from ..tpch import phase, scaling
    from . import plots

    lang = session.lang
    study = session.study
    runs = phase.runs_frame(Store.for_study(study), study)
    if not len(runs):
        say(f"No TPC-H executions in the catalog yet: `{session.command}` measures them.")
        return {"runs": runs, "measured": runs, "order": [], "summary": pd.DataFrame()}
    measured = runs[~runs["warmup"]]
    order = [a for a in phase.arm_labels(study) if a in set(measured["arm"])]
    embedded = study.target.kind == "embedded"
    units = {a: float(phase.arm_cores(a)) for a in order} if embedded else None
    summary = quiet(scaling.query_summary, measured, order, units=units)
    overall = quiet(scaling.overall_summary, measured, order, units=units)
    base = order[0] if order else "?"
    say(
        f"Over all {summary['query'].nunique()} queries, per mode and arm: the geometric mean of "
        f"the per-query mean times with a 95% interval, the time saved against `{base}` and the "
        "speed-up (ideal linear scaling gives efficiency 100%)."
    )
    show(T.tpch_overall_table(overall, lang), lang)
    say(
        "**Whole query sets.** In throughput mode the figure concurrency should shrink is the "
        "wall time of a repeat's whole set of streams, and its queries per hour:"
    )
    show(T.tpch_elapsed_table(quiet(phase.elapsed_summary, measured, order), lang), lang)
    for mode in study.tpch_scaling.modes:
        plots.query_times(summary, mode=mode, lang=lang)
        if len(order) > 1:
            plots.query_improvement(summary, mode=mode, lang=lang)
    if len(order) > 1:
        plots.speedup(overall, units or scaling.arm_units(order), lang=lang)
    details(f"every query, mode and arm ({len(summary)} rows)", T.tpch_query_table(summary, lang))
    return {"runs": runs, "measured": measured, "order": order, "summary": summary}


def tpch_problems(session, found: dict) -> None:
    summary, runs = found["summary"], found["runs"]
    lang = session.lang
    if not len(runs):
        return
    from .scaling import tpch_verdicts

    tpch_verdicts(summary, found["order"][0] if found["order"] else "?", lang)
    bad = runs[(runs["status"] != "ok") | (runs["verified"] == False)]  # noqa: E712
    if len(bad):
        say(f"{len(bad)} execution(s) failed or returned a wrong answer:")
        cols = ["arm", "mode", "query", "stream", "rep", "status", "verify_detail", "error"]
        details("executions", bad[[c for c in cols if c in bad]])
    else:
        say("Every execution finished and its answer matched the reference.")


def tpch_seed002() -> pd.DataFrame:
    """Report 002's per-query times and improvements, recomputed (n = 1: no intervals)."""
    from ..tpch import scaling

    seed = scaling.load_seed002()
    s = scaling.query_summary(scaling.seed002_runs(seed), ["3", "4", "5"])
    wide = s.pivot(index="query", columns="arm", values=["mean_s", "improvement_pct"])
    out = pd.DataFrame({"Query": [f"Q{q}" for q in wide.index]})
    for arm in ["3", "4", "5"]:
        out[f"{arm} TiFlash: time (s)"] = [T.fmt_num(x, 2) for x in wide[("mean_s", arm)]]
    for arm in ["4", "5"]:
        out[f"3 → {arm}: time saved (%)"] = [
            T.fmt_pct_ci(x, digits=2).replace(" (no interval)", "")
            for x in wide[("improvement_pct", arm)]
        ]
    show(out)
    return s
