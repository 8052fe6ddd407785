"""Paragraphs on the terminal (``tibench findings``, ``tibench diagnose``): wrapped to the
terminal's width, at most 120 columns, a Chinese character counting two; a number, an interval
or a note's mark never split across lines."""

from __future__ import annotations

import re

import pytest

from tibenchlib import terminal
from tibenchlib.texttable import display_width

EN = (
    "flush2 is faster than flush1 on oltp_update_non_index at every thread count: TPS +106.8% "
    "[+93.2, +121.4] (n = 3, paired t, Holm p = 0.0073), at least the 2% margin; at 64 threads "
    "1,234,567.8 [1,200,000.1, 1,260,000.9] TPS, -3.5% [−3, +8] of the peak. [notes 1, 2]"
)
ZH = (
    "oltp_point_select（flush2）：压测线程数为 4 时 TPS 仍在上升（较 2 线程 +106.8% [+93.2, "
    "+121.4]，n = 3，Fieller），在所测线程范围内尚未到达瓶颈点；服务端的 CPU 需求为其 2 个 CPU 的 "
    "81% [74, 89]，其中自身占用 22%，其 CPU 的繁忙度为 100%。［注 1、2］"
)
#: what must stay on one line: signed or plain numbers with their unit, intervals, marks
_WHOLE = re.compile(r"\[[^\[\]]*\]|［注 [\d、]+］|\b[np] = [\d.]+|[+−-]?\d[\d,.]*%?")


@pytest.mark.parametrize("text", [EN, ZH], ids=["en", "zh"])
@pytest.mark.parametrize("cols", [40, 57, 80, 101, 120])
def test_no_line_wider_than_the_width_and_no_number_split(text, cols):
    out = terminal.wrap(text, cols, "- ", "  ")
    lines = out.splitlines()
    assert len(lines) > 1 or display_width(text) + 2 <= cols
    assert all(display_width(line) <= cols for line in lines), out
    for piece in _WHOLE.findall(text):
        assert any(piece in line for line in lines), (piece, out)
    # nothing lost or added but the breaks and the indents
    assert re.sub(r"\s+", "", out)[1:] == re.sub(r"\s+", "", text)
    # a closing mark never starts a line, an opening one never ends one
    assert not any(line.strip()[:1] in "，。；：）" for line in lines[1:]), out
    assert not any(line.rstrip()[-1:] in "（［" for line in lines), out


def test_a_chinese_character_counts_two_columns():
    out = terminal.wrap("测" * 30, 20)
    assert [len(line) for line in out.splitlines()] == [10, 10, 10]


def test_the_width_follows_the_terminal_up_to_120(monkeypatch):
    monkeypatch.setenv("COLUMNS", "300")
    assert terminal.width() == 120
    monkeypatch.setenv("COLUMNS", "90")
    assert terminal.width() == 90
    assert max(map(display_width, terminal.wrap(EN * 3).splitlines())) <= 90
