"""The rounds' arm order: every arm once per round, balanced for position and for what precedes
each arm (the pre-period run and round boundaries included), exactly where the number of rounds
allows it, within one run of it elsewhere (within two for 5 arms or more)."""

from __future__ import annotations

import string

import pytest

from tibenchlib.runorder import arm_order, round_design


def _sequence(d) -> str:
    return d.pre + "".join("".join(r) for r in d.rounds)


def _pairs(d) -> dict[str, int]:
    s = _sequence(d)
    out: dict[str, int] = {}
    for i in range(len(s) - 1):
        out[s[i : i + 2]] = out.get(s[i : i + 2], 0) + 1
    return out


@pytest.mark.parametrize("k", [2, 3, 4])
@pytest.mark.parametrize("n", [3, 4, 5, 6, 7, 8])
def test_small_designs_are_balanced_where_possible_and_within_one_elsewhere(k, n):
    arms = string.ascii_lowercase[:k]
    d = round_design(arms, n)
    assert len(d.rounds) == n and all(sorted(r) == list(arms) for r in d.rounds)
    # the carry-over counts are what the sequence shows (recounted plainly)
    pairs = _pairs(d)
    assert [[pairs.get(x + y, 0) for y in arms] for x in arms] == [list(r) for r in d.carry]
    assert d.carry_spread <= 1
    if (k == 2 and n % 2 == 0) or (k, n) == (3, 6):
        assert d.carry_balanced
    # positions come second to carry-over: within 2 of even for 2 and 3 arms, 4 for 4 arms
    spread = max(max(c) - min(c) for c in zip(*d.position, strict=True))
    assert spread <= (2 if k < 4 else 4)


def test_three_arms_over_six_rounds_is_serially_balanced_and_five_rounds_as_close_as_it_gets():
    d = round_design(["a", "b", "c"], 6)
    assert d.pre == "a" and ["".join(r) for r in d.rounds] == [
        "abc", "cab", "bac", "cba", "acb", "bca",
    ]  # fmt: skip
    assert _pairs(d) == {x + y: 2 for x in "abc" for y in "abc"}
    five = round_design(["flush1", "flush1_again", "flush2"], 5)
    # 15 transitions over 9 ordered pairs cannot be even: no two arms differ by more than one
    # in how often they follow any arm, and the two arms of an A-vs-A pair follow flush2
    # equally often
    assert five.carry_spread == 1 and not five.carry_balanced
    assert five.carry[2][0] == five.carry[2][1]


def test_two_arms_alternate_ab_ba():
    d = round_design(["a", "b"], 4)
    assert ["".join(r) for r in d.rounds] == ["ab", "ba", "ab", "ba"] and d.carry_balanced


@pytest.mark.parametrize("k", [5, 8])
def test_larger_designs_stay_within_two(k):
    arms = string.ascii_lowercase[:k]
    d = round_design(arms, 5)
    assert all(sorted(r) == list(arms) for r in d.rounds)
    assert d.carry_spread <= 2
    assert round_design(arms, 5) == d  # the same design every time


def test_arm_order_reads_the_design_or_rotates_without_a_round_count():
    assert arm_order(list("abc"), 2, 6) == list("cab")
    assert [arm_order(list("abc"), r) for r in (1, 2, 3)] == [list("abc"), list("cba"), list("bca")]
    with pytest.raises(ValueError, match="at least one arm"):
        round_design([], 3)
