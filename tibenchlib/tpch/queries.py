"""The 22 TPC-H queries: templates in ``queries/qNN.sql``, substitution, and Q15's view.

Each template was written for tibench from the TPC-H specification (clause 2.4) in the
MySQL/TiDB dialect. Its header names the substitution parameters with the specification's
*validation* values (clause 2.4.x.4), which are the defaults::

    -- TPC-H Q1: pricing summary report
    -- param DELTA: 90

``{NAME}`` in the body is replaced by the value. Q15 is three statements (create the view,
query it, drop it); its view name is ``{VIEW}``, chosen per stream so that concurrent streams do
not collide. Two choices differ from a literal reading of the specification and are needed to
compare with the published answer sets: Q11's FRACTION is 0.0001 at every scale factor (the
specification scales it as 0.0001/SF for benchmark runs, but the validation answers use 0.0001),
and row limits (Q2 100, Q3 10, Q10 20, Q18 100, Q21 100) are written as ``LIMIT``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from importlib import resources

QUERY_NUMBERS: tuple[int, ...] = tuple(range(1, 23))
DEFAULT_VIEW = "revenue0"

_PARAM = re.compile(r"^--\s*param\s+([A-Z0-9_]+):\s*(.*?)\s*$")
_TITLE = re.compile(r"^--\s*TPC-H Q\d+:\s*(.*?)\s*$")
_UNSAFE = re.compile(r";|--|/\*|\\")


@dataclass(frozen=True)
class Query:
    """One TPC-H query ready to run.

    ``setup`` statements run before ``sql`` and ``teardown`` after it (only Q15 has them); all
    three are timed together, as the specification times Q15's view creation and removal.
    ``validation`` is True when every parameter has its validation value, i.e. when the
    published answer set applies.
    """

    number: int
    title: str
    sql: str
    setup: tuple[str, ...] = ()
    teardown: tuple[str, ...] = ()
    params: dict[str, str] = field(default_factory=dict)
    validation: bool = True

    @property
    def name(self) -> str:
        return f"Q{self.number}"

    @property
    def statements(self) -> tuple[str, ...]:
        return (*self.setup, self.sql, *self.teardown)


@cache
def template(number: int) -> str:
    """The raw text of ``queries/qNN.sql``."""
    if number not in QUERY_NUMBERS:
        raise ValueError(f"TPC-H has queries 1-22, not {number}")
    folder = resources.files(__package__).joinpath("queries")
    return folder.joinpath(f"q{number:02d}.sql").read_text()


def validation_params(number: int) -> dict[str, str]:
    """The specification's validation substitution values of one query (from its header)."""
    out = {}
    for line in template(number).splitlines():
        m = _PARAM.match(line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


def title(number: int) -> str:
    for line in template(number).splitlines():
        m = _TITLE.match(line)
        if m:
            return m.group(1)
    return ""


def _statements(text: str) -> list[str]:
    body = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("--"))
    return [s.strip() for s in body.split(";") if s.strip()]


def query(number: int, params: dict[str, object] | None = None, view: str = DEFAULT_VIEW) -> Query:
    """One query with its parameters substituted.

    Parameters
    ----------
    number
        1–22.
    params
        Overrides of the validation values, e.g. ``{"DELTA": 60}``; unknown names raise.
    view
        Q15's view name (letters, digits, underscore).

    Raises
    ------
    ValueError
        For an unknown parameter, an unsafe value (``;``, comments, backslashes) or view name.
    """
    defaults = validation_params(number)
    given = {k: str(v) for k, v in (params or {}).items()}
    unknown = sorted(set(given) - set(defaults))
    if unknown:
        raise ValueError(f"Q{number} has no parameter {', '.join(unknown)} ({sorted(defaults)})")
    for k, v in given.items():
        if _UNSAFE.search(v):
            raise ValueError(f"Q{number} parameter {k}={v!r} contains ';', a comment or '\\'")
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,63}", view):
        raise ValueError(f"not a view name: {view!r}")
    values = {**defaults, **given}
    is_validation = all(values[k] == defaults[k] for k in defaults)
    stmts = [s.format(VIEW=view, **values) for s in _statements(template(number))]
    if number == 15:
        setup, sql, teardown = (stmts[0],), stmts[1], tuple(stmts[2:])
    else:
        if len(stmts) != 1:
            raise ValueError(f"Q{number} template must hold one statement, found {len(stmts)}")
        setup, sql, teardown = (), stmts[0], ()
    return Query(number, title(number), sql, setup, teardown, values, is_validation)


def queries(
    numbers: list[int] | tuple[int, ...] | None = None,
    params: dict[int, dict[str, object]] | None = None,
    view: str = DEFAULT_VIEW,
) -> list[Query]:
    """Several queries (default all 22) with per-query parameter overrides."""
    params = params or {}
    return [query(n, params.get(n), view) for n in (numbers or QUERY_NUMBERS)]


def with_view(q: Query, view: str) -> Query:
    """The same query with Q15's view renamed (other queries are returned unchanged)."""
    if not q.setup and not q.teardown:
        return q
    overrides = {k: v for k, v in q.params.items() if v != validation_params(q.number).get(k)}
    return query(q.number, overrides, view)


def benchmark_params(scale_factor: float) -> dict[int, dict[str, object]]:
    """Overrides for a benchmark (not validation) run: Q11's FRACTION = 0.0001 / SF.

    At SF 100 the validation value 0.0001 leaves Q11 with no qualifying part (each part holds
    far less than 0.01% of a nation's stock value), while the work done is the same. Answers
    are then not verified (``Query.validation`` is False).
    """
    return {11: {"FRACTION": f"{0.0001 / scale_factor:.12g}"}}
