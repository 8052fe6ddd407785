"""TPC-H load speed: tibench's parallel loader against the plain mariadb client, side by side.

On a private MariaDB started for the purpose (127.0.0.1, temporary datadir, stopped at the end):

1. generate SF data with tpchgen-cli (timed, from scratch);
2. load the same files ``--rounds`` times each way, alternating which goes first:
   - ``tibench``: :func:`tibenchlib.tpch.load.load` (``--workers`` connections, no ANALYZE);
   - ``client``: one ``mariadb --local-infile=1 -e "LOAD DATA LOCAL INFILE …; …"`` process
     running the same statements one after another into freshly created tables;
3. the whole pipeline as a user meets it: generate + create + load + ANALYZE + verify, timed.

Goals (issue 6): tibench ≥ 0.9 × the client's throughput; SF 0.1 pipeline ≤ 60 s on 2 cores.

    .venv/bin/python benchmarks/bench_tpch_load.py --sf 0.1 --rounds 3
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from tibenchlib.server import EmbeddedServer, find_binary
from tibenchlib.tpch import datagen, load
from tibenchlib.tpch.schema import TABLES, create_table_sql, drop_table_sql


def recreate(conn_factory) -> None:
    conn = conn_factory()
    try:
        with conn.cursor() as cur:
            for t in TABLES:
                cur.execute(drop_table_sql(t))
                cur.execute(create_table_sql(t))
    finally:
        conn.close()


def client_load(info, ds: datagen.DataSet, cfg: Path) -> float:
    """Seconds for one mariadb client process to LOAD DATA every file, one after another."""
    stmts = []
    for t in TABLES:
        for f in ds.files[t]:
            stmts.append(load.load_data_sql(t).replace("%s", f"'{f}'"))
    cmd = [
        find_binary("mariadb", "mysql"),
        f"--defaults-extra-file={cfg}",
        "--local-infile=1",
        "-h",
        "127.0.0.1",
        "-P",
        str(info.port),
        "-u",
        info.user,
        info.database,
        "-e",
        ";\n".join(stmts),
    ]
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sf", type=float, default=0.1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()

    root = Path(tempfile.mkdtemp(prefix="tibench-bench-tpch-"))
    srv = EmbeddedServer(name="bench-tpch", root=root / "server", database="tpch_bench")
    try:
        srv.ensure()
        info = srv.conninfo()
        engine = info.engine()
        from tibenchlib.tpch._conn import connector

        factory = connector(engine)
        cfg = root / "client.cnf"
        fd = os.open(cfg, os.O_WRONLY | os.O_CREAT, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(f"[client]\npassword={info.password}\n")

        t0 = time.perf_counter()
        ds = datagen.generate(args.sf, root / "data", progress=False, force=True)
        gen_s = time.perf_counter() - t0
        mb = ds.total_bytes / 1e6
        rows = sum(ds.rows.values())
        print(
            f"SF {args.sf:g}: {len(sum(ds.files.values(), []))} files, {mb:.1f} MB, "
            f"{rows:,} rows; tpchgen-cli {gen_s:.1f} s"
        )

        times: dict[str, list[float]] = {"tibench": [], "client": []}
        for r in range(args.rounds):
            order = ["tibench", "client"] if r % 2 == 0 else ["client", "tibench"]
            for way in order:
                recreate(factory)
                if way == "tibench":
                    steps = load.load(
                        engine, ds, workers=args.workers, analyze=False, progress=False, force=True
                    )
                    secs = float(steps.loc[steps.step == "load_total", "seconds"].iloc[0])
                else:
                    secs = client_load(info, ds, cfg)
                times[way].append(secs)
                print(
                    f"  round {r + 1} {way:8s} {secs:6.2f} s  {mb / secs:6.2f} MB/s  "
                    f"{rows / secs:,.0f} rows/s"
                )
        med = {k: statistics.median(v) for k, v in times.items()}
        ratio = med["client"] / med["tibench"]
        print(
            f"median load: tibench ({args.workers} workers) {med['tibench']:.2f} s "
            f"({mb / med['tibench']:.2f} MB/s), mariadb client {med['client']:.2f} s "
            f"({mb / med['client']:.2f} MB/s); throughput ratio tibench/client = {ratio:.2f} "
            f"(goal >= 0.90)"
        )

        # The pipeline from nothing: fresh files, fresh tables, statistics, verification.
        shutil.rmtree(root / "data", ignore_errors=True)
        recreate(factory)
        with factory() as conn, conn.cursor() as cur:
            for t in TABLES:
                cur.execute(drop_table_sql(t))
        t0 = time.perf_counter()
        ds = datagen.generate(args.sf, root / "data", progress=False)
        t_gen = time.perf_counter() - t0
        steps = load.load(engine, ds, workers=args.workers, progress=False)
        total = time.perf_counter() - t0
        by = steps.groupby("step").seconds.agg(["sum", "max"])
        print(
            f"pipeline SF {args.sf:g}: generate {t_gen:.1f} s + create "
            f"{by.loc['create', 'sum']:.1f} s + load {by.loc['load_total', 'sum']:.1f} s + "
            f"ANALYZE {by.loc['analyze', 'sum']:.1f} s (table-seconds; longest "
            f"{by.loc['analyze', 'max']:.1f} s) + verify {by.loc['verify', 'sum']:.1f} s "
            f"= {total:.1f} s wall (goal <= 60 s)"
        )
        engine.dispose()
    finally:
        srv.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
