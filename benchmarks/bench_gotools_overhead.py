"""Driving overhead of the go-ycsb and go-tpc runners: throughput driven by tibench ÷ the same
command run bare.

Goal: each ratio of mean throughput is at least 0.97, or its 95% interval holds 1.

    .venv/bin/python benchmarks/bench_gotools_overhead.py [--pairs 6] [--duration 10]
        [--threads 2] [--tool go-ycsb|go-tpc|both]

Both tools are tibench's own builds (go-ycsb v1.0.3, go-tpc v1.0.7: :mod:`tibenchlib.gobuild`,
built here when missing), against one private MariaDB started under a temporary
``TIBENCH_DATA`` that is removed at the end.

* go-ycsb (read 0.5 / update 0.5, uniform, ``--records`` rows loaded once, a timed run of
  ``--duration`` s): tibench runs it as the ``ycsb`` phase does,
  :func:`tibenchlib.ycsb.run_together` (0600 property file made and removed per run, the client
  started behind a barrier, output streamed to a log file, SIGINT at the deadline, the password
  masked in the log), then parses the log; bare is :class:`subprocess.Popen` of the identical
  argv (its property file made once) with the output in a pipe, SIGINT at the same deadline,
  parsed after it exits. Throughput: go-ycsb's final ``TOTAL`` OPS.
* go-tpc (one warehouse, loaded once with ``prepare --no-check``, runs of ``--duration`` s with
  ``--interval 1s``): tibench runs it with :func:`tibenchlib.tpcc.run_gotpc` (log streamed to a
  file, then parsed with its per-second series); bare is :func:`subprocess.run` of the identical
  argv with the output in a pipe. Throughput: tpmTotal (every committed transaction per minute).

Pairs alternate their order (tibench first, then bare first, ...). Reported as in
``bench_overhead.py``: the ratio of mean throughput with Fieller's 95% interval, and the
per-pair ratios with a Student t interval.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))
sys.path.insert(0, str(ROOT))

from bench_overhead import alternating, header, private_data, ratio_report, verdict  # noqa: E402

from tibenchlib.parse.gotpc import parse_tpcc_output  # noqa: E402
from tibenchlib.parse.ycsb import parse_ycsb, parse_ycsb_file  # noqa: E402
from tibenchlib.server import EmbeddedServer  # noqa: E402
from tibenchlib.tools import require  # noqa: E402
from tibenchlib.tpcc import gotpc_command, run_gotpc  # noqa: E402
from tibenchlib.tpcc.phase import series_of  # noqa: E402
from tibenchlib.ycsb import Workload, load, run_together  # noqa: E402
from tibenchlib.ycsb.runner import _secret_file, go_ycsb_command  # noqa: E402

GOAL = 0.97


def _ycsb(conn, d: Path, a) -> dict[str, list[float]]:
    exe = require("go-ycsb")
    w = Workload(
        recordcount=a.records, maxexecutiontime_s=a.duration, readproportion=0.5,
        updateproportion=0.5,
    )  # fmt: skip
    load(conn, w, d / "ycsb-load.log", threads=2, tool="go-ycsb", secret_dir=d / "private")
    print(f"go-ycsb: {a.records} rows; {a.pairs} pairs × {a.duration} s, {a.threads} threads")
    results: dict[str, list[float]] = {"tibench": [], "bare": []}
    secret = (conn.password or "").replace("\\", "\\\\")
    with _secret_file(f"mysql.password={secret}\n", tempfile.mkdtemp()) as props:
        bare_cmd = go_ycsb_command("run", conn, w, threads=a.threads, property_file=props)
        bare_cmd[0] = exe
        for pair, arm in alternating(a.pairs, "tibench", "bare"):
            if arm == "tibench":
                (r,) = run_together(
                    [conn], w, [d / f"ycsb-{pair}.log"], threads=a.threads, tool="go-ycsb",
                    secret_dir=d / "private", timeout_s=a.duration + 60,
                )  # fmt: skip
                s = parse_ycsb_file(r.log_path).summary
            else:
                p = subprocess.Popen(bare_cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
                try:
                    p.wait(timeout=a.duration)
                except subprocess.TimeoutExpired:
                    p.send_signal(signal.SIGINT)
                out, _ = p.communicate(timeout=60)
                s = parse_ycsb(out.decode(errors="replace")).summary
            if s["status"] != "ok":
                raise SystemExit(f"go-ycsb pair {pair} {arm}: {s['error']}")
            results[arm].append(s["throughput_ops_s"])
            print(f"pair {pair:2d} {arm:<8} {s['throughput_ops_s']:10.1f} ops/s")
    return results


def _tpcc(conn, d: Path, a) -> dict[str, list[float]]:
    exe = require("go-tpc")
    conn.execute_on_server("CREATE DATABASE IF NOT EXISTS bench_gotpc")
    conn = dataclasses.replace(conn, database="bench_gotpc")
    t0 = time.time()
    cmd = gotpc_command(conn, "prepare", warehouses=1, threads=4, prepare_check=False)
    cmd[0] = exe
    with open(d / "tpcc-prepare.log", "wb") as log:
        subprocess.run([*cmd, "-p", conn.password or ""], stdout=log, stderr=log, check=True)
    print(f"go-tpc: 1 warehouse loaded in {time.time() - t0:.0f} s; {a.pairs} pairs × "
          f"{a.duration} s, {a.threads} threads")  # fmt: skip
    bare_cmd = gotpc_command(
        conn, "run", warehouses=1, threads=a.threads, time_s=a.duration, interval_s=1
    )
    bare_cmd[0] = exe
    results: dict[str, list[float]] = {"tibench": [], "bare": []}
    for pair, arm in alternating(a.pairs, "tibench", "bare"):
        if arm == "tibench":
            _out, r = run_gotpc(
                conn, "run", d / f"tpcc-{pair}.log", warehouses=1, threads=a.threads,
                time_s=a.duration, interval_s=1, timeout_s=a.duration + 60,
            )  # fmt: skip
            series_of(r, a.threads)
        else:
            out = subprocess.run(
                [*bare_cmd, "-p", conn.password or ""], stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT, text=True,
            )  # fmt: skip
            r = parse_tpcc_output(out.stdout)
        s = r.summary
        if s["status"] != "ok" or not s["tpm_total"]:
            raise SystemExit(f"go-tpc pair {pair} {arm}: {s['error']}")
        results[arm].append(s["tpm_total"])
        print(f"pair {pair:2d} {arm:<8} {s['tpm_total']:10.1f} tpmTotal")
    return results


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=6, help="alternated tibench/bare pairs")
    ap.add_argument("--duration", type=int, default=10, help="seconds per run")
    ap.add_argument("--threads", type=int, default=2, help="client threads")
    ap.add_argument("--records", type=int, default=10000, help="rows in usertable (go-ycsb)")
    ap.add_argument("--tool", choices=["go-ycsb", "go-tpc", "both"], default="both")
    ap.add_argument("--keep", action="store_true", help="keep the temporary data directory")
    a = ap.parse_args(argv)
    header("go-ycsb / go-tpc runner overhead: tibench's runner ÷ the same command run bare")
    met = True
    with private_data(a.keep) as d:
        root = d / "server"
        root.mkdir()
        os.chmod(d, 0o755)
        os.chmod(root, 0o755)  # the server may run as the mysql user
        srv = EmbeddedServer(name="bench-gotools", root=root)
        srv.ensure()
        try:
            conn = srv.conninfo()
            for tool, fn in (("go-ycsb", _ycsb), ("go-tpc", _tpcc)):
                if a.tool not in (tool, "both"):
                    continue
                res = fn(conn, d, a)
                rep = ratio_report(res["tibench"], res["bare"], "tibench", "bare")
                print(verdict(rep["fieller"], f"{tool}: tibench ÷ bare, ratio of means", GOAL))
                print(verdict(rep["paired"] | {"ratio": rep["paired"]["mean"]},
                              f"{tool}: paired ratios", GOAL))  # fmt: skip
                f = rep["fieller"]
                met &= f["ratio"] >= GOAL or (
                    f["ci_low"] is not None and f["ci_low"] <= 1.0 <= f["ci_high"]
                )
        finally:
            srv.stop()
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
