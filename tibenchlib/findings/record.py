"""One finding of a study: what a phase's analysis says, as data.

A :class:`Finding` holds no prose: a sentence id (a key of
:data:`tibenchlib.report.words.SENTENCES`, prefixed ``f_``) and the values that fill it, the one
figure behind it with its interval, n and estimator, the verdict (and its reason when
inconclusive) and where the evidence is. :mod:`tibenchlib.findings.render` turns it into a
sentence in English or Chinese; the report, ``tibench findings`` and ``findings.json`` all read
the same records.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["Caveat", "Figure", "Finding", "VERDICTS"]

#: What a finding may conclude. ``inconclusive`` always carries a reason.
VERDICTS = (
    "better",  # the candidate is faster / the setting is among the best, shown by its interval
    "worse",
    "equivalent",  # no difference beyond the margin, shown by the interval
    "inconclusive",  # no answer yet: the interval is too wide for either claim
    "rising",  # throughput still rising at the largest thread count
    "saturated",  # throughput levels off from a thread count
    "bottleneck",  # a resource named as the limit
    "info",  # a plain measured figure, no test
)


def _clean(x: Any) -> Any:
    """JSON-safe scalars: numpy numbers as Python numbers, NaN as None."""
    if hasattr(x, "item") and not isinstance(x, (list, dict, str)):
        x = x.item()
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


@dataclass(frozen=True)
class Figure:
    """The number behind a finding: an estimate with its 95% interval.

    ``unit`` is ``%`` for a relative change (signed), else the measure's unit (``TPS``, ``s``,
    ``threads``, ``x`` for a ratio). ``n`` is the number of repeated runs (per arm for a
    comparison), ``estimator`` names the method (``Fieller``, ``paired t``, ``t``, ``log-t``).
    """

    estimate: float | None
    ci_low: float | None = None
    ci_high: float | None = None
    unit: str = ""
    n: int | None = None
    estimator: str = ""

    def __post_init__(self) -> None:
        for name in ("estimate", "ci_low", "ci_high"):
            object.__setattr__(self, name, _clean(getattr(self, name)))
        object.__setattr__(self, "n", None if self.n is None else int(_clean(self.n)))

    @property
    def has_interval(self) -> bool:
        return self.ci_low is not None and self.ci_high is not None

    @property
    def unbounded(self) -> bool:
        """Runs enough for an interval (n >= 2), yet none bounded (a Fieller set that is not
        an interval): the estimate alone, which bounds nothing."""
        return not self.has_interval and (self.n or 0) >= 2

    @property
    def coherent(self) -> bool:
        """The estimate lies inside its own interval (a figure that does not is never shown)."""
        if self.estimate is None:
            return False
        if not self.has_interval:
            return True
        return self.ci_low - 1e-9 <= self.estimate <= self.ci_high + 1e-9


@dataclass(frozen=True)
class Caveat:
    """What a reader must know to read a finding right: a stand-in, a scaled design, a design
    that could not alternate. ``key`` names it (one per kind, e.g. ``numa_cpu_pinning``);
    ``text`` holds the sentence in every language the report speaks (``en`` and ``zh``)."""

    key: str
    text: dict[str, str]

    def __post_init__(self) -> None:
        missing = [lang for lang in ("en", "zh") if not (self.text or {}).get(lang)]
        if not self.key or missing:
            raise ValueError(
                f"a caveat needs a key and its text in en and zh ({self.key!r}: missing "
                f"{', '.join(missing) or 'key'})"
            )
        object.__setattr__(self, "text", dict(self.text))

    def say(self, lang: str = "en") -> str:
        """The caveat in ``lang`` (English where a language has no text)."""
        return self.text.get(lang) or self.text["en"]


@dataclass(frozen=True)
class Finding:
    """One statement about a study, as data (see the module's docstring)."""

    phase: str
    key: str
    values: dict[str, Any] = field(default_factory=dict)
    figure: Figure | None = None
    verdict: str = "info"
    reason: str = ""
    evidence: str = ""
    #: the question the finding answers (one report section per question): workload, pair…
    topic: str = ""
    #: what the reader must know to read it right (stand-ins, scaled designs), in en and zh
    caveats: tuple[Caveat, ...] = ()

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(
                f"finding verdict must be one of {', '.join(VERDICTS)}, not {self.verdict!r}"
            )
        if self.verdict == "inconclusive" and not self.reason:
            raise ValueError(f"an inconclusive finding ({self.key}) needs a reason")
        object.__setattr__(self, "values", {k: _clean(v) for k, v in self.values.items()})
        object.__setattr__(
            self,
            "caveats",
            tuple(c if isinstance(c, Caveat) else Caveat(**c) for c in self.caveats or ()),
        )

    def to_dict(self) -> dict:
        d = asdict(self)
        d["caveats"] = [asdict(c) for c in self.caveats]
        return d

    @classmethod
    def from_dict(cls, d: dict) -> Finding:
        fig = d.get("figure")
        caveats = tuple(Caveat(**c) for c in d.get("caveats") or ())
        return cls(**{**d, "figure": Figure(**fig) if fig else None, "caveats": caveats})
