"""Caveats on findings: what stands in, what is scaled, what an arm means; written where a
finding is made and shown with it (numbered notes on the terminal, in notebooks, in the
report), kept in findings.json."""

from __future__ import annotations

import json
import re

import pytest

from tibenchlib import findings as F
from tibenchlib.findings import caveats as C
from tibenchlib.findings.record import Caveat, Figure, Finding
from tibenchlib.texttable import display_width


def _pair(cand: str, verdict: str = "worse", caveats=()) -> Finding:
    fig = Figure(-65.0, -70.0, -60.0, "%", 3, "Fieller")
    vals = {"cand": cand, "base": "unbound", "workload": "oltp_point_select", "threads": 2,
            "n": 3, "p": 0.001, "family": 1, "delta": 2.0, "size": "at_least"}  # fmt: skip
    return Finding("numa", "f_pair", vals, fig, verdict, "", "numa", "w", caveats)


def test_flush2_says_it_is_not_durable_in_both_languages():
    c = C.arm_meaning("flush2", {"innodb_flush_log_at_trx_commit": 2})
    assert c.key == "arm_flush2"
    assert "innodb_flush_log_at_trx_commit=2" in c.say("en") and "not durable" in c.say("en")
    assert "innodb_flush_log_at_trx_commit=2" in c.say("zh") and "非持久化" in c.say("zh")
    assert "durable" in C.arm_meaning("flush1", {"innodb_flush_log_at_trx_commit": 1}).say("en")
    # an arm that is only its name needs no note; a binding is said
    assert C.arm_meaning("plain", {}) is None
    assert "cpus:0" in C.arm_meaning("pinned", {}, "cpus:0").say("en")


def test_tpcc_wait_scaled_names_the_factor_the_ceiling_and_the_multiple():
    c = C.tpcc_wait_scaled(0.01, 529.0, 1)
    for lang in ("en", "zh"):
        text = c.say(lang)
        assert "0.01" in text and "12.86" in text and "529" in text and "41" in text, text
    # below the ceiling no multiple is claimed
    low = C.tpcc_wait_scaled(0.5, 10.0, 1).say("en")
    assert "12.86" in low and "×" not in low
    lua = C.tpcc_not_audited("sysbench", 1000, 30).say("en")
    assert "TPC-C-like" in lua and "not an audited" in lua and "1,000 items" in lua
    assert "scaled" not in C.tpcc_not_audited("go-tpc").say("en")


def test_dm_names_its_stand_ins():
    assert "parallel replication" in C.dm_stand_in("sync").say("en")
    assert "并行复制" in C.dm_stand_in("sync").say("zh")
    assert "mydumper" in C.dm_stand_in("dump").say("en")
    assert C.dm_stand_in("other") is None


def test_numa_on_one_node_is_a_measure_with_its_stand_in_not_a_verdict():
    found = [_pair("cpus:0"), _pair("node:0", "better")]
    one = F.numa_on_host(found, nodes=1, host_cpus=2, cpus_seen={"cpus:0": "0"})
    assert [f.verdict for f in one] == ["info", "info"]
    pin = one[0].caveats[0]
    assert pin.key == "numa_cpu_pinning" and "1 of the host's 2 CPUs" in pin.say("en")
    assert "one NUMA node" in pin.say("en") and "CPU 绑定代替节点绑定" in pin.say("zh")
    assert one[1].caveats[0].key == "numa_one_node"
    # several nodes: binding can show something, the verdict stands; pinning is still said
    two = F.numa_on_host(found, nodes=2, host_cpus=8, cpus_seen={"cpus:0": "0-1"})
    assert [f.verdict for f in two] == ["worse", "better"]
    assert "2 of the host's 8 CPUs" in two[0].caveats[0].say("en")
    assert "one NUMA node" not in two[0].caveats[0].say("en") and not two[1].caveats


def test_caveats_are_numbered_once_and_marked_on_every_finding_that_rests_on_them():
    a, b = Caveat("x", {"en": "A.", "zh": "甲。"}), Caveat("y", {"en": "B.", "zh": "乙。"})
    fs = [_pair("cpus:0", caveats=(b,)), _pair("node:0", caveats=(a, b)), _pair("n")]
    notes = F.caveat_notes(fs)
    assert notes == [b, a]
    assert [F.caveat_marks(f, notes) for f in fs] == [[1], [1, 2], []]
    assert F.render(fs[1], "en") + " [notes 1, 2]" == F.marked(fs[1], notes, "en")
    assert F.marked(fs[0], notes, "zh").endswith("［注 1］")


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("cols", [40, 72, 120])
def test_terminal_text_carries_every_note_within_the_width(lang, cols):
    pin = C.numa_pinning("cpus:0", "0", 1, 2, True)
    found = {
        "numa": [_pair("cpus:0", caveats=(pin,))],
        "tpcc": [_pair("x", "info", (C.tpcc_wait_scaled(0.01, 529.0, 1),))],
    }
    text = F.terminal_text(found, {"numa": "NUMA", "tpcc": "TPC-C"}, lang, cols)
    assert all(display_width(line) <= cols for line in text.splitlines()), text
    flat = re.sub(r"\s+", "", text)
    for c in (pin, found["tpcc"][0].caveats[0]):
        assert re.sub(r"\s+", "", c.say(lang)) in flat
    assert ("note 2:" if lang == "en" else "注 2：") in text


def test_caveats_survive_findings_json(tmp_path, monkeypatch):
    monkeypatch.setenv("TIBENCH_DATA", str(tmp_path))
    pin = C.numa_pinning("cpus:0", "0", 1, 2, True)
    out = F.save("s", {"numa": [_pair("cpus:0", "info", (pin,))]})
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["numa"][0]["caveats"] == [{"key": pin.key, "text": pin.text}]
    assert F.load("s")["numa"][0].caveats == (pin,)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_notebook_shows_each_finding_with_its_notes(lang):
    pin = C.numa_pinning("cpus:0", "0", 1, 2, True)
    found = [_pair("cpus:0", "info", (pin,)), _pair("node:0", "info")]
    text = F.markdown(found, lang)
    mark = " [note 1]" if lang == "en" else "［注 1］"
    assert f"- {F.render(found[0], lang)}{mark}" in text
    assert f"- {F.render(found[1], lang)}\n" in text  # no note, no mark
    assert text.endswith(("note 1: " if lang == "en" else "注 1：") + pin.say(lang) + "  ")
