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
#: Weight of the compared pairs' imbalance: it is decided first.
_CARRY_WEIGHT = 10_000.0


@dataclass(frozen=True)
class Design:
    """An arm order over ``len(rounds)`` rounds, after one pre-period run of arm ``pre``.

    ``carry[i][j]`` counts the runs of arm ``labels[j]`` that follow a run of arm
    ``labels[i]`` (the pre-period included); ``position[i][p]`` the rounds in which arm
    ``labels[i]`` runs in position ``p``.
    """

    labels: tuple[str, ...]
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


def _pair_terms(carry: np.ndarray, moment: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """Per design, the summed squared imbalances that could bias a comparison of each pair
    (x, y) of ``pairs`` were x and y the same arm: a third arm z preceding x and y unequally,
    x after y against y after x, x after itself against y after itself, and x's mean position
    in the round against y's (a drift within rounds)."""
    x, y = pairs[:, 0], pairs[:, 1]
    k = carry.shape[-1]
    third = np.ones((len(pairs), k), bool)
    third[np.arange(len(pairs)), x] = False
    third[np.arange(len(pairs)), y] = False
    d = carry[:, :, x] - carry[:, :, y]  # designs x predecessors x pairs
    t1 = (np.where(third.T[None], d, 0) ** 2).sum(axis=(1, 2))
    t2 = ((carry[:, x, y] - carry[:, y, x]) ** 2).sum(axis=1)
    t3 = ((carry[:, x, x] - carry[:, y, y]) ** 2).sum(axis=1)
    t4 = ((moment[:, x] - moment[:, y]) ** 2).sum(axis=1)
    return t1 + t2 + t3 + t4


def _costs(carry: np.ndarray, pos: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """Departures from balance of designs' counts (``carry``, ``pos``: designs x k x k).

    First (weighted 10,000) :func:`_pair_terms` over the pairs the study compares, then
    (weighted 100) the same over every pair of arms, then (weighted 3) each predecessor's
    counts over all arms, itself included, last the arms' counts per position; each a sum of
    squared departures. Zero in the first means no first-order carry-over and no linear drift
    within rounds can bias a compared pair of arms that are the same (an A-vs-A pair).
    """
    k = carry.shape[-1]
    moment = (pos * np.arange(k)).sum(axis=2)
    every = np.array(list(itertools.combinations(range(k), 2)))
    c4 = ((carry - carry.mean(axis=2, keepdims=True)) ** 2).sum(axis=(1, 2))
    p = ((pos - pos.mean(axis=1, keepdims=True)) ** 2).sum(axis=(1, 2))
    cost = (
        _CARRY_WEIGHT * _pair_terms(carry, moment, pairs)
        + 100.0 * _pair_terms(carry, moment, every)
        + 3.0 * c4
        + p
    )
    return np.round(cost, 6)


def _cost(seq: np.ndarray, k: int, pairs: np.ndarray) -> float:
    carry, pos = _counts(seq, k)
    return float(_costs(carry[None], pos[None], pairs)[0])


def _exhaustive(k: int, n: int, pairs: np.ndarray) -> np.ndarray:
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
    cost = _costs(carry.reshape(m, k, k), pos.reshape(m, k, k), pairs)
    return seqs[int(np.argmin(cost))]


def _anneal(
    k: int, n: int, pairs: np.ndarray, *, steps: int = 12000, seed: int = 20261128
) -> np.ndarray:
    """Seeded simulated annealing over the rounds' permutations (moves: swap two arms within a
    round); starts from the rotated-and-reversed orders, keeps the best seen."""
    rng = random.Random(seed)
    seq = np.array([_rotation(list(range(k)), r) for r in range(1, n + 1)])
    cost = _cost(seq, k, pairs)
    best, best_cost = seq.copy(), cost
    temp0 = 0.2 * _CARRY_WEIGHT
    for step in range(steps):
        r = int(rng.random() * n)
        i, j = int(rng.random() * k), int(rng.random() * k)
        if i == j:
            continue
        seq[r, i], seq[r, j] = seq[r, j], seq[r, i]
        new = _cost(seq, k, pairs)
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
def _index_design(
    k: int, n: int, pairs: tuple[tuple[int, int], ...]
) -> tuple[tuple[int, ...], ...]:
    if k == 1:
        return ((0,),) * n
    pp = np.array(pairs, dtype=int).reshape(-1, 2)
    space = math.factorial(k) ** n
    seq = _exhaustive(k, n, pp) if space <= _EXHAUSTIVE else _anneal(k, n, pp)
    return tuple(tuple(int(x) for x in row) for row in seq)


def round_design(
    labels: Sequence[str], rounds: int, pairs: Sequence[tuple[str, str]] | None = None
) -> Design:
    """The arms' order in each of ``rounds`` rounds, after a pre-period run of ``labels[0]``.

    Design: among all sequences of ``rounds`` permutations of the arms (exhaustively where
    there are at most 60,000, else by seeded simulated annealing), the one that first balances
    each compared pair (x, y) of ``pairs`` (default: every pair) for what precedes it, the
    pre-period and round boundaries included, and for its mean position in the round: every
    third arm precedes x as often as y, x follows y as often as y follows x, x follows itself
    as often as y does, and x's positions add up to y's (:func:`_pair_terms`). Then the same
    for every pair of arms, then what precedes each arm over all arms, then the positions
    (the costs: :func:`_costs`). Every round re-opens its arms (switch and warm-up), so an
    arm that ends one round and begins the next counts as preceded by itself.

    Where the first criterion is met, neither a first-order carry-over of any size from any
    arm nor a linear drift within rounds can bias the pair when its two arms are the same (an
    A-vs-A pair). 2 arms: AB, BA, AB, BA, ... 3 arms over 4 rounds ``pre a; abc cba cab bac``
    and over 5 ``pre a; bac acb cab cba bac`` balance two of the three pairs, (a, b) and (b,
    c), exactly; over 6 rounds the serially balanced ``pre a; abc cab bac cba acb bca`` (each
    ordered pair, itself included, twice; every position twice) balances all three. Other
    sizes get the least imbalance found (:attr:`Design.carry_spread`). The same labels,
    rounds and pairs always give the same design.

    Parameters
    ----------
    labels : sequence of str
        The arms, in the params' order; the first is the pre-period's arm.
    rounds : int
        Number of rounds (at least 1).
    pairs : sequence of (str, str), optional
        The pairs of arms the study compares, balanced first; pairs naming an arm not in
        ``labels`` are left out. None: every pair alike.

    Returns
    -------
    Design
    """
    labels = list(labels)
    if not labels or rounds < 1:
        raise ValueError("a round design needs at least one arm and one round")
    at = {a: i for i, a in enumerate(labels)}
    chosen = [(at[x], at[y]) for x, y in pairs or () if x in at and y in at and x != y]
    if not chosen:
        chosen = list(itertools.combinations(range(len(labels)), 2))
    key = tuple(sorted({(min(p), max(p)) for p in chosen}))
    idx = _index_design(len(labels), rounds, key)
    seq = np.array(idx)
    carry, pos = _counts(seq, len(labels))
    return Design(
        labels=tuple(labels),
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
    pairs: Sequence[tuple[str, str]] | None = None,
) -> list[tuple[str, str, int, int]]:
    """``(arm, workload, threads, repeat)`` in execution order, as ``study.order`` asks.

    ``interleaved``: rounds in :func:`round_design`'s orders, after, with ``pre`` and two arms
    or more, the pre-period (repeat 0: one run of the design's ``pre`` arm, its last cell, the
    one whose aftermath the first round's first arm inherits), balanced first for ``pairs``;
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
    design = round_design(arms, repeats, pairs)
    if pre and len(arms) > 1:
        out += cells(design.pre, 0)[-1:]
    for r, in_round in enumerate(design.rounds, start=1):
        for a in in_round:
            out += cells(a, r)
    return out
