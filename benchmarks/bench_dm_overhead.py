"""Bare mydumper/myloader vs the same tools through tibench's DM runners, alternated.

Two private MariaDBs (source and target, under a temporary ``TIBENCH_DATA``) and one sysbench
``oltp_insert`` data set. Each pair runs the dump and the load once bare (``subprocess.run`` of
the same command, output in a pipe) and once through :func:`tibenchlib.dm.dump.dump` /
:func:`tibenchlib.dm.load.load` (0600 option file, log streamed to a file, dump files counted,
the target's performance_schema reset and read), in alternating order (AB, BA, …) after one
discarded warm-up pair. Throughput is the dump's bytes over the whole call's wall time. Prints
the ratio of means tibench ÷ bare with its 95% Fieller interval and the paired ratio with its t
interval, per unit. Goal (issue 10 §5): ratio ≥ 0.95, or an interval holding 1.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pairs", type=int, default=6)
    ap.add_argument("--tables", type=int, default=4)
    ap.add_argument("--table-size", type=int, default=50_000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--keep", action="store_true", help="keep the temporary data directory")
    a = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="tibench-bench-dm-"))
    os.chmod(tmp, 0o755)
    os.environ["TIBENCH_DATA"] = str(tmp / "data")
    from tibenchlib import stats
    from tibenchlib.db import secret_config_file
    from tibenchlib.dm.dump import DumpSettings, directory_bytes, dump, mydumper_command
    from tibenchlib.dm.load import LoadSettings, load, myloader_command
    from tibenchlib.dm.options import client_defaults_file
    from tibenchlib.dm.servers import source_server, target_server
    from tibenchlib.run import execute, sysbench_command

    src, tgt = source_server(), target_server()
    try:
        src.ensure()
        tgt.ensure()
        si, ti = src.conninfo(), tgt.conninfo()
        priv = tmp / "private"
        priv.mkdir(mode=0o700)
        with secret_config_file(si, priv) as cfg:
            out = execute(
                sysbench_command(
                    "oltp_insert",
                    si,
                    action="prepare",
                    tables=a.tables,
                    table_size=a.table_size,
                    threads=2,
                    config_file=cfg,
                ),
                tmp / "prepare.log",
            )
        if out.returncode != 0:
            print((tmp / "prepare.log").read_text()[-2000:], file=sys.stderr)
            return 2
        ds, ls = DumpSettings(threads=a.threads), LoadSettings(threads=a.threads)

        def bare() -> dict:
            d = tmp / "dump-bare"
            shutil.rmtree(d, ignore_errors=True)
            d.mkdir()
            with client_defaults_file(si, priv) as cnf:
                t0 = time.monotonic()
                r = subprocess.run(
                    mydumper_command(si, d, ds, defaults_file=cnf), capture_output=True
                )
                t1 = time.monotonic()
            assert r.returncode == 0, r.stdout[-500:]
            with client_defaults_file(ti, priv) as cnf:
                t2 = time.monotonic()
                r = subprocess.run(
                    myloader_command(ti, d, ls, defaults_file=cnf), capture_output=True
                )
                t3 = time.monotonic()
            assert r.returncode == 0, r.stdout[-500:]
            b = directory_bytes(d)
            return {"dump": b / (t1 - t0) / 1e6, "load": b / (t3 - t2) / 1e6}

        def tib() -> dict:
            t0 = time.monotonic()
            d = dump(si, tmp / "dump-tib", ds, log_path=tmp / "raw/mydumper.log", private_dir=priv)
            t1 = time.monotonic()
            ld = load(ti, d.directory, ls, log_path=tmp / "raw/myloader.log", private_dir=priv)
            t2 = time.monotonic()
            assert d.ok and ld.ok
            return {"dump": d.bytes / (t1 - t0) / 1e6, "load": d.bytes / (t2 - t1) / 1e6}

        bare(), tib()  # warm-up pair, discarded
        res = {"bare": [], "tibench": []}
        for i in range(a.pairs):
            order = [("bare", bare), ("tibench", tib)]
            for name, fn in order if i % 2 == 0 else order[::-1]:
                res[name].append(fn())
        print(
            f"{a.pairs} pairs, {a.tables} × {a.table_size} rows, threads {a.threads}, "
            f"load average {os.getloadavg()[0]:.2f}"
        )
        ok = True
        for unit in ("dump", "load"):
            x = [r[unit] for r in res["tibench"]]
            y = [r[unit] for r in res["bare"]]
            f = stats.fieller_ratio(x, y)
            p = stats.paired_ratio(x, y)
            met = f["ratio"] >= 0.95 or (f["ci_low"] or 0) <= 1 <= (f["ci_high"] or 0)
            ok &= met
            print(
                f"{unit}: bare {sum(y) / len(y):.1f} MB/s, tibench {sum(x) / len(x):.1f} MB/s; "
                f"ratio {f['ratio']:.4f} [{f['ci_low']:.4f}, {f['ci_high']:.4f}] (Fieller), "
                f"paired {p['ratio']:.4f} [{p['ci_low']:.4f}, {p['ci_high']:.4f}]: "
                + ("met" if met else "NOT met")
            )
        return 0 if ok else 1
    finally:
        src.stop()
        tgt.stop()
        if not a.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
