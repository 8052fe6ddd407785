"""The one resumable run loop every measuring phase uses (sweep, NUMA, TPC-H; later DM, YCSB,
TPC-C).

A phase supplies its plan (a list of run specs, each with a ``run_key`` and an ``arm``) and
callables: ``open`` (open an arm and make it ready: start the server, verify its binding,
prepare, warm up), ``run`` (one run on an open arm, recorded in the catalog, returning its
:class:`~tibenchlib.record.RunRecord`), and optionally ``before_run`` and ``close``. The loop
owns the rest:

* **resume**: under the study's lock, runs already in the catalog as ``ok`` are skipped; failed
  and degenerate ones are run again (their logs kept as earlier attempts); ``redo`` re-measures
  every run. A study killed (SIGTERM, SIGKILL) resumes at the first run not recorded;
* **arms**: the arm is opened when the plan moves to another one (``close`` runs on the old),
  and, when the phase gives ``round_of``, again at every round's start even if the arm is the
  same: an arm that ends one round and begins the next is switched to and warmed up like any
  other, so no arm of a balanced order (:mod:`tibenchlib.runorder`) carries on unopened;
* **cooldown** between runs, counted from the end of the previous run, across arm switches;
* **alive check** before each run (:class:`AliveCheck`: one restart of a dead embedded server);
* **progress**: one bar per plan on the terminal (:func:`tibenchlib.terminal.bar`), never in a
  saved notebook.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import sqlalchemy as sa

from . import paths, terminal
from .db import remove_stale_configs
from .lock import study_lock
from .record import RunRecord
from .store import Store
from .target import open_arm, verify_settings
from .tools import require

log = logging.getLogger(__name__)


class Spec(Protocol):
    """What the loop needs of a planned run."""

    @property
    def run_key(self) -> str: ...

    arm: str


def runs_to_do(store: Store, study: str, specs: Sequence[Spec], *, redo: bool = False) -> list:
    """The planned runs still to measure: not in the catalog, or there as failed/degenerate."""
    done = store.run_status(study)
    todo = [s for s in specs if redo or done.get(s.run_key, "failed") != "ok"]
    retried = sum(1 for s in todo if s.run_key in done and not redo)
    if retried:
        log.info("%d failed or degenerate runs will be run again", retried)
    return todo


def run_plan(
    study,
    specs: Sequence[Spec],
    *,
    store: Store,
    open: Callable[[Spec, Any], Any],  # noqa: A002 - the phase's "open an arm"
    run: Callable[[Any, Spec], RunRecord],
    before_run: Callable[[Any, Spec], None] | None = None,
    close: Callable[[Any], None] | None = None,
    redo: bool = False,
    yes: bool = False,
    progress: bool = True,
    cooldown_s: float = 0.0,
    requires: Sequence[str] = (),
    desc: str = "runs",
    describe: Callable[[Spec], str] | None = None,
    round_of: Callable[[Spec], object] | None = None,
) -> list[RunRecord]:
    """Run (or resume) ``specs`` in order; returns the records of the runs made now.

    ``open(spec, previous_ctx)`` returns the open arm's context for ``spec.arm``;
    ``run(ctx, spec)`` measures and records one run. ``requires`` names tools checked before
    the first run (only when something is left to do). ``round_of(spec)`` names a run's round
    (the pre-period is a round of its own): a run whose round differs from the run before it
    re-opens its arm.
    """
    name = study.study
    with study_lock(name):
        todo = runs_to_do(store, name, specs, redo=redo)
        log.info("%s: %d runs planned, %d to do", desc, len(specs), len(todo))
        for tool in requires if todo else ():
            require(tool)
        remove_stale_configs(paths.private_dir(name))
        alive = AliveCheck()
        ctx = None
        bar = terminal.bar(len(todo), desc, "run", enabled=progress and bool(todo))
        try:
            last_end = None
            last_round = None
            out: list[RunRecord] = []
            for k, spec in enumerate(todo, start=1):
                this_round = round_of(spec) if round_of is not None else None
                new_round = round_of is not None and k > 1 and this_round != last_round
                last_round = this_round
                if ctx is None or ctx.arm.label != spec.arm or new_round:
                    if ctx is not None and close is not None:
                        close(ctx)
                    ctx = open(spec, ctx)
                if before_run is not None:
                    before_run(ctx, spec)
                if last_end is not None and cooldown_s:
                    # counted from the end of the previous run, across arm switches too
                    time.sleep(max(0.0, cooldown_s - (time.time() - last_end)))
                ctx = alive.check(ctx, spec, len(todo) - k + 1, yes=yes)
                verify_settings(ctx, spec)
                bar.set_postfix_str(describe(spec) if describe else spec.run_key)
                rec = run(ctx, spec)
                out.append(rec)
                last_end = rec["finished_at"]
                if rec["status"] != "ok":
                    log.warning("%s: %s: %s", spec.run_key, rec["status"], rec["error"])
                bar.update(1)
            if ctx is not None and close is not None:
                close(ctx)
        except BaseException:
            bar.leave = False  # a phase stopped by an error: its line would only repeat the error
            raise
        finally:
            bar.close()  # now, not by the garbage collector into whatever stream is left then
    return out


class TargetDown(RuntimeError):
    """The database stopped answering in the middle of a phase."""


def _unanswered(conn) -> str | None:
    """Why ``conn``'s server does not answer ``SELECT 1`` within 5 s, in one line; None when it
    answers."""
    eng = conn.engine(database="", connect_args={"connect_timeout": 5})
    try:
        with eng.connect() as c:
            c.exec_driver_sql("SELECT 1")
        return None
    except sa.exc.DBAPIError as e:
        return " ".join(str(e.orig).split())
    finally:
        eng.dispose()


def stopped_answering(ctx) -> str | None:
    """After a run: one line saying the arm's server stopped during it (an embedded server no
    longer running, or a target that no longer answers), else None. The run then fails with
    that line, and :class:`AliveCheck` restarts an embedded server before the next run."""
    if ctx.server is not None and ctx.server.pid is None:
        return (
            "the server stopped answering during the run: the embedded MariaDB is gone "
            f"(its error log: {ctx.server.error_log})"
        )
    why = _unanswered(ctx.conn)
    return None if why is None else f"the server stopped answering during the run: {why}"


class AliveCheck:
    """Before each run: is the server there? A dead embedded server is restarted once per phase
    (the end of its error log shown); a dead external target stops the phase."""

    def __init__(self) -> None:
        self.restarted = False

    def check(self, ctx, spec: Spec, left: int, *, yes: bool = False):
        if ctx is None:
            return ctx
        if ctx.server is not None:
            if ctx.server.pid is not None:
                return ctx
            tail = ctx.server._log_tail(10)
            if self.restarted:
                raise TargetDown(
                    f"the embedded MariaDB died again before run {spec.run_key} ({left} runs "
                    f"left, already restarted once); end of {ctx.server.error_log}: "
                    + " | ".join(tail.splitlines()[-3:])
                )
            log.warning(
                "the embedded MariaDB is not running before run %s: restarting it once; "
                "end of %s:\n%s",
                spec.run_key,
                ctx.server.error_log,
                tail,
            )
            self.restarted = True

            return open_arm(ctx.study, ctx.arm, yes=yes, store=ctx.store)
        why = _unanswered(ctx.conn)
        if why is not None:
            raise TargetDown(
                f"{ctx.conn.masked_url()} stopped answering before run {spec.run_key} "
                f"({left} runs left, not started): {why}; run the same command again to "
                "resume when it is back"
            )
        return ctx
