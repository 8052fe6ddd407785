"""The password never appears in logs, executed notebooks, results, the catalog, environment
captures, or the process list. The CI study is run against the private server as a real
target (URL + password from the environment), with a known password, through papermill."""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

import pytest
import yaml
from helpers import run_cli

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
@pytest.mark.notebook
def test_known_password_leaks_nowhere(tmp_path, mariadb, sysbench_bin):
    c = mariadb.conninfo()
    known = "Kn0wn-s3cret-" + os.urandom(4).hex()
    admin = mariadb._root_connect(first=False)  # the benchmark account makes no accounts
    with admin.cursor() as cur:
        cur.execute("CREATE USER IF NOT EXISTS 'leaky'@'127.0.0.1' IDENTIFIED BY %s", (known,))
        cur.execute("GRANT ALL PRIVILEGES ON *.* TO 'leaky'@'127.0.0.1'")
    admin.close()
    ci = yaml.safe_load((ROOT / "params/ci.yaml").read_text())
    study = {
        **ci,
        "study": "secrets",
        "target": {
            "kind": "url",
            "url": f"mysql+pymysql://leaky@127.0.0.1:{c.port}/sbsecret",
            "password_env": "TB_SECRET_PW",
        },
        "allow_destructive": True,
        "arms": [{"label": "only"}],
        # one workload: the password's paths (credentials file, kernel, sysbench) are the same
        # for every workload and repeat
        "workloads": ["oltp_point_select"],
        "repeats": 2,
        "threads": [2],
        "compare": {},
        "tpcc": {**ci["tpcc"], "arms": []},  # ci.yaml names its arms; this study has one
        "ycsb": {**ci["ycsb"], "arms": []},
    }
    f = tmp_path / "secrets.yaml"
    f.write_text(yaml.safe_dump(study))
    data = tmp_path / "data"
    env = {**os.environ, "TIBENCH_DATA": str(data), "TB_SECRET_PW": known}

    seen: list[str] = []
    stop = threading.Event()

    in_env: set[str] = set()
    children: set[str] = set()

    def watch_ps():
        while not stop.is_set():
            out = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
            seen.extend(ln for ln in out.splitlines() if known in ln and "pytest" not in ln)
            # the children's environments: kernel, sysbench; only tibench itself was given it
            for proc in Path("/proc").glob("[0-9]*"):
                try:
                    args = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
                    env = (proc / "environ").read_bytes()
                except OSError:
                    continue
                if str(data) not in env.decode(errors="replace") or "tibenchlib.cli" in args:
                    continue
                children.add(args.split(" ")[0].rsplit("/", 1)[-1])
                if known.encode() in env:
                    in_env.add(args[:80])
            stop.wait(0.3)

    t = threading.Thread(target=watch_ps, daemon=True)
    t.start()
    try:
        phases = ["--phase", "environment", "--phase", "prepare", "--phase", "sweep"]
        r = run_cli("run", str(f), *phases, "--json", env=env)
    finally:
        stop.set()
        t.join()
    assert r.returncode == 0, r.stderr[-3000:]
    assert known not in r.stdout and known not in r.stderr
    assert not seen, "password visible in the process list"
    assert not in_env, f"password in the environment of {sorted(in_env)}"
    assert {"sysbench"} <= children and any("python" in c for c in children), children
    files = [p for p in (data / "secrets").rglob("*") if p.is_file()]
    assert any(p.suffix == ".ipynb" for p in files) and any(p.suffix == ".sqlite" for p in files)
    assert any(p.suffix == ".log" for p in files) and any("environment" in p.parts for p in files)
    leaks = [str(p) for p in files if known.encode() in p.read_bytes()]
    assert not leaks, leaks


def test_environment_capture_commands_get_no_password(monkeypatch):
    """lscpu, numactl and the other commands the environment phase runs are started without the
    variables that hold passwords."""
    from tibenchlib import db
    from tibenchlib.envcapture.sources import _run

    monkeypatch.setenv("TB_CAPTURE_SECRET", "s3cr3t-capture")
    assert db.env_secret("TB_CAPTURE_SECRET") == "s3cr3t-capture"
    out = _run(["env"])["stdout"]
    assert "LC_ALL=C" in out and "s3cr3t-capture" not in out
