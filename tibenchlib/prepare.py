"""The prepare phase: sysbench tables prepared, analyzed, warmed up and verified on every
distinct target of the study (the steps themselves: :mod:`tibenchlib.sysbench.prepare`)."""

from __future__ import annotations

import pandas as pd

from . import paths
from .phase import Phase, RunContext, read_results
from .sysbench.prepare import estimate, prepare
from .target import open_arm

COLUMNS = ["arm", "step", "table_name", "status", "seconds", "detail"]


class Prepare(Phase):
    name = "prepare"
    notebook = "01_prepare.ipynb"
    summary = "sysbench tables prepared, analyzed, warmed up and verified"
    titles = {"en": "Prepare", "zh": "数据准备"}

    estimate = staticmethod(estimate)

    def run(self, ctx: RunContext, *, arms=None, redo=False) -> pd.DataFrame:
        out = []
        seen: set[str] = set()
        for label in arms or self.arms(ctx.study):
            arm = open_arm(ctx.study, label, yes=ctx.yes, store=ctx.store)
            # Arms on the same target share its tables: prepare once, verify on the others.
            target = arm.conn.masked_url()
            force = redo if target not in seen else False
            steps = prepare(arm, force=force, progress=ctx.progress)
            seen.add(target)
            out.append(steps.assign(arm=label))
        return pd.concat(out, ignore_index=True)[COLUMNS]

    def stored(self, study, store, arms) -> bool:
        return paths.phase_results(study.study, self.name).is_file()

    def results(self, study, store, arms) -> pd.DataFrame:
        rows = pd.DataFrame(read_results(study, self.name))
        return rows[rows["arm"].isin(arms)].reset_index(drop=True) if len(rows) else rows

    def progress(self, study, store, add) -> None:
        steps = store.read("prepare_steps", study.study)
        if len(steps):  # the ycsb phase's own load/verify steps are not sysbench's prepare
            steps = steps[~steps["step"].str.startswith("ycsb_")]
        for a in self.arms(study):
            mine = steps[steps["arm"] == a] if len(steps) else steps
            bad = int(len(mine) and (mine["status"] == "failed").any())
            add(self.name, a, "data sets", 1, int(len(mine) > 0 and not bad), bad)


PREPARE = Prepare()
