"""Real DM through dmctl: the task file per DM version, the choice between the OpenAPI and dmctl,
and a task started through dmctl with its password kept out of the raw output."""

from __future__ import annotations

import http.server
import json
import sys
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from tibenchlib.db import ConnInfo
from tibenchlib.dm import real, taskfile
from tibenchlib.dm.dmctl import DmStatusError
from tibenchlib.dm.dmctl_client import DmctlClient
from tibenchlib.dm.dump import DumpSettings
from tibenchlib.dm.load import LoadSettings
from tibenchlib.dm.plan import plan
from tibenchlib.params import parse_study

FIX = Path(__file__).parent / "fixtures" / "dm"
TARGET = ConnInfo(host="10.0.1.8", port=4000, user="root", password="s3cret-pw", database="x")


def _doc(version, rows=320000, size=1_500_000):
    return taskfile.task_file(
        "t1", source_name="mysql-replica-01", target=TARGET, schema="dm_benchmark",
        dump=DumpSettings(32, rows, size), load=LoadSettings(16), workers=32, batch=100,
        task_mode="full", version=version,
    )  # fmt: skip


def test_dm_1_0_task_file_is_report_003s_dialect():
    doc = yaml.safe_load(taskfile.task_yaml(_doc("v1.0.7")))
    inst = doc["mysql-instances"][0]
    assert inst["source-id"] == "mysql-replica-01" and inst["black-white-list"] == "tibench-rule"
    assert doc["black-white-list"]["tibench-rule"]["do-dbs"] == ["dm_benchmark"]
    assert "block-allow-list" not in doc and doc["remove-meta"] is True
    my = doc["mydumpers"][inst["mydumper-config-name"]]
    assert my["threads"] == 32 and my["extra-args"] == "-r 320000 -s 1500000" and "rows" not in my
    assert doc["loaders"][inst["loader-config-name"]]["pool-size"] == 16
    assert doc["syncers"][inst["syncer-config-name"]] == {"worker-count": 32, "batch": 100}
    assert doc["task-mode"] == "full" and taskfile.start_args("v1.0.7") == []


def test_current_task_file_has_rows_and_statement_size():
    doc = _doc("5.4.0")
    inst = doc["mysql-instances"][0]
    assert inst["block-allow-list"] == "tibench-rule" and "black-white-list" not in doc
    my = doc["mydumpers"]["tibench"]
    assert my["rows"] == 320000 and my["extra-args"] == "--statement-size 1500000"
    assert "remove-meta" not in doc and taskfile.start_args(None) == ["--remove-meta"]
    off = _doc(None, rows=None)["mydumpers"]["tibench"]
    assert "rows" not in off and off["extra-args"] == "--statement-size 1500000"


def test_password_only_in_the_file_dm_reads():
    doc = _doc("5.4.0")
    assert doc["target-database"]["password"] == "s3cret-pw"
    kept = taskfile.task_yaml(taskfile.masked(doc))
    assert "s3cret-pw" not in kept and "***" in kept
    assert doc["target-database"]["password"] == "s3cret-pw"  # masked() copies


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"task_mode": "both"}, "task_mode 'both'"),
        ({"workers": 0}, "workers and batch"),
        ({"name": "a b"}, "task name 'a b'"),
        ({"version": "one"}, "dm.version 'one'"),
    ],
)
def test_bad_task_settings_name_the_field(kw, match):
    args = dict(
        name="t1", source_name="s", target=TARGET, schema="d",
        dump=DumpSettings(), load=LoadSettings(),
    )  # fmt: skip
    args.update(kw)
    name = args.pop("name")
    with pytest.raises(ValueError, match=match):
        taskfile.task_file(name, **args)


# -- the choice of API ---------------------------------------------------------------------------
class _Master(http.server.BaseHTTPRequestHandler):
    status = 200

    def do_GET(self):  # noqa: N802 - the stdlib's name
        body = json.dumps({"total": 1, "data": [{"name": "master1", "alive": True}]}).encode()
        if self.status != 200:
            body = b"404 page not found"
        self.send_response(self.status)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


@pytest.fixture
def master():
    """A real HTTP server on 127.0.0.1 standing in for a DM master's port: 200 (OpenAPI on) or
    404 (a master without ``openapi = true``, what Go's default mux answers)."""
    handler = type("H", (_Master,), {})
    srv = http.server.HTTPServer(("127.0.0.1", 0), handler)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    yield SimpleNamespace(url=f"http://127.0.0.1:{srv.server_port}", handler=handler)
    srv.shutdown()


def _study(url, **dm):
    return parse_study(
        {
            "study": "dmapi",
            "target": {"kind": "url", "url": "mysql+pymysql://root@10.0.1.8:4000/x"},
            "dm": {
                "master_url": url, "source_name": "s1",
                "source_url": "mysql+pymysql://root@10.0.1.7:3306/x", **dm,
            },
        }
    )  # fmt: skip


def test_api_auto_follows_the_master_and_the_plan(master):
    s = _study(master.url)
    assert real.choose_api(s, plan(s), dmctl="/usr/bin/dmctl")[0] == "openapi"
    master.handler.status = 404
    api, why = real.choose_api(s, plan(s), dmctl="/usr/bin/dmctl")
    assert api == "dmctl" and "HTTP 404" in why
    # rows / statement size: only a task file carries them
    s = _study(master.url, dump={"rows": [None, 320000]})
    assert real.needs_task_file(s, plan(s))
    assert real.choose_api(s, plan(s), dmctl="/usr/bin/dmctl")[0] == "dmctl"
    api, why = real.choose_api(s, plan(s), dmctl="")
    assert api == "openapi" and "dmctl is not installed" in why
    # DM older than 5.3 has no OpenAPI; an explicit api wins
    s = _study(master.url, version="v2.0.7")
    assert real.choose_api(s, plan(s), dmctl="/usr/bin/dmctl")[0] == "dmctl"
    s = _study(master.url, api="openapi", version="v1.0.0")
    assert real.choose_api(s, plan(s), dmctl="/usr/bin/dmctl") == ("openapi", "dm.api: openapi")
    assert not real.needs_task_file(_study(master.url), plan(_study(master.url)))


def test_an_unreachable_master_is_one_line():
    s = _study("http://127.0.0.1:9")
    with pytest.raises(DmStatusError, match="unreachable"):
        real.choose_api(s, plan(s), dmctl="/usr/bin/dmctl")


def test_bad_api_or_version_names_the_field():
    from tibenchlib.params import ParamsError

    with pytest.raises(ParamsError, match=r"dm\.api"):
        _study("http://127.0.0.1:9", api="grpc")
    with pytest.raises(ParamsError, match=r"dm\.version"):
        _study("http://127.0.0.1:9", version="latest")


# -- a task through dmctl --------------------------------------------------------------------------
def test_task_started_through_dmctl_with_the_file_and_no_password_kept(tmp_path, monkeypatch):
    """A dmctl that records its arguments and the task file it was given, then answers with a
    real captured dmctl JSON (tests/fixtures/dm, see SOURCES.md)."""
    monkeypatch.setenv("TIBENCH_DATA", str(tmp_path / "data"))
    seen = tmp_path / "seen.jsonl"
    exe = tmp_path / "dmctl"
    exe.write_text(
        f"#!{sys.executable}\nimport json, os, sys\n"
        "files = [a for a in sys.argv if a.endswith('.yaml') and os.path.exists(a)]\n"
        "rec = {'argv': sys.argv[1:], 'file': open(files[0]).read() if files else None,\n"
        "       'mode': oct(os.stat(files[0]).st_mode & 0o777) if files else None}\n"
        f"open({str(seen)!r}, 'a').write(json.dumps(rec) + '\\n')\n"
        f"sys.stdout.write(open({str(FIX / 'dmctl-v2.0-query-status-sync-running-docs.txt')!r})"
        ".read())\n"
    )
    exe.chmod(0o755)
    s = _study("http://127.0.0.1:8261", version="v1.0.7", dump={"rows": [320000]})
    ctx = real.RealContext(
        s, SimpleNamespace(label="x"), DmctlClient(s.dm.master_url, dmctl=str(exe)),
        TARGET, TARGET, store=None, api="dmctl",
    )  # fmt: skip
    from tibenchlib import paths

    paths.private_dir(s.study).mkdir(parents=True, exist_ok=True)
    rdir = tmp_path / "run"
    rdir.mkdir()
    warns = real._recreate(
        ctx, "tibench-dm-full", rdir, task_mode="full",
        dump=DumpSettings(4, 320000, 62500), load=LoadSettings(16), workers=8,
    )  # fmt: skip
    assert warns == []
    ctx.client.check()
    calls = [json.loads(x) for x in seen.read_text().splitlines()]
    assert calls[-1]["argv"][-1] == "query-status"
    assert calls[0]["argv"][-2:] == ["stop-task", "tibench-dm-full"]
    start = calls[1]
    assert start["argv"][1] == "start-task" and start["mode"] == "0o600"
    sent = yaml.safe_load(start["file"])
    assert sent["target-database"]["password"] == "s3cret-pw"
    assert sent["mydumpers"]["tibench"]["extra-args"] == "-r 320000 -s 62500"
    assert sent["loaders"]["tibench"]["pool-size"] == 16
    kept = (rdir / "task.yaml").read_text()
    assert "s3cret-pw" not in kept and yaml.safe_load(kept)["name"] == "tibench-dm-full"
    assert not list(paths.private_dir(s.study).glob("dm-task-*"))  # removed after start-task
