"""The order runs execute in: rounds of arms, balanced for position and for carry-over.

Every phase that runs arms in rounds (sweep, NUMA, ycsb, tpcc, dm) takes its order from here, so
a round is a block for a paired comparison wherever it was measured.

An arm leaves something behind for the arm after it (dirty pages, a full redo log, a warm or a
cold cache), and an arm that runs first in a round runs at another point of the machine's drift
than one that runs last. :func:`round_design` orders the arms of every round so that, over the
study, each arm runs in each position as evenly as the number of rounds allows, and each arm is
preceded by each arm (itself included: every round re-opens its arms) as evenly as it allows,
across round boundaries too. The first round's first arm is preceded by a pre-period run of the
design's ``pre`` arm (one run), measured and recorded but never compared, so that arm is not the
only one that starts from a fresh server.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .params import Study

#: Phase label suffix of pre-period runs: ``sweep-pre`` runs are recorded beside ``sweep`` runs
#: but no reader of the ``sweep`` phase sees them.
PRE_SUFFIX = "-pre"

#: Designs searched exhaustively below this many candidate sequences, by seeded annealing above.
_EXHAUSTIVE = 60_000
#: Weight of carry-over imbalance against position imbalance: carry-over is decided first.
_CARRY_WEIGHT = 1000.0


@dataclass(frozen=True)
class Design:
    """An arm order over ``len(rounds)`` rounds, after one pre-period run of arm ``pre``.

    ``carry[i][j]`` counts the runs of arm ``j`` that follow a run of arm ``i`` (the pre-period
    included); ``position[i][p]`` the rounds in which arm ``i`` runs in position ``p``.
    """

    pre: str
    rounds: tuple[tuple[str, ...], ...]
    carry: tuple[tuple[int, ...], ...]
    position: tuple[tuple[int, ...], ...]

    @property
    def carry_balanced(self) -> bool:
        """Each arm is preceded by each arm equally often (the counts per predecessor agree)."""
        return all(len(set(row)) == 1 for row in self.carry)

    @property
    def carry_spread(self) -> int:
        """The largest difference, over predecessors, between two arms' counts of following
        it: 0 when balanced, 1 when as close as a round count that allows no balance gets."""
        return max(max(row) - min(row) for row in self.carry)


def _counts(seq: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Carry-over and position counts of index rounds ``seq`` (n x k) after pre-period arm 0."""
    flat = np.concatenate([[0], seq.ravel()])
    carry = np.bincount(flat[:-1] * k + flat[1:], minlength=k * k).reshape(k, k)
    pos = np.bincount((seq * k + np.arange(k)).ravel(), minlength=k * k).reshape(k, k)
    return carry, pos


def _cost(seq: np.ndarray, k: int) -> float:
    """Squared departures from balance: per predecessor, of its successors' counts from their
    mean (zero when every arm follows it equally often), weighted above the same for
    positions."""
    carry, pos = _counts(seq, k)
    c = ((carry - carry.mean(axis=1, keepdims=True)) ** 2).sum()
    p = ((pos - pos.mean(axis=0, keepdims=True)) ** 2).sum()
    return _CARRY_WEIGHT * c + p


def _exhaustive(k: int, n: int) -> np.ndarray:
    """The least-cost sequence of ``n`` permutations of ``k`` arms, every sequence scored at
    once (the first of equal cost in lexicographic order)."""
    perms = np.array(list(itertools.permutations(range(k))))
    idx = np.array(list(itertools.product(range(len(perms)), repeat=n)))
    seqs = perms[idx]  # sequences x rounds x arms
    flat = np.concatenate([np.zeros((len(seqs), 1), int), seqs.reshape(len(seqs), -1)], axis=1)
    pair = flat[:, :-1] * k + flat[:, 1:]
    carry = np.zeros((len(seqs), k * k), int)
    np.add.at(carry, (np.arange(len(seqs))[:, None], pair), 1)
    carry = carry.reshape(-1, k, k)
    pos = np.zeros((len(seqs), k * k), int)
    np.add.at(
        pos, (np.arange(len(seqs))[:, None], (seqs * k + np.arange(k)).reshape(len(seqs), -1)), 1
    )
    pos = pos.reshape(-1, k, k)
    c = ((carry - carry.mean(axis=2, keepdims=True)) ** 2).sum(axis=(1, 2))
    p = ((pos - pos.mean(axis=1, keepdims=True)) ** 2).sum(axis=(1, 2))
    cost = np.round(_CARRY_WEIGHT * c + p, 6)
    return seqs[int(np.argmin(cost))]


def _anneal(k: int, n: int, *, steps: int = 12000, seed: int = 20261128) -> np.ndarray:
    """Seeded simulated annealing over the rounds' permutations (moves: swap two arms within a
    round); starts from the rotated-and-reversed orders, keeps the best seen."""
    rng = random.Random(seed)
    seq = np.array([_rotation(list(range(k)), r) for r in range(1, n + 1)])
    cost = _cost(seq, k)
    best, best_cost = seq.copy(), cost
    temp0 = 2.0 * _CARRY_WEIGHT
    for step in range(steps):
        r = int(rng.random() * n)
        i, j = int(rng.random() * k), int(rng.random() * k)
        if i == j:
            continue
        seq[r, i], seq[r, j] = seq[r, j], seq[r, i]
        new = _cost(seq, k)
        temp = temp0 * (1 - step / steps) + 1e-6
        if new <= cost or rng.random() < math.exp((cost - new) / temp):
            cost = new
            if cost < best_cost - 1e-9:
                best, best_cost = seq.copy(), cost
                if best_cost == 0:
                    break
        else:
            seq[r, i], seq[r, j] = seq[r, j], seq[r, i]
    return best


@lru_cache(maxsize=256)
def _index_design(k: int, n: int) -> tuple[tuple[int, ...], ...]:
    if k == 1:
        return ((0,),) * n
    space = math.factorial(k) ** n
    seq = _exhaustive(k, n) if space <= _EXHAUSTIVE else _anneal(k, n)
    return tuple(tuple(int(x) for x in row) for row in seq)


def round_design(labels: Sequence[str], rounds: int) -> Design:
    """The arms' order in each of ``rounds`` rounds, after a pre-period run of ``labels[0]``.

    Design: among all sequences of ``rounds`` permutations of the arms (exhaustively where
    there are at most 60,000, else by seeded simulated annealing), the one that first makes the
    arms following each arm, the pre-period and round boundaries included, as even as possible
    (squared departures from equal counts), then each arm's positions in the round. Every
    round re-opens its arms (switch and warm-up), so an arm that ends one round and starts the
    next counts as preceded by itself, like any other predecessor.

    Exact balance for carry-over (every arm preceded by every arm equally often) needs the
    number of rounds to be a multiple of the number of arms: 3 arms over 6 rounds give
    ``pre a; abc, cab, bac, cba, acb, bca`` up to relabelling, each ordered pair twice. Other
    round counts get the least imbalance possible: over 5 rounds of 3 arms no two arms'
    counts of following any arm differ by more than one. The same labels and rounds always
    give the same design.

    Parameters
    ----------
    labels : sequence of str
        The arms, in the params' order; the first is the pre-period's arm.
    rounds : int
        Number of rounds (at least 1).

    Returns
    -------
    Design
    """
    labels = list(labels)
    if not labels or rounds < 1:
        raise ValueError("a round design needs at least one arm and one round")
    idx = _index_design(len(labels), rounds)
    seq = np.array(idx)
    carry, pos = _counts(seq, len(labels))
    return Design(
        pre=labels[0],
        rounds=tuple(tuple(labels[i] for i in row) for row in idx),
        carry=tuple(tuple(int(x) for x in row) for row in carry),
        position=tuple(tuple(int(x) for x in row) for row in pos),
    )


def _rotation(labels: list, round_no: int) -> list:
    k = ((round_no - 1) // 2) % len(labels)
    rotated = labels[k:] + labels[:k]
    return rotated if round_no % 2 else rotated[::-1]


def arm_order(labels: list[str], round_no: int, rounds: int | None = None) -> list[str]:
    """The arms' order in round ``round_no`` (1-based).

    With ``rounds``: :func:`round_design`'s order, balanced for position and carry-over over
    that many rounds. Without it (a phase that plans one round at a time): rounds 1, 3, 5, ...
    rotate the params' order by 0, 1, 2, ...; rounds 2, 4, 6, ... run the reverse of that
    rotation, so over 2 x (number of arms) rounds every arm takes every position equally often
    (balanced for position; for what precedes each arm only with 3 arms over 6 rounds).
    """
    if rounds is None:
        return _rotation(list(labels), round_no)
    return list(round_design(labels, rounds).rounds[round_no - 1])


def run_order(
    study: Study,
    arms: list[str],
    workloads: list[str],
    threads_for: Callable[[str], list[int]],
    repeats: int,
    *,
    pre: bool = False,
) -> list[tuple[str, str, int, int]]:
    """``(arm, workload, threads, repeat)`` in execution order, as ``study.order`` asks.

    ``interleaved``: rounds in :func:`round_design`'s orders, after, with ``pre`` and two arms
    or more, the pre-period (repeat 0: one run of the design's ``pre`` arm, its last cell, the
    one whose aftermath the first round's first arm inherits);
    ``random``: rounds with the arms and the cells within each arm shuffled (seeded);
    ``sequential``: each cell's repeats back to back.
    """
    reps = range(1, repeats + 1)
    if study.order == "sequential":
        return [(a, w, t, r) for a in arms for w in workloads for t in threads_for(w) for r in reps]
    rng = random.Random(study.seed)
    out: list[tuple[str, str, int, int]] = []

    def cells(a: str, r: int) -> list[tuple[str, str, int, int]]:
        return [(a, w, t, r) for w in workloads for t in threads_for(w)]

    if study.order == "random":
        for r in reps:
            in_round = list(arms)
            rng.shuffle(in_round)
            for a in in_round:
                c = cells(a, r)
                rng.shuffle(c)
                out += c
        return out
    design = round_design(arms, repeats)
    if pre and len(arms) > 1:
        out += cells(design.pre, 0)[-1:]
    for r, in_round in enumerate(design.rounds, start=1):
        for a in in_round:
            out += cells(a, r)
    return out
