"""``make demo-hosts``: a sweep driven from this machine and two SSH client hosts on loopback.

    python -m tibenchlib.hosts.demo [--study demo-hosts]

Starts two OpenSSH servers on 127.0.0.2 and 127.0.0.3 (:class:`.loopback.LoopbackSshd`,
generated keys in a private temporary directory), writes a study file with
``clients: [local, <user>@127.0.0.2:<port>, <user>@127.0.0.3:<port>]`` at the CI study's sizes,
runs ``tibench run`` on it (environment, prepare, sweep), then ``tibench runs`` and
``tibench diagnose``, and stops the servers. The study's results stay in ``data/<study>/``
(per-host rows in ``run_hosts``).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

from .loopback import LoopbackSshd, sshd_missing


def study_file(name: str, sshd: LoopbackSshd) -> dict:
    return {
        "study": name,
        "description": "one local and two SSH client hosts on loopback, the CI study's sizes",
        "target": {"kind": "embedded"},
        "dataset": {"tables": 2, "table_size": 1000, "prepare_threads": 2},
        "workloads": ["oltp_point_select", "oltp_update_non_index"],
        "threads": [3, 6, 12],
        "duration_s": 3,
        "report_interval_s": 1,
        "repeats": 3,
        "arms": [{"label": "hosts"}],
        "clients": ["local", *sshd.client_entries()],
        "phases": ["environment", "prepare", "sweep"],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--study", default="demo-hosts")
    a = ap.parse_args(argv)
    why = sshd_missing()
    if why:
        print(f"demo-hosts: {why}", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="tibench-hosts-") as tmp:
        with LoopbackSshd(Path(tmp) / "sshd") as sshd:
            params = Path(tmp) / f"{a.study}.yaml"
            params.write_text(yaml.safe_dump(study_file(a.study, sshd), sort_keys=False))
            cli = [sys.executable, "-m", "tibenchlib.cli"]
            rc = subprocess.run([*cli, "run", str(params), "--in-process"]).returncode
            if rc == 0:
                subprocess.run([*cli, "runs", a.study])
                subprocess.run([*cli, "diagnose", a.study])
    return rc


if __name__ == "__main__":
    sys.exit(main())
