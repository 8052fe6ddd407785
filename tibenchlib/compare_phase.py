"""The compare phase: A/B comparison of the sweep's arms (Fieller, Welch, Holm), computed from
the sweep's runs in the catalog; it measures nothing (the statistics: :mod:`tibenchlib.compare`)."""

from __future__ import annotations

import pandas as pd

from . import paths
from .adaptive import adaptive_comparison
from .compare import compare_arms_table
from .phase import Phase, RunContext, write_results
from .store import Store
from .sweep import SWEEP

#: Rough seconds the compare phase takes (statistics over the catalog; no database work).
COMPARE_S = 5.0


def comparison(study, store: Store) -> pd.DataFrame:
    """The compare phase's table from the sweep's runs in ``store``."""
    runs = store.runs(study.study, phase=SWEEP.name)
    if not len(runs):
        raise RuntimeError(f"study '{study.study}' has no sweep runs: run phase sweep first")
    iv = store.intervals(study.study, runs["run_key"])
    df = compare_arms_table(runs, study, intervals=iv)
    if study.adaptive is not None:
        df = adaptive_comparison(df, runs, study)
    return df


class Compare(Phase):
    name = "compare"
    notebook = "03_compare.ipynb"
    summary = "A/B comparison of the sweep's arms"
    titles = {"en": "A/B comparison", "zh": "A/B 对比"}
    measures = False

    def estimate(self, study, arms=None) -> dict:
        return {
            "runs": 0,
            "eta_s": COMPARE_S,
            "disk_bytes": 0,
            "note": "statistics over the sweep's runs",
        }

    def run(self, ctx: RunContext, *, arms=None, redo=False) -> pd.DataFrame:
        """The comparison; it measures nothing, so ``arms`` and ``redo`` change nothing."""
        return comparison(ctx.study, ctx.store)

    def stored(self, study, store, arms) -> bool:
        return SWEEP.stored(study, store, arms)

    def results(self, study, store, arms) -> pd.DataFrame:
        if not SWEEP.stored(study, store, arms):
            return pd.DataFrame()
        # the compare notebook never measures: this is its run, and ``tibench run --json``
        # prints the file it writes
        df = comparison(study, store)
        write_results(study, self.name, df)
        return df

    def progress(self, study, store, add) -> None:
        done = paths.phase_results(study.study, self.name).is_file()
        add(self.name, "", "tables", 1, int(done), 0)


COMPARE = Compare()
