"""TPS of three sysbench clients sending the same requests ÷ with seeds of their own.

    .venv/bin/python benchmarks/bench_client_seeds.py [--rounds 10] [--seconds 5] [--threads 6]
        [--table-size 10000]

Why tibench gives every client of a run its own ``--rand-seed``
(:func:`tibenchlib.sysbench.command.client_seeds`): without one, sysbench seeds its generator
from the current second, so clients started together replay the same rows in the same order.
Both set-ups here are three clients started together (:func:`tibenchlib.clients.execute_together`,
``oltp_point_select``, ``--threads`` shared by the three) on the embedded MariaDB of a temporary
data directory, one run of each per round, their order alternating: "same" gives all three one
seed (what the current second gives them), "own" gives each a seed of its own. Estimator: the
mean over rounds of the per-round log ratio same / own, back-transformed, with its Student t 95%
interval (df = rounds - 1; :func:`tibenchlib.stats.paired_ratio`).

Exit code 0 when the interval lies above 1 (the same requests are answered faster: clients need
seeds of their own); 1 otherwise. Skipped (exit 0, a line saying why) without sysbench.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from pathlib import Path

from tibenchlib import paths, phases
from tibenchlib.clients import execute_together
from tibenchlib.db import secret_config_file
from tibenchlib.params import parse_study
from tibenchlib.parse.sysbench import parse_sysbench_file
from tibenchlib.server import embedded
from tibenchlib.stats import paired_ratio
from tibenchlib.sysbench.command import client_seeds, seeded, study_command
from tibenchlib.target import open_arm


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=6)
    ap.add_argument("--table-size", type=int, default=10000, help="rows in each of 2 tables")
    a = ap.parse_args()
    if not shutil.which("sysbench"):
        print("skipped: sysbench is not installed")
        return 0
    tps: dict[str, list[float]] = {"same": [], "own": []}
    with tempfile.TemporaryDirectory(prefix="bench-seeds-") as tmp:
        os.environ["TIBENCH_DATA"] = str(Path(tmp) / "data")
        study = parse_study(
            {
                "study": "bench_seeds",
                "target": {"kind": "embedded"},
                "dataset": {"tables": 2, "table_size": a.table_size},
                "workloads": ["oltp_point_select"],
                "threads": [a.threads],
                "clients": 3,
                "duration_s": a.seconds,
                "arms": [{"label": "a"}],
            }
        )
        phases.run_phase(study, "prepare", progress=False)
        ctx = open_arm(study, "a")
        logs = Path(tmp) / "logs"
        logs.mkdir()
        shares = [a.threads // 3 + (i < a.threads % 3) for i in range(3)]
        try:
            with secret_config_file(ctx.conn, paths.private_dir(study.study)) as cfg:
                for r in range(1, a.rounds + 1):
                    own = client_seeds(study.seed, f"round {r}", 3)
                    seeds = {"same": [own[0]] * 3, "own": own}
                    for which in ["same", "own"] if r % 2 else ["own", "same"]:
                        cmds = [
                            seeded(
                                study_command(
                                    study, ctx.conn, "oltp_point_select", n, a.seconds, cfg
                                ),
                                s,
                            )
                            for n, s in zip(shares, seeds[which], strict=True)
                        ]
                        out = [logs / f"r{r}-{which}-c{i}.log" for i in range(3)]
                        execute_together(cmds, out, timeout_s=a.seconds + 60)
                        total = sum(parse_sysbench_file(p).summary["tps"] or 0 for p in out)
                        tps[which].append(total)
                        print(f"round {r} {which:4}: {total:9.1f} TPS", flush=True)
        finally:
            embedded().stop()
    r = paired_ratio(tps["same"], tps["own"])
    ratio, lo, hi = r["ratio"], r["ci_low"], r["ci_high"]
    print(f"CPUs: {os.cpu_count()}, load average: {os.getloadavg()}")
    print(
        f"TPS, three clients with one seed / each its own: {ratio:.3f} "
        f"[95% CI {lo:.3f}, {hi:.3f}], n = {r['n_pairs']} rounds of {a.seconds} s "
        f"at {a.threads} threads, 2 tables of {a.table_size} rows"
    )
    verdict = "faster" if lo > 1 else ("slower" if hi < 1 else "not told apart")
    print(f"the same requests from every client: {verdict}")
    return 0 if lo > 1 else 1


if __name__ == "__main__":
    raise SystemExit(main())
