"""Time the sysbench parser on a real 600-interval log with a latency histogram.

Goal (issue 3, section 5): parsing such a log takes at most 50 ms.

    .venv/bin/python benchmarks/bench_parse.py [--repeat 50] [--log PATH]

The default log is ``tests/fixtures/sysbench/mariadb/point_select-t2-ri1-600s-hist.txt.gz``,
a 600 s ``--report-interval=1 --histogram=on`` run of sysbench 1.0.20 (see SOURCES.md there).
It is decompressed once, then :func:`parse_sysbench` is timed on the text (what a sweep pays
per run) and :func:`parse_sysbench_file` on an uncompressed copy (adding the read). The first
call is timed apart: it includes importing pandas' lazy pieces, not the regex compilation,
which happens at import.
"""

from __future__ import annotations

import argparse
import gzip
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tibenchlib.parse.sysbench import parse_sysbench, parse_sysbench_file  # noqa: E402

DEFAULT_LOG = ROOT / "tests/fixtures/sysbench/mariadb/point_select-t2-ri1-600s-hist.txt.gz"
GOAL_MS = 50.0


def _times_ms(fn, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1000)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log", type=Path, default=DEFAULT_LOG)
    ap.add_argument("--repeat", type=int, default=50)
    a = ap.parse_args(argv)

    raw = a.log.read_bytes()
    text = (gzip.decompress(raw) if a.log.suffix == ".gz" else raw).decode()
    t0 = time.perf_counter()
    res = parse_sysbench(text)
    first_ms = (time.perf_counter() - t0) * 1000
    s = res.summary
    print(
        f"log: {a.log.name}: {len(text.splitlines())} lines, {len(res.intervals)} intervals, "
        f"{len(res.histogram)} histogram buckets, status {s['status']}, tps {s['tps']}"
    )
    text_ms = _times_ms(lambda: parse_sysbench(text), a.repeat)
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "log.txt"
        path.write_text(text)
        file_ms = _times_ms(lambda: parse_sysbench_file(path), a.repeat)

    def line(name: str, ms: list[float]) -> str:
        return (
            f"{name:<22} median {statistics.median(ms):6.2f} ms   min {min(ms):6.2f} ms   "
            f"max {max(ms):6.2f} ms   (n={len(ms)})"
        )

    print(f"{'first call':<22} {first_ms:6.2f} ms")
    print(line("parse_sysbench(text)", text_ms))
    print(line("parse_sysbench_file", file_ms))
    med = statistics.median(file_ms)
    verdict = "met" if med <= GOAL_MS else "NOT met"
    print(f"goal <= {GOAL_MS:.0f} ms per log (median, file): {verdict}")
    return 0 if med <= GOAL_MS else 1


if __name__ == "__main__":
    raise SystemExit(main())
