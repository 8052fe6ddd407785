"""Start-up cost of the two YCSB tools: the wall time of a 100-operation run of go-ycsb ÷ the
Java YCSB's, each as the ``ycsb`` phase runs it (:func:`tibenchlib.ycsb.run`).

Question (the demo's choice of tool): does go-ycsb start and finish a short run quicker than the
JVM? The demo's YCSB phase runs go-ycsb when it does.

    .venv/bin/python benchmarks/bench_ycsb_start.py [--pairs 6] [--operations 100]

Both tools against one private MariaDB under a temporary ``TIBENCH_DATA`` (removed at the end),
read 0.95 / update 0.05 on 1000 rows, one thread; the Java YCSB with tibench's binding and the
demo's ``-XX:TieredStopAtLevel=1``; go-ycsb v1.0.3 as ``make setup`` builds it. Pairs alternate
their order. Reported: each tool's mean wall time with its Student t 95% interval, and the ratio
of means (go-ycsb ÷ Java) with Fieller's 95% interval.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))
sys.path.insert(0, str(ROOT))

from bench_overhead import alternating, fmt_iv, header, private_data  # noqa: E402

from tibenchlib.server import EmbeddedServer  # noqa: E402
from tibenchlib.stats import fieller_ratio, t_interval  # noqa: E402
from tibenchlib.tools import require  # noqa: E402
from tibenchlib.ycsb import Workload, build_binding, load, run, ycsb_home  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=6, help="alternated go-ycsb/java pairs")
    ap.add_argument("--operations", type=int, default=100, help="operations per run")
    ap.add_argument("--keep", action="store_true", help="keep the temporary data directory")
    a = ap.parse_args(argv)
    header("YCSB start-up: wall time of a short run, go-ycsb ÷ the Java YCSB")
    home = ycsb_home()  # the clone's build, before TIBENCH_DATA moves to a temporary folder
    build_binding(home)
    require("go-ycsb")
    w = Workload(recordcount=1000, operationcount=a.operations)
    walls: dict[str, list[float]] = {"go-ycsb": [], "ycsb": []}
    with private_data(a.keep) as d:
        root = d / "server"
        root.mkdir()
        os.chmod(d, 0o755)
        os.chmod(root, 0o755)  # the server may run as the mysql user
        srv = EmbeddedServer(name="bench-ycsb-start", root=root)
        srv.ensure()
        try:
            conn = srv.conninfo()
            load(conn, w, d / "load.log", threads=2, tool="go-ycsb", secret_dir=d / "private")
            for pair, tool in alternating(a.pairs, "go-ycsb", "ycsb"):
                r = run(
                    conn, w, d / f"{tool}-{pair}.log", threads=1, tool=tool,
                    secret_dir=d / "private", timeout_s=120, home=home,
                    jvm_options=["-XX:TieredStopAtLevel=1"] if tool == "ycsb" else (),
                )  # fmt: skip
                if not r.ok:
                    raise SystemExit(f"pair {pair} {tool}: failed, log {r.log_path}")
                walls[tool].append(r.outcome.wall_s)
                print(f"pair {pair:2d} {tool:<8} {r.outcome.wall_s:7.3f} s")
        finally:
            srv.stop()
    for tool, v in walls.items():
        t = t_interval(v)
        print(f"mean wall {tool:<8} {t['mean']:.3f} s, 95% t {fmt_iv(t, 3)} (n={t['n']})")
    f = fieller_ratio(walls["go-ycsb"], walls["ycsb"])
    print(f"go-ycsb ÷ Java YCSB, ratio of mean wall times: {f['ratio']:.4f}, 95% Fieller "
          f"{fmt_iv(f)} (df {f['df']:.1f})")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
