"""Time and peak memory of parsing a large sysbench log (issue 14, item 9).

    .venv/bin/python benchmarks/bench_parse_large.py [--mb 200] [--keep PATH]

The log is built from real lines: the header, the interval lines repeated until the file is
``--mb`` megabytes, and the summary and histogram of the 600 s fixture
``tests/fixtures/sysbench/mariadb/point_select-t2-ri1-600s-hist.txt.gz``. Each way of parsing
runs in its own Python process, which reports its wall time and how much its peak resident
memory grew (``ru_maxrss``) while parsing:

- ``whole``: the text read at once, then ``parse_sysbench`` (what every version did before);
- ``streamed``: ``parse_sysbench_file(path)``, the interval table kept;
- ``summary``: ``parse_sysbench_file(path, intervals=False)``, what ``tibench parse`` does.

Goal: ``summary`` grows by at most 0.25 × the log's size (bounded by the chunk, not the file).
"""

from __future__ import annotations

import argparse
import gzip
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests/fixtures/sysbench/mariadb/point_select-t2-ri1-600s-hist.txt.gz"
GOAL = 0.25

CHILD = """
import json, resource, sys, time
sys.path.insert(0, sys.argv[3])
from tibenchlib.parse.sysbench import parse_sysbench, parse_sysbench_file
mode, path = sys.argv[1], sys.argv[2]
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.perf_counter()
if mode == "whole":
    with open(path, encoding="utf-8", errors="replace") as f:
        res = parse_sysbench(f.read(), file=path)
else:
    res = parse_sysbench_file(path, intervals=(mode == "streamed"))
wall = time.perf_counter() - t0
grew = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024
s = res.summary
print(json.dumps({"wall_s": wall, "grew": grew, "intervals": s["intervals"], "tps": s["tps"],
                  "status": s["status"]}))
"""


def build(path: Path, mb: float) -> int:
    lines = gzip.decompress(FIXTURE.read_bytes()).decode().splitlines(keepends=True)
    iv = [i for i, x in enumerate(lines) if x.startswith("[ ")]
    block = "".join(lines[iv[0] : iv[-1] + 1])
    reps = max(1, int(mb * 1e6 // len(block)))
    with open(path, "w") as out:
        out.writelines(lines[: iv[0]])
        for _ in range(reps):
            out.write(block)
        out.writelines(lines[iv[-1] + 1 :])
    return reps * len(iv)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=200.0, help="size of the generated log")
    ap.add_argument("--keep", type=Path, help="write the log here and keep it")
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as d:
        path = a.keep or Path(d) / "large.log"
        n = build(path, a.mb)
        size = path.stat().st_size
        print(f"log: {size / 1e6:.0f} MB, {n} interval lines (real lines of {FIXTURE.name})")
        out = {}
        for mode in ("whole", "streamed", "summary"):
            r = subprocess.run(
                [sys.executable, "-c", CHILD, mode, str(path), str(ROOT)],
                capture_output=True,
                text=True,
                check=True,
            )
            out[mode] = m = json.loads(r.stdout)
            assert m["intervals"] == n and m["status"] == "ok", m
            print(
                f"{mode:9s} {m['wall_s']:6.1f} s  peak memory +{m['grew'] / 1e6:7.0f} MB"
                f" = {m['grew'] / size:5.2f} x the log"
            )
    ratio = out["summary"]["grew"] / size
    ok = ratio <= GOAL
    print(
        f"verdict: tibench parse (summary) peaks at {ratio:.2f} x the log's size: "
        f"{'meets' if ok else 'misses'} the goal of <= {GOAL} x"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
