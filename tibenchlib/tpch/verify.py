"""Check TPC-H answers against stored reference answer sets, cell by cell.

Two reference sets live under ``data/reference/tpch/`` (see its ``PROVENANCE.md``):

``tpchgen`` (the default)
    The answers for the data tibench loads (``tpchgen-cli``, which writes the same rows as the
    TPC's dbgen), computed by DuckDB running *its own* TPC-H query texts (``PRAGMA tpch(n)``)
    over the generated files: another engine and another SQL text than the ones checked.
``duckdb``
    DuckDB's published answer sets (``tpch_answers()`` of the ``tpch`` extension), verbatim.
    DuckDB generates its data with its own dbgen, whose random text (addresses and comments)
    differs from the TPC's dbgen; keys, numbers and dates are the same. Against this set the
    address and comment columns are not compared, and Q13, whose answer depends on
    ``o_comment``, is not comparable. :func:`cross_check` shows that the two sets agree on
    everything else, which anchors the ``tpchgen`` set to the published one.

Numbers are compared with a tolerance of half a unit in the last decimal place of each value (an
average rounded to 6 decimals by MariaDB against 17 digits from DuckDB: each may be off by half
its last digit), plus a relative 1e-9 for floating-point sums; integers exactly. Strings are
compared without trailing blanks (CHAR columns come back unpadded); NULL equals an empty field.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from functools import cache
from pathlib import Path
from typing import Any

from .. import paths
from .datagen import load_manifest
from .schema import TABLES

SOURCES = ("tpchgen", "duckdb")
#: Columns filled from dbgen's random text: they differ between DuckDB's generator and the TPC's.
TEXT_COLUMNS = frozenset({"s_address", "s_comment", "c_address", "c_comment"})
#: Queries whose published DuckDB answer depends on that random text (Q13 filters o_comment).
DUCKDB_NOT_COMPARABLE = frozenset({13})

_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


@dataclass(frozen=True)
class Verification:
    """Outcome of checking one result.

    ``ok`` is True/False, or None when no reference applies (scale factor without a stored
    answer set, non-validation parameters, or a query not comparable with the chosen set).
    When a cell differs, ``row`` (1-based) and ``column`` say where, with both values.
    """

    ok: bool | None
    detail: str
    row: int | None = None
    column: str | None = None
    got: str | None = None
    expected: str | None = None


def reference_root() -> Path:
    return paths.reference_file("tpch")


def answer_path(number: int, scale_factor: float, source: str = "tpchgen") -> Path:
    if source not in SOURCES:
        raise ValueError(f"reference source must be one of {SOURCES}, not {source!r}")
    return reference_root() / source / f"sf{scale_factor:g}" / f"q{number:02d}.csv"


def parse_answer(text: str) -> tuple[list[str], list[list[str]]]:
    """A pipe-delimited answer file (header line, then rows) → (columns, rows of strings)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines = lines[:-1]
    if not lines:
        raise ValueError("empty answer")
    header = lines[0].split("|")
    return header, [line.split("|") for line in lines[1:]]


@cache
def load_answer(
    number: int, scale_factor: float, source: str = "tpchgen"
) -> tuple[list[str], list[list[str]]] | None:
    """The stored reference answer of one query, or None when there is none at this SF."""
    p = answer_path(number, scale_factor, source)
    if not p.exists():
        return None
    return parse_answer(p.read_text())


def format_value(v: Any) -> str:
    """One result value as the answer files write it (NULL → empty, dates ISO)."""
    if v is None:
        return ""
    if isinstance(v, bytes):
        v = v.decode()
    if isinstance(v, dt.date | dt.datetime):
        return v.isoformat()
    if isinstance(v, float):
        return repr(v)
    return str(v)


def format_answer(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Rows → the pipe-delimited answer format (header, one line per row, final newline)."""
    out = ["|".join(columns)]
    out += ["|".join(format_value(v) for v in r) for r in rows]
    return "\n".join(out) + "\n"


def _scale(text: str) -> int:
    try:
        exp = Decimal(text).as_tuple().exponent
    except InvalidOperation:
        return 0
    return -exp if isinstance(exp, int) and exp < 0 else 0


def _integral(text: str) -> bool:
    return re.fullmatch(r"[+-]?\d+", text) is not None


def cells_equal(got: str, expected: str, rel_tol: float = 1e-9) -> bool:
    """Whether two formatted cells agree (see the module docstring for the tolerance)."""
    g, e = got.rstrip(), expected.rstrip()
    if g == e:
        return True
    if _NUMBER.match(g) and _NUMBER.match(e):
        dg, de = Decimal(g), Decimal(e)
        if _integral(g) and _integral(e):
            return dg == de
        # Each side may be rounded to its own number of decimals: half a unit in the last
        # place of each, plus a relative margin for floating-point sums.
        half_ulps = Decimal(5).scaleb(-1 - _scale(g)) + Decimal(5).scaleb(-1 - _scale(e))
        tol = half_ulps + Decimal(rel_tol) * max(abs(dg), abs(de))
        return abs(dg - de) <= tol
    return False


def compare(
    rows: Sequence[Sequence[Any]],
    reference: tuple[list[str], list[list[str]]],
    *,
    skip_columns: frozenset[str] = frozenset(),
    rel_tol: float = 1e-9,
) -> Verification:
    """Compare result rows (in order) with a reference answer.

    Parameters
    ----------
    rows
        The rows as fetched (any DBAPI types), in the query's ORDER BY order.
    reference
        ``(columns, rows)`` from :func:`load_answer`.
    skip_columns
        Reference column names not to compare.
    """
    columns, ref_rows = reference
    got_rows = [[format_value(v) for v in r] for r in rows]
    if len(got_rows) != len(ref_rows):
        first = _first_difference(got_rows, ref_rows, columns, skip_columns, rel_tol)
        where = f"; first difference at {first.detail}" if first else ""
        return Verification(False, f"{len(got_rows)} rows, expected {len(ref_rows)}{where}")
    if got_rows and len(got_rows[0]) != len(columns):
        return Verification(False, f"{len(got_rows[0])} columns, expected {len(columns)}")
    diff = _first_difference(got_rows, ref_rows, columns, skip_columns, rel_tol)
    if diff is not None:
        return diff
    skipped = (
        f" ({', '.join(sorted(skip_columns & set(columns)))} not compared)"
        if (skip_columns & set(columns))
        else ""
    )
    return Verification(True, f"{len(ref_rows)} rows match{skipped}")


def _first_difference(got_rows, ref_rows, columns, skip, rel_tol) -> Verification | None:
    for i, (g, e) in enumerate(zip(got_rows, ref_rows, strict=False), start=1):
        for j, name in enumerate(columns):
            if name in skip or j >= len(g) or j >= len(e):
                continue
            if not cells_equal(g[j], e[j], rel_tol):
                return Verification(
                    False,
                    f"row {i}, column {name}: got {g[j]!r}, expected {e[j]!r}",
                    row=i,
                    column=name,
                    got=g[j],
                    expected=e[j],
                )
    return None


def verify(
    number: int,
    rows: Sequence[Sequence[Any]],
    scale_factor: float | None,
    *,
    source: str = "tpchgen",
    validation: bool = True,
) -> Verification:
    """Check one query's rows against the stored answer at ``scale_factor``.

    Returns ``ok=None`` (not checked) when parameters are not the validation values, when no
    answer set is stored at this scale factor, or for Q13 against the ``duckdb`` set.
    """
    if not validation:
        return Verification(None, "parameters differ from the validation values")
    if scale_factor is None:
        return Verification(None, "scale factor unknown")
    if source == "duckdb" and number in DUCKDB_NOT_COMPARABLE:
        return Verification(None, "DuckDB's answer depends on its own comment text")
    ref = load_answer(number, float(scale_factor), source)
    if ref is None:
        return Verification(None, f"no {source} answer set at SF {scale_factor:g}")
    skip = TEXT_COLUMNS if source == "duckdb" else frozenset()
    return compare(rows, ref, skip_columns=skip)


def cross_check(scale_factor: float) -> dict[int, Verification]:
    """The ``tpchgen`` answers checked against DuckDB's published ones, per query."""
    out = {}
    for n in range(1, 23):
        ref = load_answer(n, scale_factor, "tpchgen")
        if ref is None:
            continue
        typed = [[None if v == "" else v for v in r] for r in ref[1]]
        out[n] = verify(n, typed, scale_factor, source="duckdb")
    return out


# ------------------------------------------------------------------ building the reference sets
# These need duckdb and duckdb-ext-tpch; they are run by hand (see PROVENANCE.md), never by tests.


def duckdb_connection():
    """A DuckDB connection with the ``tpch`` extension loaded from the duckdb-ext-tpch wheel."""
    try:
        import duckdb  # import inside: optional dependency (tibench[reference])
        import duckdb_ext  # import inside: optional dependency (tibench[reference])
    except ImportError as e:
        raise RuntimeError(
            f"rebuilding reference answers needs {e.name}: pip install 'tibench[reference]'"
        ) from None

    base = Path(list(duckdb_ext.__path__)[0]) / "extensions"
    found = sorted(base.glob(f"v{duckdb.__version__}/*/tpch.duckdb_extension"))
    if not found:
        raise RuntimeError(f"no tpch extension for DuckDB {duckdb.__version__} under {base}")
    con = duckdb.connect(config={"allow_unsigned_extensions": "true"})
    con.execute(f"LOAD '{found[0]}'")
    return con


def export_duckdb_answers(
    scale_factors: Sequence[float] = (0.01, 0.1), root: Path | None = None
) -> list[Path]:
    """Write DuckDB's published answers (``tpch_answers()``) verbatim under ``duckdb/sfX/``."""
    root = root or reference_root()
    con = duckdb_connection()
    written = []
    for n, sf, answer in con.execute(
        "SELECT query_nr, scale_factor, answer FROM tpch_answers() ORDER BY 2, 1"
    ).fetchall():
        if not any(abs(sf - want) < 1e-9 for want in scale_factors):
            continue
        p = root / "duckdb" / f"sf{sf:g}" / f"q{n:02d}.csv"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(answer if answer.endswith("\n") else answer + "\n")
        written.append(p)
    return written


def build_tpchgen_answers(
    tbl_dir: Path, scale_factor: float, root: Path | None = None
) -> list[Path]:
    """Answers for tpchgen-cli data: DuckDB's own queries over the generated ``.tbl`` files."""
    dataset = load_manifest(tbl_dir)
    if dataset is None:
        raise RuntimeError(f"{tbl_dir} has no manifest.json (generate it with datagen.generate)")
    root = root or reference_root()
    con = duckdb_connection()
    con.execute("CALL dbgen(sf=0)")  # DuckDB's TPC-H tables, empty, with its column types
    for t in TABLES:
        cols = con.execute(
            "SELECT column_name, data_type FROM information_schema.columns "
            "WHERE table_name = ? ORDER BY ordinal_position",
            [t],
        ).fetchall()
        spec = ", ".join(f"'{c}': '{ty}'" for c, ty in cols) + ", 'trailing_pipe': 'VARCHAR'"
        names = ", ".join(c for c, _ in cols)
        files = [str(p) for p in dataset.files[t]]
        con.execute(
            f"INSERT INTO {t} SELECT {names} FROM read_csv(?, delim='|', header=false, "
            f"quote='', escape='', columns={{{spec}}})",
            [files],
        )
    written = []
    for n in range(1, 23):
        cur = con.execute(f"PRAGMA tpch({n})")
        columns = [d[0] for d in cur.description]
        p = root / "tpchgen" / f"sf{scale_factor:g}" / f"q{n:02d}.csv"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(format_answer(columns, cur.fetchall()))
        written.append(p)
    return written
