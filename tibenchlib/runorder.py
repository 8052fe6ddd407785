"""The order runs execute in: rounds of arms, balanced from round to round.

Every phase that runs arms in rounds (sweep, ycsb, tpcc, dm) takes its order from here, so a
round is a block for a paired comparison wherever it was measured.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from .params import Study


def run_order(
    study: Study,
    arms: list[str],
    workloads: list[str],
    threads_for: Callable[[str], list[int]],
    repeats: int,
) -> list[tuple[str, str, int, int]]:
    """``(arm, workload, threads, repeat)`` in execution order, as ``study.order`` asks:
    ``interleaved`` rounds with :func:`arm_order`, ``random`` (seeded) shuffles within each
    round, ``sequential`` runs each cell's repeats back to back."""
    reps = range(1, repeats + 1)
    if study.order == "sequential":
        return [(a, w, t, r) for a in arms for w in workloads for t in threads_for(w) for r in reps]
    rng = random.Random(study.seed)
    out: list[tuple[str, str, int, int]] = []
    for r in reps:
        in_round = arm_order(arms, r)
        if study.order == "random":
            rng.shuffle(in_round)
        for a in in_round:
            cells = [(a, w, t, r) for w in workloads for t in threads_for(w)]
            if study.order == "random":
                rng.shuffle(cells)
            out += cells
    return out


def arm_order(labels: list[str], round_no: int) -> list[str]:
    """The arms' order in round ``round_no`` (1-based) of an interleaved sweep.

    Rounds 1, 3, 5, ... rotate the params' order by 0, 1, 2, ...; rounds 2, 4, 6, ... run the
    reverse of that rotation.  Over 2 x (number of arms) rounds every arm takes every position
    equally often and follows every other arm equally often (a Williams design), so neither the
    slot after an arm switch nor what the previous arm left behind (dirty pages, a full redo log)
    favours one arm; round 1 runs in the params' order.
    """
    k = ((round_no - 1) // 2) % len(labels)
    rotated = labels[k:] + labels[:k]
    return rotated if round_no % 2 else rotated[::-1]
