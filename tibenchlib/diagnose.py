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

from .saturation import saturation
from .stats import _valid_mask, fieller_ratio, t_interval

__all__ = ["VERDICTS", "COMPONENTS", "cpu_per_run", "diagnose", "diagnosis_row"]

VERDICTS = ("client_cpu", "server_cpu", "host_cpu", "not_cpu", "not_saturated", "undetermined")
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


def _share_text(iv: dict, lang: str) -> str:
    """``97% [94, 100] (n = 3)`` / ``97% (n = 1, no interval)``."""
    s = _pct(iv["mean"])
    if iv.get("ci_low") is not None:
        s += f" [{iv['ci_low'] * 100:.0f}, {iv['ci_high'] * 100:.0f}]"
        return s + (f"(n = {iv['n']})" if lang == "zh" else f" (n = {iv['n']})")
    return s + (f"(n = {iv['n']},无区间)" if lang == "zh" else f" (n = {iv['n']}, no interval)")


def _cores_text(cores: float, lang: str) -> str:
    c = f"{cores:g}"
    if lang == "zh":
        return f"{c} 个 CPU"
    return f"{c} CPU" + ("" if cores == 1 else "s")


def _ratio_text(r: dict, lang: str) -> str:
    if r is None or r.get("ratio") is None:
        return "n/a"
    s = f"{r['ratio']:.2f}x"
    if r.get("ci_low") is not None:
        s += f" [{r['ci_low']:.2f}, {r['ci_high']:.2f}]"
    else:
        s += "(无区间)" if lang == "zh" else " (no interval)"
    return s


_NAMES = {
    "en": {"server": "the server", "client": "the sysbench client"},
    "zh": {"server": "数据库服务端", "client": "sysbench 客户端"},
}


def is_client(source: str) -> bool:
    """A client's source: the local sysbench client (``client``) or one on a client host
    (``client:<host>``, sampled over SSH by :mod:`tibenchlib.hosts.proc`)."""
    return source == "client" or source.startswith("client:")


def _name(source: str, lang: str) -> str:
    if source.startswith("client:"):
        host = source.split(":", 1)[1]
        return (
            f"客户端主机 {host} 上的 sysbench"
            if lang == "zh"
            else f"sysbench on client host {host}"
        )
    if source in COMPONENTS:
        return f"{source}-server" if source in ("tidb", "pd") else source
    return _NAMES[lang].get(source, source)


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
) -> dict:
    """The diagnosis of one workload × arm (see :func:`diagnose` for the rule and columns)."""
    with np.errstate(all="ignore"), _warnings.catch_warnings():
        _warnings.simplefilter("ignore", RuntimeWarning)
        sat = saturation(runs, workload, arm, metric=metric, level=level, sat_frac=sat_frac)
    w, a = sat["workload"], sat["arm"]
    sel = runs[(runs["workload"] == w) & (runs["arm"] == a)]
    sel = sel[_valid_mask(sel, metric)]
    n_sat, n_max = sat.get("n_sat"), sat["n_max"]
    row: dict = {
        "workload": w,
        "arm": a,
        "verdict": "undetermined",
        "resource": None,
        "n_sat": n_sat,
        "n_max": n_max,
        "threads_at": None,
        "n_runs": 0,
        "evidence": {},
        "reason": "",
        "warnings": list(sat["warnings"]),
    }
    steps = sat["steps"]
    last = steps.iloc[-1] if len(steps) else None
    if last is None:
        # one thread count: no curve, so no saturation point and nothing to read at it
        row["n_sat"] = None
        row["threads_at"] = n_max
        row["n_runs"] = int((sel["threads"] == n_max).sum())
        row["reason"] = ONE_THREAD_COUNT
        return row
    unsaturated = n_sat is None or n_sat == n_max
    if last is not None:
        row["evidence"]["last_step"] = {
            "from": int(last["threads_from"]),
            "to": int(last["threads_to"]),
            "change_pct": float(last["change_pct"]),
            "ci_low_pct": None if pd.isna(last["ci_low_pct"]) else float(last["ci_low_pct"]),
            "ci_high_pct": None if pd.isna(last["ci_high_pct"]) else float(last["ci_high_pct"]),
        }
    # "still rising" needs the last step's interval above +delta (its point figure alone when
    # one run per thread count gives no interval); a noisy top cell is no proof of either
    rising = last is not None and (
        last["label"] == "rising"
        or (
            min(last["n_from"], last["n_to"]) < 2
            and last["label"] == "n/a"
            and last["point_label"] == "rising"
        )
    )
    if unsaturated and rising:
        row["verdict"] = "not_saturated"
        row["threads_at"] = n_max
        row["n_runs"] = int((sel["threads"] == n_max).sum())
        _cpu_evidence(row, sel, cpu, n_max, host_cpus)
        return row
    if unsaturated:
        row["warnings"].append(
            "the largest thread count has the highest mean TPS but the last step's interval "
            "does not show throughput still rising: the saturation point is uncertain"
        )
        row["n_sat"] = n_sat = None

    at = sel[sel["threads"] == (n_sat if n_sat is not None else n_max)]
    top = sel[sel["threads"] == n_max]
    # the far end of the flat region, where a limiting resource shows most clearly
    row["threads_at"] = n_max
    row["n_runs"] = len(top)
    shares = _cpu_evidence(row, sel, cpu, n_max, host_cpus)
    if n_sat is not None:
        row["evidence"]["tps_ratio"] = fieller_ratio(top[metric], at[metric], level)
    has_p95 = "lat_p95_ms" in sel and at["lat_p95_ms"].notna().any()
    if n_sat is not None and has_p95 and top["lat_p95_ms"].notna().any():
        row["evidence"]["p95_ratio"] = fieller_ratio(
            top["lat_p95_ms"].dropna(), at["lat_p95_ms"].dropna(), level
        )

    def mean(k):
        return shares[k]["demand"]["mean"]

    def below(iv):
        hi = iv["ci_high"] if iv.get("ci_high") is not None else iv["mean"]
        return iv["mean"] is not None and hi < headroom

    def dominates(a, b):
        # the larger demand's interval lies wholly above the other's; without intervals (one
        # run per thread count) its point figure is DOMINANT times the other's
        ia, ib = shares[a]["demand"], shares[b]["demand"]
        if ia.get("ci_low") is not None and ib.get("ci_high") is not None:
            return ia["ci_low"] > ib["ci_high"]
        return mean(a) >= DOMINANT * mean(b)

    judged = {k: v for k, v in shares.items() if v["demand"]["mean"] is not None}
    full = sorted((k for k in judged if mean(k) >= limit), key=lambda k: -mean(k))
    server_full = [k for k in full if not is_client(k)]
    if full:
        first = full[0]
        second = full[1] if len(full) > 1 else None
        if second is not None and any(map(is_client, full[:2])) and not dominates(first, second):
            # client and server starve together: neither can be named
            row.update(verdict="host_cpu", resource="+".join(sorted(full[:2])))
        elif is_client(first):
            row.update(verdict="client_cpu", resource=first)
        else:
            row.update(verdict="server_cpu", resource=first)
        if len(server_full) > 1 or (row["verdict"] != "host_cpu" and second):
            row["evidence"]["also_at_limit"] = [k for k in full if k != row["resource"]]
        return row
    both = row["evidence"].get("server_client")
    if both and both["confirmed"] and both["share"]["mean"] is not None:
        if both["share"]["mean"] >= limit:
            row.update(verdict="host_cpu", resource="host")
            return row
    if n_sat is None:
        row["reason"] = "unclear"
        return row
    server_side = [k for k in judged if not is_client(k)]
    unshared = [k for k in shares if not is_client(k) and k not in judged]
    if not server_side:
        row["reason"] = (
            "no server CPU measured (a remote server without Prometheus, or sampling off)"
            if not unshared
            else f"no CPU count for {', '.join(unshared)}: pass component_cores"
        )
        return row
    middling = [k for k, v in judged.items() if not below(v["demand"])]
    if both is not None and both["share"]["mean"] is not None and not below(both["share"]):
        middling.append("server+client")
    if middling:
        row["reason"] = "between"
        row["evidence"]["between"] = middling
        return row
    if unshared:
        row["reason"] = f"no CPU count for {', '.join(unshared)}: pass component_cores"
        return row
    # every query goes through tidb and tikv: headroom elsewhere says nothing without them
    missing = [k for k in ("tidb", "tikv") if k not in judged]
    if any(k in COMPONENTS for k in judged) and missing:
        row["reason"] = f"the CPU of {' and '.join(missing)} was not measured"
        return row
    row["verdict"] = "not_cpu"
    return row


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


def _sentence(row: dict, lang: str, limit: float, headroom: float) -> str:
    zh = lang == "zh"
    ev, v = row["evidence"], row["verdict"]
    cpu = ev.get("cpu", {})
    w, n_sat, n_max = row["workload"], row["n_sat"], row["n_max"]
    at = row["threads_at"]

    def share_of(src: str) -> str:
        e = cpu[src]
        cores = _cores_text(e["cores"], lang) if e["cores"] else "?"
        inst = f" ({e['instance']})" if e.get("instance") and e["instance"] != "?" else ""
        if e["busy"]["mean"] is None:
            txt = _share_text(e["share"], lang)
            if zh:
                return f"{_name(src, lang)}{inst} 使用其 {cores} 的 {txt}"
            return f"{_name(src, lang)}{inst} uses {txt} of its {cores}"
        txt = _share_text(e["demand"], lang)
        own, busy = _pct(e["share"]["mean"]), _pct(e["busy"]["mean"])
        if zh:
            return (
                f"{_name(src, lang)}的 CPU 需求(运行与等待 CPU 的线程)为其 {cores} 的 {txt},"
                f"自身使用 {own},这些 CPU 繁忙 {busy}"
            )
        return (
            f"{_name(src, lang)} wants {txt} of its {cores} (threads running or waiting for a "
            f"CPU; it ran {own} itself, its CPUs were {busy} busy)"
        )

    others = [share_of(s) for s in cpu if cpu[s]["share"]["mean"] is not None]
    if row["reason"] == ONE_THREAD_COUNT:
        if zh:
            return f"{w}:只测了 {n_max} 一个压测线程数,无法判断饱和点与瓶颈(需要线程阶梯)。"
        return f"{w}: {ONE_THREAD_COUNT} ({n_max}), so no saturation point or bottleneck is read."
    if v == "not_saturated":
        ls = ev.get("last_step")
        step = (
            (
                f"{ls['from']}→{ls['to']} 线程 TPS "
                if zh
                else f"TPS {ls['from']}→{ls['to']} threads "
            )
            + f"{ls['change_pct']:+.1f}%"
            + (
                f" [{ls['ci_low_pct']:+.1f}, {ls['ci_high_pct']:+.1f}]"
                if ls["ci_low_pct"] is not None
                else ("(无区间)" if zh else " (no interval)")
            )
            if ls
            else ""
        )
        if zh:
            s = f"{w}:测试线程范围内未饱和,到 {n_max} 线程吞吐量仍在上升"
            s += f"({step})。" if step else "。"
            return s + (f"{n_max} 线程时:" + ";".join(others) + "。" if others else "")
        s = f"{w}: not saturated within the ladder; throughput still rises at {n_max} threads"
        s += f" ({step})." if step else "."
        return s + (f" At {n_max} threads " + "; ".join(others) + "." if others else "")
    if n_sat is None:
        ls = ev["last_step"]
        step = f"{ls['change_pct']:+.1f}%" + (
            f" [{ls['ci_low_pct']:+.1f}, {ls['ci_high_pct']:+.1f}]"
            if ls["ci_low_pct"] is not None
            else ("(无有界区间)" if zh else " (no bounded interval)")
        )
        head = (
            f"{w}:{ls['from']}→{ls['to']} 线程 TPS {step},无法确定是否已饱和"
            if zh
            else f"{w}: TPS {ls['from']}→{ls['to']} threads {step}, neither shown to rise "
            "nor to level off"
        )
    elif zh:
        head = f"{w}:从 {n_sat} 线程起吞吐量不再增长"
    else:
        head = f"{w}: throughput levels off from {n_sat} thread" + ("" if n_sat == 1 else "s")
    if v in ("client_cpu", "server_cpu"):
        src = row["resource"]
        main = share_of(src)
        rest = [share_of(s) for s in cpu if s != src and cpu[s]["share"]["mean"] is not None]
        if v == "client_cpu" and src != "client":
            host = src.split(":", 1)[1]
            what = (
                f"客户端主机 {host} CPU 瓶颈:测到的是这台客户端主机,而非数据库;增加或更换客户端主机"
                if zh
                else f"client host {host} CPU-bound: the sweep measured that client host, not "
                "the database; add or change client hosts"
            )
        elif v == "client_cpu":
            what = (
                "客户端 CPU 瓶颈:测到的是 sysbench 客户端,而非数据库"
                if zh
                else "client-bound: the sweep measured the sysbench client, not the database"
            )
        else:
            comp = f"({src})" if zh and src in COMPONENTS else ""
            what = (
                f"服务端 CPU 瓶颈{comp}"
                if zh
                else "server CPU-bound" + (f": {src}" if src in COMPONENTS else "")
            )
        lim = _pct(limit)
        if zh:
            s = f"{head},{what}。在 {at} 线程时{main}(≥ {lim})"
            return s + (";" + ";".join(rest) if rest else "") + "。"
        s = f"{head}, {what}. At {at} threads {main} (≥ {lim})"
        return s + ("; " + "; ".join(rest) if rest else "") + "."
    if v == "host_cpu" and row["resource"] != "host":
        if zh:
            return (
                f"{head},主机 CPU 瓶颈:客户端与服务端都达到其 CPU 上限,二者的区间重叠,"
                f"无法区分。{at} 线程时:" + ";".join(others) + "。"
            )
        return (
            f"{head}, host CPU-bound: client and server are both at their CPU limit and their "
            f"intervals overlap, so neither can be named. At {at} threads "
            + "; ".join(others)
            + "."
        )
    if v == "host_cpu":
        b = ev["server_client"]
        txt = _share_text(b["share"], lang)
        cores = _cores_text(b["cores"], lang)
        if zh:
            return (
                f"{head},主机 CPU 瓶颈:服务端与客户端共用 {cores},在 {at} 线程时合计使用"
                f" {txt}。" + (";".join(others) + "。" if others else "")
            )
        return (
            f"{head}, host CPU-bound: server and client share the same {cores} and together use "
            f"{txt} of them at {at} threads. " + ("; ".join(others) + "." if others else "")
        ).strip()
    lat = ev.get("p95_ratio")
    lat_txt = ""
    if lat is not None and lat.get("ratio") is not None:
        lat_txt = (
            f"p95 延迟从 {n_sat} 到 {n_max} 线程变为 {_ratio_text(lat, lang)} 倍"
            if zh
            else f"p95 latency grows {_ratio_text(lat, lang)} from {n_sat} to {n_max} threads"
        )
    if v == "not_cpu":
        hr = _pct(headroom)
        if zh:
            s = (
                f"{head},但 {at} 线程时 CPU 仍有余量(均低于 {hr}):{';'.join(others)}。瓶颈不在 CPU,"
                "可能是锁、I/O 或网络"
            )
            return s + (f";{lat_txt}。" if lat_txt else "。")
        s = (
            f"{head} while the CPUs have headroom at {at} threads (all below {hr}): "
            f"{'; '.join(others)}. The "
            "limit is not CPU: look at locks, I/O or the network"
        )
        return s + (f"; {lat_txt}." if lat_txt else ".")
    # undetermined
    reason = row["reason"]
    if reason == "between":
        who = ", ".join(ev.get("between", []))
        reason = (
            f"{who} 的 CPU 需求介于 {_pct(headroom)} 与 {_pct(limit)} 之间"
            f"(或区间跨越 {_pct(headroom)})"
            if zh
            else f"the CPU demand of {who} lies between {_pct(headroom)} and {_pct(limit)} (or "
            f"its interval reaches above {_pct(headroom)}): neither at its limit nor clearly free"
        )
    elif reason == "unclear":
        reason = (
            "吞吐量曲线不确定,且没有 CPU 达到上限"
            if zh
            else "the throughput curve is unclear and no CPU is at its limit"
        )
    elif zh and reason.startswith("no server CPU"):
        reason = "未测到服务端 CPU(远程服务端且无 Prometheus,或未开启采样)"
    elif zh and reason.startswith("the CPU of "):
        reason = "未测到 " + reason[len("the CPU of ") : -len(" was not measured")] + " 的 CPU"
    elif zh and reason.startswith("no CPU count"):
        reason = reason.replace("no CPU count for", "缺少 CPU 数:").replace(
            ": pass component_cores", ",请提供 component_cores"
        )
    if zh:
        s = f"{head},瓶颈无法判定:{reason}。"
        return s + (f"{at} 线程时:" + ";".join(others) + "。" if others else "")
    s = f"{head}; the bottleneck cannot be determined: {reason}."
    return s + (f" At {at} threads " + "; ".join(others) + "." if others else "")


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
    per thread count), the verdict is ``not_saturated``; when it is the largest only by noise,
    no saturation point is claimed (``n_sat`` None, a warning) and the CPUs are still read.
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
        One row per workload × arm: ``workload, arm, verdict, resource, n_sat, n_max,
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
    for (w, a), _ in valid.groupby(["workload", "arm"], sort=False):
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
            )  # fmt: skip
        )
    figures = [
        f"{name}_{what}{end}"
        for name in ("cpu", "client", "server")
        for what, ends in (("share", _CI), ("demand", _CI), ("busy", ("",)))
        for end in ends
    ]
    cols = [
        "workload", "arm", "verdict", "resource", "n_sat", "n_max", "threads_at", "n_runs",
        "cpu_source", "cpu_cores", *figures, "server_client_share", "tps_ratio",
        "tps_ratio_ci_low", "tps_ratio_ci_high", "p95_ratio", "p95_ratio_ci_low",
        "p95_ratio_ci_high", "components", "reason", "warnings", "sentence", "sentence_en",
        "sentence_zh", "evidence",
    ]  # fmt: skip
    out = []
    for r in rows:
        flat = {k: r[k] for k in ("workload", "arm", "verdict", "resource", "n_sat", "n_max")}
        flat.update(threads_at=r["threads_at"], n_runs=r["n_runs"], **_flat(r))
        en = _sentence(r, "en", limit, headroom)
        zh = _sentence(r, "zh", limit, headroom)
        reason = r["reason"]
        if reason in ("between", "unclear"):
            reason = en.split("cannot be determined: ", 1)[-1].split(".")[0]
        flat.update(
            reason=reason,
            warnings=r["warnings"],
            sentence=zh if lang == "zh" else en,
            sentence_en=en,
            sentence_zh=zh,
            evidence=r["evidence"],
        )
        out.append(flat)
    return pd.DataFrame(out, columns=cols)
