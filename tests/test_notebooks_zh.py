"""A study with ``lang: zh`` speaks Chinese: the detector of English sentences that the browser
pass (test_notebooks_browser.py) applies to every phase's notebook opened on a copy of
``params/ci.yaml`` that says ``lang: zh``, and test_report_html.py to the zh report.

What may stay English are names: workloads, arms, units, variables, commands and paths (code
spans), the estimators' names (Student t, Fieller, Holm, Welch, MSER-5, USL), the host's CPU and
OS as captured, and the raw tables inside collapsed ``<details>`` blocks (column names are the
catalog's variables; the block's summary line must be Chinese). An English sentence is three or
more English words in a row outside those.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

from tibenchlib import paths
from tibenchlib.envcapture import host_summary
from tibenchlib.notebook import PHASE_NOTEBOOKS
from tibenchlib.params import load_study
from tibenchlib.report import words
from tibenchlib.store import Store

ROOT = paths.ROOT

#: Words that are names, never sentences, in any language.
NAMES = {
    "Student", "Fieller", "Holm", "Welch", "Gunther", "sysbench", "numactl", "numastat",
    "power", "throughput", "unbound", "node", "cpus", "block", "cache", "lambda", "sigma",
    "kappa", "log", "lag", "n/a", "ok", "skipped", "none", "TiFlash", "TiDB", "TiKV", "TiUP",
    "MariaDB", "MySQL", "redo", "True", "False", "prepare", "analyze", "warmup", "verify",
    "sweep", "compare", "environment", "numa", "tpch_scaling",
}  # fmt: skip
WORD = re.compile(r"\(?[A-Za-z][a-z'’-]*[a-z][,.;:!?)]*$")


class _Visible(HTMLParser):
    """The text a reader sees of an HTML output, without code and without the raw tables of
    collapsed blocks (their summary line is kept)."""

    def __init__(self):
        super().__init__()
        self.chunks: list[str] = []
        self._details = self._summary = self._code = self._skip = 0

    def handle_starttag(self, tag, attrs):
        self._details += tag == "details"
        self._summary += tag == "summary"
        self._code += tag in ("code", "pre")
        self._skip += tag in ("style", "script")

    def handle_endtag(self, tag):
        self._details -= tag == "details" and self._details > 0
        self._summary -= tag == "summary" and self._summary > 0
        self._code -= tag in ("code", "pre") and self._code > 0
        self._skip -= tag in ("style", "script") and self._skip > 0
        if tag in ("td", "th", "p", "li", "summary", "div", "tr"):
            self.chunks.append("\n")

    def handle_data(self, data):
        if self._skip or self._code:
            return
        if self._details and not self._summary:
            return
        self.chunks.append(data)


def visible_text(output: dict) -> str:
    """What a person reads of one cell output."""
    if output.get("output_type") == "stream":
        return (
            output.get("text", "")
            if isinstance(output.get("text"), str)
            else "".join(output.get("text", []))
        )
    data = output.get("data", {})
    if "text/html" in data:
        p = _Visible()
        p.feed("".join(data["text/html"]))
        return "".join(p.chunks)
    if "text/markdown" in data:
        md = "".join(data["text/markdown"])
        md = re.sub(r"```.*?```", " ", md, flags=re.DOTALL)
        return re.sub(r"`[^`]*`", " ", md)
    if "image/png" in data:
        return ""
    return "".join(data.get("text/plain", ""))


def english_runs(text: str, allowed: set[str]) -> list[str]:
    """Runs of three or more English words (not names) in ``text``."""
    found = []
    for line in text.splitlines():
        for phrase in sorted(allowed, key=len, reverse=True):
            line = line.replace(phrase, " ")
        run: list[str] = []
        for tok in [*line.split(), ""]:
            bare = tok.strip(",.;:!?()[]*\"'")
            if tok and WORD.match(tok) and bare not in NAMES and len(bare) > 1:
                run.append(tok)
                continue
            if len(run) >= 3:
                found.append(" ".join(run))
            run = []
    return found


def test_the_detector_finds_english_and_passes_chinese():
    assert english_runs("Nothing to show.", set())
    assert english_runs("12 runs (12 ok): mean TPS per workload, arm and thread count", set())
    assert not english_runs(words.say("nothing", "zh"), set())
    assert not english_runs("oltp_point_select, flush1 vs flush2: 1,234 [1,200, 1,260]", set())
    assert not english_runs("Intel Xeon Gold 5218", {"Intel Xeon Gold 5218"})


def test_the_new_phases_notebooks_are_among_those_checked():
    """DM, YCSB and TPC-C (notebooks 06-08) are among the notebooks the browser pass opens on the
    zh study, like every other phase."""
    checked = set(PHASE_NOTEBOOKS.values())
    assert {"06_dm_load_tuning.ipynb", "07_ycsb.ipynb", "08_tpcc.ipynb"} <= checked
    assert all((paths.notebooks_dir() / name).exists() for name in checked)


def host_names() -> set[str]:
    """The captured CPU model and OS in the CI study's catalog: names, whatever their words."""
    study = load_study(ROOT / "params" / "ci.yaml")
    names = set()
    for cap in Store.for_study(study).environment_captures("ci").values():
        h = host_summary(cap.get("host", {}))
        names |= {str(h.get(k)) for k in ("cpu_model", "os") if h.get(k)}
    return names
