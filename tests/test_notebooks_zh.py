"""A study with ``lang: zh`` speaks Chinese: every phase's notebook, executed on the CI study
(measured once per session by conftest's ``ci_study``) with a copy of ``params/ci.yaml`` that
says ``lang: zh``, leaves no English sentence in its outputs.

What may stay English are names: workloads, arms, units, variables, commands and paths (code
spans), the estimators' names (Student t, Fieller, Holm, Welch, MSER-5, USL), the host's CPU and
OS as captured, and the raw tables inside collapsed ``<details>`` blocks (column names are the
catalog's variables; the block's summary line must be Chinese). An English sentence is three or
more English words in a row outside those.
"""

from __future__ import annotations

import json
import os
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tibenchlib import paths
from tibenchlib.notebook import PHASE_NOTEBOOKS, ensure_kernelspec, kernel_dir
from tibenchlib.report import words

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
    """DM, YCSB and TPC-C (notebooks 06-08) are parametrized below like every other phase."""
    checked = set(PHASE_NOTEBOOKS.values())
    assert {"06_dm_load_tuning.ipynb", "07_ycsb.ipynb", "08_tpcc.ipynb"} <= checked
    assert all((paths.notebooks_dir() / name).exists() for name in checked)


@pytest.fixture(scope="module")
def zh_params(clone_data_dir, ci_study, tmp_path_factory) -> Path:
    """A copy of params/ci.yaml saying ``lang: zh``, once the CI study is measured."""
    text = (ROOT / "params" / "ci.yaml").read_text(encoding="utf-8")
    text = re.sub(r"(?m)^description:.*$", "description: 内置 MariaDB 上的小规模测试", text)
    out = tmp_path_factory.mktemp("zh") / "ci_zh.yaml"
    out.write_text(text + "\nlang: zh\n", encoding="utf-8")
    return out


def _host_names() -> set[str]:
    """The captured CPU model and OS: names, whatever their words."""
    from tibenchlib.envcapture import host_summary
    from tibenchlib.params import load_study
    from tibenchlib.store import Store

    study = load_study(ROOT / "params" / "ci.yaml")
    names = set()
    for cap in Store.for_study(study).environment_captures("ci").values():
        h = host_summary(cap.get("host", {}))
        names |= {str(h.get(k)) for k in ("cpu_model", "os") if h.get(k)}
    return names


@pytest.mark.slow
@pytest.mark.notebook
@pytest.mark.parametrize("name", sorted(PHASE_NOTEBOOKS.values()))
def test_zh_study_prints_no_english_sentence(zh_params, tmp_path, name):
    import papermill as pm

    kernel = ensure_kernelspec()
    jp = os.environ.get("JUPYTER_PATH", "")
    if str(kernel_dir()) not in jp.split(os.pathsep):
        os.environ["JUPYTER_PATH"] = os.pathsep.join(x for x in (str(kernel_dir()), jp) if x)
    out = tmp_path / name
    pm.execute_notebook(
        str(paths.notebooks_dir() / name),
        str(out),
        parameters={"params_path": str(zh_params), "measure": False, "progress": False},
        cwd=str(ROOT),
        kernel_name=kernel,
        progress_bar=False,
    )
    nb = json.loads(out.read_text(encoding="utf-8"))
    allowed = _host_names()
    english = []
    shown = 0
    for i, cell in enumerate(nb["cells"]):
        for o in cell.get("outputs", []) if cell["cell_type"] == "code" else []:
            assert o.get("output_type") != "error", f"{name} cell {i}: {o.get('evalue')}"
            text = visible_text(o)
            shown += bool(text.strip())
            english += [f"cell {i}: {r}" for r in english_runs(text, allowed)]
    assert shown, f"{name}: no output at all"
    assert not english, f"{name} on a zh study prints English: {english}"
