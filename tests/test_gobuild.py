"""tibench's own go-ycsb and go-tpc builds (:mod:`tibenchlib.gobuild`): where they are found,
what is refused, and the one line a machine without ``go`` gets."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import pytest

from tibenchlib import gobuild, tools

ROOT = gobuild.Path(gobuild.__file__).resolve().parent.parent


def test_cache_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("TIBENCH_TOOLS_CACHE", str(tmp_path / "c"))
    assert gobuild.cache_dir() == tmp_path / "c"
    monkeypatch.delenv("TIBENCH_TOOLS_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert gobuild.cache_dir() == tmp_path / "x" / "tibench" / "go"


def test_a_build_is_found_only_with_its_source_record(monkeypatch, tmp_path):
    monkeypatch.setenv("TIBENCH_TOOLS_CACHE", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    tool = gobuild.TOOLS["go-tpc"]
    exe = tmp_path / tool.key / "go-tpc"
    exe.parent.mkdir()
    exe.write_text("#!/bin/sh\necho 'Release version: dev'\n")
    exe.chmod(0o755)
    assert gobuild.built("go-tpc") is None and tools.which("go-tpc") is None  # half a build
    (exe.parent / "source.json").write_text(json.dumps({"version": tool.version}))
    assert tools.which("go-tpc") == str(exe)
    assert tools.origin("go-tpc") == {"path": str(exe), "source": {"version": tool.version}}
    assert gobuild.built("go-ycsb") is None and gobuild.built("sysbench") is None


def test_go_ycsb_keeps_only_the_back_ends_it_names(tmp_path):
    main = tmp_path / "main.go"
    main.write_text(
        'import (\n\t// Register basic database\n\t_ "github.com/pingcap/go-ycsb/db/basic"\n'
        '\t// Register MySQL database\n\t_ "github.com/pingcap/go-ycsb/db/mysql"\n'
        '\t// Register TiKV database\n\t_ "github.com/pingcap/go-ycsb/db/tikv"\n)\n'
    )
    gobuild._trim_backends(main, ("basic", "mysql"))
    text = main.read_text()
    assert "db/mysql" in text and "db/basic" in text and "db/tikv" not in text
    with pytest.raises(gobuild.GoBuildError, match="redis"):
        gobuild._trim_backends(main, ("redis",))


def test_without_go_setup_says_what_to_install_in_one_line(tmp_path):
    """A machine without go: one line naming what to install, exit 0 (setup goes on; the tests
    that run the tools are skipped), in the system Python as make setup runs it."""
    code = (
        "import pathlib, sys; import tibenchlib.gobuild as g; "
        "g._GO_DEFAULT = pathlib.Path('/nonexistent/go'); sys.exit(g.build_all())"
    )
    r = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
        env={"PATH": str(tmp_path), "TIBENCH_TOOLS_CACHE": str(tmp_path / "cache"),
             "HOME": str(tmp_path)},
    )  # fmt: skip
    assert r.returncode == 0 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and "go-ycsb and go-tpc not built" in r.stderr
    assert "install Go" in r.stderr


def test_a_tool_missing_without_go_names_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setenv("TIBENCH_TOOLS_CACHE", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(gobuild, "_GO_DEFAULT", tmp_path / "go")
    with pytest.raises(tools.ToolMissing, match="go-ycsb is not installed.*install Go"):
        tools.require("go-ycsb")


@pytest.mark.skipif(gobuild.find_go() is None, reason="the go command is not installed")
def test_a_module_whose_hash_differs_from_the_pinned_one_is_refused(monkeypatch, tmp_path):
    """The real download (from the module cache once make setup has fetched it), checked
    against a pinned hash that is not the module's."""
    monkeypatch.setenv("TIBENCH_TOOLS_CACHE", str(tmp_path))
    bad = dataclasses.replace(gobuild.TOOLS["go-tpc"], sum="h1:" + "A" * 43 + "=")
    monkeypatch.setitem(gobuild.TOOLS, "go-tpc", bad)
    with pytest.raises(gobuild.GoBuildError, match="the module's hash is h1:su"):
        gobuild.build("go-tpc")
    assert gobuild.built("go-tpc") is None and not (tmp_path / bad.key).exists()
