"""Driving overhead of the TPC-C runner: sysbench's events/s as the ``tpcc`` phase drives it
(:func:`tibenchlib.tpcc.phase.measure_lua`) ÷ the same sysbench command run bare.

Goal (issue 11): the ratio is at least 0.97, or its 95% interval holds 1.

    .venv/bin/python benchmarks/bench_tpcc_overhead.py [--pairs 6] [--duration 10] [--threads 2]

Both arms run the TPC-C-like Lua driver (``tibenchlib/tpcc/lua/tpcc.lua``) with the same
options on the same private MariaDB (under a temporary ``TIBENCH_DATA``, removed at the end),
loaded once at the scale given (default: 1 warehouse, 10,000 items, 300 customers per
district; the data grows with every run, equally for both arms thanks to the alternation).

* tibench: the phase's path, ``measure_lua`` with one client (0600 config file, the client
  started by :func:`tibenchlib.clients.execute_together`, log streamed to a file, orders counted
  before and after, the log parsed, per-transaction latency merged);
* bare: :func:`subprocess.run` of the identical argv, output in a pipe, parsed afterwards.

Pairs alternate their order, so linear drift of the shared machine falls equally on both arms.
Printed: the paired ratio (geometric mean of the per-pair ratios, t interval) and the ratio of
means with Fieller's interval.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_overhead import alternating, header, private_data  # noqa: E402

from tibenchlib import paths  # noqa: E402
from tibenchlib.db import secret_config_file  # noqa: E402
from tibenchlib.params import parse_study  # noqa: E402
from tibenchlib.parse.sysbench import parse_sysbench  # noqa: E402
from tibenchlib.server import EmbeddedServer  # noqa: E402
from tibenchlib.stats import fieller_ratio, paired_ratio  # noqa: E402
from tibenchlib.tpcc import Scale, prepare_sysbench_tpcc, sysbench_tpcc_command  # noqa: E402
from tibenchlib.tpcc.phase import TpccSpec, measure_lua  # noqa: E402

GOAL = 0.97


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=6)
    ap.add_argument("--duration", type=int, default=10, help="seconds per run")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--items", type=int, default=10_000)
    ap.add_argument("--customers", type=int, default=300)
    a = ap.parse_args()
    header("TPC-C runner overhead: the tpcc phase's measure_lua ÷ bare sysbench, events/s")
    scale = Scale(warehouses=1, items=a.items, customers=a.customers)
    with private_data():
        server = EmbeddedServer(name="embedded", root=paths.server_dir("embedded"))
        server.ensure()
        try:
            conn = server.conninfo()
            work = Path(tempfile.mkdtemp(dir=paths.data_dir()))
            out = prepare_sysbench_tpcc(conn, scale, work / "prepare.log")
            if out.returncode != 0:
                print((work / "prepare.log").read_text()[-2000:])
                return 1
            study = parse_study(
                {"study": "bench-tpcc", "tpcc": {"items": a.items, "customers": a.customers,
                 "threads": [a.threads], "duration_s": a.duration, "report_interval_s": 1}}
            )  # fmt: skip
            ctx = SimpleNamespace(study=study)
            tps: dict[str, list[float]] = {"tibench": [], "bare": []}
            with secret_config_file(conn, work) as cfg:
                bare_cmd = sysbench_tpcc_command(
                    conn, "run", scale, threads=a.threads, time_s=a.duration, config_file=cfg
                )
                for pair, arm in alternating(a.pairs, "tibench", "bare"):
                    if arm == "tibench":
                        spec = TpccSpec("bench", 1, False, a.threads, pair)
                        r = measure_lua(ctx, spec, conn, [work / f"run-{pair}.log"])
                        v = r["sysbench_tps"]
                    else:
                        p = subprocess.run(bare_cmd, capture_output=True, text=True, check=False)
                        v = parse_sysbench(p.stdout + p.stderr).summary["tps"]
                    tps[arm].append(v)
                    print(f"pair {pair:2d} {arm:8s} {v:9.2f} events/s")
        finally:
            server.stop()
    pr = paired_ratio(tps["tibench"], tps["bare"])
    fr = fieller_ratio(tps["tibench"], tps["bare"])
    print(
        f"paired ratio {pr['ratio']:.4f} [{pr['ci_low']:.4f}, {pr['ci_high']:.4f}] "
        f"(n = {pr['n_pairs']} pairs, geometric mean of per-pair ratios, t interval)"
    )
    lo, hi = fr["ci_low"], fr["ci_high"]
    span = f"[{lo:.4f}, {hi:.4f}]" if lo is not None else "(unbounded)"
    print(f"ratio of means {fr['ratio']:.4f} {span} (Fieller 95%)")
    ok = pr["ratio"] >= GOAL or (pr["ci_low"] is not None and pr["ci_low"] <= 1 <= pr["ci_high"])
    print(f"goal ≥ {GOAL} or interval holding 1: {'met' if ok else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
