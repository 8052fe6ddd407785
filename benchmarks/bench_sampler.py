"""The sampler's own CPU cost while it watches a real busy process.

Runs a busy-loop child for ``--seconds`` (default 20) while :class:`ProcessSampler` samples it and
this process once a second, and prints the sampler thread's CPU time as % of one core (the goal
in issue 5 is ≤ 1%), next to what the busy child read.

    .venv/bin/python benchmarks/bench_sampler.py [--seconds 20] [--interval 1.0]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

from tibenchlib.resources import ProcessSampler

BUSY = "import time\nt = time.monotonic() + {s}\nwhile time.monotonic() < t: pass\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--interval", type=float, default=1.0)
    args = ap.parse_args(argv)

    busy = subprocess.Popen([sys.executable, "-c", BUSY.format(s=args.seconds + 5)])
    try:
        time.sleep(0.5)
        proc_cpu0 = time.process_time()
        with ProcessSampler(
            {"busy": busy.pid, "bench": os.getpid()}, interval=args.interval
        ) as sampler:
            time.sleep(args.seconds)
        proc_cpu = time.process_time() - proc_cpu0
    finally:
        busy.kill()
        busy.wait()

    df = sampler.samples
    b = df[df["source"] == "busy"]
    print(f"samples: {len(df)} rows over {args.seconds:g} s at {args.interval:g} s")
    print(f"busy child: median {b['cpu_pct'].median():.1f}% CPU (one core = 100%)")
    print(f"sampler thread CPU: {sampler.overhead_pct:.3f}% of one core (goal ≤ 1%)")
    print(f"whole benchmark process CPU: {100 * proc_cpu / args.seconds:.3f}% of one core")
    if sampler.warnings:
        print("warnings:", *sampler.warnings, sep="\n  ")
    return 0 if sampler.overhead_pct <= 1.0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
