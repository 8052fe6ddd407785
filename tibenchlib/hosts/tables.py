"""Per-host contributions of a sweep on client hosts: each host's throughput, its share of the
run's throughput and its CPU demand, per arm × workload × threads, beside the merged figures.

Estimator: per run, a host's TPS (its client's own summary, from ``run_hosts``), its TPS
share = that TPS / the sum over the run's clients, and its CPU demand as the diagnosis reads it
(:func:`tibenchlib.diagnose.cpu_per_run`: (CPU + run-queue wait) / its cores, from ``samples``,
source ``client`` for ``local`` and ``client:<host>`` for the others); then
the mean over the repeated runs (the unit of replication) with a Student t 95 % interval
(:func:`tibenchlib.stats.t_interval`). Only runs whose status is ``ok`` count. Pure: DataFrames
in, a DataFrame out.
"""

from __future__ import annotations

import pandas as pd

from ..diagnose import cpu_per_run, is_client
from ..stats import t_interval

__all__ = ["contributions"]

COLUMNS = [
    "arm", "workload", "threads", "host", "n",
    "tps", "tps_ci_low", "tps_ci_high",
    "tps_share", "tps_share_ci_low", "tps_share_ci_high",
    "cpu_demand", "cpu_demand_ci_low", "cpu_demand_ci_high",
]  # fmt: skip


def contributions(
    runs: pd.DataFrame, run_hosts: pd.DataFrame, samples: pd.DataFrame | None = None
) -> pd.DataFrame:
    """One row per arm × workload × threads × host (see the module's estimator)."""
    if not len(runs) or not len(run_hosts):
        return pd.DataFrame(columns=COLUMNS)
    ok = runs[runs["status"] == "ok"][["run_key", "arm", "workload", "threads"]]
    rh = run_hosts.merge(ok, on="run_key", suffixes=("_client", ""))
    total = rh.groupby("run_key")["tps"].transform("sum")
    rh = rh.assign(share=rh["tps"] / total)
    if samples is not None and len(samples):
        cpu = cpu_per_run(samples[samples["source"].map(is_client)])
        host = cpu["source"].str.removeprefix("client:").replace("client", "local")
        per = cpu.assign(host=host)[["run_key", "host", "demand"]]
        rh = rh.merge(per, on=["run_key", "host"], how="left")
    else:
        rh = rh.assign(demand=float("nan"))
    order = list(dict.fromkeys(run_hosts["host"]))  # the study's order of its clients
    rh = rh.assign(host=pd.Categorical(rh["host"], categories=order))
    rows = []
    groups = rh.groupby(["arm", "workload", "threads", "host"], sort=True, observed=True)
    for (arm, w, t, host), g in groups:
        tps, share, demand = t_interval(g["tps"]), t_interval(g["share"]), t_interval(g["demand"])
        rows.append(
            [arm, w, int(t), host, share["n"], tps["mean"], tps["ci_low"], tps["ci_high"],
             share["mean"], share["ci_low"], share["ci_high"],
             demand["mean"], demand["ci_low"], demand["ci_high"]]
        )  # fmt: skip
    return pd.DataFrame(rows, columns=COLUMNS)
