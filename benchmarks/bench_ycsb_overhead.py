"""Driving overhead of the YCSB runner: throughput driven by tibench ÷ the same YCSB command bare.

Goal (issue 11, performance): the ratio of mean throughput is at least 0.97, or its 95%
interval holds 1.

    .venv/bin/python benchmarks/bench_ycsb_overhead.py [--pairs 6] [--duration 10] [--threads 2]

Both arms run YCSB 0.17.0 with tibench's JDBC binding (read 0.5 / update 0.5, uniform,
``--records`` rows, ``maxexecutiontime`` = ``--duration``) against the same private MariaDB,
started under a temporary ``TIBENCH_DATA`` that is removed at the end; the table is loaded once.

* tibench: what the ``ycsb`` phase does per run: :func:`tibenchlib.ycsb.run_together` (0600
  password file made and removed per run, the client started by a thread behind a barrier, its
  output streamed to a log file, each operation's HdrHistogram log written by YCSB), then the
  log parsed and the HdrHistograms read and merged (:mod:`tibenchlib.ycsb.hdr`);
* bare: :func:`subprocess.run` of the identical argv (its password file made once) with the
  output in a pipe, parsed after YCSB exits.

Pairs alternate their order (tibench first, then bare first, ...). Reported as in
``bench_overhead.py``: the ratio of mean throughput with Fieller's 95% interval, and the per-pair
ratios with a Student t interval.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))
sys.path.insert(0, str(ROOT))

from bench_overhead import alternating, header, private_data, ratio_report, verdict  # noqa: E402

from tibenchlib.parse.ycsb import parse_ycsb, parse_ycsb_file  # noqa: E402
from tibenchlib.server import EmbeddedServer  # noqa: E402
from tibenchlib.ycsb import Workload, build_binding, hdr, load, run_together, ycsb_home  # noqa: E402
from tibenchlib.ycsb.runner import _secret_file, ycsb_command  # noqa: E402

GOAL = 0.97


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=6, help="alternated tibench/bare pairs")
    ap.add_argument("--duration", type=int, default=10, help="seconds per run")
    ap.add_argument("--threads", type=int, default=2, help="YCSB client threads")
    ap.add_argument("--records", type=int, default=10000, help="rows in usertable")
    ap.add_argument("--keep", action="store_true", help="keep the temporary data directory")
    a = ap.parse_args(argv)
    header("YCSB runner overhead: tibench.ycsb.run ÷ the same java command run bare")
    home = ycsb_home()  # the clone's build, before TIBENCH_DATA moves to a temporary folder
    classpath = build_binding(home)
    w = Workload(recordcount=a.records, operationcount=10**9, maxexecutiontime_s=a.duration)
    with private_data(a.keep) as d:
        root = d / "server"
        root.mkdir()
        os.chmod(d, 0o755)
        os.chmod(root, 0o755)  # the server may run as the mysql user
        srv = EmbeddedServer(name="bench-ycsb", root=root)
        srv.ensure()
        try:
            conn = srv.conninfo()
            load(conn, w, d / "load.log", threads=2, home=home)
            print(f"loaded {a.records} rows; {a.pairs} pairs × {a.duration} s, {a.threads} threads")
            results: dict[str, list[float]] = {"tibench": [], "bare": []}
            with _secret_file((conn.password or "") + "\n", tempfile.mkdtemp()) as pw:
                bare_cmd = ycsb_command(
                    "run", conn, w, threads=a.threads, classpath=classpath, password_file=pw
                )
                for pair, arm in alternating(a.pairs, "tibench", "bare"):
                    if arm == "tibench":
                        hdr_dir = d / f"run-{pair}.hdr"
                        hdr_dir.mkdir()
                        extra = ["-p", "hdrhistogram.fileoutput=true",
                                 "-p", f"hdrhistogram.output.path={hdr_dir}/"]  # fmt: skip
                        (r,) = run_together(
                            [conn], w, [d / f"run-{pair}.log"], threads=a.threads, home=home,
                            extras=[extra],
                        )  # fmt: skip
                        s = parse_ycsb_file(r.log_path).summary
                        hdr.merged_latency([hdr.read_client(hdr_dir)])
                    else:
                        out = subprocess.run(
                            bare_cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
                        )
                        s = parse_ycsb(out.stdout).summary
                    if s["status"] != "ok":
                        raise SystemExit(f"pair {pair} {arm}: {s['error']}")
                    results[arm].append(s["throughput_ops_s"])
                    print(f"pair {pair:2d} {arm:<8} {s['throughput_ops_s']:10.1f} ops/s")
        finally:
            srv.stop()
    rep = ratio_report(results["tibench"], results["bare"], "tibench", "bare")
    print(verdict(rep["fieller"], "tibench ÷ bare, ratio of means", GOAL))
    print(verdict(rep["paired"] | {"ratio": rep["paired"]["mean"]}, "paired ratios", GOAL))
    f = rep["fieller"]
    met = f["ratio"] >= GOAL or (f["ci_low"] is not None and f["ci_low"] <= 1.0 <= f["ci_high"])
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
