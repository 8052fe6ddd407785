"""Study parameters: shipped files validate; bad input gives one error naming every field."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tibenchlib.params import ParamsError, load_study, parse_study

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("name", sorted(p.name for p in (ROOT / "params").glob("*.yaml")))
def test_shipped_params_validate(name):
    s = load_study(ROOT / "params" / name)
    assert s.study and s.arms


def test_seed_setups_match_the_reports():
    s = load_study(ROOT / "params/seed-v514-vs-v600.yaml")
    assert (s.dataset.tables, s.dataset.table_size) == (16, 10_000_000)
    assert s.threads == [150, 300, 600, 900, 1200, 1500]
    assert s.threads_for("oltp_read_write") == [32, 64, 128, 200, 256, 300]
    assert (s.duration_s, s.cooldown_s, s.rand_type) == (600, 300, "uniform")
    assert not s.allow_destructive and s.target.kind == "url"
    l2 = load_study(ROOT / "params/seed-lesson2.yaml")
    assert (l2.dataset.tables, l2.dataset.table_size) == (8, 100_000)
    assert min(l2.threads) == 8 and max(l2.threads) == 126


def test_every_fault_in_one_error():
    bad = {
        "study": "x",
        "threads": [0, 2],
        "duration_s": 0,
        "workloads": ["oltp_point_selekt"],
        "frobnicate": 1,
        "dataset": {"tables": -1, "colour": "red"},
        "repeats": "three",
    }
    with pytest.raises(ParamsError) as e:
        parse_study(bad, "bad.yaml")
    msg = str(e.value)
    assert msg.startswith("bad.yaml: 7 problems, nothing was run")
    for path in (
        "threads.0",
        "duration_s",
        "workloads.0",
        "frobnicate: unknown key",
        "dataset.tables",
        "dataset.colour: unknown key",
        "repeats",
    ):
        assert f"- {path}" in msg, path
    assert "oltp_point_selekt" in msg


def test_password_in_url_is_refused():
    with pytest.raises(ParamsError, match="target.url.*password"):
        parse_study(
            {"study": "x", "target": {"kind": "url", "url": "mysql+pymysql://root:s3cret@h:4000/t"}}
        )


def test_url_target_needs_url_and_arms_are_unique():
    with pytest.raises(ParamsError, match="needs url"):
        parse_study({"study": "x", "target": {"kind": "url"}})
    with pytest.raises(ParamsError, match="unique: a"):
        parse_study({"study": "x", "arms": [{"label": "a"}, {"label": "a"}]})
    with pytest.raises(ParamsError, match="compare.baseline 'zz' is not an arm"):
        parse_study({"study": "x", "compare": {"baseline": "zz"}})


def test_ycsb_runs_the_arms_it_names_and_refuses_an_unknown_one():
    """``ycsb.arms`` (as ``tpcc.arms``): the phase plans runs of those arms only, in the order
    the study gives them; an unknown label is an error naming the field."""
    from tibenchlib.ycsb import phase as ycsb

    arms = [{"label": "a"}, {"label": "b"}, {"label": "c"}]
    with pytest.raises(ParamsError, match="ycsb.arms: 'zz' is not an arm"):
        parse_study({"study": "x", "arms": arms, "ycsb": {"arms": ["zz"]}})
    s = parse_study({"study": "x", "arms": arms, "ycsb": {"arms": ["c", "a"], "threads": [2]}})
    assert ycsb.YCSB.arms(s) == ["c", "a"]
    assert {p.arm for p in ycsb.plan(s)} == {"a", "c"} and len(ycsb.plan(s)) == 2 * 3
    assert {p.arm for p in ycsb.plan(s, ["a", "b"])} == {"a"}  # a selection narrows it
    every = parse_study({"study": "x", "arms": arms, "ycsb": {"threads": [2]}})
    assert {p.arm for p in ycsb.plan(every)} == {"a", "b", "c"}


def test_credentials_cannot_come_through_extra_args():
    with pytest.raises(ParamsError, match="--mysql-password comes from target"):
        parse_study({"study": "x", "extra_args": ["--mysql-password=pw"]})


def test_missing_and_broken_files(tmp_path):
    with pytest.raises(ParamsError, match="no such params file"):
        load_study(tmp_path / "nope.yaml")
    p = tmp_path / "broken.yaml"
    p.write_text("study: [unclosed\n")
    with pytest.raises(ParamsError, match="broken.yaml: not valid YAML"):
        load_study(p)
    p.write_text(yaml.safe_dump(["a", "list"]))
    with pytest.raises(ParamsError, match="expected a mapping"):
        load_study(p)


def test_password_comes_from_the_environment(monkeypatch):
    s = parse_study(
        {
            "study": "x",
            "target": {
                "kind": "url",
                "url": "mysql+pymysql://root@h:4000/t",
                "password_env": "MY_PW",
            },
        }
    )
    monkeypatch.setenv("MY_PW", "hunter2")
    assert s.target.password == "hunter2"
    assert "hunter2" not in s.model_dump_json()


def test_a_missing_params_file_names_where_the_example_studies_are(tmp_path, monkeypatch):
    from tibenchlib import paths

    with pytest.raises(ParamsError) as e:
        load_study(tmp_path / "params" / "ci.yaml")
    assert str(paths.params_examples_dir()) in str(e.value) and "ci.yaml, demo.yaml" in str(e.value)
    # an installed tibench points at the copies shipped in the package
    shipped = tmp_path / "share" / "params"
    shipped.mkdir(parents=True)
    (shipped / "ci.yaml").write_text("study: ci\n")
    monkeypatch.setattr(paths, "IN_CLONE", False)
    monkeypatch.setattr(paths, "SHARE", tmp_path / "share")
    monkeypatch.chdir(tmp_path)  # a study folder outside any clone
    with pytest.raises(ParamsError, match=f"examples? studies are in {shipped}: ci.yaml;"):
        load_study("params/ci.yaml")


def test_a_study_carries_its_description_in_chinese_for_the_zh_documents():
    s = parse_study({"study": "x", "description": "a tiny study", "description_zh": "小规模测试"})
    assert s.description_in("en") == "a tiny study"
    assert s.description_in("zh") == "小规模测试"
    # without a Chinese one, the zh documents say none rather than the English
    assert parse_study({"study": "x", "description": "a tiny study"}).description_in("zh") == ""
    with pytest.raises(ParamsError, match=r"- description_zh: .*no Chinese characters"):
        parse_study({"study": "x", "description_zh": "a tiny study"})
    with pytest.raises(ParamsError, match=r"- description_zh: Input should be a valid string"):
        parse_study({"study": "x", "description_zh": {"zh": "小规模测试"}})


@pytest.mark.parametrize("name", ["demo.yaml", "ci.yaml"])
def test_the_demo_and_ci_studies_describe_themselves_in_chinese(name):
    s = load_study(ROOT / "params" / name)
    assert s.description and "MariaDB" in s.description_in("zh")
    assert s.description_in("zh") != s.description
