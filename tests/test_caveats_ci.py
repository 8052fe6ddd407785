"""The CI study (conftest's ``ci_study``, measured once per session) read as a DBA reads it:
every stand-in and scaled design carries its caveat in both languages in findings.json, on the
terminal and in the HTML report; the terminal stays within 120 columns; the report says what
differs between the compared arms; the sweep's findings and the diagnosis agree on saturation.

The reports are built from a copy of the study (other tests build the clone's own at the same
time)."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3

import pytest
from helpers import tibench

from tibenchlib import findings as F
from tibenchlib import paths
from tibenchlib.report import html
from tibenchlib.report.diagnosis import diagnosis_table, study_diagnosis
from tibenchlib.studyplan import study_from
from tibenchlib.texttable import display_width

pytestmark = [pytest.mark.slow, pytest.mark.notebook]

#: what the CI study's design must disclose, by phase: a caveat key and a phrase of it per
#: language (flush2 is not durable; cpus:0 is 1 of the CPUs; DM's and TPC-C's stand-ins)
EXPECTED = {
    "compare": [("arm_flush2", "not durable", "非持久化")],
    "numa": [("numa_cpu_pinning", "pins the server", "把数据库固定")],
    "dm": [("dm_sync_stand_in", "parallel replication", "并行复制")],
    "tpcc": [
        ("tpcc_not_audited", "not an audited TPC-C result", "不是经过审计的 TPC-C 结果"),
        ("tpcc_wait_scaled", "12.86 tpmC per warehouse", "12.86 tpmC"),
    ],
}


def _flat(text: str) -> str:
    return re.sub(r"\s+", "", text)


@pytest.fixture(scope="module")
def ci_copy(clone_data_dir, ci_study, tmp_path_factory):
    assert ci_study.returncode == 0, ci_study.stdout
    data = tmp_path_factory.mktemp("data")
    catalog = paths.catalog_file("ci")
    skip = shutil.ignore_patterns("report", f"{catalog.name}*")
    shutil.copytree(paths.study_dir("ci"), data / "ci", ignore=skip)
    # the catalog through SQLite's backup: consistent while a resume of the study writes to it
    with sqlite3.connect(catalog) as src, sqlite3.connect(data / "ci" / catalog.name) as dst:
        src.backup(dst)
    mp = pytest.MonkeyPatch()
    mp.setenv("TIBENCH_DATA", str(data))
    yield data
    mp.undo()


def test_findings_json_and_the_terminal_carry_every_caveat(ci_copy):
    r = tibench("findings", "ci", "--json")
    assert r.returncode == 0, r.stderr
    found = json.loads(r.stdout)
    saved = json.loads(paths.findings_file("ci").read_text(encoding="utf-8"))
    texts = {}
    for phase, want in EXPECTED.items():
        for data in (found, saved):
            cav = {c["key"]: c["text"] for f in data[phase] for c in f["caveats"]}
            for key, en, zh in want:
                assert key in cav, (phase, sorted(cav))
                assert en in cav[key]["en"] and zh in cav[key]["zh"], cav[key]
                texts[key] = cav[key]
    for lang in ("en", "zh"):
        out = tibench("findings", "ci", "--lang", lang, env={"COLUMNS": "200"}).stdout
        assert all(display_width(line) <= 120 for line in out.splitlines()), out
        for t in texts.values():
            assert _flat(t[lang]) in _flat(out), (t[lang], out)
        assert ("[note" if lang == "en" else "［注") in out


def test_diagnose_fits_and_speaks_the_readers_language(ci_copy):
    for lang, hint in (("en", "(-v: every column"), ("zh", "（-v：显示全部列")):
        out = tibench("diagnose", "ci", "--lang", lang, env={"COLUMNS": "200"}).stdout
        assert all(display_width(line) <= 120 for line in out.splitlines()), out
        assert hint in out
        narrow = tibench("diagnose", "ci", "--lang", lang, env={"COLUMNS": "60"}).stdout
        paragraphs = narrow[narrow.index("\n\n") :]  # the table keeps its columns
        assert all(display_width(line) <= 60 for line in paragraphs.splitlines()), narrow
        # a number and its interval are never cut: every "[a, b]" sits on one line
        assert not re.search(r"\[[^\]\n]*\n", paragraphs), paragraphs


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_report_lists_the_caveats_first_and_marks_each_finding(ci_copy, lang):
    page = html.build_report("ci", lang=lang).read_text(encoding="utf-8")
    top = page[page.index('id="findings"') : page.index('id="phase-environment"')]
    assert 'id="caveats"' in top and 'href="#caveat-1"' in top
    text = _flat(re.sub(r"<[^>]+>", "", top))
    for want in EXPECTED.values():
        for _key, en, zh in want:
            assert _flat(en if lang == "en" else zh) in text, (en, zh)
    # what differs between the compared arms, from their servers' captures
    assert "innodb_flush_log_at_trx_commit" in top
    assert ("What differs" if lang == "en" else "配置差异") in top


def test_the_sweep_findings_and_the_diagnosis_agree_on_saturation(ci_copy):
    study = study_from("ci")
    d = study_diagnosis(study, lang="en")
    table = diagnosis_table(d, "en")
    said = {
        (f.values["workload"], f.values["arm"]): f.key
        for f in F.study_findings(study)["sweep"]
        if f.key.startswith("f_sat")
    }
    key = {"levels_off": "f_sat_levels", "not_reached": "f_sat_rising",
           "unclear": "f_sat_unclear", "one_count": "f_sat_one"}  # fmt: skip
    for (_, r), cell in zip(d.iterrows(), table.iloc[:, 4], strict=True):
        assert said[(r["workload"], r["arm"])] == key[r["saturation"]], r
        assert cell.isdigit() == (r["saturation"] == "levels_off"), (cell, r["saturation"])
