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
    def carry_spread(self) -> int:
        """The largest difference between two arms' counts of following the same third arm:
        0 when each arm is preceded by each other arm equally often."""
        k = len(self.carry)
        return max(
            (max(row[x] for x in range(k) if x != z) - min(row[x] for x in range(k) if x != z))
            for z, row in enumerate(self.carry)
        )

    @property
    def carry_balanced(self) -> bool:
        """No first-order carry-over can bias a comparison of two arms that are the same:
        each arm is preceded by each other arm equally often, x follows y as often as y
        follows x, and every arm follows itself (re-opened) equally often."""
        k = len(self.carry)
        c = self.carry
        return (
            self.carry_spread == 0
            and all(c[x][y] == c[y][x] for x in range(k) for y in range(k))
            and len({c[x][x] for x in range(k)}) == 1
        )

    @property
    def serially_balanced(self) -> bool:
        """Each arm is preceded by each arm, itself included, equally often."""
        return len({x for row in self.carry for x in row}) == 1


def _counts(seq: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Carry-over and position counts of index rounds ``seq`` (n x k) after pre-period arm 0."""
    flat = np.concatenate([[0], seq.ravel()])
    carry = np.bincount(flat[:-1] * k + flat[1:], minlength=k * k).reshape(k, k)
    pos = np.bincount((seq * k + np.arange(k)).ravel(), minlength=k * k).reshape(k, k)
    return carry, pos


def _costs(carry: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """Departures from balance of designs' counts (``carry``, ``pos``: designs x k x k).

    First (weighted 1000): per predecessor, the spread of its counts over the other arms (a
    third arm inherited unequally biases any pair), the asymmetry of each pair's counts (x
    after y against y after x) and the spread of the arms' counts after themselves: zero
    together means no pair of arms that are the same (an A-vs-A pair) can be biased by any
    first-order carry-over. Then (weighted 30) each predecessor's counts over all arms, itself
    included; last the arms' positions. Each as a sum of squared departures from the mean.
    """
    k = carry.shape[-1]
    off = ~np.eye(k, dtype=bool)
    offc = np.where(off, carry, 0).astype(float)
    off_mean = offc.sum(axis=2, keepdims=True) / (k - 1)
    c1 = (np.where(off, offc - off_mean, 0.0) ** 2).sum(axis=(1, 2))
    c2 = ((carry - np.swapaxes(carry, 1, 2)) ** 2).sum(axis=(1, 2)) / 2
    diag = np.diagonal(carry, axis1=1, axis2=2)
    c3 = ((diag - diag.mean(axis=1, keepdims=True)) ** 2).sum(axis=1)
    c4 = ((carry - carry.mean(axis=2, keepdims=True)) ** 2).sum(axis=(1, 2))
    p = ((pos - pos.mean(axis=1, keepdims=True)) ** 2).sum(axis=(1, 2))
    return np.round(_CARRY_WEIGHT * (c1 + c2 + c3) + 30.0 * c4 + p, 6)


def _cost(seq: np.ndarray, k: int) -> float:
    carry, pos = _counts(seq, k)
    return float(_costs(carry[None], pos[None])[0])


def _exhaustive(k: int, n: int) -> np.ndarray:
    """The least-cost sequence of ``n`` permutations of ``k`` arms, every sequence scored at
    once (the first of equal cost in lexicographic order)."""
    perms = np.array(list(itertools.permutations(range(k))))
    idx = np.array(list(itertools.product(range(len(perms)), repeat=n)))
    seqs = perms[idx]  # sequences x rounds x arms
    m = len(seqs)
    flat = np.concatenate([np.zeros((m, 1), int), seqs.reshape(m, -1)], axis=1)
    rows = np.arange(m)[:, None]
    carry = np.zeros((m, k * k), int)
    np.add.at(carry, (rows, flat[:, :-1] * k + flat[:, 1:]), 1)
    pos = np.zeros((m, k * k), int)
    np.add.at(pos, (rows, (seqs * k + np.arange(k)).reshape(m, -1)), 1)
    cost = _costs(carry.reshape(m, k, k), pos.reshape(m, k, k))
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
    there are at most 60,000, else by seeded simulated annealing), the one that first makes
    what precedes each arm, the pre-period and round boundaries included, as even as possible,
    then the arms' positions in the round (the costs: :func:`_costs`). Every round re-opens its
    arms (switch and warm-up), so an arm that ends one round and begins the next counts as
    preceded by itself.

    What it gives: with 2 or 3 arms, from 4 rounds on, each arm is preceded by each other
    arm equally often, x follows y as often as y follows x, and each arm follows itself
    equally often (:attr:`Design.carry_balanced`), so no first-order carry-over can bias an
    A-vs-A pair: 3 arms over 4 rounds ``pre a; bac abc acb cba`` (each arm after each other
    twice, never after itself), over 5 ``pre a; abc acb bac cab cba``, over 6 the serially
    balanced ``pre a; abc cab bac cba acb bca`` (each ordered pair, itself included, twice).
    3 arms over 3 rounds, and 4 arms or more, get the least imbalance found: counts that
    differ by one or two runs. The same labels and rounds always give the same design.

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
