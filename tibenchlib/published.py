"""The reports' published tables, recomputed from their own figures.

The seed reports print derived columns (report 000's "TPS 提升(%)", report 002's per-query
"效率提升比例", report 003's import speeds) next to the figures they come from. Each
``reproduce_*`` function reads the figures from ``data/reference/``, recomputes the derived
column with tibench's own functions, and sets the published text beside the recomputation with
an ``agrees`` flag: the recomputation, rounded half-up to the published number of decimals,
equals the published figure. Every published figure is n = 1: point estimates, no interval.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import pandas as pd

from . import paths
from .compare import compare_table
from .report.comparison import to_markdown
from .tpch import scaling

__all__ = [
    "decimals",
    "agrees",
    "agreement_sentence",
    "seed000_runs",
    "reproduce_seed000",
    "reproduce_seed000_summary",
    "reproduce_seed002",
    "seed003_table",
    "reproduce_seed003_import_speed",
    "reproduce_seed003_bytes_per_row",
    "seed003_dump_speedup",
    "as_markdown",
    "NOTEBOOK",
]

SEED000_ARMS = ("v5.1.4", "v6.0.0")


def _ref(name: str) -> Path:
    p = paths.reference_file(name)
    if not p.exists():
        raise FileNotFoundError(f"{p}: reference table missing (it is tracked in data/reference/)")
    return p


def decimals(text: str) -> int:
    """Number of decimals a published figure was printed with (``"4.50"`` → 2, ``"7"`` → 0)."""
    s = str(text).strip().removesuffix("%")
    return len(s.split(".", 1)[1]) if "." in s else 0


def rounded(value: float, places: int) -> str:
    """``value`` rounded half-up (as people round by hand) to ``places`` decimals, as text."""
    q = Decimal(1).scaleb(-places)
    return str(Decimal(repr(float(value))).quantize(q, rounding=ROUND_HALF_UP))


def agrees(value: float, published: str) -> bool:
    """True when ``value`` rounded half-up to the published decimals equals the published text."""
    return Decimal(rounded(value, decimals(published))) == Decimal(str(published).strip("% "))


def agreement_sentence(df: pd.DataFrame, what: str) -> str:
    """One sentence: how many published figures the recomputation reproduces, and which not."""
    n, ok = len(df), int(df["agrees"].sum())
    s = f"{ok} of {n} published {what} agree with the recomputation to the published precision."
    if ok < n:
        s += f" {n - ok} differ: shown in the table with both figures."
    return s


# -------------------------------------------------------------------------------- report 000


def _seed000() -> pd.DataFrame:
    return pd.read_csv(_ref("seed000_sysbench_ab.csv"), dtype=str)


def seed000_runs() -> pd.DataFrame:
    """Report 000's A/B tables as a runs table (one run per cell) for
    :func:`tibenchlib.compare.compare_table`."""
    t = _seed000()
    parts = [
        pd.DataFrame(
            {
                "workload": t["workload"],
                "threads": t["threads"].astype(int),
                "arm": arm,
                "tps": t[f"tps_{arm}"].astype(float),
                "lat_p95_ms": t[f"lat_p95_ms_{arm}"].astype(float),
            }
        )
        for arm in SEED000_ARMS
    ]
    return pd.concat(parts, ignore_index=True)


def reproduce_seed000() -> pd.DataFrame:
    """Report 000's "TPS 提升(%)" column recomputed by :func:`compare_table` (v6.0.0 against
    v5.1.4), one row per table line in the report's order."""
    t = _seed000()
    a, b = SEED000_ARMS
    cmp = compare_table(seed000_runs(), a, b)
    got = cmp.set_index(["workload", "threads"])["improvement_pct"]
    pct = [got.loc[(w, int(n))] for w, n in zip(t["workload"], t["threads"], strict=True)]
    pub = t["tps_improvement_pct_reported"]
    return pd.DataFrame(
        {
            "workload": t["workload"],
            "threads": t["threads"].astype(int),
            f"{a} TPS": t[f"tps_{a}"].astype(int),
            f"{b} TPS": t[f"tps_{b}"].astype(int),
            "TPS 提升(%) published": pub,
            "recomputed": [rounded(x, decimals(p)) for x, p in zip(pct, pub, strict=True)],
            "improvement_pct": pct,
            "agrees": [agrees(x, p) for x, p in zip(pct, pub, strict=True)],
        }
    )


def reproduce_seed000_summary() -> pd.DataFrame:
    """Report 000's per-workload figure: the plain mean of the table's rounded percentages (the
    report's arithmetic), against the sentence under each table and the section-7 summary."""
    rows = reproduce_seed000()
    pub = pd.read_csv(_ref("seed000_sysbench_summary.csv"), dtype=str).set_index("workload")
    out = []
    for w, g in rows.groupby("workload", sort=False):
        mean_pub = g["TPS 提升(%) published"].astype(float).mean()
        sec = pub.loc[w, "improvement_pct_reported_section"]
        summ = pub.loc[w, "improvement_pct_reported_summary"]
        out.append(
            {
                "workload": w,
                "mean of the column": mean_pub,
                "mean of unrounded %": g["improvement_pct"].mean(),
                "published (under the table)": sec,
                "published (section 7)": summ,
                "agrees": agrees(mean_pub, sec) and agrees(mean_pub, summ),
            }
        )
    return pd.DataFrame(out)


# -------------------------------------------------------------------------------- report 002


def reproduce_seed002() -> pd.DataFrame:
    """Report 002's per-query gains, (t₃ − tₙ) / t₃ × 100, recomputed by
    :func:`tibenchlib.tpch.scaling.query_summary` from the published times."""
    t = scaling.load_seed002().astype({"tiflash_instances": str})
    raw = pd.read_csv(scaling.seed002_path(), dtype=str, keep_default_na=False)
    s = scaling.query_summary(scaling.seed002_runs(t), ["3", "4", "5"])
    s = s.assign(query=s["query"].map(lambda q: f"Q{q}")).set_index(["query", "arm"])
    times = raw.set_index(["query", "tiflash_instances"])["seconds"]
    rows = []
    for r in raw[raw["tiflash_instances"] != "3"].itertuples(index=False):
        pct = float(s.loc[(r.query, r.tiflash_instances), "improvement_pct"])
        rows.append(
            {
                "query": r.query,
                "TiFlash instances": f"3 → {r.tiflash_instances}",
                "t (3), s": times.loc[(r.query, "3")],
                "t (n), s": r.seconds,
                "效率提升比例 published": r.improvement_pct_reported,
                "recomputed": rounded(pct, decimals(r.improvement_pct_reported)),
                "improvement_pct": pct,
                "agrees": agrees(pct, r.improvement_pct_reported),
            }
        )
    return pd.DataFrame(rows)


# -------------------------------------------------------------------------------- report 003


def seed003_table(name: str) -> pd.DataFrame:
    """One of report 003's tables (``pool_size``, ``statement_rows``, ...) in its published
    shape, cells as printed (text)."""
    d = pd.read_csv(_ref("seed003_dm.csv"), dtype=str, keep_default_na=False)
    d = d[d["table"] == name]
    if d.empty:
        known = sorted(set(pd.read_csv(_ref("seed003_dm.csv"), dtype=str)["table"]))
        raise ValueError(f"seed003 has no table {name!r}; tables: {', '.join(known)}")
    fields = list(dict.fromkeys(d["field"]))
    w = d.pivot(index="row", columns="field", values="value")
    w.index = w.index.astype(int)
    return w.sort_index()[fields].reset_index(drop=True).rename_axis(columns=None)


def reproduce_seed003_import_speed() -> pd.DataFrame:
    """Import speed = data (GB) × 1024 / import time (s), the report's MB/s, for the three
    full-import tables. The two 3.78 GB tables state the volume to 2 decimals: ``within_rounding``
    says whether the published speed lies within what 3.775–3.785 GB gives."""
    rows = []
    for name, key in (
        ("load_data", "setting"),
        ("pool_size", "pool_size"),
        ("statement_rows", "rows_per_statement"),
    ):
        t = seed003_table(name)
        for r in t.to_dict("records"):
            gb, sec, pub = float(r["data_gb"]), float(r["import_s"]), r["import_speed_mb_s"]
            half = 0.5 * 10 ** -decimals(r["data_gb"])
            lo, hi = (gb - half) * 1024 / sec, (gb + half) * 1024 / sec
            p, hp = float(pub), 0.5 * 10 ** -decimals(pub)
            speed = gb * 1024 / sec
            rows.append(
                {
                    "table": name,
                    "setting": f"{key} = {r[key]}",
                    "data (GB)": r["data_gb"],
                    "import time (s)": r["import_s"],
                    "speed published (MB/s)": pub,
                    "recomputed": rounded(speed, decimals(pub)),
                    "speed_mb_s": speed,
                    "agrees": agrees(speed, pub),
                    "within_rounding": bool(p - hp <= hi and p + hp >= lo),
                }
            )
    return pd.DataFrame(rows)


def reproduce_seed003_bytes_per_row() -> pd.DataFrame:
    """Bytes per row implied by the dump's statement size (``-s`` bytes) and the rows per
    statement it produced: the same row size on every line means the table is consistent."""
    t = seed003_table("statement_rows")
    size = t["extra_args"].str.extract(r"-s\s+(\d+)")[0].astype(int)
    rows = t["rows_per_statement"].astype(int)
    return pd.DataFrame(
        {
            "rows per statement": rows,
            "statement size -s (bytes)": size,
            "bytes per row": size / rows,
        }
    )


def seed003_dump_speedup() -> dict:
    """Export speed with single-table concurrent export against without (a ratio, n = 1)."""
    t = seed003_table("dump").set_index("setting")
    on = float(t.loc["rows_split_on", "dump_speed_mb_s"])
    off = float(t.loc["rows_split_off", "dump_speed_mb_s"])
    return {"with_rows_split_mb_s": on, "without_mb_s": off, "speedup": on / off}


# ---------------------------------------------------------------------------------- display

#: The one notebook committed with its outputs (nbval checks them without ``--nbval-lax``).
NOTEBOOK = "reports_reproduced.ipynb"


def as_markdown(df: pd.DataFrame, digits: int = 3) -> str:
    """A Markdown table with fixed decimals (floats to ``digits``, ``agrees`` as yes / **no**),
    so a notebook's output is the same text on every run."""
    out = df.copy()
    for c in out.columns:
        if out[c].dtype == bool:
            out[c] = out[c].map({True: "yes", False: "**no**"})
        elif pd.api.types.is_float_dtype(out[c]):
            out[c] = out[c].map(lambda x: f"{x:.{digits}f}")
    return to_markdown(out)
