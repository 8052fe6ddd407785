"""A YCSB core workload as a study file gives it, and as YCSB and go-ycsb take it (``-p``).

A leaf: the study file (:mod:`tibenchlib.params`) validates ``ycsb.workloads`` with it, and the
YCSB runner (:mod:`tibenchlib.ycsb.runner`) turns it into properties.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

#: A table name YCSB and tibench's SQL both take as it is.
IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
#: The Java YCSB's, which reads operationcount as an int.
JAVA_UNBOUNDED_OPERATIONS = 2_000_000_000


#: YCSB's operation mix properties, each a proportion of the operations.
PROPORTIONS = (
    "readproportion",
    "updateproportion",
    "insertproportion",
    "scanproportion",
    "readmodifywriteproportion",
)


class Workload(BaseModel):
    """A YCSB core workload: the properties report 001 passes with ``-p``.

    Report 001's: ``recordcount=800000``, read 0.8 / update 0.1 / insert 0.1, ``uniform``.
    Defaults run in seconds. A run stops after ``operationcount`` operations or
    ``maxexecutiontime_s`` seconds, whichever comes first (YCSB's own rule).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    # YCSB 0.17 reads the counts as Java ints; a week bounds a run as every tibench run
    recordcount: int = Field(
        1000, gt=0, le=JAVA_UNBOUNDED_OPERATIONS, description="rows loaded into the table"
    )
    operationcount: int | None = Field(
        None, gt=0, le=JAVA_UNBOUNDED_OPERATIONS, description="operations in a run"
    )
    maxexecutiontime_s: int | None = Field(
        None, gt=0, le=7 * 24 * 3600, description="longest run, seconds"
    )
    # YCSB's CoreWorkload defaults (READ_PROPORTION_PROPERTY_DEFAULT = "0.95", update "0.05",
    # the others "0"): a proportion not given is what YCSB itself would take
    readproportion: float = Field(0.95, ge=0, le=1)
    updateproportion: float = Field(0.05, ge=0, le=1)
    insertproportion: float = Field(0.0, ge=0, le=1)
    scanproportion: float = Field(0.0, ge=0, le=1)
    readmodifywriteproportion: float = Field(0.0, ge=0, le=1)
    requestdistribution: Literal[
        "uniform", "zipfian", "latest", "hotspot", "sequential", "exponential"
    ] = "uniform"
    maxscanlength: int = Field(100, gt=0)
    fieldcount: int = Field(10, gt=0, le=1000)
    fieldlength: int = Field(100, gt=0, le=65535)
    table: str = Field("usertable", pattern=IDENT.pattern)

    @property
    def filled_in(self) -> dict[str, float]:
        """The operation proportions not given, at YCSB's CoreWorkload defaults (non-zero
        ones only: a zero default changes nothing)."""
        return {
            k: getattr(self, k)
            for k in PROPORTIONS
            if k not in self.model_fields_set and getattr(self, k) > 0
        }

    @model_validator(mode="after")
    def _proportions(self) -> Workload:
        total = sum(getattr(self, k) for k in PROPORTIONS)
        if total <= 0 or total > 1 + 1e-9:
            filled = self.filled_in
            why = ""
            if filled:
                named = ", ".join(f"{k} {v:g}" for k, v in filled.items())
                why = (
                    f" ({named} not given: YCSB's default filled in; give "
                    f"{', '.join(f'{k}: 0' for k in filled)} for none)"
                )
            raise ValueError(
                f"readproportion + updateproportion + insertproportion + scanproportion + "
                f"readmodifywriteproportion must be in (0, 1], got {total:g}{why}"
            )
        if self.operationcount is None and self.maxexecutiontime_s is None:
            raise ValueError("give operationcount or maxexecutiontime_s (or both)")
        return self

    def properties(self) -> dict[str, str]:
        """The workload as YCSB / go-ycsb ``-p`` properties (the same names in both tools)."""
        p = {
            "workload": "site.ycsb.workloads.CoreWorkload",
            "recordcount": str(self.recordcount),
            "readproportion": f"{self.readproportion:g}",
            "updateproportion": f"{self.updateproportion:g}",
            "insertproportion": f"{self.insertproportion:g}",
            "scanproportion": f"{self.scanproportion:g}",
            "readmodifywriteproportion": f"{self.readmodifywriteproportion:g}",
            "requestdistribution": self.requestdistribution,
            "maxscanlength": str(self.maxscanlength),
            "fieldcount": str(self.fieldcount),
            "fieldlength": str(self.fieldlength),
            "table": self.table,
        }
        # operationcount=0 is not "unbounded" in YCSB 0.17 (the client runs 0 operations and
        # says "the threadcount is bigger than recordcount"): a count no timed run reaches,
        # within Java's int, so maxexecutiontime ends it
        p["operationcount"] = str(self.operationcount or JAVA_UNBOUNDED_OPERATIONS)
        if self.maxexecutiontime_s is not None:
            p["maxexecutiontime"] = str(self.maxexecutiontime_s)
        return p
