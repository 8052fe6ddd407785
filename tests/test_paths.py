"""Every path tibench builds is built in ``paths.py``: the files stay inside their study, the
data directory follows ``--data-dir`` only for as long as a command runs, and no other module
joins a file name onto one of tibench's folders itself."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from tibenchlib import paths

PACKAGE = Path(paths.__file__).parent
#: tibench's folders; a module joining a name onto one builds a path by itself.
WRITTEN_DIRS = {
    "data_dir",
    "study_dir",
    "private_dir",
    "server_dir",
    "results_dir",
    "raw_dir",
    "environment_dir",
    "executed_notebooks_dir",
    "report_dir",
    "jupyter_dir",
    "notebooks_dir",
    "reference_dir",
}


def test_study_files_stay_inside_the_study(data_dir):
    study = paths.study_dir("s1")
    files = [
        paths.run_log("s1", "sysbench", "a/oltp_point_select/t4/r2"),
        paths.run_log("s1", "warmup", "warmup/a/oltp_read_write/t8/r1", prefix="o3__"),
        paths.raw_log("s1", "prepare", "a-prepare"),
        paths.phase_results("s1", "sweep"),
        paths.phase_results("s1", "sweep", "csv"),
        paths.compare_export("s1", "a_vs_b_oltp_point_select"),
        paths.tpch_plans_file("s1", "tiflash-2"),
        paths.environment_file("s1", "a"),
        paths.executed_notebook("s1", "02_sweep.ipynb"),
        paths.report_file("s1"),
    ]
    for f in files:
        assert f.is_relative_to(study), f
    # a run key's slashes become one flat file name, not folders
    assert paths.run_log("s1", "sysbench", "a/w/t4/r2").name == "a__w__t4__r2.log"
    assert paths.run_log("s1", "warmup", "warmup/a/w/t8/r1", prefix="o3__").name == (
        "o3__warmup__a__w__t8__r1.log"
    )
    assert paths.phase_results("s1", "sweep", "csv").name == "sweep.csv"
    assert paths.report_file("s1").name == "s1.html"
    for f in (paths.kernelspec_file("tibench"), paths.tpch_data_dir("0.01"), paths.server_dir()):
        assert f.is_relative_to(data_dir) and not f.is_relative_to(study), f


def test_a_study_name_cannot_leave_the_data_directory(data_dir):
    for bad in ("..", "../x", "a/b", "", "server"):
        with pytest.raises(paths.PathError, match="study name"):
            paths.phase_results(bad, "sweep")


def test_ycsb_home_follows_its_variable_or_the_data_directory(data_dir, monkeypatch, tmp_path):
    monkeypatch.delenv("TIBENCH_YCSB_HOME", raising=False)
    assert paths.ycsb_home() == data_dir / "ycsb"
    monkeypatch.setenv("TIBENCH_YCSB_HOME", str(tmp_path / "shared"))
    assert paths.ycsb_home() == (tmp_path / "shared").resolve()


@pytest.mark.parametrize("before", [None, "elsewhere"])
def test_using_data_dir_holds_only_inside_the_block(tmp_path, monkeypatch, before):
    if before is None:
        monkeypatch.delenv("TIBENCH_DATA", raising=False)
    else:
        monkeypatch.setenv("TIBENCH_DATA", str(tmp_path / before))
    with paths.using_data_dir(tmp_path / "d"):
        assert paths.data_dir() == (tmp_path / "d").resolve()
        assert os.environ["TIBENCH_DATA"] == str((tmp_path / "d").resolve())
    assert os.environ.get("TIBENCH_DATA") == (None if before is None else str(tmp_path / before))
    with pytest.raises(RuntimeError), paths.using_data_dir(tmp_path / "e"):
        raise RuntimeError("a failing command restores it too")
    assert os.environ.get("TIBENCH_DATA") == (None if before is None else str(tmp_path / before))
    with paths.using_data_dir(None):  # no --data-dir: unchanged
        assert os.environ.get("TIBENCH_DATA") == (
            None if before is None else str(tmp_path / before)
        )


def _joins_onto_a_data_dir(tree: ast.AST) -> list[int]:
    """Line numbers of ``<written dir>(...) / name`` (called as ``paths.x()`` or a bare ``x()``)."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            call = node.left
            if isinstance(call, ast.Call):
                f = call.func
                name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
                if name in WRITTEN_DIRS:
                    lines.append(node.lineno)
    return lines


def test_no_module_but_paths_builds_a_path_in_the_data_directory():
    found = {}
    for f in sorted(PACKAGE.rglob("*.py")):
        if f.name == "paths.py" and f.parent == PACKAGE:
            continue
        hits = _joins_onto_a_data_dir(ast.parse(f.read_text(), str(f)))
        if hits:
            found[str(f.relative_to(PACKAGE))] = hits
    assert not found, f"paths built outside paths.py (add a function there): {found}"


def test_the_check_sees_a_path_built_by_hand():
    tree = ast.parse("p = paths.results_dir(s) / 'x.json'\nq = raw_dir(s, 't') / n\n")
    assert _joins_onto_a_data_dir(tree) == [1, 2]
    assert _joins_onto_a_data_dir(ast.parse("p = paths.catalog_file(s).parent\n")) == []
