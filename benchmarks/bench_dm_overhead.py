"""Bare mydumper/myloader vs the same tools through tibench's DM runners, alternated.

Two private MariaDBs (source and target, under a temporary ``TIBENCH_DATA``) and one sysbench
``oltp_insert`` data set. Each pair runs the dump bare (``subprocess.run`` of the same command,
output in a pipe) and through :func:`tibenchlib.dm.dump.dump` (0600 option file, log streamed to a
file, dump files counted), then the load bare and through :func:`tibenchlib.dm.load.load`
(performance_schema reset and read), in alternating order (AB, BA, …), ``--pause`` seconds before
each run, after one discarded warm-up pair. Throughput is the dump's bytes over a wall time: for
tibench, both the tool's own (what a study records: ``Outcome.wall_s``) and the whole runner call
(adding the option file, resetting and reading performance_schema; the dump files are counted after
it, as the phase does, and that counting is printed as a share of mydumper's time). Prints
the ratio of means tibench ÷ bare with its 95% Fieller interval and the paired ratio with its t
interval, per unit and per time. Goal (issue 10 §5), on the recorded figure: ratio ≥ 0.95, or an
interval holding 1.
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
    ap.add_argument("--pause", type=float, default=1.0, help="seconds between runs")
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
    from tibenchlib.sysbench.command import sysbench_command
    from tibenchlib.tools import execute

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

        dirs = {"bare": tmp / "dump-bare", "tibench": tmp / "dump-tib"}

        def bare(conn, command, settings) -> float:
            """MB/s of the dump folder moved by the bare ``command`` (mydumper or myloader)."""
            d = dirs["bare"]
            with client_defaults_file(conn, priv) as cnf:
                t0 = time.monotonic()
                r = subprocess.run(
                    command(conn, d, settings, defaults_file=cnf), capture_output=True
                )
                t1 = time.monotonic()
            assert r.returncode == 0, r.stdout[-500:]
            return directory_bytes(d) / (t1 - t0) / 1e6

        def bare_dump() -> dict:
            shutil.rmtree(dirs["bare"], ignore_errors=True)
            dirs["bare"].mkdir()
            return {"dump": bare(si, mydumper_command, ds)}

        def bare_load() -> dict:
            return {"load": bare(ti, myloader_command, ls)}

        def tib_dump() -> dict:
            t0 = time.monotonic()
            # as the phase calls it: the files are counted after the timed part
            d = dump(
                si, dirs["tibench"], ds, log_path=tmp / "raw/d.log", private_dir=priv, count=False
            )
            t1 = time.monotonic()
            assert d.ok
            d = d.counted()
            t2 = time.monotonic()
            return {
                "dump": d.mb_s,
                "dump (whole call)": d.bytes / (t1 - t0) / 1e6,
                "counting": (t2 - t1) / d.seconds,
            }

        def tib_load() -> dict:
            d = dirs["tibench"]
            t0 = time.monotonic()
            ld = load(ti, d, ls, log_path=tmp / "raw/l.log", private_dir=priv)
            t1 = time.monotonic()
            assert ld.ok
            return {"load": ld.mb_s, "load (whole call)": ld.bytes / (t1 - t0) / 1e6}

        runs = {"bare": (bare_dump, bare_load), "tibench": (tib_dump, tib_load)}
        res: dict = {"bare": [{} for _ in range(a.pairs + 1)], "tibench": []}
        res["tibench"] = [{} for _ in range(a.pairs + 1)]
        for i in range(a.pairs + 1):  # pair 0 is the warm-up, discarded
            order = ["bare", "tibench"] if i % 2 == 0 else ["tibench", "bare"]
            for unit in (0, 1):
                for name in order:
                    time.sleep(a.pause)  # let the servers settle (InnoDB flushing)
                    res[name][i].update(runs[name][unit]())
        res = {k: v[1:] for k, v in res.items()}
        print(
            f"{a.pairs} pairs, {a.tables} × {a.table_size} rows, threads {a.threads}, "
            f"load average {os.getloadavg()[0]:.2f}"
        )
        ok = True
        for unit in ("dump", "load", "dump (whole call)", "load (whole call)"):
            x = [r[unit] for r in res["tibench"]]
            y = [r[unit.split()[0]] for r in res["bare"]]
            f = stats.fieller_ratio(x, y)
            p = stats.paired_ratio(x, y)
            low, high = f["ci_low"], f["ci_high"]  # None: the interval is unbounded that side
            met = f["ratio"] >= 0.95 or ((low is None or low <= 1) and (high is None or 1 <= high))
            if "whole" not in unit:
                ok &= met
            print(
                f"{unit}: bare {sum(y) / len(y):.1f} MB/s, tibench {sum(x) / len(x):.1f} MB/s; "
                f"ratio {f['ratio']:.4f} [{_end(low)}, {_end(high)}] (Fieller), "
                f"paired {p['ratio']:.4f} [{_end(p['ci_low'])}, {_end(p['ci_high'])}]"
                + ("" if "whole" in unit else (": met" if met else ": NOT met"))
            )
        share = [r["counting"] for r in res["tibench"]]
        print(
            f"counting the dump files afterwards (rows per statement): "
            f"{100 * sum(share) / len(share):.0f}% of mydumper's own time, outside every timing"
        )
        return 0 if ok else 1
    finally:
        src.stop()
        tgt.stop()
        if not a.keep:
            shutil.rmtree(tmp, ignore_errors=True)


def _end(x: float | None) -> str:
    """An interval's end, or "unbounded" (Fieller's interval is when the denominator's mean is
    not resolved from 0 at 95%)."""
    return "unbounded" if x is None else f"{x:.4f}"


if __name__ == "__main__":
    sys.exit(main())
