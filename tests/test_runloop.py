"""The run loop on its own: resume, redo, retries of failed runs, arm switches, cooldown.

The phase callables here do no database work (the loop knows no tool); the loop's catalog is a
real SQLite store, and the sweep, NUMA and TPC-H phases run it against the embedded MariaDB in
their own tests.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from types import SimpleNamespace

import pytest

from tibenchlib.record import RunRecord
from tibenchlib.runloop import run_plan
from tibenchlib.store import Store


@dataclass(frozen=True)
class Spec:
    arm: str
    n: int

    @property
    def run_key(self) -> str:
        return f"x/{self.arm}/{self.n}"


class Phase:
    """Opens arms and 'runs' by recording a record whose status the test chooses."""

    def __init__(self, store: Store, fail: set[str] = frozenset()):
        self.store, self.fail, self.events = store, set(fail), []

    def open(self, spec, previous):
        self.events.append(("open", spec.arm))
        return SimpleNamespace(arm=SimpleNamespace(label=spec.arm), server=None, conn=None)

    def close(self, ctx):
        self.events.append(("close", ctx.arm.label))

    def run(self, ctx, spec):
        self.events.append(("run", spec.run_key))
        t = time.time()
        bad = spec.run_key in self.fail
        rec = RunRecord(
            study="loop", run_key=spec.run_key, phase="x", arm=spec.arm, seq=spec.n,
            status="failed" if bad else "ok", error="boom" if bad else None,
            tps=None if bad else 10.0, started_at=t, finished_at=t,
        )  # fmt: skip
        self.store.record_run(rec)
        return rec


@pytest.fixture
def study(data_dir):
    return SimpleNamespace(study="loop")


def _loop(study, store, phase, specs, **kw):
    return run_plan(
        study, specs, store=store, open=phase.open, run=phase.run, close=phase.close,
        progress=False, **kw,
    )  # fmt: skip


def test_resume_retry_redo_and_arm_switches(study, tmp_path, monkeypatch):
    # an external target's alive check would connect: the loop's contexts here have no server
    monkeypatch.setattr("tibenchlib.runloop.AliveCheck.check", lambda self, ctx, *a, **k: ctx)
    store = Store(f"sqlite:///{tmp_path / 'c.sqlite'}")
    specs = [Spec(a, i) for i, a in enumerate(["a", "a", "b", "a"])]
    ph = Phase(store, fail={"x/b/2"})
    out = _loop(study, store, ph, specs)
    assert [r.status for r in out] == ["ok", "ok", "failed", "ok"]
    # arms open when the plan moves to another one; the last is closed at the end
    assert [e for e in ph.events if e[0] != "run"] == [
        ("open", "a"), ("close", "a"), ("open", "b"), ("close", "b"), ("open", "a"),
        ("close", "a"),
    ]  # fmt: skip
    # resumed: only the failed run is run again
    ph2 = Phase(store)
    out = _loop(study, store, ph2, specs)
    assert [r.run_key for r in out] == ["x/b/2"] and out[0].status == "ok"
    assert _loop(study, store, Phase(store), specs) == []  # nothing left to do
    ph3 = Phase(store)
    assert len(_loop(study, store, ph3, specs, redo=True)) == 4  # redo re-measures every run
    assert store.run_status("loop") == {s.run_key: "ok" for s in specs}


def test_a_new_round_re_opens_its_arm_even_when_it_is_the_same(study, tmp_path, monkeypatch):
    """With ``round_of`` an arm that ends one round and begins the next is opened again (its
    switch and warm-up), and a resumed plan still opens at its first run left."""
    monkeypatch.setattr("tibenchlib.runloop.AliveCheck.check", lambda self, ctx, *a, **k: ctx)
    store = Store(f"sqlite:///{tmp_path / 'c.sqlite'}")
    # rounds: pre (0) a | 1: a b | 2: b a; n // 2 stands for the round
    specs = [Spec(a, i) for a, i in [("a", 0), ("a", 2), ("b", 3), ("b", 4), ("a", 5)]]
    ph = Phase(store, fail={"x/b/4"})
    _loop(study, store, ph, specs, round_of=lambda s: s.n // 2)
    assert [e for e in ph.events if e[0] == "open"] == [
        ("open", "a"), ("open", "a"), ("open", "b"), ("open", "b"), ("open", "a"),
    ]  # fmt: skip
    again = Phase(store)
    _loop(study, store, again, specs, round_of=lambda s: s.n // 2)
    assert again.events == [("open", "b"), ("run", "x/b/4"), ("close", "b")]
    without = Phase(store)
    _loop(study, store, without, specs, redo=True)
    assert [e for e in without.events if e[0] == "open"] == [
        ("open", "a"), ("open", "b"), ("open", "a"),
    ]  # fmt: skip


def test_cooldown_is_counted_from_the_end_of_the_previous_run(study, tmp_path, monkeypatch):
    monkeypatch.setattr("tibenchlib.runloop.AliveCheck.check", lambda self, ctx, *a, **k: ctx)
    store = Store(f"sqlite:///{tmp_path / 'c.sqlite'}")
    t0 = time.monotonic()
    _loop(study, store, Phase(store), [Spec("a", 0), Spec("b", 1), Spec("a", 2)], cooldown_s=0.3)
    assert time.monotonic() - t0 >= 0.6  # two pauses, across arm switches too


def test_a_missing_tool_stops_before_any_run_only_when_work_is_left(study, tmp_path):
    from tibenchlib.tools import ToolMissing

    store = Store(f"sqlite:///{tmp_path / 'c.sqlite'}")
    ph = Phase(store)
    with pytest.raises(ToolMissing, match="no-such-benchmark-tool is not installed"):
        _loop(study, store, ph, [Spec("a", 0)], requires=("no-such-benchmark-tool",))
    assert ph.events == []
    assert _loop(study, store, ph, [], requires=("no-such-benchmark-tool",)) == []


def test_a_loop_ended_by_an_error_closes_its_bar(study, tmp_path, monkeypatch):
    """A phase that stops mid-plan (the server gone, a signal) closes its bar at once and
    leaves no line of it (the error says what happened): a bar left to the garbage collector
    wrote later into whatever stream was left (a closed one raised in ``tqdm.__del__``)."""
    import io
    import sys

    from tibenchlib import runloop, terminal

    monkeypatch.setattr("tibenchlib.runloop.AliveCheck.check", lambda self, ctx, *a, **k: ctx)
    monkeypatch.delenv(terminal.BATCH_ENV, raising=False)
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    bars, make = [], terminal.bar  # held here, so only the loop itself can close the bar

    def bar(*a, **k):
        bars.append(make(*a, **k))
        return bars[-1]

    monkeypatch.setattr(runloop.terminal, "bar", bar)
    store = Store(f"sqlite:///{tmp_path / 'c.sqlite'}")
    ph = Phase(store)
    real_run = ph.run

    def run(ctx, spec):
        if spec.n == 1:
            raise RuntimeError("the server went away")
        return real_run(ctx, spec)

    with pytest.raises(RuntimeError, match="went away"):
        run_plan(
            study, [Spec("a", 0), Spec("a", 1), Spec("a", 2)], store=store, open=ph.open,
            run=run, close=ph.close, progress=True, desc="loop",
        )  # fmt: skip
    assert len(bars) == 1 and bars[0].disable  # closed (a closed bar is disabled)
    assert "loop:" not in err.getvalue() and "1/3" not in err.getvalue()
