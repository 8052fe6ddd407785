"""``tools.execute(interrupt_after_s=…)``: SIGINT at the deadline, how a timed go-ycsb run ends,
tried on a real shell process that prints its final figures on SIGINT as go-ycsb does."""

from __future__ import annotations

import shutil
import time

import pytest

from tibenchlib.tools import execute

pytestmark = pytest.mark.skipif(shutil.which("sh") is None, reason="needs /bin/sh")

#: prints a line a second, and on SIGINT its "final block" and exit 0 (go-ycsb's behaviour)
SCRIPT = (
    'trap \'echo "Got signal [interrupt] to exit."; echo "Run finished"; exit 0\' INT; '
    "i=0; while :; do i=$((i+1)); echo tick $i; sleep 0.1; done"
)


def test_sigint_at_the_deadline_ends_the_run_with_its_final_output(tmp_path):
    t0 = time.monotonic()
    o = execute(["sh", "-c", SCRIPT], tmp_path / "run.log", timeout_s=30, interrupt_after_s=1.0)
    took = time.monotonic() - t0
    log = (tmp_path / "run.log").read_text()
    assert o.interrupted and not o.timed_out and o.returncode == 0
    assert 1.0 <= took < 2.5, took
    assert log.rstrip().endswith("Got signal [interrupt] to exit.\nRun finished")


def test_a_run_that_ends_before_its_deadline_is_not_interrupted(tmp_path):
    o = execute(["sh", "-c", "echo done"], tmp_path / "r.log", interrupt_after_s=5.0)
    assert o.returncode == 0 and not o.interrupted


def test_the_timeout_still_counts_from_the_start(tmp_path):
    """A tool that ignores SIGINT is stopped at ``timeout_s`` from its start, not after it."""
    t0 = time.monotonic()
    o = execute(
        ["sh", "-c", "trap '' INT; sleep 30"], tmp_path / "r.log", timeout_s=1.5,
        interrupt_after_s=0.5,
    )  # fmt: skip
    assert o.interrupted and o.timed_out and time.monotonic() - t0 < 12
