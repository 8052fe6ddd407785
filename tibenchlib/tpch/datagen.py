"""Generate TPC-H data with ``tpchgen-cli`` into chunked ``.tbl`` files, once, and reuse it.

``tpchgen-cli`` (PyPI, a Rust port of dbgen that writes the same rows) is run once per table,
splitting the large tables into parts of about ``chunk_bytes`` so that they load in parallel and
each ``LOAD DATA`` stays a modest transaction on TiDB. A ``manifest.json`` written last records
every file with its size and line count; a directory whose manifest matches the request and whose
files still have the recorded sizes is reused as is.

The line counts are what lineitem is verified against after loading: its row count is not a
multiple of the scale factor (each order has a random 1 to 7 lines).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from .. import paths
from .schema import TABLES, expected_rows

MANIFEST = "manifest.json"

#: Approximate ``.tbl`` bytes per unit of scale factor (measured at SF 0.01, tpchgen-cli 4.0),
#: used only to choose how many parts to split each table into.
BYTES_PER_SF: dict[str, float] = {
    "region": 389,
    "nation": 2_224,
    "supplier": 1.38e6,
    "customer": 24.1e6,
    "part": 23.7e6,
    "partsupp": 116.2e6,
    "orders": 165.9e6,
    "lineitem": 726.4e6,
}

#: Lineitem rows of the generated data at scale factors measured here (tpchgen-cli 4.0.0,
#: identical to dbgen). Lets a data set loaded by other tools (``tiup bench tpch prepare``) be
#: checked exactly at these scale factors.
LINEITEM_ROWS: dict[float, int] = {0.01: 60_175, 0.1: 600_572, 1.0: 6_001_215}


class DatagenError(RuntimeError):
    """tpchgen-cli is missing or failed, or the generated files do not verify."""


@dataclass
class DataSet:
    """Generated ``.tbl`` files of one scale factor.

    ``files`` maps each table to its part files in load order, ``rows`` to its total line count.
    """

    directory: Path
    scale_factor: float
    files: dict[str, list[Path]] = field(default_factory=dict)
    rows: dict[str, int] = field(default_factory=dict)
    bytes: dict[str, int] = field(default_factory=dict)
    generator: str = ""
    seconds: float = 0.0
    reused: bool = False
    _file_rows: dict[Path, int] = field(default_factory=dict, repr=False)

    def file_rows(self) -> dict[Path, int]:
        """Line count of each file (from the manifest)."""
        return dict(self._file_rows)

    @property
    def total_bytes(self) -> int:
        return sum(self.bytes.values())


def sf_label(scale_factor: float) -> str:
    """``0.01`` → ``"0.01"``, ``1.0`` → ``"1"``: a stable folder / file name part."""
    return f"{scale_factor:g}"


def default_dir(scale_factor: float) -> Path:
    """Where generated data goes unless told otherwise: ``data/tpch/sf<SF>/`` (git-ignored)."""
    return paths.tpch_data_dir(sf_label(scale_factor))


def tpchgen_binary() -> str:
    """The ``tpchgen-cli`` executable: next to this Python (the venv) first, then ``PATH``."""
    beside = Path(sys.executable).parent / "tpchgen-cli"
    if beside.exists():
        return str(beside)
    found = shutil.which("tpchgen-cli")
    if not found:
        raise DatagenError("tpchgen-cli not found: pip install tpchgen-cli (make setup does)")
    return found


def tpchgen_version(binary: str | None = None) -> str:
    r = subprocess.run([binary or tpchgen_binary(), "--version"], capture_output=True, text=True)
    return r.stdout.strip() or r.stderr.strip()


def parts_for(table: str, scale_factor: float, chunk_bytes: int) -> int:
    """How many files to split ``table`` into so each is about ``chunk_bytes`` or less."""
    return max(1, math.ceil(BYTES_PER_SF[table] * scale_factor / chunk_bytes))


def count_lines(path: Path, block: int = 1 << 22) -> int:
    """Newline count of a file, read in blocks (a 16 MiB chunk takes a few milliseconds)."""
    n = 0
    with open(path, "rb") as f:
        while chunk := f.read(block):
            n += chunk.count(b"\n")
    return n


def generate(
    scale_factor: float,
    directory: str | Path | None = None,
    *,
    chunk_bytes: int = 16 << 20,
    threads: int | None = None,
    force: bool = False,
    progress: bool = True,
) -> DataSet:
    """Generate (or reuse) the TPC-H ``.tbl`` files of one scale factor.

    Parameters
    ----------
    scale_factor
        TPC-H SF (0.01 is about 10 MB, 1 about 1 GB).
    directory
        Output folder; default :func:`default_dir`.
    chunk_bytes
        Target size of one part file; the large tables are split into that many parts.
    threads
        ``tpchgen-cli --num-threads`` (default: its own, the number of CPUs).
    force
        Regenerate even when a matching manifest exists.

    Returns
    -------
    DataSet
        ``reused`` is True when an existing, matching data set was found.
    """
    out = Path(directory) if directory else default_dir(scale_factor)
    if not force:
        found = load_manifest(out)
        if found is not None and found.scale_factor == scale_factor:
            problems = check_files(found)
            if not problems:
                found.reused = True
                return found
    binary = tpchgen_binary()
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    t0 = time.perf_counter()
    # One invocation for all tables: each run spends about a second building dbgen's text pool,
    # so per-table runs would cost more than the generation itself at small SF. The smaller
    # tables get the same number of parts (tpchgen-cli writes fewer when a table is tiny).
    n_parts = parts_for("lineitem", scale_factor, chunk_bytes)
    cmd = [binary, "tbl", "-s", sf_label(scale_factor), "-o", str(out), "--parts", str(n_parts)]
    if threads:
        cmd += ["--num-threads", str(threads)]
    if not progress:
        cmd += ["--no-progress", "--quiet"]
    r = subprocess.run(
        cmd, stdout=subprocess.PIPE, stderr=None if progress else subprocess.PIPE, text=True
    )
    if r.returncode != 0:
        raise DatagenError(f"{' '.join(cmd)} exited {r.returncode}: {(r.stderr or '')[-1500:]}")
    ds = _scan(out, scale_factor)
    ds.generator = tpchgen_version(binary)
    ds.seconds = time.perf_counter() - t0
    problems = check_counts(ds)
    if problems:
        raise DatagenError("generated data does not verify: " + "; ".join(problems))
    write_manifest(ds)
    return ds


def _part_number(p: Path) -> int:
    # lineitem.12.tbl -> 12; a single-file table has no number.
    stem = p.name.split(".")
    return int(stem[1]) if len(stem) == 3 and stem[1].isdigit() else 0


def _scan(out: Path, scale_factor: float) -> DataSet:
    ds = DataSet(directory=out, scale_factor=scale_factor)
    for table in TABLES:
        files = [out / f"{table}.tbl"] if (out / f"{table}.tbl").exists() else []
        files += sorted((out / table).glob(f"{table}.*.tbl"), key=_part_number)
        if not files:
            raise DatagenError(f"tpchgen-cli wrote no file for {table} in {out}")
        ds.files[table] = files
        counts = {f: count_lines(f) for f in files}
        ds._file_rows.update(counts)
        ds.rows[table] = sum(counts.values())
        ds.bytes[table] = sum(f.stat().st_size for f in files)
    return ds


def check_counts(ds: DataSet) -> list[str]:
    """Problems with the generated row counts (empty when every table has its expected count)."""
    problems = []
    for table in TABLES:
        want = expected_rows(table, ds.scale_factor)
        if table == "lineitem":
            want = LINEITEM_ROWS.get(ds.scale_factor)
        got = ds.rows.get(table)
        if want is not None and got != want:
            problems.append(f"{table}: {got} rows generated, {want} expected")
    return problems


def check_files(ds: DataSet) -> list[str]:
    """Problems with the files a manifest lists (missing, or a size that changed)."""
    problems = []
    manifest = json.loads((ds.directory / MANIFEST).read_text())
    for entry in manifest["files"]:
        p = ds.directory / entry["path"]
        if not p.exists():
            problems.append(f"{p} is missing")
        elif p.stat().st_size != entry["bytes"]:
            problems.append(f"{p} has {p.stat().st_size} bytes, manifest says {entry['bytes']}")
    return problems


def write_manifest(ds: DataSet) -> Path:
    entries = [
        {
            "table": table,
            "path": str(f.relative_to(ds.directory)),
            "bytes": f.stat().st_size,
            "rows": ds._file_rows[f],
        }
        for table in TABLES
        for f in ds.files[table]
    ]
    body = {
        "scale_factor": ds.scale_factor,
        "generator": ds.generator,
        "generated_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "seconds": round(ds.seconds, 3),
        "rows": ds.rows,
        "files": entries,
    }
    path = ds.directory / MANIFEST
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(body, indent=1))
    os.replace(tmp, path)  # the manifest appears only once everything is there
    return path


def load_manifest(directory: str | Path) -> DataSet | None:
    """The :class:`DataSet` a folder's manifest describes, or None without a readable one."""
    directory = Path(directory)
    try:
        body = json.loads((directory / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    ds = DataSet(
        directory=directory,
        scale_factor=float(body["scale_factor"]),
        generator=body.get("generator", ""),
        seconds=body.get("seconds", 0.0),
    )
    for entry in body["files"]:
        p = directory / entry["path"]
        ds.files.setdefault(entry["table"], []).append(p)
        ds._file_rows[p] = int(entry["rows"])
        ds.bytes[entry["table"]] = ds.bytes.get(entry["table"], 0) + int(entry["bytes"])
    ds.rows = {k: int(v) for k, v in body["rows"].items()}
    return ds
