"""Bottleneck diagnosis: where a sweep's throughput levels off, which resource is at its limit.

Joins what tibench already measures — the saturation point of each workload × arm
(:func:`tibenchlib.saturation.saturation`), the per-second CPU of the server and of the sysbench
client (the ``samples`` table: CPU used, run-queue wait and how busy the CPUs it may use were,
with the number of CPUs each may use) and, on a TiDB cluster, the CPU of each component from
Prometheus (the ``cluster_metrics`` table) — into one verdict per workload × arm with its
evidence in numbers:

``client_cpu``
    the sysbench client is at its CPU limit: the sweep measured the client, not the database;
``server_cpu``
    the server (or a TiDB component: tidb, tikv, pd, tiflash) is at its CPU limit;
``host_cpu``
    client and server are both at their limit and neither dominates, or, both unbound on the
    same host, together fill its CPUs;
``not_cpu``
    throughput is flat while every measured CPU has headroom: the limit is elsewhere (locks,
    I/O, network); the p95 latency growth from the saturation point on is given;
``not_saturated``
    throughput is still rising at the largest thread count tested (the last step's interval
    lies above +delta);
``undetermined``
    none of these can be said honestly, and ``reason`` says why.

A source's CPU **demand** is (CPU time + time its threads spent runnable but waiting for a CPU)
/ (wall time × CPUs it may use): runnable threads per CPU. It reads the same as the CPU share
on a quiet host, and stays high for a process starved on a shared host, whose own CPU share
looks like headroom while its CPUs are full. Without sampled waits (older catalogs, Prometheus
components) the demand is the CPU share.

Every CPU figure is a geometric mean over the repeated runs (the unit of replication) with a
Student t 95 % interval on the log scale, back-transformed (it stays positive); one run per
thread count gives point figures and says so. Pure: DataFrames in, a DataFrame out.
"""

from __future__ import annotations

import math
import warnings as _warnings

import numpy as np
import pandas as pd
from scipy import stats as _st

from .report.words import SENTENCES, zh_punct
from .saturation import saturation, still_rising
from .stats import _valid_mask, fieller_ratio, t_interval

__all__ = [
    "COMPONENTS", "LEVEL_PCT", "SATURATION", "VERDICTS", "cpu_per_run", "diagnose",
    "diagnosis_row",
]  # fmt: skip

VERDICTS = ("client_cpu", "server_cpu", "host_cpu", "not_cpu", "not_saturated", "undetermined")
#: Where a workload × arm saturates, decided once here and read by ``tibench diagnose``, the
#: report's diagnosis table and the sweep's findings alike: ``levels_off`` from ``n_sat``;
#: ``not_reached`` within the ladder (still rising at its top); ``unclear`` (neither shown);
#: ``one_count`` (one thread count, no curve).
SATURATION = ("levels_off", "not_reached", "unclear", "one_count")
#: The largest gain (percent) from the saturation point to the top of the ladder whose interval
#: may allow "levels off" (the saturation point is where the mean reaches 95% of the peak).
LEVEL_PCT = 100 * (1 / 0.95 - 1)
#: TiDB cluster components whose CPU Prometheus reports (see :mod:`tibenchlib.prometheus`).
COMPONENTS = ("tidb", "tikv", "pd", "tiflash")
#: Local sources of the sampler (see :mod:`tibenchlib.resources`).
LOCAL = ("server", "client")

CPU_COLUMNS = [
    "run_key", "source", "instance", "cpu_cores", "cores", "share", "wait_cores", "busy", "demand",
]  # fmt: skip
#: When client and server are both at their limit, one is named only when its demand interval
#: lies wholly above the other's (with one run per thread count: when its demand is this many
#: times the other's); otherwise neither is (``host_cpu``: they starve together).
DOMINANT = 1.5
_CI = ("", "_ci_low", "_ci_high")


def cpu_per_run(
    samples: pd.DataFrame | None = None,
    cluster_metrics: pd.DataFrame | None = None,
    component_cores: dict[str, float] | None = None,
) -> pd.DataFrame:
    """Mean CPU of each source in each run, as cores busy and as a share of its CPUs.

    Parameters
    ----------
    samples
        The catalog's ``samples`` rows (``run_key, source, cpu_pct, cores_allowed``): the server's
        and the client's per-second CPU, 100 = one core busy.
    cluster_metrics
        The catalog's ``cluster_metrics`` rows (``run_key, component, metric, instance, value``);
        ``metric == "cpu_cores"`` rows are used (1 = one core busy).
    component_cores
        CPUs each instance of a component may use, e.g. ``{"tidb": 8, "tikv": 8}``: Prometheus
        reports cores busy, not how many a process may use. A component without an entry gets
        no share (its cores busy are still given).

    Returns
    -------
    DataFrame
        One row per run × source (``server``, ``client`` or a component): ``cpu_cores`` (mean
        cores busy over the run), ``cores`` (CPUs it may use), ``share`` (= cpu_cores / cores),
        ``wait_cores`` (mean threads waiting for a CPU, from the run-queue delay), ``busy``
        (how full the CPUs it may use were, whoever used them), ``demand`` (= (cpu_cores +
        wait_cores) / cores: runnable threads per CPU it may use; ``share`` when the waits were
        not sampled) and, for a component, the ``instance`` of its busiest instance (the one
        that limits first).
    """
    frames = []
    if samples is not None and len(samples):
        s = samples.dropna(subset=["cpu_pct"])
        for col in ("cpu_wait_pct", "cpus_busy_pct"):  # catalogs written before they existed
            if col not in s:
                s = s.assign(**{col: np.nan})
        g = s.groupby(["run_key", "source"], sort=False)
        loc = g.agg(
            cpu_pct=("cpu_pct", "mean"),
            cores=("cores_allowed", "max"),
            wait_pct=("cpu_wait_pct", "mean"),
            busy_pct=("cpus_busy_pct", "mean"),
        ).reset_index()
        loc["cpu_cores"] = loc["cpu_pct"] / 100.0
        loc["wait_cores"] = loc["wait_pct"] / 100.0
        loc["busy"] = loc["busy_pct"] / 100.0
        loc["instance"] = None
        frames.append(loc.drop(columns=["cpu_pct", "wait_pct", "busy_pct"]))
    if cluster_metrics is not None and len(cluster_metrics):
        m = cluster_metrics[cluster_metrics["metric"] == "cpu_cores"].dropna(subset=["value"])
        m = m.assign(instance=m["instance"].fillna("?"))
        per = (
            m.groupby(["run_key", "component", "instance"], sort=False)["value"]
            .mean()
            .reset_index()
            .rename(columns={"component": "source", "value": "cpu_cores"})
        )
        cores = component_cores or {}
        per["cores"] = [float(cores[c]) if c in cores else np.nan for c in per["source"]]
        # the busiest instance limits the component first (one hot tidb-server is enough)
        per = per.sort_values("cpu_cores", ascending=False).drop_duplicates(["run_key", "source"])
        frames.append(per)
    if not frames:
        return pd.DataFrame(columns=CPU_COLUMNS)
    out = pd.concat(frames, ignore_index=True)
    out["cores"] = out["cores"].astype(float)
    for col in ("wait_cores", "busy"):
        if col not in out:
            out[col] = np.nan
    per_cpu = out["cores"].where(out["cores"] > 0)
    out["share"] = out["cpu_cores"] / per_cpu
    # runnable threads per CPU: running plus waiting for a CPU (own use when waits are unknown)
    out["demand"] = (out["cpu_cores"] + out["wait_cores"]) / per_cpu
    out["demand"] = out["demand"].fillna(out["share"]).astype(float)
    return out[CPU_COLUMNS].reset_index(drop=True)


def _interval(values, level: float = 0.95) -> dict:
    """Geometric mean of positive per-run figures with a Student t interval on the log scale,
    back-transformed, so an interval of a CPU share never goes below zero. A zero among the
    runs (a source that did nothing) falls back to the arithmetic mean and its t interval."""
    v = np.array([float(x) for x in values if x is not None and math.isfinite(float(x))])
    if not v.size:
        return {"n": 0, "mean": None, "ci_low": None, "ci_high": None, "method": None}
    if (v <= 0).any():
        out = t_interval(v, level)
        return {k: out[k] for k in ("n", "mean", "ci_low", "ci_high")} | {"method": "t"}
    lv = np.log(v)
    out = {"n": int(v.size), "mean": float(np.exp(lv.mean())), "ci_low": None, "ci_high": None}
    if v.size >= 2:
        half = _st.t.ppf(0.5 + level / 2, v.size - 1) * lv.std(ddof=1) / np.sqrt(v.size)
        out.update(ci_low=float(np.exp(lv.mean() - half)), ci_high=float(np.exp(lv.mean() + half)))
    return out | {"method": "log-t"}


def _pct(x) -> str:
    return f"{x * 100:.0f}%"


def _say(key: str, lang: str, **figures) -> str:
    # the template alone; the whole sentence takes its punctuation at the end (:func:`_finish`)
    return SENTENCES[key][lang].format(**figures)


def _finish(text: str, lang: str) -> str:
    return zh_punct(text) if lang == "zh" else text


def _share_text(iv: dict, lang: str) -> str:
    """``97% [94, 100] (n = 3)`` / ``97% (n = 1, no interval)``."""
    s = _pct(iv["mean"])
    if iv.get("ci_low") is not None:
        s += f" [{iv['ci_low'] * 100:.0f}, {iv['ci_high'] * 100:.0f}]"
        return s + _say("dg_n", lang, n=iv["n"])
    return s + _say("dg_n_none", lang, n=iv["n"])


def _cores_text(cores: float, lang: str) -> str:
    return _say("dg_cores_1" if cores == 1 else "dg_cores", lang, c=f"{cores:g}")


def _ratio_text(r: dict, lang: str) -> str:
    if r is None or r.get("ratio") is None:
        return "n/a"
    s = f"{r['ratio']:.2f}x"
    if r.get("ci_low") is not None:
        return s + f" [{r['ci_low']:.2f}, {r['ci_high']:.2f}]"
    return s + _say("dg_no_interval", lang)


def is_client(source: str) -> bool:
    """A client's source: the local sysbench client (``client``) or one on a client host
    (``client:<host>``, sampled over SSH by :mod:`tibenchlib.hosts.proc`)."""
    return source == "client" or source.startswith("client:")


def _name(source: str, lang: str) -> str:
    if source.startswith("client:"):
        return _say("dg_name_client_host", lang, host=source.split(":", 1)[1])
    if source in COMPONENTS:
        return f"{source}-server" if source in ("tidb", "pd") else source
    if source in LOCAL:
        return _say(f"dg_name_{source}", lang)
    return source


def diagnosis_row(
    runs: pd.DataFrame,
    cpu: pd.DataFrame,
    workload: str | None = None,
    arm: str | None = None,
    *,
    host_cpus: int | None = None,
    level: float = 0.95,
    sat_frac: float = 0.95,
    limit: float = 0.90,
    headroom: float = 0.75,
    metric: str = "tps",
    rising: bool | None = None,
) -> dict:
    """The diagnosis of one workload × arm (see :func:`diagnose` for the rule and columns).

    ``rising``: whether its throughput is still rising at the ladder's top, decided across the
    study's workloads × arms (:func:`tibenchlib.saturation.still_rising`, Holm); None decides
    from this unit's last step alone."""
    with np.errstate(all="ignore"), _warnings.catch_warnings():
        _warnings.simplefilter("ignore", RuntimeWarning)
        sat = saturation(runs, workload, arm, metric=metric, level=level, sat_frac=sat_frac)
    sel = runs[(runs["workload"] == sat["workload"]) & (runs["arm"] == sat["arm"])]
    sel = sel[_valid_mask(sel, metric)]
    row = _new_row(sat)
    steps = sat["steps"]
    if not len(steps):
        return _one_thread_count(row, sel)
    last = steps.iloc[-1]
    row["evidence"]["last_step"] = _last_step(last)
    unsaturated = row["n_sat"] is None or row["n_sat"] == row["n_max"]
    if unsaturated and (_still_rising(last) if rising is None else rising):
        return _not_saturated(row, sel, cpu, host_cpus)
    if unsaturated:
        row["warnings"].append(
            "the largest thread count has the highest mean TPS but the last step's interval "
            "does not show throughput still rising: the saturation point is uncertain"
        )
        row["n_sat"] = None
    shares = _cpus_at_the_top(row, sel, cpu, host_cpus, metric, level)
    if row["n_sat"] is not None and _gain_unsettled(row["evidence"].get("tps_ratio"), row):
        row["warnings"].append(
            f"at thread count {row['n_sat']} the mean TPS reaches {sat_frac:.0%} of the peak, "
            f"but the interval of the gain from there to thread count {row['n_max']} reaches "
            f"beyond {LEVEL_PCT:.1f}% or is unbounded: no saturation point is claimed"
        )
        row["evidence"]["n_sat_means"] = row["n_sat"]
        row["n_sat"] = None
    row["saturation"] = "unclear" if row["n_sat"] is None else "levels_off"
    if _at_limit(row, shares, limit) or _host_full(row, limit):
        return row
    row.update(_why_not_named(row, shares, headroom))
    return row


def _gain_unsettled(ratio: dict | None, row: dict) -> bool:
    """ "Levels off" needs the interval of the gain from the saturation point to the top of
    the ladder to stay within :data:`LEVEL_PCT`: an upper end beyond it, or no bounded interval
    with runs enough for one, leaves the curve possibly still climbing. One run per thread
    count, where no interval can exist, leaves the means to speak."""
    if not ratio or ratio.get("ratio") is None:
        return False
    hi = ratio.get("ci_high")
    if hi is None or hi != hi:
        return row["n_runs"] >= 2
    return 100 * (hi - 1) > LEVEL_PCT


def _new_row(sat: dict) -> dict:
    """The row before any verdict: ``undetermined``, the saturation point and its warnings."""
    return {
        "workload": sat["workload"], "arm": sat["arm"], "verdict": "undetermined",
        "resource": None, "n_sat": sat.get("n_sat"), "n_max": sat["n_max"], "threads_at": None,
        "n_runs": 0, "evidence": {}, "reason": "", "warnings": list(sat["warnings"]),
        "saturation": "unclear",
    }  # fmt: skip


def _one_thread_count(row: dict, sel: pd.DataFrame) -> dict:
    """One thread count: no curve, so no saturation point and nothing to read at it."""
    n_max = row["n_max"]
    row.update(n_sat=None, threads_at=n_max, reason=ONE_THREAD_COUNT, saturation="one_count",
               n_runs=int((sel["threads"] == n_max).sum()))  # fmt: skip
    return row


def _last_step(last: pd.Series) -> dict:
    """The ladder's last step as evidence: its change in percent with its interval."""

    def pct(x):
        return None if pd.isna(x) else float(x)

    return {
        "from": int(last["threads_from"]), "to": int(last["threads_to"]),
        "change_pct": float(last["change_pct"]), "ci_low_pct": pct(last["ci_low_pct"]),
        "ci_high_pct": pct(last["ci_high_pct"]),
    }  # fmt: skip


def _rising_in_study(
    runs: pd.DataFrame, units: list[tuple], level: float, sat_frac: float
) -> dict[tuple, bool]:
    """Which workload × arm units are still rising at the top of their ladder, the study's
    units one family (Holm): a flat top among many units claims "still rising" at most 5% of
    the time for the study, not 5% per unit."""
    last = {}
    for w, a in units:
        with np.errstate(all="ignore"), _warnings.catch_warnings():
            _warnings.simplefilter("ignore", RuntimeWarning)
            steps = saturation(runs, w, a, level=level, sat_frac=sat_frac)["steps"]
        if len(steps) and "p_value" in steps:
            last[(w, a)] = steps.iloc[-1]
    if not last:
        return {}
    flags = still_rising(pd.DataFrame(list(last.values())), level=level)
    return dict(zip(last, (bool(x) for x in flags), strict=True))


def _still_rising(last: pd.Series) -> bool:
    """ "Still rising" needs the last step's interval above +delta (its point figure alone when
    one run per thread count gives no interval); a noisy top cell is no proof of either."""
    if last["label"] == "rising":
        return True
    one_run = min(last["n_from"], last["n_to"]) < 2
    return bool(one_run and last["label"] == "n/a" and last["point_label"] == "rising")


def _not_saturated(row: dict, sel: pd.DataFrame, cpu: pd.DataFrame, host) -> dict:
    n_max = row["n_max"]
    # the peak at the ladder's top is no saturation point: none is reached within the ladder
    row.update(verdict="not_saturated", threads_at=n_max, n_sat=None, saturation="not_reached",
               n_runs=int((sel["threads"] == n_max).sum()))  # fmt: skip
    _cpu_evidence(row, sel, cpu, n_max, host)
    return row


def _cpus_at_the_top(row: dict, sel: pd.DataFrame, cpu: pd.DataFrame, host, metric: str,
                     level: float) -> dict:  # fmt: skip
    """The CPUs read at the far end of the flat region, where a limiting resource shows most
    clearly, and throughput and p95 from the saturation point to there (Fieller ratios)."""
    n_sat, n_max = row["n_sat"], row["n_max"]
    at = sel[sel["threads"] == (n_sat if n_sat is not None else n_max)]
    top = sel[sel["threads"] == n_max]
    row.update(threads_at=n_max, n_runs=len(top))
    shares = _cpu_evidence(row, sel, cpu, n_max, host)
    if n_sat is not None:
        row["evidence"]["tps_ratio"] = fieller_ratio(top[metric], at[metric], level)
        if (
            "lat_p95_ms" in sel
            and at["lat_p95_ms"].notna().any()
            and top["lat_p95_ms"].notna().any()
        ):
            row["evidence"]["p95_ratio"] = fieller_ratio(
                top["lat_p95_ms"].dropna(), at["lat_p95_ms"].dropna(), level
            )
    return shares


def _demand(shares: dict, k: str) -> float | None:
    return shares[k]["demand"]["mean"]


def _at_limit(row: dict, shares: dict, limit: float) -> bool:
    """Sources at or above ``limit``: the one with the largest demand is named (client or
    server), unless the client and a server-side source are both there and the larger's
    interval does not lie wholly above the other's (``DOMINANT`` times without intervals)."""
    judged = [k for k, v in shares.items() if v["demand"]["mean"] is not None]
    full = sorted((k for k in judged if _demand(shares, k) >= limit),
                  key=lambda k: -_demand(shares, k))  # fmt: skip
    if not full:
        return False
    first, second = full[0], (full[1] if len(full) > 1 else None)
    if (
        second is not None
        and any(map(is_client, full[:2]))
        and not _dominates(shares, first, second)
    ):
        row.update(verdict="host_cpu", resource="+".join(sorted(full[:2])))
    elif is_client(first):  # the local sysbench client or one on a client host
        row.update(verdict="client_cpu", resource=first)
    else:
        row.update(verdict="server_cpu", resource=first)
    server_full = [k for k in full if not is_client(k)]
    if len(server_full) > 1 or (row["verdict"] != "host_cpu" and second):
        row["evidence"]["also_at_limit"] = [k for k in full if k != row["resource"]]
    return True


def _dominates(shares: dict, a: str, b: str) -> bool:
    """The larger demand's interval lies wholly above the other's; without intervals (one run
    per thread count) its point figure is ``DOMINANT`` times the other's."""
    ia, ib = shares[a]["demand"], shares[b]["demand"]
    if ia.get("ci_low") is not None and ib.get("ci_high") is not None:
        return ia["ci_low"] > ib["ci_high"]
    return _demand(shares, a) >= DOMINANT * _demand(shares, b)


def _host_full(row: dict, limit: float) -> bool:
    """Server and client both unbound on a host of known size, together at its limit."""
    both = row["evidence"].get("server_client")
    if both and both["confirmed"] and both["share"]["mean"] is not None:
        if both["share"]["mean"] >= limit:
            row.update(verdict="host_cpu", resource="host")
            return True
    return False


def _below(iv: dict, headroom: float) -> bool:
    hi = iv["ci_high"] if iv.get("ci_high") is not None else iv["mean"]
    return iv["mean"] is not None and hi < headroom


def _why_not_named(row: dict, shares: dict, headroom: float) -> dict:
    """``not_cpu`` when every CPU shows headroom (and on a cluster both tidb and tikv were
    measured), else the reason the bottleneck cannot be named, as a code."""
    if row["n_sat"] is None:
        return {"reason": "unclear"}
    judged = {k: v for k, v in shares.items() if v["demand"]["mean"] is not None}
    unshared = [k for k in shares if not is_client(k) and k not in judged]
    if not [k for k in judged if not is_client(k)]:
        return (
            {"reason": "no_count", "reason_who": unshared} if unshared else {"reason": "no_server"}
        )
    middling = [k for k, v in judged.items() if not _below(v["demand"], headroom)]
    both = row["evidence"].get("server_client")
    if (
        both is not None
        and both["share"]["mean"] is not None
        and not _below(both["share"], headroom)
    ):
        middling.append("server+client")
    if middling:
        row["evidence"]["between"] = middling
        return {"reason": "between"}
    if unshared:
        return {"reason": "no_count", "reason_who": unshared}
    # every query goes through tidb and tikv: headroom elsewhere says nothing without them
    missing = [k for k in ("tidb", "tikv") if k not in judged]
    if any(k in COMPONENTS for k in judged) and missing:
        return {"reason": "unmeasured", "reason_who": missing}
    return {"verdict": "not_cpu"}


def _cpu_evidence(
    row: dict, sel: pd.DataFrame, cpu: pd.DataFrame, threads, host: int | None
) -> dict:
    """Per source, the share of its CPUs over the runs at ``threads`` (t interval)."""
    keys = set(sel.loc[sel["threads"] == threads, "run_key"])
    c = cpu[cpu["run_key"].isin(keys)] if len(cpu) else cpu
    shares: dict = {}
    for src, g in c.groupby("source", sort=False):
        shares[src] = {
            "share": _interval(g["share"]),
            "demand": _interval(g["demand"]),
            "busy": _interval(g["busy"]),
            "cpu_cores": _interval(g["cpu_cores"]),
            "cores": float(g["cores"].max()) if g["cores"].notna().any() else None,
            "instance": g["instance"].dropna().iloc[0] if g["instance"].notna().any() else None,
        }
    row["evidence"]["cpu"] = shares
    srv, cli = c[c["source"] == "server"], c[c["source"] == "client"]
    if len(srv) and len(cli):
        s_cores, c_cores = srv["cores"].max(), cli["cores"].max()
        # only unbound processes certainly share the same CPUs; without the host's count, equal
        # counts may be the same CPUs: enough to refuse "not CPU", never to claim "host CPU"
        if (host and s_cores == host and c_cores == host) or (not host and s_cores == c_cores):
            tot = srv.set_index("run_key")["cpu_cores"].add(
                cli.set_index("run_key")["cpu_cores"], fill_value=0
            )
            row["evidence"]["server_client"] = {
                "share": _interval(tot / (host or s_cores)),
                "cores": float(host or s_cores),
                "confirmed": bool(host),
            }
    return shares


#: The reason given when a workload ran at a single thread count.
ONE_THREAD_COUNT = "one thread count only: the diagnosis needs a thread ladder"


def _source_text(src: str, e: dict, lang: str) -> str:
    """What one source's CPU did where the CPUs were read: its demand (with what it ran itself
    and how busy its CPUs were) when waits were sampled, else its share."""
    cores = _cores_text(e["cores"], lang) if e["cores"] else "?"
    inst = f" ({e['instance']})" if e.get("instance") and e["instance"] != "?" else ""
    if e["busy"]["mean"] is None:
        return _say("dg_uses", lang, name=_name(src, lang), inst=inst, cores=cores,
                    share=_share_text(e["share"], lang))  # fmt: skip
    return _say("dg_wants", lang, name=_name(src, lang), inst=inst, cores=cores,
                share=_share_text(e["demand"], lang), own=_pct(e["share"]["mean"]),
                busy=_pct(e["busy"]["mean"]))  # fmt: skip


def _join(parts: list[str], lang: str) -> str:
    return (";" if lang == "zh" else "; ").join(parts)


def _sources(row: dict, lang: str, but: str | None = None) -> list[str]:
    cpu = row["evidence"].get("cpu", {})
    return [
        _source_text(s, e, lang)
        for s, e in cpu.items()
        if s != but and e["share"]["mean"] is not None
    ]


def _step_text(ls: dict, lang: str) -> str:
    """``TPS 8→16 threads +1.2% [-3.0, +5.6]`` (the last step of the ladder)."""
    chg = f"{ls['change_pct']:+.1f}%"
    if ls["ci_low_pct"] is not None:
        chg += f" [{ls['ci_low_pct']:+.1f}, {ls['ci_high_pct']:+.1f}]"
    else:
        chg += _say("dg_no_interval", lang)
    return _say("dg_step", lang, a=ls["from"], b=ls["to"], chg=chg)


def _at_text(row: dict, lang: str, at) -> str:
    others = _sources(row, lang)
    return _say("dg_at", lang, at=at, cpus=_join(others, lang)) if others else ""


def _sentences(*parts: str, lang: str) -> str:
    return ("" if lang == "zh" else " ").join(p for p in parts if p)


def _rising(row: dict, lang: str) -> str:
    """Not saturated: the last step and the CPUs at the top of the ladder."""
    ls = row["evidence"].get("last_step")
    s = _say("dg_rising", lang, w=row["workload"], n_max=row["n_max"])
    end = "。" if lang == "zh" else "."
    if ls:
        s += f"（{_step_text(ls, lang)}）" if lang == "zh" else f" ({_step_text(ls, lang)})"
    s += end
    return _sentences(s, _at_text(row, lang, row["n_max"]), lang=lang)


def _head(row: dict, lang: str) -> str:
    """Where throughput levels off, or that neither rising nor levelling off is shown."""
    if row["n_sat"] is None:
        step = _step_text(row["evidence"]["last_step"], lang)
        return _say("dg_head_unclear", lang, w=row["workload"], step=step)
    text = _say("dg_head_levels", lang, w=row["workload"], n_sat=row["n_sat"])
    return text.replace("from 1 threads", "from 1 thread")


def _bound(row: dict, lang: str, head: str, limit: float) -> str:
    """Client or server at its CPU limit: that source first, then the others."""
    src, v = row["resource"], row["verdict"]
    cpu = row["evidence"].get("cpu", {})
    if v == "client_cpu" and src != "client":
        what = _say("dg_client_host", lang, host=src.split(":", 1)[1])
    elif v == "client_cpu":
        what = _say("dg_client", lang)
    elif src in COMPONENTS:
        what = _say("dg_server_of", lang, src=src)
    else:
        what = _say("dg_server", lang)
    rest = _sources(row, lang, but=src)
    return _say("dg_bound", lang, head=head, what=what, at=row["threads_at"],
                main=_source_text(src, cpu[src], lang), lim=_pct(limit),
                rest=(_join(["", *rest], lang) if rest else ""))  # fmt: skip


def _host(row: dict, lang: str, head: str) -> str:
    """Client and server together at the host's limit (both named, or sharing its CPUs)."""
    at = row["threads_at"]
    if row["resource"] != "host":
        return _sentences(_say("dg_host_both", lang, head=head), _at_text(row, lang, at),
                          lang=lang)  # fmt: skip
    b = row["evidence"]["server_client"]
    s = _say("dg_host_shared", lang, head=head, cores=_cores_text(b["cores"], lang), at=at,
             share=_share_text(b["share"], lang))  # fmt: skip
    others = _sources(row, lang)
    return _sentences(s, _join(others, lang) + "." if others else "", lang=lang)


def _not_cpu(row: dict, lang: str, head: str, headroom: float) -> str:
    """Flat throughput with every CPU's headroom shown, and the p95 growth past N_sat."""
    lat = row["evidence"].get("p95_ratio")
    lat_txt = ""
    if lat is not None and lat.get("ratio") is not None:
        lat_txt = _join(["", _say("dg_p95", lang, ratio=_ratio_text(lat, lang),
                                  n_sat=row["n_sat"], n_max=row["n_max"])], lang)  # fmt: skip
    return _say("dg_not_cpu", lang, head=head, at=row["threads_at"], hr=_pct(headroom),
                cpus=_join(_sources(row, lang), lang), lat=lat_txt)  # fmt: skip


def reason_text(row: dict, lang: str, limit: float = 0.90, headroom: float = 0.75) -> str:
    """Why the bottleneck cannot be determined, in ``lang`` (the row's ``reason`` code)."""
    reason = row["reason"]
    names = row.get("reason_who") or row["evidence"].get("between", [])
    who = ("、" if lang == "zh" else ", ").join(names)  # a list of names, in lang's punctuation
    if reason == "between":
        return _say("dg_r_between", lang, who=who, hr=_pct(headroom), lim=_pct(limit))
    if reason == "unmeasured":
        both = "和" if lang == "zh" else " and "
        return _say("dg_r_unmeasured", lang, who=both.join(row["reason_who"]))
    if reason in ("unclear", "no_server", "no_count"):
        return _say(f"dg_r_{reason}", lang, who=who)
    return reason


def _undetermined(row: dict, lang: str, head: str, limit: float, headroom: float) -> str:
    s = _say("dg_undetermined", lang, head=head, reason=reason_text(row, lang, limit, headroom))
    return _sentences(s, _at_text(row, lang, row["threads_at"]), lang=lang)


def _sentence(row: dict, lang: str, limit: float, headroom: float) -> str:
    """The row's one sentence in ``lang``: its verdict with the figures behind it."""
    if row["reason"] == ONE_THREAD_COUNT:
        text = _say("dg_one_count", lang, w=row["workload"], n_max=row["n_max"])
    elif row["verdict"] == "not_saturated":
        text = _rising(row, lang)
    else:
        head = _head(row, lang)
        v = row["verdict"]
        if v in ("client_cpu", "server_cpu"):
            text = _bound(row, lang, head, limit)
        elif v == "host_cpu":
            text = _host(row, lang, head)
        elif v == "not_cpu":
            text = _not_cpu(row, lang, head, headroom)
        else:
            text = _undetermined(row, lang, head, limit, headroom)
    return _finish(text, lang)


def _flat(row: dict) -> dict:
    """Evidence as columns: the deciding source's share and the client's and server's."""
    ev = row["evidence"]
    cpu = ev.get("cpu", {})
    src = row["resource"] if row["resource"] in cpu else None
    if src is None and cpu:
        judged = [k for k in cpu if not is_client(k) and cpu[k]["demand"]["mean"] is not None]
        src = max(judged, key=lambda k: cpu[k]["demand"]["mean"]) if judged else None
    out: dict = {}
    for name, key in (("cpu", src), ("client", "client"), ("server", "server")):
        for what in ("share", "demand"):
            iv = cpu[key][what] if key in cpu else {}
            out[f"{name}_{what}"] = iv.get("mean")
            out[f"{name}_{what}_ci_low"] = iv.get("ci_low")
            out[f"{name}_{what}_ci_high"] = iv.get("ci_high")
        out[f"{name}_busy"] = cpu[key]["busy"]["mean"] if key in cpu else None
    out["cpu_source"] = src
    out["cpu_cores"] = cpu[src]["cores"] if src in cpu else None
    b = ev.get("server_client")
    out["server_client_share"] = b["share"]["mean"] if b else None
    for name in ("tps_ratio", "p95_ratio"):
        r = ev.get(name) or {}
        out[name] = r.get("ratio")
        out[f"{name}_ci_low"] = r.get("ci_low")
        out[f"{name}_ci_high"] = r.get("ci_high")
    comps = [
        f"{k} {_share_text(cpu[k]['share'], 'en')}"
        for k in cpu
        if k in COMPONENTS and cpu[k]["share"]["mean"] is not None
    ]
    out["components"] = "; ".join(comps)
    return out


def diagnose(
    runs: pd.DataFrame,
    cpu: pd.DataFrame,
    *,
    host_cpus: int | None = None,
    level: float = 0.95,
    sat_frac: float = 0.95,
    limit: float = 0.90,
    headroom: float = 0.75,
    lang: str = "en",
) -> pd.DataFrame:
    """One bottleneck verdict per workload × arm of a thread sweep, with its evidence.

    The saturation point N_sat is :func:`tibenchlib.saturation.saturation`'s (the smallest
    thread count whose mean TPS reaches ``sat_frac`` of the peak). When it is the largest thread
    count and the last step's Fieller interval lies above +2 % (its point figure with one run
    per thread count), the verdict is ``not_saturated`` and no saturation point is reached
    within the ladder (``n_sat`` None); when it is the largest only by noise, no saturation
    point is claimed (``n_sat`` None, a warning) and the CPUs are still read. Nor is one
    claimed when the interval of the gain from N_sat to the top reaches beyond
    :data:`LEVEL_PCT` or is unbounded (the 95%-of-peak point is kept as evidence,
    ``n_sat_means``).
    Otherwise the CPUs are read at the largest thread count, the far end of the flat region,
    where a limiting resource shows most clearly. Per source (:func:`cpu_per_run`) the mean
    demand over the runs there (geometric, t interval on the log scale; independent runs
    assumed) is read
    in this order: sources at or above ``limit`` are at their limit — the one with the largest
    demand is named (``client_cpu`` or ``server_cpu``), unless the client and a server-side
    source are both at their limit and the larger's interval does not lie wholly above the
    other's (``DOMINANT`` times with one run per thread count) (``host_cpu``);
    server and client both unbound (``cores == host_cpus``) with their own CPU together at or
    above ``limit`` of the host → ``host_cpu``; every source with its whole interval below
    ``headroom`` (and, on a cluster, both tidb and tikv measured) → ``not_cpu``; anything else
    → ``undetermined`` with the reason. A demand between ``headroom`` and ``limit`` is never
    called either way.

    Parameters
    ----------
    runs
        The sweep's runs (catalog rows: ``run_key, workload, arm, threads, tps, lat_p95_ms,
        status``).
    cpu
        :func:`cpu_per_run` of the same runs.
    host_cpus
        CPUs of the host that runs both server and client (the ``host_cpu`` check needs it).
    level, sat_frac
        Confidence level; the share of the peak TPS that counts as saturated.
    limit, headroom
        CPU demand at which a source is at its limit (0.90), and below which (its
        interval's upper end) it clearly has headroom (0.75).
    lang
        "en" or "zh" for ``sentence`` (both are always in ``sentence_en`` / ``sentence_zh``).

    Returns
    -------
    DataFrame
        One row per workload × arm: ``workload, arm, verdict, resource, saturation`` (one of
        :data:`SATURATION`), ``n_sat`` (only where throughput levels off), ``n_max,
        threads_at`` (where the CPUs were read), ``n_runs`` (runs there), ``cpu_source`` (the
        named or busiest server-side source), ``cpu_cores``, then for ``cpu``, ``client`` and
        ``server``: ``*_share``, ``*_demand`` (each with ``_ci_low``, ``_ci_high``) and
        ``*_busy``; ``server_client_share, tps_ratio, p95_ratio`` (each with its Fieller
        interval, from N_sat to the largest thread count), ``components``, ``reason``,
        ``warnings``, ``sentence``, ``sentence_en``, ``sentence_zh``, ``evidence`` (the nested
        figures).
    """
    if lang not in ("en", "zh"):
        raise ValueError(f"lang must be 'en' or 'zh', not {lang!r}")
    if not 0 < headroom < limit:
        raise ValueError(f"headroom ({headroom}) must lie between 0 and limit ({limit})")
    need = {"run_key", "workload", "arm", "threads", "tps"} - set(runs.columns)
    if need:
        raise ValueError(f"runs lack column(s) {sorted(need)}")
    cpu = cpu if cpu is not None and len(cpu) else pd.DataFrame(columns=CPU_COLUMNS)
    rows = []
    valid = runs[_valid_mask(runs, "tps")]
    units = [wa for wa, _ in valid.groupby(["workload", "arm"], sort=False)]
    rising = _rising_in_study(valid, units, level, sat_frac)
    for w, a in units:
        rows.append(
            diagnosis_row(
                valid,
                cpu,
                w,
                a,
                host_cpus=host_cpus,
                level=level,
                sat_frac=sat_frac,
                limit=limit,
                headroom=headroom,
                rising=rising.get((w, a)),
            )  # fmt: skip
        )
    figures = [
        f"{name}_{what}{end}"
        for name in ("cpu", "client", "server")
        for what, ends in (("share", _CI), ("demand", _CI), ("busy", ("",)))
        for end in ends
    ]
    cols = [
        "workload", "arm", "verdict", "resource", "saturation", "n_sat", "n_max", "threads_at",
        "n_runs", "cpu_source", "cpu_cores", *figures, "server_client_share", "tps_ratio",
        "tps_ratio_ci_low", "tps_ratio_ci_high", "p95_ratio", "p95_ratio_ci_low",
        "p95_ratio_ci_high", "components", "reason", "warnings", "sentence", "sentence_en",
        "sentence_zh", "evidence",
    ]  # fmt: skip
    out = []
    for r in rows:
        flat = {
            k: r[k] for k in ("workload", "arm", "verdict", "resource", "saturation", "n_sat",
                              "n_max")
        }  # fmt: skip
        flat.update(threads_at=r["threads_at"], n_runs=r["n_runs"], **_flat(r))
        en = _sentence(r, "en", limit, headroom)
        zh = _sentence(r, "zh", limit, headroom)
        flat.update(
            reason=reason_text(r, "en", limit, headroom),
            warnings=r["warnings"],
            sentence=zh if lang == "zh" else en,
            sentence_en=en,
            sentence_zh=zh,
            evidence=r["evidence"],
        )
        out.append(flat)
    return pd.DataFrame(out, columns=cols)
