"""What a notebook does when opened: where its study file is found, whether it measures or
shows the catalog, and how the kernel's stderr reaches the terminal under papermill."""

from __future__ import annotations

import json
import logging
import sys

import pytest

from tibenchlib import notebook, paths, terminal
from tibenchlib.store import Store


@pytest.fixture()
def data(tmp_path, monkeypatch):
    monkeypatch.setenv("TIBENCH_DATA", str(tmp_path / "data"))
    return tmp_path / "data"


def test_relative_params_path_resolves_from_the_root_whatever_the_cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # like a kernel started in notebooks/
    p = notebook.resolve_params_path("params/ci.yaml")
    assert p == paths.ROOT / "params" / "ci.yaml"
    assert notebook.shown_path(p) == "params/ci.yaml"
    (tmp_path / "mine.yaml").write_text("study: x\n")
    assert notebook.resolve_params_path("mine.yaml") == tmp_path / "mine.yaml"
    assert notebook.resolve_params_path(tmp_path / "mine.yaml") == tmp_path / "mine.yaml"


def test_missing_params_file_is_named(data, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(Exception, match="params/nope.yaml: no such params file"):
        notebook.open_study("params/nope.yaml", "sweep")


def test_empty_catalog_measures_in_auto_and_says_which_command_otherwise(data):
    s = notebook.open_study("params/ci.yaml", "environment")
    assert s.measure and not s.stored
    assert "**Study file** `params/ci.yaml` — study `ci`" in s.header()
    shown = notebook.open_study("params/ci.yaml", "environment", measure=False)
    assert not shown.measure
    assert "`tibench run params/ci.yaml --phase environment` measures it" in shown.header()


def test_a_chinese_notebook_heads_with_the_chinese_description(data, tmp_path):
    f = tmp_path / "zh.yaml"
    f.write_text("study: zh\nlang: zh\ndescription: a tiny study\ndescription_zh: 小规模测试\n")
    head = notebook.open_study(f, "environment").header()
    assert "测试 `zh`：小规模测试" in head and "a tiny study" not in head
    f.write_text("study: zh\ndescription: a tiny study\ndescription_zh: 小规模测试\n")
    head = notebook.open_study(f, "environment").header()
    assert "study `zh`: a tiny study" in head and "小规模测试" not in head


def test_stored_phase_is_shown_not_measured(data):
    s0 = notebook.open_study("params/ci.yaml", "environment")
    store = Store.for_study(s0.study, record=True)
    for arm in s0.arms:
        cap = {"arm": arm, "host": {}, "database": {"flavor": "mariadb", "version": "10.11"}}
        store.record_environment("ci", arm, cap)
    s = notebook.open_study("params/ci.yaml", "environment")
    assert s.stored and not s.measure
    assert "redo = True" in s.header() and "--phase environment --redo" in s.header()
    rows = s.results()  # read from the catalog: no server is started
    assert list(rows["arm"]) == s.arms and set(rows["version"]) == {"10.11"}
    assert notebook.open_study("params/ci.yaml", "environment", redo=True).measure
    assert notebook.open_study("params/ci.yaml", "environment", measure=True).measure


def test_compare_never_measures_and_names_the_sweep_command(data):
    s = notebook.open_study("params/ci.yaml", "compare", measure=True)
    assert not s.measure
    assert "`tibench run params/ci.yaml --phase sweep` measures them" in s.header()
    assert s.results().empty


def test_measure_must_be_true_false_or_auto(data):
    with pytest.raises(ValueError, match="measure must be True, False or 'auto', not 'yes'"):
        notebook.open_study("params/ci.yaml", "sweep", measure="yes")


def test_other_kernel_stderr_is_a_warning_line_by_line(caplog):
    sink = notebook.KernelStderr(logging.getLogger("t.kernel"))
    with caplog.at_level(logging.WARNING, logger="t.kernel"):
        sink.write("FutureWarning: some")
        sink.write(" real warning\n\nsecond")
        sink.flush()
    assert [r.getMessage() for r in caplog.records] == [
        "FutureWarning: some real warning",
        "second",
    ]


def test_kernelspec_is_the_running_interpreter(data):
    name = notebook.ensure_kernelspec()
    spec = json.loads((notebook.kernel_dir() / "kernels" / name / "kernel.json").read_text())
    assert spec["argv"][0] == sys.executable
    assert spec["argv"][1:3] == ["-m", "ipykernel_launcher"]
    # a batch kernel: its stderr stays the terminal's, so progress and logs never reach the notebook
    assert "--IPKernelApp.capture_fd_output=False" in spec["argv"]
    assert spec["env"] == {terminal.BATCH_ENV: "1"}
