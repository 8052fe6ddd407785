"""`tibench report`: the HTML report of a small study measured here for real (embedded MariaDB,
real sysbench, run from the command line only), in English and Chinese, checked for what a
reader must never see: progress or log lines, internal column names, ``nan``/``None`` cells,
impossible figures, an estimate outside its own interval, English prose in the Chinese report,
headers that wrap one character per line, and live HTML planted in the study's strings."""

from __future__ import annotations

import fcntl
import json
import re
import sqlite3
import subprocess
import sys
from html.parser import HTMLParser

import pandas as pd
import pytest

from tibenchlib import cli, paths
from tibenchlib.report import html

sys.path.insert(0, str(paths.ROOT / "tests"))
import notebook_lab  # noqa: E402
from test_notebooks_zh import english_runs  # noqa: E402

#: Chromium driven by Playwright (a module fixture), as the notebooks' browser tests use it
browser = notebook_lab.browser

STUDY = "rep"
PAYLOAD = {
    "description": "<img src=x onerror=alert(1)>",
    "variable": "<img src=y onerror=alert(2)>",
    "tool": "<script>alert(3)</script>",
}
#: the study's Chinese description: the zh report shows it, and not the English one
DESCRIPTION_ZH = "报告测试：两个测试组的对比"
PARAMS = f"""
study: {STUDY}
description: "{PAYLOAD["description"]}"
description_zh: "{DESCRIPTION_ZH}"
target: {{kind: embedded}}
dataset: {{tables: 1, table_size: 500, prepare_threads: 1}}
workloads: [oltp_point_select]
threads: [1, 2]
duration_s: 1
report_interval_s: 1
repeats: 3
cooldown_s: 0
order: interleaved
phases: [environment, prepare, sweep, compare]
arms:
  - label: flush1
    server_options: {{innodb_flush_log_at_trx_commit: 1}}
  - label: flush2
    server_options: {{innodb_flush_log_at_trx_commit: 2}}
compare: {{baseline: flush1, candidate: flush2, delta_pct: 2}}
"""


def _plant(study: str) -> None:
    """A server variable and a tool's error carrying HTML, as a hostile server or tool could."""
    db = sqlite3.connect(paths.catalog_file(study))
    (cap,) = db.execute("SELECT capture_json FROM environment WHERE arm = 'flush1'").fetchone()
    cap = json.loads(cap)
    cap["database"]["curated"].append(
        {"name": "sql_mode", "scope": "global variable", "value": PAYLOAD["variable"]}
    )
    db.execute("UPDATE environment SET capture_json = ? WHERE arm = 'flush1'", (json.dumps(cap),))
    db.commit()
    db.close()
    res = paths.phase_results(study, "prepare")
    rows = json.loads(res.read_text())
    rows.append(
        {
            "arm": "flush2",
            "step": "verify",
            "table_name": None,
            "seconds": 0.1,
            "status": f"failed: {PAYLOAD['tool']}",
            "detail": PAYLOAD["tool"],
        }
    )
    res.write_text(json.dumps(rows))


@pytest.fixture(scope="module")
def reports(tmp_path_factory, sysbench_bin):
    data = tmp_path_factory.mktemp("data")
    mp = pytest.MonkeyPatch()
    mp.setenv("TIBENCH_DATA", str(data))
    params = data / f"{STUDY}.yaml"
    params.write_text(PARAMS)
    try:
        assert cli.main(["run", str(params), "--in-process"]) == 0
        _plant(STUDY)
        en = html.build_report(STUDY, lang="en")
        zh = html.build_report(STUDY, lang="zh")
        yield {
            "en": en.read_text(encoding="utf-8"),
            "zh": zh.read_text(encoding="utf-8"),
            "paths": (en, zh),
        }
    finally:
        from tibenchlib.server import embedded

        embedded().stop()
        mp.undo()


class _Tables(HTMLParser):
    """Every table's header and cell texts, and the visible text outside code, style and the
    raw tables of collapsed blocks (their summary line is kept)."""

    def __init__(self):
        super().__init__()
        self.headers: list[str] = []
        self.cells: list[str] = []
        self.text: list[str] = []
        self._cell = None
        self._code = self._skip = self._details = self._summary = 0

    def handle_starttag(self, tag, attrs):
        if tag in ("th", "td"):
            self._cell = (tag, [])
        self._code += tag == "code"
        self._skip += tag in ("style", "script")
        self._details += tag == "details"
        self._summary += tag == "summary"

    def handle_endtag(self, tag):
        if tag in ("th", "td") and self._cell:
            text = "".join(self._cell[1]).strip()
            (self.headers if self._cell[0] == "th" else self.cells).append(text)
            self._cell = None
        self._code -= tag == "code" and self._code > 0
        self._skip -= tag in ("style", "script") and self._skip > 0
        self._details -= tag == "details" and self._details > 0
        self._summary -= tag == "summary" and self._summary > 0
        if tag in ("td", "th", "p", "li", "summary", "h2", "h3", "figcaption", "tr"):
            self.text.append("\n")

    def handle_data(self, data):
        if self._cell:
            self._cell[1].append(data)
        if self._skip or self._code or (self._details and not self._summary):
            return
        self.text.append(data)


def _parse(page: str) -> _Tables:
    p = _Tables()
    p.feed(page)
    return p


INTERNAL = re.compile(r"^[a-z0-9]+(_[a-z0-9]+)+$")
INTERVAL = re.compile(r"^([+-]?[\d,]*\.?\d+)%? \[([+-]?[\d,]*\.?\d+), ([+-]?[\d,]*\.?\d+)\]")


def _num(s: str) -> float:
    return float(s.replace(",", ""))


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_report_opens_with_findings_then_one_numbered_section_per_phase(reports, lang):
    page = reports[lang]
    heads = re.findall(r"<h2 id=\"([^\"]+)\">(\d+)\. ", page)
    assert heads[0] == ("findings", "1")
    assert [int(n) for _, n in heads] == list(range(1, len(heads) + 1))
    assert [a for a, _ in heads[1:]] == [f"phase-{p.name}" for p in html.PHASE_SECTIONS]
    # no contents list (its heading, en or zh; 目录 alone is also a directory, as in 数据目录)
    assert "00 ·" not in page and not re.search(r">\s*(Contents|目录)\s*<", page)
    # the findings come first and say something about the A/B pair
    first = page.index('id="findings"')
    assert first < page.index('id="phase-environment"')
    assert re.search(
        r"flush2 (is|against|对比) ", page[first : page.index('id="phase-environment"')]
    )
    # a phase not run says so, with the command that runs it
    if lang == "en":
        assert "This phase has not been run" in page and "--phase numa" in page
    else:
        assert "此阶段尚未运行" in page and "--phase numa" in page


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_no_log_line_no_internal_name_no_empty_cell(reports, lang):
    page = re.sub(r'src="data:[^"]*"', "", reports[lang])  # figures' bytes are no text
    for bad in ("output_stderr", "Measuring now", "正在测试", "it/s]", "run/s", "ETA", "INFO "):
        assert bad not in page, bad
    p = _parse(page)
    internal = [h for h in p.headers if INTERNAL.match(h)]
    assert not internal, internal
    for name in ("ci_low_pct", "p_adjusted", "steady_tps", "threads_from", "bm_ci_low"):
        assert name not in p.headers
    empty = [c for c in p.cells if c.lower() in ("nan", "none", "nat", "<na>")]
    assert not empty
    assert not [c for c in p.cells if re.match(r"^\(.*,\)", c)]  # Python tuples


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_estimate_lies_inside_its_interval_and_nothing_impossible_shows(reports, lang):
    p = _parse(reports[lang])
    seen = 0
    for c in p.cells:
        m = INTERVAL.match(c)
        if m:
            est, lo, hi = map(_num, m.groups())
            assert lo - 0.051 <= est <= hi + 0.051, c
            seen += 1
    assert seen >= 8  # the sweep's and the comparison's intervals were checked
    text = "".join(p.text)
    for m in re.finditer(r"([+-]?[\d.]+)% \[([+-]?[\d.]+), ([+-]?[\d.]+)\]", text):
        est, lo, hi = map(float, m.groups())
        assert lo - 0.51 <= est <= hi + 0.51, m.group(0)


@pytest.mark.slow
def test_the_chinese_report_speaks_chinese(reports):
    p = _parse(reports["zh"])
    allowed = {
        "oltp_point_select",
        "flush1",
        "flush2",
        "Holm p",
        "Student t",
        "TPS",
        "QPS",
        "MariaDB",
        "Debian GNU/Linux",
    }
    text = "".join(p.text)
    # the host's CPU model and OS are captured names
    allowed |= {c for c in p.cells if re.search(r"(CPU|Linux|EPYC|Xeon|Core)", c)}
    assert not english_runs(text, allowed), english_runs(text, allowed)[:5]
    assert "(mean, 95% t)" not in reports["zh"] and "单元格" not in reports["zh"]
    # the study's description in the study file's Chinese, not its English
    assert DESCRIPTION_ZH in text and "onerror=alert(1)" not in reports["zh"]
    assert DESCRIPTION_ZH not in reports["en"]
    assert "压测线程" in text and "置信区间" in text and "测试组" in text
    # a Chinese table cell punctuates in full width too (names like cpus:0, figures and code
    # keep theirs)
    half = [
        c
        for c in p.cells
        if re.search(r"[\u4e00-\u9fff]", c)
        and PAYLOAD["tool"] not in c  # a tool's own error, quoted as it came
        and re.search(r"[,;:()]", re.sub(r"\[[^\]]*\]|\d,\d|\w:\w|`[^`]*`|<[^>]*>", "", c))
    ]
    assert not half, half[:5]
    # full-width punctuation in the findings' sentences
    findings = text[: text.index("2. ")]
    assert (
        "，" in findings
        and "（" in findings
        and "," not in re.sub(r"\[[^\]]*\]|\d,\d", "", findings)
    )


@pytest.mark.slow
def test_headers_never_wrap_one_character_per_line(reports):
    css = reports["zh"][: reports["zh"].index("</style>")]
    th = re.search(r"\bth \{([^}]*)\}", css).group(1)
    # CJK headers break between words only (keep-all), never one character per line
    assert ("white-space: nowrap" in th or "word-break: keep-all" in th) and "min-width" in th


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_strings_from_the_study_a_server_and_a_tool_are_escaped(reports, lang):
    page = reports[lang]
    for payload in PAYLOAD.values():
        assert payload not in page
    if lang == "en":
        assert "&lt;img src=x onerror=alert(1)&gt;" in page  # the description, shown as text
    assert "&lt;img src=y onerror=alert(2)&gt;" in page  # the server variable, in its details
    assert "&lt;script&gt;alert(3)&lt;/script&gt;" in page  # the tool's error, in prepare
    assert "<script" not in page and "onerror=" not in page.replace("onerror=alert", "")


def test_an_arm_label_reaches_the_page_as_text():
    """Arm labels are restricted by the study file; one read from elsewhere is escaped too."""
    t = html.as_table(pd.DataFrame({"<b>arm</b> TPS": ["<i>x</i>", None, float("nan")]}), "en")
    page = html.PAGE.render(
        html_lang="en",
        title="t",
        description="",
        arms="<u>a</u>",
        generated="",
        figures_note="",
        banner="",
        findings_title="F",
        findings_note="",
        findings=[],
        no_findings="",
        withheld="",
        sections=[
            html.Section(
                "sweep", "2. Sweep", "done", blocks=[{"kind": "table", "caption": "", "table": t}]
            )
        ],
    )
    assert "&lt;b&gt;arm&lt;/b&gt; TPS" in page and "&lt;i&gt;x&lt;/i&gt;" in page
    assert "&lt;u&gt;a&lt;/u&gt;" in page and "<b>" not in page and "<i>" not in page
    assert [c["v"] for r in t.rows for c in r] == ["<i>x</i>", "—", "—"]


@pytest.mark.slow
def test_chinese_beside_english_and_a_live_run_is_shown_as_such(reports):
    en, zh = reports["paths"]
    assert en.name == f"{STUDY}.html" and zh.name == f"{STUDY}.zh.html" and en.parent == zh.parent
    assert 'lang="en"' in reports["en"] and 'lang="zh-CN"' in reports["zh"]
    assert (paths.results_dir(STUDY) / "findings.json").is_file()
    # a run holding the study's lock: measured phases are partial, the others in progress
    with open(paths.lock_file(STUDY), "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        assert html.phase_status(STUDY, "sweep").state == "partial"
        assert html.phase_status(STUDY, "numa").state == "not_run"  # not in the study's phases
        page = html.build_report(STUDY).read_text(encoding="utf-8")
        fcntl.flock(f, fcntl.LOCK_UN)
    assert "A tibench run of this study is in progress" in page


def test_report_errors_name_the_study_and_the_option(tmp_path, monkeypatch):
    monkeypatch.setenv("TIBENCH_DATA", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="no study 'ghost'"):
        html.build_report("ghost")
    (tmp_path / "s2").mkdir()
    with pytest.raises(ValueError, match="lang must be one of en, zh, not 'fr'"):
        html.build_report("s2", lang="fr")


def test_a_study_with_nothing_measured_shows_every_phase_as_not_run(tmp_path, monkeypatch):
    monkeypatch.setenv("TIBENCH_DATA", str(tmp_path))
    (tmp_path / "s3").mkdir()
    page = html.build_report("s3", lang="zh").read_text(encoding="utf-8")
    assert page.count("· 未运行") == len(html.PHASE_SECTIONS) and "尚无测试结果" in page


def test_the_report_path_imports_neither_nbformat_nor_beautifulsoup():
    """Everything the report's sections import, in a fresh interpreter."""
    code = (
        "import sys, importlib\n"
        "from tibenchlib.report import html\n"
        "for m in ('registry', 'prepare', 'compare_phase', 'sweep', 'compare', 'numa',"
        " 'tpch.phase', 'tpch.scaling', 'dm.phase', 'dm.analysis', 'report.dm', 'report.ycsb',"
        " 'report.tpcc', 'tpcc.phase',"
        " 'report.diagnosis', 'envcapture', 'studyplan', 'findings'):\n"
        "    importlib.import_module('tibenchlib.' + m)\n"
        "bad = ('nbformat', 'bs4', 'nbconvert', 'papermill')\n"
        "print(sorted(m for m in bad if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.slow
def test_tibench_findings_prints_the_reports_findings(reports, capsys):
    assert cli.main(["findings", STUDY, "--lang", "zh"]) == 0
    out = capsys.readouterr().out
    assert "A/B 对比" in out and "flush2 对比 flush1" in out
    assert cli.main(["findings", STUDY, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    cmp = data["compare"]
    assert cmp and all({"key", "values", "figure", "verdict", "text"} <= set(f) for f in cmp)
    for f in cmp:
        fig = f["figure"]
        assert fig["n"] == 3 and fig["ci_low"] <= fig["estimate"] <= fig["ci_high"]
        assert (f["verdict"] == "inconclusive") == bool(f["reason"])
        assert f["text"] in reports["en"].replace("&#39;", "'")


# -- every table fits the page at 1280 px ------------------------------------------------------
#: Per table (its details opened): its rendered width (or 100,000 when a cell's text runs past
#: the cell's edge), its container's, its first headers.
TABLE_WIDTHS = """() => { document.querySelectorAll("details").forEach(d => d.open = true);
  return [...document.querySelectorAll("table")].map(t => [
    Math.max(Math.round(t.getBoundingClientRect().width),
             ...[...t.querySelectorAll("td")].map(td => td.scrollWidth > td.clientWidth + 1
                                                  ? 100000 : 0)),
    t.parentElement.clientWidth,
    [...t.querySelectorAll("th")].slice(0, 4).map(h => h.textContent.trim()).join(" | ")]); }"""


def _too_wide(chromium, path) -> list:
    page = chromium.new_page(viewport={"width": 1280, "height": 1000})
    try:
        page.goto(path.as_uri())
        widths = page.evaluate(TABLE_WIDTHS)
    finally:
        page.close()
    assert widths, "no table on the page"
    return [w for w in widths if w[0] > w[1]]


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_table_of_the_report_fits_the_page_at_1280_px(reports, browser, lang):
    """The real study's report at 1280 px, every fold opened: no table wider than the page
    (the A/B details' 12 columns were 1,325 px of 1,232)."""
    path = reports["paths"][0 if lang == "en" else 1]
    assert not _too_wide(browser, path)


#: One NUMA policy and two TPC-C cells as ``tibenchlib.numa.analyze`` and
#: ``tibenchlib.tpcc.phase.summarize`` computed them for the demo study on this kind of host
#: (2 cores, loaded); their tables had 13 and 11 columns, 1,246 and 1,394 px wide.
NUMA_ROWS = [
    {"workload": "oltp_point_select", "threads": 2, "baseline_policy": "unbound",
     "candidate_policy": "cpus:0", "n_baseline": 3, "n_candidate": 3,
     "baseline_tps": 11356.81, "candidate_tps": 8276.57, "improvement_pct": -27.12,
     "ci_low_pct": -56.09, "ci_high_pct": 110.80, "p_value": 0.2168, "p_adjusted": 0.2168,
     "verdict": "inconclusive", "baseline_p95_ms": 0.3237, "candidate_p95_ms": 0.539,
     "binding_verified": True, "dips_baseline": 1, "dips_candidate": 0,
     "warnings": ["n=3+3: fewer than 5 runs per arm, wide interval, low power",
                  "unbound: CV 26.3% > 10%"]},
]  # fmt: skip
TPCC_ROWS = [
    {"arm": "flush1", "tool": "sysbench", "warehouses": 1, "workload": w, "threads": 2,
     "clients": 1, "n": 3, "n_failed": 0, "tpmc": c[0], "tpmc_ci_low": c[1], "tpmc_ci_high": c[2],
     "tpm_total": t[0], "tpm_total_ci_low": t[1], "tpm_total_ci_high": t[2],
     "efficiency_pct": None, "new_order_p95_ms": p[0], "new_order_p95_ms_ci_low": p[1],
     "new_order_p95_ms_ci_high": p[2], "new_order_p99_ms": p99,
     "method": "Student t on the log scale", "warnings": warn}
    for w, c, t, p, p99, warn in (
        ("tpcc", (6624.53, 5527.61, 7939.14), (14626.13, 11280.73, 18963.64),
         (25.06, 13.11, 47.91), 38.89, ["n=3 < 5: wide interval, low power"]),
        ("tpcc_wait", (133.08, 107.54, 164.69), (299.45, 224.61, 399.24),
         (13.10, 7.58, 22.67), 13.10,
         ["n=3 < 5: wide interval, low power",
          "outlying run (repeat 2: 119.896, -14.1% from the median) flagged, kept"]),
    )
]  # fmt: skip


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_numa_and_tpcc_sections_fit_the_page_at_1280_px(browser, lang, tmp_path, monkeypatch):
    """The report's NUMA and TPC-C sections as ``build_report`` makes them, from their
    phases' rows: the answering tables and their folded details fit 1,280 px; the NUMA table
    keeps the answer (TPS unbound → binding, its change, verdict) and folds the rest."""
    from types import SimpleNamespace

    class _Runs:
        def runs(self, study, phase):
            return pd.DataFrame({"run_key": ["r1"]})

        def environment_captures(self, study):
            return {"a": {"host": {"numa": {"node_count": 1}, "cpu": {"logical": 2}}}}

    monkeypatch.setattr(html, "analyze", lambda study, store: pd.DataFrame(NUMA_ROWS))
    monkeypatch.setattr(html, "summarize", lambda study, store: pd.DataFrame(TPCC_ROWS))
    (tmp_path / "figures").mkdir()
    (tmp_path / "tables").mkdir()
    ctx = html._Ctx(SimpleNamespace(study="w"), _Runs(), lang, tmp_path, {})
    sections = []
    for name, fn in (("numa", html._numa), ("tpcc", html._tpcc)):
        sec = html.Section(name, name, "done")
        fn(ctx, sec)
        sections.append(sec)
    numa_main = sections[0].blocks[0]["table"].columns
    L = html.T.labels(lang)
    assert L["tps_pair"] in numa_main and L["verdict"] in numa_main and len(numa_main) <= 8
    # a one-node host (the fake store's capture): no NUMA verdict coloured as a judgement
    numa_rows = sections[0].blocks[0]["table"].rows
    assert numa_rows and not any(c["bg"] for r in numa_rows for c in r)
    page = html.PAGE.render(html_lang=lang, title="w", sections=sections, findings=[])
    path = tmp_path / "w.html"
    path.write_text(page, encoding="utf-8")
    assert "11,357 → 8,277" in page
    assert not _too_wide(browser, path)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_figure_breaks_only_before_its_interval_and_prose_wraps_as_prose(lang):
    """A figure and its interval are two unbreakable pieces; a note ending in an interval is
    prose and wraps anywhere (kept whole it ran 400 px past its cell in the zh TPC-H table)."""
    L = html.T.labels(lang)
    note = ("耗时变化无法确定：" if lang == "zh" else "varied: ") + "0.011 s [0.001, 0.15]"
    df = pd.DataFrame({L["tps_ci"]: ["1,234 [1,200, 1,260]"], L["notes"]: [note]})
    t = html.as_table(df, lang)
    fig, prose = t.rows[0]
    assert (fig["v"], fig["ci"], fig["cls"]) == ("1,234", "[1,200, 1,260]", "split")
    assert (prose["v"], prose["ci"]) == (note, "") and "notes" in prose["cls"]
