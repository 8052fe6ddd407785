"""Phase ``tpch_scaling``: the 22 verified TPC-H queries over scaling arms.

On TiDB the arms are TiFlash instance counts (report 002: 3 → 4 → 5): between arms the user
scales the cluster (tibench waits, runs one arm per call: ``--arm 4``) or tibench runs the
configured scale-out command and waits until the TiFlash stores' region counts settle; replicas
are set, waited for, the read engines set to ``tiflash,tidb`` and every plan checked to read from
TiFlash. On the embedded MariaDB the arms are CPU sets (the binding machinery of the NUMA phase):
MariaDB runs each query on one thread, so *power* times (one query at a time) are not expected to
change between arms, while *throughput* (one concurrent stream per core) is.

Every execution lands in the catalog's ``tpch_queries`` as it finishes. The unit of
replication is the whole pass (every query once; in throughput mode every stream's run of the
set, started together), and each pass is one run of the run loop (:mod:`tibenchlib.runloop`,
run key ``tpch_scaling/<arm>/<mode>/<pass>``), so an interrupted phase resumes at the first
pass not complete. The passes' order is the design (:func:`plan`):

* **alternated** where an arm switch is cheap (the embedded server's CPU sets): round r runs
  pass r of every arm, in the order :func:`tibenchlib.runorder.arm_order` gives round r (the
  sweep's rounds; for two arms A B, B A, B A, A B, ...), so drift over the phase falls on both
  arms alike and the comparison pairs the arms within rounds (:mod:`.passes`);
* **blocks with a return** where a switch means scaling a real cluster: every pass of an arm
  in one block, arm after arm, then the first arm again (A B … A); the drift between the two A
  blocks is measured and stated beside every verdict, and a change within it is not claimed.

An arm is warmed up (one unrecorded pass) each time it is opened, so every measured pass follows
a warm-up on its own arm whichever arm ran before it.
"""

from __future__ import annotations

import logging
import os
import shlex
import time
from dataclasses import dataclass

import pandas as pd
import sqlalchemy as sa

from .. import paths
from ..binding import parse_policy, verify_binding
from ..params import Arm, Study
from ..phase import Phase, RunContext
from ..record import RunRecord
from ..runloop import stopped_answering
from ..runorder import arm_order
from ..safety import guard_destructive
from ..stats import t_interval
from ..store import Store, tpch_queries
from ..target import open_arm
from ..tools import execute
from . import datagen, load, passes, scaling, tiflash
from .execute import run_queries
from .queries import query

log = logging.getLogger(__name__)


def database_name(scale_factor: float) -> str:
    return "tpch_sf" + datagen.sf_label(scale_factor).replace(".", "_")


def arm_cores(label: str) -> int:
    """Cores an embedded arm may use: the CPU list's length, or the host's for other policies."""
    p = parse_policy(label)
    if p.kind == "cpus":
        return len(p.cpus or ())
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def _arm_study(study: Study, label: str, embedded: bool) -> Study:
    db = database_name(study.tpch_scaling.scale_factor)
    target = study.target.model_copy(update={"database": db})
    if embedded:
        binding = None if parse_policy(label).kind == "unbound" else label
        arm = Arm(label=label, cpu_binding=binding)
    else:
        arm = Arm(label=label)
    return study.model_copy(update={"arms": [arm], "target": target})


@dataclass(frozen=True)
class Block:
    """One planned pass of the phase: every query (× stream) once on one arm in one mode.

    ``rep`` is the pass's number, the round it belongs to when the arms alternate; in the
    block design the return block's passes of the first arm number on from the others'."""

    arm: str
    mode: str
    seq: int = 0
    rep: int = 1

    @property
    def run_key(self) -> str:
        return f"tpch_scaling/{self.arm}/{self.mode}/{self.rep}"


def design(study: Study) -> str:
    """``alternated`` on the embedded server (CPU sets switch in seconds), ``blocks`` on a
    real cluster (an arm is a cluster scaled to it)."""
    return "alternated" if study.target.kind == "embedded" else "blocks"


def plan(study: Study, arms: list[str] | None = None, done: set[str] | None = None) -> list[Block]:
    """The phase's passes in execution order (see the module's docstring for the designs).

    ``arms`` restricts the plan to those arms (a real cluster measured one arm per call). In the
    block design the return to the first arm is planned only once every other selected arm's
    passes are ``done`` (run keys recorded ok), or when every arm is run in this call.
    """
    labels = arm_labels(study)
    embedded = study.target.kind == "embedded"
    selected = labels
    if arms:
        selected = [a for a in labels if a in arms or (embedded and parse_policy(a).label in arms)]
    p = study.tpch_scaling
    out: list[tuple[str, str, int]] = []
    if design(study) == "alternated":
        for r in range(1, p.repeats + 1):
            # an arm's modes run in one visit: one switch (and one warm-up) per arm and round
            out += [(a, m, r) for a in arm_order(labels, r) if a in selected for m in p.modes]
    else:
        out = [(a, m, r) for a in selected for m in p.modes for r in range(1, p.repeats + 1)]
        if len(labels) > 1 and labels[0] in selected:
            others = [
                Block(a, m, 0, r).run_key
                for a in labels[1:]
                for m in p.modes
                for r in range(1, p.repeats + 1)
            ]
            if set(labels) <= set(selected) or set(others) <= (done or set()):
                back = range(p.repeats + 1, 2 * p.repeats + 1)
                out += [(labels[0], m, r) for m in p.modes for r in back]
    return [Block(a, m, i, r) for i, (a, m, r) in enumerate(out)]


def run_tpch_phase(
    context: RunContext, *, arms: list[str] | None = None, redo: bool = False
) -> pd.DataFrame:
    """Prepare the TPC-H data, run every planned pass, and return the §5 rows.

    Each pass is one run of :func:`tibenchlib.runloop.run_plan` (catalog ``runs``, key
    ``tpch_scaling/<arm>/<mode>/<pass>``): a pass cut short is cleared and run again, a
    complete one is skipped unless ``redo``; its executions are in ``tpch_queries``.
    """
    study, store, yes, progress = context.study, context.store, context.yes, context.progress
    p = study.tpch_scaling
    embedded = study.target.kind == "embedded"
    qs = [query(n) for n in p.queries]
    state: dict = {"prepared": False}

    def open_block(block: Block, _previous):
        label = block.arm
        if not embedded and label in p.scale_out_commands:
            _scale_out(study, label, yes)
        ctx = open_arm(_arm_study(study, label, embedded), label, yes=yes, store=store)
        if ctx.server is not None:
            verify_binding(ctx.server.pid, parse_policy(label))
        if not state["prepared"]:
            load.prepare(ctx.engine(), p.scale_factor, progress=progress, guard=ctx.guard)
            state["prepared"] = True
        state["settings"] = dict(p.session_settings)
        state["warm"], state["ctx"] = set(), None  # modes warmed up on this opening
        if ctx.info.is_tidb:
            state["settings"].update(_tiflash_arm(ctx, study, label, qs, progress))
        return ctx

    def run_block(ctx, block: Block) -> RunRecord:
        label, mode = block.arm, block.mode
        _clear_pass(store, study, block)
        streams = (arm_cores(label) if embedded else p.streams) if mode == "throughput" else None
        started = time.time()
        if ctx is not state.get("ctx"):  # opened now, or restarted after the server died
            state["warm"], state["ctx"] = set(), ctx
        warm = mode not in state["warm"]
        try:
            got = run_queries(
                ctx.engine(),
                qs,
                repeats=1,
                first_rep=block.rep,
                warmup=warm,
                timeout_s=p.query_timeout_s,
                mode=mode,
                streams=streams,
                session_settings=state["settings"],
                on_result=lambda row: store.upsert(
                    "tpch_queries", _catalog_row(study, label, mode, row)
                ),
                scale_factor=p.scale_factor,
                arm=label,
                progress=False,  # the run loop's bar counts the passes
            )
        except Exception:
            gone = stopped_answering(ctx)  # a server killed mid-pass fails the pass only
            if gone is None:
                raise
            got = None
        else:
            gone = stopped_answering(ctx)
            state["warm"].add(mode)
        return _block_record(study, block, got, started, time.time(), store, gone)

    context.run_plan(
        plan(study, arms, done=_done_keys(store, study)),
        open=open_block,
        run=run_block,
        redo=redo,
        desc="tpch_scaling",
        describe=lambda b: f"{b.arm} {b.mode} pass {b.rep}",
    )
    return summarize(study, store)


def _done_keys(store: Store, study: Study) -> set[str]:
    return {k for k, v in store.run_status(study.study).items() if v == "ok"}


def _block_record(
    study: Study,
    block: Block,
    got: pd.DataFrame | None,
    started: float,
    finished: float,
    store: Store,
    gone: str | None = None,
) -> RunRecord:
    """A block's record: ok when its executions were recorded (queries that failed or timed
    out are its warnings, each also in ``tpch_queries`` with its status); failed with
    ``gone`` when the server stopped answering during the block."""
    got = got if got is not None else pd.DataFrame(columns=["rep", "status"])
    measured = got[got["rep"] > 0] if len(got) else got
    bad = measured[measured["status"] != "ok"] if len(measured) else measured
    warnings = [
        f"Q{int(r['query'])} stream {int(r['stream'])} repeat {int(r['rep'])}: {r['status']}"
        for _, r in bad.iterrows()
    ]
    rec = RunRecord(
        study=study.study,
        run_key=block.run_key,
        phase="tpch_scaling",
        arm=block.arm,
        workload=f"tpch_{block.mode}",
        seq=block.seq,
        repeat=block.rep,
        status="ok" if len(measured) and not gone else "failed",
        error=gone or (None if len(measured) else "no query execution recorded"),
        events=float(len(measured)),
        warnings=warnings,
        started_at=started,
        finished_at=finished,
        wall_s=finished - started,
    )
    store.record_run(rec)
    return rec


def _catalog_row(study: Study, arm: str, mode: str, r: dict) -> dict:
    return {
        "study": study.study,
        "arm": arm,
        "mode": mode,
        "query": int(r["query"]),
        "stream": int(r["stream"]),
        "repeat": int(r["rep"]),
        "status": r["status"],
        "seconds": r["seconds"],
        "verified": r["verified"],
        "verify_detail": r.get("verify_detail"),
        "rows": r.get("rows"),
        "error": r.get("error"),
        "at": r.get("started_at") or time.time(),
    }


def _clear_pass(store: Store, study: Study, block: Block) -> None:
    """Drop a pass's executions before it is measured (again): a pass cut short leaves some."""
    t = tpch_queries
    where = sa.and_(
        t.c.study == study.study,
        t.c.arm == block.arm,
        t.c.mode == block.mode,
        t.c.repeat == block.rep,
    )
    with store.engine.begin() as c:
        c.execute(t.delete().where(where))


def _scale_out(study: Study, label: str, yes: bool) -> None:
    cmd = study.tpch_scaling.scale_out_commands[label]
    guard_destructive(
        f"run `{cmd}` (scale the cluster for arm {label})",
        embedded=False,
        allowed=study.allow_destructive or yes,
        target=study.target.url or "",
    )
    out = execute(shlex.split(cmd), paths.raw_log(study.study, "tpch", f"scale-{label}"))
    if out.returncode != 0:
        raise RuntimeError(f"scale-out command for arm {label} exited {out.returncode}: {cmd}")


def _tiflash_arm(ctx, study: Study, label: str, qs, progress: bool) -> dict:
    """Settle regions, set and wait for replicas, check plans; return the session settings."""
    p = study.tpch_scaling
    if p.pd_url:
        fetch = tiflash.pd_stores_fetcher(p.pd_url, access=p.pd_http)
        tiflash.wait_regions_stable(fetch, progress=progress)
    if p.tiflash_replicas:
        tiflash.set_replicas(ctx.engine(), p.tiflash_replicas, guard=ctx.guard)
        tiflash.wait_for_replicas(ctx.engine(), p.tiflash_replicas, progress=progress)
    settings = dict(tiflash.TIFLASH_SESSION)
    plans = tiflash.check_plans(ctx.engine(), qs, session_settings=settings)
    stores = tiflash.tiflash_store_count(ctx.engine())
    out = paths.tpch_plans_file(study.study, label)
    out.parent.mkdir(parents=True, exist_ok=True)
    plans.assign(arm=label, tiflash_stores=stores).to_csv(out, index=False)
    log.info("arm %s: %s TiFlash stores", label, stores)
    return settings


def runs_frame(store: Store, study: Study) -> pd.DataFrame:
    """The catalog's executions in :func:`.execute.run_queries`'s column names."""
    df = store.read("tpch_queries", study.study)
    if not len(df):
        return df
    return df.rename(columns={"repeat": "rep", "at": "started_at"}).assign(
        warmup=lambda d: d["rep"] == 0
    )


def elapsed_summary(runs: pd.DataFrame, order: list[str]) -> pd.DataFrame:
    """Throughput of each arm and mode over whole passes.

    Per pass: the wall time of its whole set of streams (first start to last finish) and its
    rate, queries per hour = 3600 × queries / wall time; the unit of replication is the pass.
    Per arm: mean wall time and mean rate with t intervals, and the rate against the first arm
    from :func:`.passes.compare_passes` (paired by round where the passes alternated; against
    both blocks of the first arm, with their drift, where they ran as blocks). Rates, not wall
    times, are compared because arms may run different numbers of streams (one per core).
    """
    el = scaling.run_elapsed(runs)
    el = el.assign(qph=3600 * el["queries"] / el["elapsed_s"])
    cmp = passes.compare_passes(passes.pass_table(runs, order), order, metric="qph")
    cmp = cmp.set_index(["mode", "arm"]) if len(cmp) else cmp
    rows = []
    for mode, g in el.groupby("mode", sort=False):
        for arm in [a for a in order if a in set(g["arm"])]:
            sel = g[g["arm"] == arm]
            t, q = t_interval(sel["elapsed_s"]), t_interval(sel["qph"])
            row = {
                "mode": mode, "arm": arm, "n": t["n"], "queries": int(sel["queries"].iloc[0]),
                "elapsed_s": t["mean"], "elapsed_ci_low_s": t["ci_low"],
                "elapsed_ci_high_s": t["ci_high"], "queries_per_hour": q["mean"],
                "qph_ci_low": q["ci_low"], "qph_ci_high": q["ci_high"],
                "qph_improvement_pct": None, "ci_low_pct": None, "ci_high_pct": None,
            }  # fmt: skip
            if arm != order[0] and (mode, arm) in getattr(cmp, "index", ()):
                c = cmp.loc[(mode, arm)]
                row["qph_improvement_pct"] = _num(c["change_pct"])
                row["ci_low_pct"] = _num(c["ci_low_pct"])
                row["ci_high_pct"] = _num(c["ci_high_pct"])
            rows.append(row)
    return pd.DataFrame(rows)


def _num(x) -> float | None:
    return None if x is None or pd.isna(x) else float(x)


def summarize(study: Study, store: Store | None = None) -> pd.DataFrame:
    """The §5 rows for every query, arm and mode (first arm = base)."""
    store = store or Store.for_study(study)
    runs = runs_frame(store, study)
    if not len(runs):
        return pd.DataFrame(columns=scaling.CLI_COLUMNS)
    order = [a for a in arm_labels(study) if a in set(runs["arm"])]
    units = {a: float(arm_cores(a)) for a in order} if study.target.kind == "embedded" else None
    summary = scaling.query_summary(runs[~runs["warmup"]], order, units=units)
    return scaling.cli_rows(summary)


def arm_labels(study: Study) -> list[str]:
    """The study's TPC-H arms in its order (on the embedded server: CPU-set policy labels)."""
    if study.target.kind == "embedded":
        return [parse_policy(a).label for a in study.tpch_scaling.arms]
    return list(study.tpch_scaling.arms)


# -- dry run -----------------------------------------------------------------------------------
#: Planning figures, not measurements: TPC-H rows per unit of scale factor, rows a second
#: generated and loaded, serial seconds of an average query at SF 1, bytes per SF of the ``.tbl``
#: files (client) and of the loaded tables (server).
ROWS_PER_SF = 8_660_000
LOAD_ROWS_PER_S = 50_000
QUERY_S_PER_SF = 5.0
#: Seconds of one query execution besides the query itself (connection, fetching and checking
#: its answer, recording it): the demo's 88 executions per arm at SF 0.01 took 17-19 s on a
#: loaded 2-core host, where the scale factor alone predicts 4 s.
EXECUTION_OVERHEAD_S = 0.08
TBL_BYTES_PER_SF = 1_100_000_000
DB_BYTES_PER_SF = 1_500_000_000


def estimate(study: Study, arms: list[str] | None = None) -> dict:
    """Dry-run entry of the tpch_scaling phase: data generation and load once, then every
    planned pass (query × stream), plus one warm-up pass per mode each time an arm is opened
    (:func:`plan`: alternated arms are opened in most rounds; blocks once each, the first arm
    twice).

    ``eta_max_s`` bounds the time by the query timeout.
    """
    p = study.tpch_scaling
    embedded = study.target.kind == "embedded"
    blocks = plan(study, arms)
    labels = list(dict.fromkeys(b.arm for b in blocks))
    n_q = len(p.queries)
    executions, wall, wall_max = 0, 0.0, 0.0
    per_query = QUERY_S_PER_SF * p.scale_factor + EXECUTION_OVERHEAD_S
    current, warm = None, set()
    for b in blocks:
        if b.arm != current:
            current, warm = b.arm, set()
        streams = arm_cores(b.arm) if embedded else p.streams
        k = streams if b.mode == "throughput" else 1
        n = k * n_q + (0 if b.mode in warm else n_q)  # measured (+ a warm-up pass)
        warm.add(b.mode)
        executions += n
        # concurrent streams share the wall clock
        wall += n * per_query / k
        wall_max += n * p.query_timeout_s / k
    load_s = ROWS_PER_SF * p.scale_factor / LOAD_ROWS_PER_S if labels else 0.0
    return {
        "phase": "tpch_scaling",
        "runs": executions,
        "eta_s": load_s + wall,
        "eta_max_s": load_s + wall_max,
        "disk_bytes": int((TBL_BYTES_PER_SF + DB_BYTES_PER_SF) * p.scale_factor) if labels else 0,
        "note": f"SF {p.scale_factor:g}: {executions} query executions over {len(labels)} arms "
        f"(rough; at most {wall_max / 60:.0f} min by the query timeout)",
    }


class TpchScaling(Phase):
    name = "tpch_scaling"
    notebook = "05_tiflash_scaling.ipynb"
    summary = "TPC-H queries over scaling arms"
    titles = {"en": "TPC-H scaling", "zh": "TPC-H 扩展"}
    own_arms = True
    runs_given_arms = True

    arms = staticmethod(arm_labels)
    estimate = staticmethod(estimate)

    def run(self, ctx: RunContext, *, arms=None, redo=False) -> pd.DataFrame:
        return ctx.measure(run_tpch_phase, arms=arms, redo=redo)

    def stored(self, study, store, arms) -> bool:
        return bool(len(store.read("tpch_queries", study.study)))

    def results(self, study, store, arms) -> pd.DataFrame:
        return summarize(study, store)

    def progress(self, study, store, add) -> None:
        """Query executions per arm (measured ones; warm-up passes are not counted)."""
        p = study.tpch_scaling
        q = store.read("tpch_queries", study.study)
        embedded = study.is_embedded()
        for a in self.arms(study):
            streams = arm_cores(a) if embedded else p.streams
            planned = sum(
                len(p.queries) * p.repeats * (streams if m == "throughput" else 1) for m in p.modes
            )
            mine = q[(q["arm"] == a) & (q["repeat"] > 0)] if len(q) else q
            done = int((mine["status"] == "ok").sum()) if len(mine) else 0
            add(self.name, a, "queries", planned, done, len(mine) - done)


TPCH_SCALING = TpchScaling()
