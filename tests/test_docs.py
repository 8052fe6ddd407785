"""The README is a five-minute read and the reference in docs/ stays whole: every relative link
resolves, the phases table is the registry's, and the pages name every catalog column, every
study-file key and the bounds params enforces."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import BaseModel

from tibenchlib import params, phasenames, store

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.glob("*.md"))
README = ROOT / "README.md"
# [text](target), not inside inline code; images too
LINK = re.compile(r"(?<!`)\[[^\]]*\]\(([^)\s]+)\)")


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(md: Path) -> set[str]:
    out, fenced = set(), False
    for line in md.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (m := re.match(r"#+ (.+)", line)):
            out.add(_slug(m.group(1)))
    return out


def _links(md: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", md.read_text(), flags=re.S)
    return [t for t in LINK.findall(text) if not re.match(r"[a-z]+:", t)]


def test_readme_is_a_five_minute_read():
    n = len(README.read_text().splitlines())
    assert n <= 200, f"README.md has {n} lines: move reference text to docs/"


@pytest.mark.parametrize(
    "md", [README, ROOT / "CONTRIBUTING.md", *PAGES], ids=lambda p: p.relative_to(ROOT).as_posix()
)
def test_every_relative_link_resolves(md):
    assert PAGES, "docs/ holds no page"
    for target in _links(md):
        path, _, anchor = target.partition("#")
        dest = (md.parent / path).resolve() if path else md
        assert dest.exists(), f"{md.name}: link to {target} names no file"
        if anchor and dest.suffix == ".md":
            assert anchor in _anchors(dest), f"{md.name}: {target}: no heading #{anchor}"


def test_every_docs_page_is_linked_from_the_readme():
    linked = {(ROOT / t.partition("#")[0]).resolve() for t in _links(README)}
    assert set(PAGES) <= linked, sorted(p.name for p in set(PAGES) - linked)


def test_readme_phases_table_is_the_registrys_with_existing_notebooks():
    rows = re.findall(r"^\| `(\w+)` \| `(\w+)` \|", README.read_text(), re.M)
    assert [phase for phase, _ in rows] == list(phasenames.NAMES)
    for phase, nb in rows:
        assert (ROOT / "notebooks" / f"{nb}.ipynb").is_file(), (phase, nb)


def test_the_catalog_page_names_every_table_and_column():
    text = (DOCS / "catalog.md").read_text()
    rows = dict(re.findall(r"^\| `(\w+)` \|(.*)$", text, re.M))
    assert "Every table has a `study` column" in text
    for name, table in store._TABLES.items():
        assert name in rows, f"docs/catalog.md: no row for table {name}"
        row = rows[name]
        if "every column of `runs`" in row:  # run_attempts
            columns = set(table.columns.keys()) - set(store._TABLES["runs"].columns.keys())
        else:
            columns = set(table.columns.keys())
        missing = sorted(c for c in columns - {"study"} if f"`{c}`" not in row)
        assert not missing, f"docs/catalog.md: table {name} lacks {missing}"


def _fields(model: type[BaseModel]):
    for name, field in model.model_fields.items():
        yield name
        for arg in [field.annotation, *getattr(field.annotation, "__args__", ())]:
            if isinstance(arg, type) and issubclass(arg, BaseModel):
                yield from _fields(arg)


def test_the_docs_name_every_study_file_key():
    text = "\n".join(p.read_text() for p in PAGES)
    missing = sorted(
        {n for n in _fields(params.Study) if not re.search(rf"`(?:[\w.]+\.)?{n}`|\b{n}:", text)}
    )
    assert not missing, f"docs/ never names these study-file keys: {missing}"


def test_the_documented_upper_bounds_are_the_ones_params_enforces():
    text = " ".join((DOCS / "failures.md").read_text().split())
    bound = text[text.index("**Upper bounds.**") :]
    claims = {
        "MAX_REPEATS": r"`repeats` \(and an adaptive `max`\) ≤ ([\d,]+)",
        "MAX_THREADS": r"thread counts ≤ ([\d,]+)",
        "MAX_WAREHOUSES": r"`tpcc.warehouses` ≤ ([\d,]+)",
        "MAX_CLIENTS": r"clients ≤ ([\d,]+)",
        "MAX_TABLES": r"`dataset.tables` ≤ ([\d,]+)",
        "MAX_SCALE_FACTOR": r"`tpch_scaling.scale_factor` ≤ ([\d,]+)",
        "MAX_STREAMS": r"`streams` ≤ ([\d,]+)",
    }
    for const, pattern in claims.items():
        m = re.search(pattern, bound)
        assert m, (const, pattern)
        assert int(m.group(1).replace(",", "")) == getattr(params, const), const
    assert "rows per table ≤ 10^10" in bound and params.MAX_TABLE_ROWS == 10**10
    assert "≤ one week" in bound and params.MAX_DURATION_S == 7 * 24 * 3600
