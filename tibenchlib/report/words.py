"""The words people read, in English and Chinese.

Two tables, one rule each:

``SENTENCES``
    every sentence a notebook or report prints, keyed by an id, with its ``en`` and ``zh``
    template; :func:`say` fills in the figures (``str.format`` fields, so ``{n:,}`` works).
``NOTES``
    the library's warnings, which stay English as data (in the catalog, the results files, the
    ``--json`` output), paired with their Chinese wording; :func:`note` translates one warning
    for display by matching its English template, and leaves a warning it does not know as it is.

The Chinese follows the reports' own wording (测试场景, 压测线程, TPS 提升, 基准 …).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

LANGS = ("en", "zh")

SENTENCES: dict[str, dict[str, str]] = {
    # -- the notebook's header (tibenchlib.notebook) -------------------------------------------
    "header": {
        "en": "**Study file** `{path}` — study `{study}`{description} — arms: {arms}",
        "zh": "**参数文件** `{path}` — 测试 `{study}`{description} — 测试组:{arms}",
    },
    "stored": {
        "en": "Showing the results already in the catalog (nothing is measured again). To measure "
        "again set `redo = True` in the parameters cell, or run `{cmd} --redo`; `{cmd}` resumes "
        "what is missing.",
        "zh": "显示结果库中已有的结果(不会重新测试)。如需重新测试,在参数单元格中设置 "
        "`redo = True`,或运行 `{cmd} --redo`;`{cmd}` 只补测缺少的部分。",
    },
    "not_measured": {
        "en": "Nothing measured yet for this phase: `{cmd}` measures it.",
        "zh": "此阶段尚未测试:运行 `{cmd}` 进行测试。",
    },
    "resuming": {
        "en": "Resuming: what the catalog already holds is kept, the rest is measured.",
        "zh": "继续测试:保留结果库中已有的结果,只测试其余部分。",
    },
    "measuring": {"en": "Measuring now.", "zh": "正在测试。"},
    "measuring_redo": {"en": "Measuring now again (redo).", "zh": "正在重新测试 (redo)。"},
    "measured": {
        "en": "Measured by this notebook's run; the results are in the catalog. `{cmd}` resumes "
        "what is missing, `{cmd} --redo` measures again.",
        "zh": "本次运行已完成测试,结果已存入结果库。`{cmd}` 只补测缺少的部分,"
        "`{cmd} --redo` 重新测试。",
    },
    "compare_no_sweep": {
        "en": "The catalog holds no sweep runs yet: `{cmd}` measures them; this notebook then "
        "compares them.",
        "zh": "结果库中还没有压测 (sweep) 结果:先运行 `{cmd}`,本 notebook 再进行对比。",
    },
    # -- generic --------------------------------------------------------------------------------
    "nothing": {"en": "Nothing to show.", "zh": "没有可显示的内容。"},
    "none": {"en": "none", "zh": "无"},
    "rows": {"en": "{what} ({n} rows)", "zh": "{what}({n} 行)"},
    "no_interval": {"en": "(no interval)", "zh": "(无区间)"},
    "unbounded": {"en": "(interval unbounded)", "zh": "(置信区间无界)"},
    "reference": {"en": "reference", "zh": "基准"},
    # -- 00 environment -------------------------------------------------------------------------
    "env_none": {
        "en": "No environment captured yet: `{cmd}` captures it.",
        "zh": "尚未采集环境信息:运行 `{cmd}` 进行采集。",
    },
    "env_captured": {
        "en": "{n} arm(s) captured: {arms}.",
        "zh": "已采集 {n} 个测试组:{arms}。",
    },
    "env_arm_runs": {
        "en": "`{arm}` runs {flavor} {version}",
        "zh": "`{arm}` 运行 {flavor} {version}",
    },
    "env_arm": {"en": "### arm `{arm}`", "zh": "### 测试组 `{arm}`"},
    "env_hardware": {"en": "hardware", "zh": "硬件配置"},
    "env_software": {"en": "software", "zh": "软件环境"},
    "env_configuration": {"en": "configuration", "zh": "参数配置"},
    "env_unavailable": {"en": "unavailable", "zh": "未能采集的项目"},
    "env_kube": {
        "en": "Kubernetes: TidbCluster `{cluster}` in namespace `{namespace}`{context}, read "
        "with kubectl {kubectl}.",
        "zh": "Kubernetes:命名空间 `{namespace}` 中的 TidbCluster `{cluster}`{context},"
        "由 kubectl {kubectl} 读取。",
    },
    "env_kube_context": {"en": " (context `{context}`)", "zh": "(上下文 `{context}`)"},
    "env_kube_components": {"en": "components", "zh": "组件"},
    "env_kube_pods": {"en": "pods", "zh": "各 Pod"},
    "env_kube_unavailable": {
        "en": "Kubernetes {what} not captured: {reason}",
        "zh": "未能采集 Kubernetes {what}:{reason}",
    },
    "env_kube_pods_rows": {
        "en": "Kubernetes pods, one row per container ({n} rows)",
        "zh": "Kubernetes Pod,每个容器一行({n} 行)",
    },
    "yes": {"en": "yes", "zh": "是"},
    "no": {"en": "no", "zh": "否"},
    # -- 01 prepare -----------------------------------------------------------------------------
    "prep_none": {
        "en": "No preparation recorded yet: `{cmd}` prepares the data set.",
        "zh": "尚无数据准备记录:运行 `{cmd}` 准备数据。",
    },
    "prep_summary": {
        "en": "{tables} tables × {rows:,} rows on {arms} arm(s), {seconds} s of work in all; ",
        "zh": "{tables} 张表 × 每表 {rows:,} 行,共 {arms} 个测试组,总耗时 {seconds} s;",
    },
    "prep_ok": {
        "en": "every step ok (skipped = the data set already matched).",
        "zh": "每个步骤均成功 (skipped = 已有数据集符合要求,跳过)。",
    },
    "prep_bad": {"en": "{n} step(s) not ok: see below.", "zh": "{n} 个步骤未成功:见下文。"},
    "prep_every": {"en": "every step ({n})", "zh": "全部步骤({n})"},
    # -- 02 sweep -------------------------------------------------------------------------------
    "sweep_none": {
        "en": "No sweep runs in the catalog yet: `{cmd}` measures them.",
        "zh": "结果库中还没有压测结果:运行 `{cmd}` 进行测试。",
    },
    "sweep_summary": {
        "en": "{n} runs ({counts}): mean TPS per workload, arm and thread count over the repeated "
        "runs, with Student t 95% intervals on the log scale, which stay above 0 as TPS and "
        "latency do (n = runs per cell; {repeats} planned).",
        "zh": "共 {n} 次测试({counts}):每个测试场景、测试组和压测线程数下多次重复测试的平均 TPS,"
        "附对数尺度上的 Student t 95% 置信区间(与 TPS 和延迟一样不会低于 0;"
        "n = 每格测试次数;计划 {repeats} 次)。",
    },
    "count": {"en": "{n} {what}", "zh": "{what} {n} 次"},
    "ylabel_tps": {"en": "TPS (sysbench)", "zh": "TPS (sysbench)"},
    "ylabel_p95": {"en": "p95 latency (ms)", "zh": "95% 延迟 (ms)"},
    "diag_none": {
        "en": "No run finished ok: nothing to diagnose.",
        "zh": "没有成功完成的测试:无可诊断的内容。",
    },
    "diag_inside": {"en": "inside each run ({n} runs)", "zh": "每次测试内部({n} 次)"},
    "rounds_few": {
        "en": "Fewer than two complete rounds: no round effect to estimate.",
        "zh": "完整的轮次少于两轮:无法估计轮次效应。",
    },
    "rounds_apart": {
        "en": "**Rounds that stand apart** (log TPS = cell + round, each round against the others, "
        "95% interval, Holm across rounds): {notes}. `compare.exclude_rounds` in the study file "
        "leaves a round out of the comparison.",
        "zh": "**与其他轮次明显不同的轮次**(log TPS = 测试场景 + 轮次,每轮与其余轮次比较,95% "
        "置信区间,各轮次间 Holm 校正):{notes}。在参数文件中设置 `compare.exclude_rounds` "
        "可将某一轮排除在对比之外。",
    },
    "rounds_fine": {
        "en": "No round stands apart from the others ({n} rounds; log TPS = cell + round, 95% "
        "intervals, Holm across rounds).",
        "zh": "没有轮次与其他轮次明显不同(共 {n} 轮;log TPS = 测试场景 + 轮次,95% 置信区间,"
        "各轮次间 Holm 校正)。",
    },
    "rounds_details": {"en": "round effects ({n} rounds)", "zh": "轮次效应({n} 轮)"},
    "warmup": {
        "en": "Warm-up: {n} arm openings × workloads, {steady} reached a steady throughput "
        "(MSER-5 / consecutive runs agreeing), {seconds:,.0f} s in all.",
        "zh": "预热:共 {n} 次(测试组启动 × 测试场景),其中 {steady} 次达到稳定吞吐量"
        "(MSER-5 / 相邻两次结果一致),总耗时 {seconds:,.0f} s。",
    },
    "warmup_details": {
        "en": "warm-up runs per arm opening ({n})",
        "zh": "每次测试组启动的预热测试({n})",
    },
    "all_ok": {
        "en": "Every run finished ok and passed the checks.",
        "zh": "所有测试均成功完成并通过检查。",
    },
    "retried": {
        "en": " {n} run(s) needed more than one attempt.",
        "zh": "{n} 次测试重试了不止一次。",
    },
    "failed": {
        "en": "{n} run(s) failed or cannot be trusted; they are counted, never averaged.",
        "zh": "{n} 次测试失败或结果不可信;它们只计数,不参与平均。",
    },
    "failed_first": {
        "en": "{phase}: {bad} of {runs} runs failed or were degenerate; first: {key}: {error} "
        "(log {log}); retry them with: `{cmd}`",
        "zh": "{phase}:{runs} 次测试中有 {bad} 次失败或结果异常;第一次:{key}:{error}"
        "(日志 {log});重试:`{cmd}`",
    },
    "failed_details": {"en": "failed runs", "zh": "失败的测试"},
    # -- 03 compare -----------------------------------------------------------------------------
    "cmp_none": {
        "en": "Nothing to compare yet: `{cmd}` first.",
        "zh": "尚无可对比的结果:请先运行 `{cmd}`。",
    },
    "cmp_pair": {"en": "## `{b}` against `{a}`", "zh": "## `{b}` 对比 `{a}`"},
    "cmp_workload": {
        "en": "**{workload}**: TPS {imp} (geometric mean over thread counts, 95% interval).",
        "zh": "**{workload}**:TPS {imp}(各压测线程数的几何平均,95% 置信区间)。",
    },
    "cmp_verdicts": {
        "en": " Verdicts per thread count against a practical threshold of ±{delta:g}% "
        "(Holm-adjusted Welch p):",
        "zh": "各压测线程数的结论,以 ±{delta:g}% 为实际意义阈值(Welch 检验,Holm 校正 p 值):",
    },
    "cmp_plot_title": {
        "en": "{a} vs {b}: mean TPS with 95% t intervals",
        "zh": "{a} 对比 {b}:平均 TPS 及 95% t 置信区间",
    },
    "cmp_bars_title": {"en": "{b} against {a}", "zh": "{b} 相对 {a}"},
    "sat_none": {
        "en": "No sweep runs: no saturation to find.",
        "zh": "没有压测结果:无法确定饱和点。",
    },
    "sat_steps": {"en": "steps between thread counts", "zh": "相邻压测线程数之间的变化"},
    "cfg_differ": {
        "en": "**`{a}` vs `{b}`**: {n} setting(s) differ.",
        "zh": "**`{a}` 对比 `{b}`**:{n} 项配置不同。",
    },
    "cfg_equal": {
        "en": "The captured configurations are equal.",
        "zh": "采集到的配置完全相同。",
    },
    "cfg_none": {
        "en": "`{a}` vs `{b}`: no environment capture yet (`{cmd}` captures it).",
        "zh": "`{a}` 对比 `{b}`:尚未采集环境信息(运行 `{cmd}` 进行采集)。",
    },
    # -- 04 numa --------------------------------------------------------------------------------
    "numa_one_node": {
        "en": "This machine has one NUMA node (node 0 = CPUs {cpus}): binding to node 0 restricts "
        "nothing, so 'node:0' should show no difference from 'unbound'. The 'cpus:' arm "
        "restricts the server to part of the cores, a restriction that is visible and verified, "
        "so it should show a real effect.",
        "zh": "本机只有一个 NUMA 节点(node 0 = CPU {cpus}):绑定到 node 0 不会限制任何资源,"
        "因此 'node:0' 应与 'unbound' 没有差别。'cpus:' 测试组把数据库限制在部分核上,"
        "这一限制可见且已核实,应显示出真实的影响。",
    },
    "all_cpus": {"en": "all CPUs", "zh": "全部 CPU"},
    "numa_nodes": {
        "en": "This machine has {n} NUMA nodes: binding confines CPU and memory to one.",
        "zh": "本机有 {n} 个 NUMA 节点:绑定会把 CPU 和内存限制在其中一个。",
    },
    "numa_none": {
        "en": "No NUMA runs to compare yet: `{cmd}` measures them.",
        "zh": "尚无可对比的 NUMA 测试结果:运行 `{cmd}` 进行测试。",
    },
    "numa_summary": {
        "en": "{n} cell(s) compared with `unbound` (TPS change with its Fieller 95% interval, "
        "Holm-adjusted Welch p, and whether each binding was verified from `/proc`): ",
        "zh": "{n} 个测试场景与 `unbound` 对比(TPS 变化及其 Fieller 95% 置信区间、Holm 校正的 "
        "Welch p 值,以及每种绑定是否已从 `/proc` 核实):",
    },
    "numa_differ": {
        "en": "{n} differ significantly beyond ±{delta:g}%.",
        "zh": "{n} 个显著超出 ±{delta:g}%。",
    },
    "numa_same": {
        "en": "no policy differs significantly.",
        "zh": "没有绑核方式存在显著差异。",
    },
    "numa_plot_title": {
        "en": "TPS per binding policy (95% t intervals)",
        "zh": "各绑核方式的 TPS(95% t 置信区间)",
    },
    "numa_bindings": {
        "en": "the bindings as the kernel reports them ({n})",
        "zh": "内核报告的绑定情况({n})",
    },
    "numa_memory": {
        "en": "memory per NUMA node (numastat), before and after each policy",
        "zh": "每个 NUMA 节点的内存 (numastat),各绑核方式前后",
    },
    "numa_cpu": {"en": "server CPU against throughput", "zh": "数据库 CPU 与吞吐量"},
    "stab_none": {"en": "No runs: no stability to show.", "zh": "没有测试:无稳定性可显示。"},
    "stab_summary": {
        "en": "{n} dip event(s) over {runs} runs{floor}; the runs with the most are drawn.",
        "zh": "{runs} 次测试中共有 {n} 次掉底事件{floor};下图画出掉底最多的测试。",
    },
    "stab_floor": {"en": ", {n} to the floor", "zh": ",其中 {n} 次掉到底"},
    "stab_every": {"en": "every run ({n})", "zh": "每次测试({n})"},
    "stab_worst": {"en": "{key} (worst runs)", "zh": "{key}(最差的测试)"},
    "topo_none": {
        "en": "No `numa.topology_file` in the params: no TiUP topology to check.",
        "zh": "参数中没有 `numa.topology_file`:没有要检查的 TiUP 拓扑。",
    },
    "topo_fits": {
        "en": "Every block cache fits its NUMA node.",
        "zh": "每个 block cache 都能放入其 NUMA 节点。",
    },
    # -- 05 TPC-H scaling -----------------------------------------------------------------------
    "tpch_about": {
        "en": "TPC-H SF {sf:g}, arms {arms}, {repeats} repeats, modes {modes}, per-query timeout "
        "{timeout:g} s.",
        "zh": "TPC-H SF {sf:g},测试组 {arms},重复 {repeats} 次,模式 {modes},"
        "单条查询超时 {timeout:g} s。",
    },
    "tpch_standin": {
        "en": "**Local stand-in.** The embedded MariaDB has no TiFlash: the arms are CPU sets "
        "given to the server (`cpus:0` = 1 core, `unbound` = all cores) and stand in for instance "
        "counts. MariaDB runs each query on one thread, so *power* times (one query at a time) "
        "should not change between arms; *throughput* (one concurrent stream per core) should. "
        "Tables carry primary keys only, as in the report.",
        "zh": "**本地替代测试。** 内置的 MariaDB 没有 TiFlash:测试组是分配给数据库的 CPU 集合"
        "(`cpus:0` = 1 核,`unbound` = 全部核),代替实例数。MariaDB 每条查询只用一个线程,"
        "因此 *power* 模式(一次一条查询)的耗时在各测试组之间不应变化;*throughput* 模式"
        "(每核一个并发流)则应变化。与报告一样,表上只有主键。",
    },
    "tpch_none": {
        "en": "No TPC-H executions in the catalog yet: `{cmd}` measures them.",
        "zh": "结果库中还没有 TPC-H 执行记录:运行 `{cmd}` 进行测试。",
    },
    "tpch_overall": {
        "en": "Over all {n} queries, per mode and arm: the geometric mean of the per-query mean "
        "times with a 95% interval, the time saved against `{base}` and the speed-up (ideal "
        "linear scaling gives efficiency 100%).",
        "zh": "全部 {n} 条查询,按模式和测试组:各查询平均耗时的几何平均及 95% 置信区间、相对 "
        "`{base}` 的效率提升和加速比(理想的线性扩展对应并行效率 100%)。",
    },
    "tpch_sets": {
        "en": "**Whole query sets.** In throughput mode the figure concurrency should shrink is "
        "the wall time of a repeat's whole set of streams, and its queries per hour:",
        "zh": "**整组查询。** throughput 模式下,并发应当缩短的是一次重复中全部查询流的总耗时,"
        "以及每小时查询数:",
    },
    "tpch_every": {
        "en": "every query, mode and arm ({n} rows)",
        "zh": "每条查询、模式和测试组({n} 行)",
    },
    "tpch_not_scaled": {
        "en": "{n} query(ies) did not scale (the interval of the time saved includes 0):",
        "zh": "{n} 条查询没有扩展效果(效率提升的置信区间包含 0):",
    },
    "tpch_all_scaled": {
        "en": "Every query scaled where an interval could say so.",
        "zh": "在有置信区间可判断的情况下,每条查询都有扩展效果。",
    },
    "tpch_bad": {
        "en": "{n} execution(s) failed or returned a wrong answer:",
        "zh": "{n} 次执行失败或返回了错误结果:",
    },
    "tpch_bad_details": {"en": "executions", "zh": "执行记录"},
    "tpch_all_ok": {
        "en": "Every execution finished and its answer matched the reference.",
        "zh": "每次执行均已完成,结果与参考答案一致。",
    },
    "seed_query": {"en": "Query", "zh": "查询"},
    "seed_time": {"en": "{arm} TiFlash: time (s)", "zh": "{arm} TiFlash:耗时 (s)"},
    "seed_saved": {"en": "3 → {arm}: time saved (%)", "zh": "3 → {arm}:效率提升比例 (%)"},
    # -- TPC-H scaling verdicts (report.scaling) -----------------------------------------------
    "scaling_none": {
        "en": "No query could be tested (each arm needs two or more good repeats).",
        "zh": "没有可检验的查询(需要每组至少两次成功的重复)。",
    },
    "scaling_counts": {
        "en": "{mode}, {arm} against {base}: {f} queries faster, {s} slower, {u} with no "
        "detectable change",
        "zh": "{mode} 模式,{arm} 对比 {base}:{f} 个查询更快,{s} 个更慢,{u} 个未检测到变化",
    },
    "scaling_caveat": {
        "en": '. p-values are Holm-corrected across the queries; "no detectable change" means '
        "these repeats cannot tell, not that nothing changed - its interval shows how large a "
        "change could still hide.",
        "zh": "。p 值经 Holm 方法跨查询校正;“未检测到变化”只说明这些重复次数不足以分辨,"
        "并不证明没有变化,其区间给出仍可能隐藏的变化幅度。",
    },
    # -- collapsed tables of the DM and YCSB sections (report.dm, report.ycsb) -----------------
    "dm_lag_samples": {"en": "lag samples ({n})", "zh": "复制延迟采样 ({n})"},
    "ycsb_steps": {"en": "steps between thread counts", "zh": "相邻压测线程数之间的变化"},
    # -- adaptive repeats (report.adaptive) ---------------------------------------------------
    "adaptive_fixed": {
        "en": "This study runs a fixed {n} rounds per cell (`repeats: {n}`).",
        "zh": "本研究每个测试场景固定测 {n} 轮 (`repeats: {n}`)。",
    },
    # a query's time against the base arm's (tibenchlib.report.tpch_queries)
    "tc_unresolved": {"en": "not resolved", "zh": "无法确定"},
    "tc_ratio": {"en": "{r}× [{lo}, {hi}]", "zh": "{r} 倍 [{lo}, {hi}]"},
    "tc_span": {
        "en": "time change not resolved: its 95% interval runs from {lo}× to {hi}× the base time",
        "zh": "耗时变化无法确定：95% 置信区间为基准耗时的 {lo} 倍至 {hi} 倍",
    },
    "tc_varies": {
        "en": "; the time on {arm} varied most over its {n} runs: {t} s [{lo}, {hi}]",
        "zh": "；{arm} 的耗时在 {n} 次测试中波动最大：{t} s [{lo}, {hi}]",
    },
    "scaling_slower": {"en": "Significantly slower queries:", "zh": "显著更慢的查询:"},
    "scaling_every": {"en": "every compared query ({n})", "zh": "每个已比较的查询 ({n})"},
    # -- the bottleneck diagnosis (tibenchlib.diagnose): one sentence per workload × arm ------
    "dg_uses": {
        "en": "{name}{inst} uses {share} of its {cores}",
        "zh": "{name}{inst} 使用其 {cores} 的 {share}",
    },
    "dg_wants": {
        "en": "{name}{inst} wants {share} of its {cores} (threads running or waiting for a CPU; "
        "it ran {own} itself, its CPUs were {busy} busy)",
        "zh": "{name}{inst}的 CPU 需求(运行或等待 CPU 的线程)为其 {cores} 的 {share},"
        "其中自身占用 {own},其 CPU 的繁忙度为 {busy}",
    },
    "dg_name_server": {"en": "the server", "zh": "数据库服务端"},
    "dg_name_client": {"en": "the sysbench client", "zh": "sysbench 客户端"},
    "dg_cores": {"en": "{c} CPUs", "zh": "{c} 个 CPU"},
    "dg_cores_1": {"en": "{c} CPU", "zh": "{c} 个 CPU"},
    "dg_n": {"en": " (n = {n})", "zh": "（n = {n}）"},
    "dg_n_none": {"en": " (n = {n}, no interval)", "zh": "(n = {n},无区间)"},
    "dg_no_interval": {"en": " (no interval)", "zh": "(无区间)"},
    "dg_one_count": {
        "en": "{w}: one thread count only: the diagnosis needs a thread ladder ({n_max}), so no "
        "saturation point or bottleneck is read.",
        "zh": "{w}:只测了 {n_max} 一个压测线程数,无法判断饱和点与瓶颈(需要线程阶梯)。",
    },
    "dg_step": {"en": "TPS {a}→{b} threads {chg}", "zh": "{a}→{b} 线程 TPS {chg}"},
    "dg_rising": {
        "en": "{w}: not saturated within the ladder; throughput still rises at {n_max} threads",
        "zh": "{w}:在所测线程范围内尚未到达瓶颈点,压测线程数为 {n_max} 时 TPS 仍在上升",
    },
    "dg_head_unclear": {
        "en": "{w}: {step}, neither shown to rise nor to level off",
        "zh": "{w}:{step},无法确定是否已饱和",
    },
    "dg_head_levels": {
        "en": "{w}: throughput levels off from {n_sat} threads",
        "zh": "{w}:从 {n_sat} 线程起吞吐量不再增长",
    },
    "dg_at": {"en": "At {at} threads {cpus}.", "zh": "{at} 线程时:{cpus}。"},
    "dg_client": {
        "en": "client-bound: the sweep measured the sysbench client, not the database",
        "zh": "客户端 CPU 瓶颈:测到的是 sysbench 客户端,而非数据库",
    },
    "dg_name_client_host": {
        "en": "sysbench on client host {host}",
        "zh": "客户端主机 {host} 上的 sysbench",
    },
    "dg_client_host": {
        "en": "client host {host} CPU-bound: the sweep measured that client host, not the "
        "database; add or change client hosts",
        "zh": "客户端主机 {host} CPU 瓶颈：测到的是这台客户端主机，而非数据库；"
        "增加或更换客户端主机",
    },
    "dg_server": {"en": "server CPU-bound", "zh": "服务端 CPU 瓶颈"},
    "dg_server_of": {"en": "server CPU-bound: {src}", "zh": "服务端 CPU 瓶颈({src})"},
    "dg_bound": {
        "en": "{head}, {what}. At {at} threads {main} (≥ {lim}){rest}.",
        "zh": "{head},{what}。在 {at} 线程时,{main}(≥ {lim}){rest}。",
    },
    "dg_host_both": {
        "en": "{head}, host CPU-bound: client and server are both at their CPU limit and their "
        "intervals overlap, so neither can be named.",
        "zh": "{head},主机 CPU 瓶颈:客户端与服务端都达到其 CPU 上限,二者的区间重叠,无法区分。",
    },
    "dg_host_shared": {
        "en": "{head}, host CPU-bound: server and client share the same {cores} and together "
        "use {share} of them at {at} threads.",
        "zh": "{head},主机 CPU 瓶颈:服务端与客户端共用 {cores},在 {at} 线程时合计使用 {share}。",
    },
    "dg_p95": {
        "en": "p95 latency grows {ratio} from {n_sat} to {n_max} threads",
        "zh": "p95 延迟从 {n_sat} 到 {n_max} 线程变为原来的 {ratio}",
    },
    "dg_not_cpu": {
        "en": "{head} while the CPUs have headroom at {at} threads (all below {hr}): {cpus}. The "
        "limit is not CPU: look at locks, I/O or the network{lat}.",
        "zh": "{head},但 {at} 线程时 CPU 仍有余量(均低于 {hr}):{cpus}。瓶颈不在 CPU,"
        "可能是锁、I/O 或网络{lat}。",
    },
    "dg_undetermined": {
        "en": "{head}; the bottleneck cannot be determined: {reason}.",
        "zh": "{head},瓶颈无法判定:{reason}。",
    },
    "dg_r_between": {
        "en": "the CPU demand of {who} lies between {hr} and {lim} (or its interval reaches "
        "above {hr}): neither at its limit nor clearly free",
        "zh": "{who} 的 CPU 需求介于 {hr} 与 {lim} 之间(或区间跨越 {hr}),既未达到上限,"
        "也不明显有余量",
    },
    "dg_r_unclear": {
        "en": "the throughput curve is unclear and no CPU is at its limit",
        "zh": "吞吐量曲线不确定,且没有 CPU 达到上限",
    },
    "dg_r_no_server": {
        "en": "no server CPU measured (a remote server without Prometheus, or sampling off)",
        "zh": "未测到服务端 CPU(远程服务端且无 Prometheus,或未开启采样)",
    },
    "dg_r_no_count": {
        "en": "no CPU count for {who}: pass component_cores",
        "zh": "缺少 {who} 的 CPU 数,请提供 component_cores",
    },
    "dg_r_unmeasured": {
        "en": "the CPU of {who} was not measured",
        "zh": "未测到 {who} 的 CPU",
    },
    # -- findings (tibenchlib.findings): one sentence per finding, one clause per reason -------
    "f_phase_head": {"en": "**What this phase found**", "zh": "**本阶段结论**"},
    "f_phase_none": {
        "en": "No findings yet: nothing of this phase is in the catalog.",
        "zh": "暂无结论:结果库中尚无此阶段的结果。",
    },
    "f_summary": {
        "en": "{n} findings: {better} in favour, {worse} against, {same} without a difference, "
        "{open} with no answer yet, {other} descriptive.",
        "zh": "共 {n} 条结论:{better} 条提升,{worse} 条下降,{same} 条无差异,{open} 条尚无结论,"
        "{other} 条为描述性结果。",
    },
    "f_one_arm": {
        "en": "The study has one arm only: nothing to compare.",
        "zh": "本测试只有一个测试组,无可对比。",
    },
    "f_pair": {"en": "{cand} against {base}", "zh": "{cand} 对比 {base}"},
    "f_with_reason": {"en": "{text} — {reason}{end}", "zh": "{text}\uff1b{reason}{end}"},
    "f_withheld": {
        "en": "{topic}: figure withheld ({fig} is not a coherent estimate and interval).",
        "zh": "{topic}:结果不予采用({fig} 的估计值与其区间不一致)。",
    },
    "f_sat_rising": {
        "en": "{workload} on {arm}: throughput still rising at {n_max} threads ({fig} from "
        "{threads_from} threads): the saturation point lies beyond the thread ladder.",
        "zh": "{workload}({arm}):压测线程数为 {n_max} 时 TPS 仍在上升(较 {threads_from} 线程"
        "提升 {fig_abs}),在所测线程范围内尚未到达瓶颈点。",
    },
    "f_sat_unclear": {
        "en": "{workload} on {arm}: throughput neither shown to rise nor to level off at {n_max} "
        "threads (from {threads_from} threads: {fig}).",
        "zh": "{workload}({arm}):压测线程数为 {n_max} 时 TPS 既未确认仍在上升,也未确认已到达"
        "瓶颈点(较 {threads_from} 线程 {fig})。",
    },
    "f_sat_one": {
        "en": "{workload} on {arm}: one thread count only.",
        "zh": "{workload}({arm}):只测试了一个线程数。",
    },
    "f_sat_levels": {
        "en": "{workload} on {arm}: throughput levels off from {n_sat} threads (from {n_sat} to "
        "{n_max} threads: {fig}).",
        "zh": "{workload}({arm}):吞吐从 {n_sat} 压测线程起趋于饱和({n_sat} → {n_max} 线程:{fig})。",
    },
    "f_diag_server_cpu": {
        "en": "{workload} on {arm}: {resource} CPU-bound at {threads} threads (CPU demand {fig}).",
        "zh": "{workload}({arm}):{threads} 压测线程时瓶颈在{resource} CPU(CPU 需求 {fig})。",
    },
    "f_diag_client_cpu": {
        "en": "{workload} on {arm}: client CPU-bound at {threads} threads (CPU demand {fig}): "
        "the client, not the database, limits throughput.",
        "zh": "{workload}({arm}):{threads} 压测线程时瓶颈在客户端 CPU(CPU 需求 {fig}),"
        "限制吞吐的是压测端而不是数据库。",
    },
    "f_diag_host_cpu": {
        "en": "{workload} on {arm}: host CPU-bound at {threads} threads (server and client share "
        "the CPUs; demand {fig}).",
        "zh": "{workload}({arm}):{threads} 压测线程时整机 CPU 已满(服务端与客户端共用 CPU;"
        "需求 {fig})。",
    },
    "f_diag_not_cpu": {
        "en": "{workload} on {arm}: not CPU-bound at {threads} threads (busiest CPU demand "
        "{fig}): the limit lies elsewhere (I/O, locks, network).",
        "zh": "{workload}({arm}):{threads} 压测线程时不是 CPU 瓶颈(最忙的 CPU 需求 {fig}),"
        "瓶颈在别处(I/O、锁、网络)。",
    },
    "f_diag_undetermined": {
        "en": "{workload} on {arm}: bottleneck not determined at {threads} threads ({resource} "
        "CPU demand {fig}).",
        "zh": "{workload}({arm}):{threads} 压测线程时无法判定瓶颈({resource} CPU 需求 {fig})。",
    },
    "f_round": {
        "en": "Round {round} sits {fig} against rounds {others} (Holm p = {p}): warm-up or drift.",
        "zh": "第 {round} 轮比其余各轮(第 {others} 轮){higher_lower} {fig_abs}(Holm p = {p}),"
        "可能是预热不足或环境波动。",
    },
    "f_cmp_all_better": {
        "en": "{cand} is faster than {base} on {workload} at every thread count: {fig} at "
        "{threads} threads ({n} rounds, Holm p = {p}).",
        "zh": "{cand} 对比 {base},{workload} 在每个压测线程数下 TPS 均有提升:{threads} 线程时"
        "提升 {fig_abs}({n} 轮,Holm p = {p})。",
    },
    "f_cmp_all_worse": {
        "en": "{cand} is slower than {base} on {workload} at every thread count: {fig} at "
        "{threads} threads ({n} rounds, Holm p = {p}).",
        "zh": "{cand} 对比 {base},{workload} 在每个压测线程数下 TPS 均下降:{threads} 线程时"
        "下降 {fig_abs}({n} 轮,Holm p = {p})。",
    },
    "f_cmp_equivalent": {
        "en": "No difference shown between {cand} and {base} on {workload} (±{delta}% margin; "
        "widest interval {fig}).",
        "zh": "{cand} 与 {base} 在 {workload} 上无差异(等价区间 ±{delta}%;最宽的置信区间 {fig})。",
    },
    "f_cmp_cell_better": {
        "en": "{cand} is faster than {base} on {workload} at {threads} threads: {fig} ({n} "
        "rounds, Holm p = {p}).",
        "zh": "{cand} 对比 {base},{workload} 在 {threads} 压测线程时 TPS 提升 {fig_abs}({n} 轮,"
        "Holm p = {p})。",
    },
    "f_cmp_cell_worse": {
        "en": "{cand} is slower than {base} on {workload} at {threads} threads: {fig} ({n} "
        "rounds, Holm p = {p}).",
        "zh": "{cand} 对比 {base},{workload} 在 {threads} 压测线程时 TPS 下降 {fig_abs}({n} 轮,"
        "Holm p = {p})。",
    },
    "f_cmp_cell_equivalent": {
        "en": "No difference shown between {cand} and {base} on {workload} at {threads} threads "
        "(±{delta}% margin): {fig}.",
        "zh": "{cand} 与 {base} 在 {workload}、{threads} 压测线程时无差异(等价区间 ±{delta}%):"
        "{fig}。",
    },
    "f_cmp_cell_small": {
        "en": "{cand} differs from {base} on {workload} at {threads} threads, but by less than "
        "the ±{delta}% margin: {fig}.",
        "zh": "{cand} 与 {base} 在 {workload}、{threads} 压测线程时有差异,但小于等价区间 "
        "±{delta}%:{fig}。",
    },
    "f_cmp_cell_open": {
        "en": "{cand} against {base} on {workload} at {threads} threads: no answer yet ({fig}).",
        "zh": "{cand} 对比 {base},{workload} 在 {threads} 压测线程时尚无结论({fig})。",
    },
    "f_cmp_cell_open_sim": {
        "en": "{cand} against {base} on {workload} at {threads} threads: no answer yet ({fig}, "
        "95% interval simultaneous over {family} cells).",
        "zh": "{cand} 对比 {base},{workload} 在 {threads} 压测线程时尚无结论({fig},"
        "{family} 个测试场景与线程数组合的联合 95% 置信区间)。",
    },
    "f_tpch_counts": {
        "en": "TPC-H {mode}, {base} → {arm}: {faster} of {n} queries faster, {slower} slower, "
        "{same} without a detectable change{unresolved}; time saved over all queries (geometric "
        "mean) {fig}.",
        "zh": "TPC-H {mode},{base} → {arm}:{n} 个查询中 {faster} 个更快,{slower} 个更慢,"
        "{same} 个未检测到变化{unresolved};全部查询的耗时(几何平均)减少 {fig_abs}。",
    },
    "f_tpch_counts_longer": {
        "en": "TPC-H {mode}, {base} → {arm}: {faster} of {n} queries faster, {slower} slower, "
        "{same} without a detectable change{unresolved}; time over all queries (geometric mean) "
        "longer by {fig}.",
        "zh": "TPC-H {mode},{base} → {arm}:{n} 个查询中 {faster} 个更快,{slower} 个更慢,"
        "{same} 个未检测到变化{unresolved};全部查询的耗时(几何平均)增加 {fig_abs}。",
    },
    "f_tpch_counts_nochange": {
        "en": "TPC-H {mode}, {base} → {arm}: {faster} of {n} queries faster, {slower} slower, "
        "{same} without a detectable change{unresolved}; over all queries (geometric mean) no "
        "change in time is shown (time saved {fig}).",
        "zh": "TPC-H {mode},{base} → {arm}:{n} 个查询中 {faster} 个更快,{slower} 个更慢,"
        "{same} 个未检测到变化{unresolved};全部查询的耗时(几何平均)未检测到变化"
        "(耗时节省的估计 {fig},区间包含 0)。",
    },
    "f_tpch_counts_pooled": {
        "en": "TPC-H {mode}, {base} → {arm}: time saved over all {n} queries (geometric mean) "
        "{fig}, though no single query is shown faster or slower on its own.",
        "zh": "TPC-H {mode},{base} → {arm}:全部 {n} 个查询的耗时(几何平均)减少 {fig_abs},"
        "但单条查询差异均不显著。",
    },
    "f_tpch_counts_longer_pooled": {
        "en": "TPC-H {mode}, {base} → {arm}: time over all {n} queries (geometric mean) longer by "
        "{fig}, though no single query is shown faster or slower on its own.",
        "zh": "TPC-H {mode},{base} → {arm}:全部 {n} 个查询的耗时(几何平均)增加 {fig_abs},"
        "但单条查询差异均不显著。",
    },
    "f_tpch_qph": {
        "en": "TPC-H throughput, {base} ({base_streams} streams) → {arm} ({streams} streams): "
        "queries per hour {fig}.",
        "zh": "TPC-H 多流并发 (Throughput)，{base}（{base_streams} 个流）→ "
        "{arm}（{streams} 个流）：每小时查询数变化 {fig}。",
    },
    "f_dm_within": {
        "en": "DM {dm_what}: {knob} = {smallest} is within 5% of the best setting ({best}): {fig}.",
        "zh": "DM {dm_what}:{knob} = {smallest} 与最佳取值({best})相差在 5% 以内:{fig}。",
    },
    "f_dm_best": {
        "en": "DM {dm_what}: {knob} = {best} is the best setting: {fig}.",
        "zh": "DM {dm_what}:{knob} 的最佳取值为 {best}:{fig}。",
    },
    "f_dm_tied": {
        "en": "DM {dm_what}: {knob} = {tied}: these settings cannot be told apart "
        "(best mean {fig} at {best}).",
        "zh": "DM {dm_what}:{knob} 取 {tied} 时无法区分优劣(最高均值 {fig},取值 {best})。",
    },
    "f_dm_open": {
        "en": "DM {dm_what}: {knob}: no answer yet (best mean {fig} at {best}).",
        "zh": "DM {dm_what}:{knob} 尚无结论(最高均值 {fig},取值 {best})。",
    },
    "f_tpcc_cell": {
        "en": "TPC-C {mode}, {wh} warehouses",
        "zh": "TPC-C {mode},{wh} 个仓库",
    },
    "f_tpcc_cell_one": {
        "en": "TPC-C {mode}, 1 warehouse",
        "zh": "TPC-C {mode},1 个仓库",
    },
    "f_tpcc_nowait": {"en": "without keying/think times", "zh": "无键入/思考时间"},
    "f_tpcc_wait": {"en": "with keying/think times", "zh": "有键入/思考时间"},
    "f_peak_one": {
        "en": "{workload} on {arm}: {fig} at {threads} threads (one thread count: no peak to "
        "locate).",
        "zh": "{workload}({arm}):{threads} 压测线程时 {fig}(只测了一个压测线程数,无法定位峰值)。",
    },
    "f_peak": {
        "en": "{workload} on {arm}: highest throughput at {threads} threads, {fig}.",
        "zh": "{workload}({arm}):{threads} 压测线程时吞吐最高,{fig}。",
    },
    "f_peak_top": {
        "en": "{workload} on {arm}: throughput highest at the largest thread count ({threads}), "
        "{fig}: the peak may lie beyond.",
        "zh": "{workload}({arm}):吞吐在最大线程数({threads})时最高,{fig},峰值可能在测试范围之外。",
    },
    "f_peak_tied": {
        "en": "{workload} on {arm}: highest mean throughput at {threads} threads, {fig}; thread "
        "counts {tied} cannot be told apart.",
        "zh": "{workload}({arm}):{threads} 压测线程时平均吞吐最高,{fig};线程数 {tied} 之间"
        "无法区分。",
    },
    "r_one_thread_count": {
        "en": "the diagnosis needs a thread ladder",
        "zh": "判断饱和需要多个压测线程数",
    },
    "r_last_step_wide": {
        "en": "the last step's interval is too wide to tell",
        "zh": "最后一级的置信区间过宽,无法判断",
    },
    "r_cpu_between": {
        "en": "the CPU demand is neither at its limit nor clearly free",
        "zh": "CPU 需求既未达到上限,也不明显有余量",
    },
    "r_cpu_unmeasured": {
        "en": "the server's CPU was not measured",
        "zh": "未采集到服务端 CPU",
    },
    "r_curve_unclear": {
        "en": "the throughput curve is unclear and no CPU is at its limit",
        "zh": "吞吐曲线不明确,且没有 CPU 达到上限",
    },
    "r_interval_wide": {
        "en": "n = {n}, CV {cv}; {need} rounds needed",
        "zh": "n = {n},变异系数 {cv};需要{need}",
    },
    "r_unbounded": {
        "en": "n = {n}: the runs vary too much to bound it",
        "zh": "n = {n}:各次测试波动过大",
    },
    "fig_unbounded": {"en": ", interval unbounded", "zh": ",置信区间无界"},
    "r_interval_wide_n": {
        "en": "n = {n}: the interval is too wide for either claim",
        "zh": "n = {n}:置信区间过宽,无法下结论",
    },
    "r_too_few_runs": {
        "en": "n = {n}: at least 2 runs per arm are needed",
        "zh": "n = {n}:每组至少需要 2 次测试",
    },
    "r_within_drift": {
        "en": "the change is no larger than the base arm's own drift between its two blocks "
        "({drift_pct}%)",
        "zh": "变化未超过基准测试组自身在前后两组之间的漂移（{drift_pct}%）",
    },
    "r_no_query_shown": {
        "en": "no query shown faster or slower",
        "zh": "单条查询差异均不显著",
    },
    "r_overlap": {
        "en": "their intervals overlap the best's",
        "zh": "这些取值的置信区间与最佳取值重叠",
    },
    "r_overlap_threads": {
        "en": "their intervals overlap",
        "zh": "置信区间相互重叠",
    },
    "r_overlap_threads_need": {
        "en": "n = {n} runs per cell and their intervals overlap; {need} rounds would tell them "
        "apart",
        "zh": "每个测试场景 n = {n} 次测试,置信区间相互重叠;需要{need}才能区分",
    },
    "r_one_run": {
        "en": "one run: no interval",
        "zh": "只有一次测试,没有置信区间",
    },
}


def check_lang(lang: str) -> str:
    """``lang`` if it is one of :data:`LANGS`, else a ValueError naming the ones there are."""
    if lang not in LANGS:
        raise ValueError(f"lang must be one of {', '.join(LANGS)}, not {lang!r}")
    return lang


def say(key: str, lang: str = "en", /, **figures) -> str:
    """The sentence ``key`` in ``lang`` with ``figures`` filled in.

    Raises ``KeyError`` naming the id when it is not in :data:`SENTENCES`.
    """
    try:
        entry = SENTENCES[key]
    except KeyError:
        raise KeyError(f"no sentence '{key}' in tibenchlib.report.words.SENTENCES") from None
    if check_lang(lang) != "zh":
        return entry[lang].format(**figures)
    # the template's punctuation is the sentence's, full width; the figures (names, numbers,
    # intervals, clauses already said) keep theirs: only the template is converted
    fields: list[str] = []

    def hold(m: re.Match) -> str:
        fields.append(m.group(0))
        return f"\ue100{len(fields) - 1}\ue101"

    held = zh_punct(re.sub(r"\{[^{}]*\}", hold, entry[lang]))
    tmpl = re.sub("\ue100(\\d+)\ue101", lambda m: fields[int(m.group(1))], held)
    return tmpl.format(**figures)


#: private-use stand-ins for the punctuation inside a figure while the sentence's is converted
_GUARD = {c: chr(0xE000 + i) for i, c in enumerate(",:;()[]`")}
_UNGUARD = {v: k for k, v in _GUARD.items()}


def _guard(text: str) -> str:
    return "".join(_GUARD.get(c, c) for c in text)


def _unguard(text: str) -> str:
    return "".join(_UNGUARD.get(c, c) for c in text)


_CJK = re.compile(r"[\u3000-\u303f\u3400-\u9fff\uff00-\uffef]")
_FULL = {",": "\uff0c", ":": "\uff1a", ";": "\uff1b", "(": "\uff08", ")": "\uff09"}


def zh_punct(text: str) -> str:
    """Chinese prose with full-width punctuation: ``,:;()`` outside code spans become
    ``，：；（）`` where they punctuate the sentence; a comma inside ``[low, high]`` or between
    digits (``1,234``), a colon between digits or in ``://``, and code in backticks stay as
    they are. A sentence with no Chinese character is left alone."""
    if not _CJK.search(text):
        return text
    out: list[str] = []
    code = False
    depth = 0  # inside [ ... ]: an interval's comma stays half-width
    for i, c in enumerate(text):
        prev = text[i - 1] if i else ""
        nxt = text[i + 1] if i + 1 < len(text) else ""
        if c == "`":
            code = not code
        elif not code:
            if c == "[":
                depth += 1
            elif c == "]":
                depth = max(0, depth - 1)
            elif c == "," and not depth and not (prev.isdigit() and nxt.isdigit()):
                c = _FULL[c]
            elif c == ":" and not (prev.isdigit() and nxt.isdigit()) and nxt != "/":
                c = _FULL[c]
            elif c in ";()" and not depth:
                c = _FULL[c]
        if c in "\uff0c\uff1a\uff1b\uff08\uff09" and out and out[-1] == " ":
            out.pop()  # no space before full-width punctuation
        out.append(c)
    res = "".join(out)
    return re.sub("([\uff0c\uff1a\uff1b\uff09\u3002]) ", r"\1", res)


# -- the library's warnings ---------------------------------------------------------------------
#: (English template, Chinese template). Fields match any text; a field named ``note`` holds
#: another warning and is translated in turn. More specific templates come first.
NOTES: list[tuple[str, str]] = [
    # a warning of one arm, said of the pair: "flush1: CV 30.0% > 25%"
    ("{arm}: {note}", "{arm}:{note}"),
    # stats, compare
    ("n={na}+{nb}: point estimate only, no interval", "n={na}+{nb}:只有点估计,没有置信区间"),
    (
        "n={na}+{nb}: fewer than {k} runs per arm, wide interval, low power",
        "n={na}+{nb}:每组少于 {k} 次测试,区间较宽,检验效力低",
    ),
    ("n=1: point estimate only, no interval", "n=1:只有点估计,没有置信区间"),
    ("n={n} < {k}: wide interval, low power", "n={n} < {k}:区间较宽,检验效力低"),
    ("no valid runs", "没有有效的测试"),
    (
        "outlying run (repeat {r}: {v}, {pct}% from the median) flagged, kept",
        "离群的测试(第 {r} 轮:{v},偏离中位数 {pct}%)已标记,仍保留",
    ),
    ("{k} failed run(s) excluded", "已排除 {k} 次失败的测试"),
    ("CV {a}% > {b}%", "变异系数 {a}% > {b}%"),
    ("{k} pair(s) with a missing value dropped", "已剔除 {k} 对含缺失值的配对"),
    (
        "Fieller interval unbounded: the denominator mean is not distinguishable from 0",
        "Fieller 区间无界:分母均值与 0 无法区分",
    ),
    (
        "Fieller interval unbounded: baseline mean not distinguishable from 0",
        "Fieller 区间无界:基准组均值与 0 无法区分",
    ),
    (
        "paired within {k} rounds (arm order varied): round drift cancels",
        "在 {k} 轮内配对(各轮测试组顺序不同):轮间漂移相互抵消",
    ),
    (
        "paired within {k} rounds (as asked): round drift cancels",
        "按要求在 {k} 轮内配对:轮间漂移相互抵消",
    ),
    (
        "paired by the round number in the log names: this assumes both arms ran together in "
        "each round (a round's drift then cancels); logs of rounds run at different times are "
        "not pairs",
        "按日志文件名中的轮次配对:前提是两个测试组在每一轮中一起运行(这样一轮的漂移才会抵消);"
        "不同时间运行的轮次不能配对",
    ),
    (
        "unpaired: the arms ran in the same order in every round, so a within-round comparison "
        "would carry that order's bias",
        "未配对:每轮中各测试组的运行顺序相同,轮内比较会带入该顺序的偏差",
    ),
    (
        "Holm's step-down test (p={p}) is sharper than the simultaneous interval over the {k} "
        "cells {adj}, which still includes 0: the claim is the direction, the per-cell interval "
        "its size",
        "Holm 逐步检验 (p={p}) 比 {k} 个测试场景的联合区间 {adj} 更灵敏,后者仍包含 0:"
        "结论只针对方向,幅度看测试场景自身的区间",
    ),
    (
        "Holm p={p} < {a}, but no bounded interval excludes 0: no claim",
        "Holm p={p} < {a},但没有有界区间排除 0:不下结论",
    ),
    (
        "significant (Holm p={p}) but the estimate lies within +-{d}%",
        "显著 (Holm p={p}),但估计值在 ±{d}% 以内",
    ),
    (
        "the {lvl} interval excludes 0 for this cell alone; across the {k} cells of this "
        "comparison Holm p={p} and the simultaneous interval {adj} includes 0: not a claim",
        "单看此测试场景,{lvl} 置信区间不含 0;但在本次对比的 {k} 个测试场景中 Holm p={p},"
        "且联合区间 {adj} 包含 0:不下结论",
    ),
    (
        "the {lvl} interval excludes 0 for this cell alone; across the {k} cells of this "
        "comparison Holm p={p} (Welch's test on the difference; Fieller's simultaneous interval "
        "is {adj}): not a claim",
        "单看此测试场景,{lvl} 置信区间不含 0;但在本次对比的 {k} 个测试场景中 Holm p={p}"
        "(对差值的 Welch 检验;Fieller 联合区间为 {adj}):不下结论",
    ),
    (
        "some thread count has n<2: geometric mean without interval",
        "某些压测线程数 n<2:几何平均没有置信区间",
    ),
    ("{arm}: no runs at {t} threads", "{arm}:{t} 线程下没有测试"),
    # rounds
    (
        "round {r} is {e}% [{lo}, {hi}] against rounds {others} (Holm p={p}): warm-up or drift",
        "第 {r} 轮相对第 {others} 轮 {e}% [{lo}, {hi}](Holm p={p}):预热不足或漂移",
    ),
    (
        "round {r} is {e}% [{lo}, {hi}] against round {others} (Holm p={p}): warm-up or drift",
        "第 {r} 轮相对第 {others} 轮 {e}% [{lo}, {hi}](Holm p={p}):预热不足或漂移",
    ),
    ("{note} (the paired comparison cancels it)", "{note}(配对比较可将其抵消)"),
    (
        "rounds {r} excluded from the statistics (compare.exclude_rounds)",
        "第 {r} 轮不计入统计 (compare.exclude_rounds)",
    ),
    (
        "round {r} excluded from the statistics (compare.exclude_rounds)",
        "第 {r} 轮不计入统计 (compare.exclude_rounds)",
    ),
    # saturation
    (
        "only {k} thread counts: USL needs 6 or more to be trusted",
        "只有 {k} 个压测线程数:USL 需要 6 个以上才可信",
    ),
    ("too few points to fit the USL", "数据点太少,无法拟合 USL"),
    ("USL fit did not converge", "USL 拟合未收敛"),
    (
        "kappa ~ 0 (< 0.1% effect in the tested range): no retrograde throughput, the curve "
        "levels off towards lambda/sigma",
        "kappa ≈ 0(在测试范围内影响 < 0.1%):吞吐量没有回落,曲线趋于 lambda/sigma",
    ),
    (
        "kappa's interval includes 0: a throughput peak is not established",
        "kappa 的置信区间包含 0:无法确定吞吐量峰值",
    ),
    (
        "N* = {n} lies outside the tested range {a}-{b} threads: extrapolated",
        "N* = {n} 超出测试范围 {a}-{b} 线程:属于外推",
    ),
    (
        "n=1 at some thread count: point figures only, no intervals",
        "某些压测线程数 n=1:只有点估计,没有置信区间",
    ),
    (
        "the peak is at the largest thread count tested: saturation may lie beyond",
        "峰值出现在测试的最大压测线程数:饱和点可能更高",
    ),
    # bottleneck diagnosis (tibenchlib.diagnose): its warnings and reasons
    (
        "the largest thread count has the highest mean TPS but the last step's interval does not "
        "show throughput still rising: the saturation point is uncertain",
        "最大压测线程数的平均 TPS 最高,但最后一步的区间不能说明吞吐仍在上升:饱和点不确定",
    ),
    (
        "at thread count {n} the mean TPS reaches {a} of the peak, but the interval of the gain "
        "from there to thread count {m} reaches beyond {b} or is unbounded: no saturation point "
        "is claimed",
        "压测线程数为 {n} 时平均 TPS 已达峰值的 {a},但从该点到压测线程数 {m} 的增幅区间超过 {b} "
        "或无界:不认定瓶颈点",
    ),
    (
        "the CPU demand of {who} lies between {a} and {b} (or its interval reaches above {c}): "
        "neither at its limit nor clearly free",
        "{who} 的 CPU 需求介于 {a} 与 {b} 之间(或区间超过 {c}):既未达到上限,也不明显空闲",
    ),
    (
        "the throughput curve is unclear and no CPU is at its limit",
        "吞吐量曲线不确定,且没有 CPU 达到上限",
    ),
    (
        "no server CPU measured (a remote server without Prometheus, or sampling off)",
        "未测到服务端 CPU(远程服务端且无 Prometheus,或未开启采样)",
    ),
    ("no CPU count for {who}: pass component_cores", "缺少 {who} 的 CPU 数:请提供 component_cores"),
    ("the CPU of {who} was not measured", "未测到 {who} 的 CPU"),
    (
        "one thread count only: the diagnosis needs a thread ladder",
        "只有一个压测线程数:判断瓶颈需要线程阶梯",
    ),
    # steady state, stability
    (
        "no steady state: MSER-5 cuts {a} s, more than half of the run ({b} s)",
        "未达到稳态:MSER-5 截去 {a} s,超过整次测试 ({b} s) 的一半",
    ),
    ("{n} intervals: too few for MSER-5, nothing cut", "{n} 个区间:不足以做 MSER-5,未截去预热"),
    ("{n} intervals: only {b} batches of 2", "{n} 个区间:只有 {b} 个批次,每批 2 个"),
    ("too few intervals for batch means", "区间太少,无法计算批均值"),
    (
        "batch means still correlated (lag-1 r = {r}): interval too narrow",
        "批均值仍然相关 (lag-1 r = {r}):区间偏窄",
    ),
    (
        "no steady state: the warm-up ({s} s) exceeds half the run",
        "未达到稳态:预热 ({s} s) 超过整次测试的一半",
    ),
    ("nothing left after the warm-up", "预热之后没有剩余数据"),
    ("no intervals: change points not searched", "没有区间数据:未搜索变点"),
    ("fewer than 3 intervals: change points not searched", "区间少于 3 个:未搜索变点"),
    ("median TPS is 0: change points not searched", "TPS 中位数为 0:未搜索变点"),
    (
        "{n} intervals averaged in blocks of {b}: change points to ±{s} s",
        "{n} 个区间按每 {b} 个取平均:变点精度 ±{s} s",
    ),
    # one sysbench run
    ("{z} of {n} intervals had zero TPS", "{n} 个区间中有 {z} 个 TPS 为 0"),
    ("interval TPS varies by {cv} (CV) within the run", "单次测试内区间 TPS 波动 {cv} (变异系数)"),
    ("{e} ignored errors", "忽略的错误 {e} 个"),
    ("{r} reconnects", "重连 {r} 次"),
    ("{source} (pid {pid}) cannot be sampled: {e}", "{source} (pid {pid}) 无法采样:{e}"),
    # TPC-H
    ("{a} of {n} repeats {status}", "{n} 次重复中 {a} 次 {status}"),
    ("n = 1: no interval", "n = 1:没有置信区间"),
    (
        "not compared: a repeat of this query failed or timed out in an arm",
        "未比较:该查询在某个测试组中有重复执行失败或超时",
    ),
    ("no times", "没有耗时数据"),
    # verdicts of a comparison (stats.compare_arms)
    (
        "inconclusive: the interval [{lo}, {hi}] is wider than 4 x {d}%; more runs are needed "
        "for any verdict",
        "无法判断:置信区间 [{lo}, {hi}] 宽于 4 × {d}%;需要更多次测试才能下结论",
    ),
    (
        "inconclusive: the interval is unbounded; more runs are needed for any verdict",
        "无法判断:置信区间无界;需要更多次测试才能下结论",
    ),
    (
        "inconclusive: Holm p={p} < {a}, but the interval is unbounded (no finite interval for "
        "the ratio), so neither better nor worse can be claimed",
        "无法判断:Holm p={p} < {a},但置信区间无界(比值没有有限区间),不能说更好或更差",
    ),
    (
        "inconclusive: Holm p={p} < {a}, but the interval includes 0: the test and the interval "
        "disagree, no claim",
        "无法判断:Holm p={p} < {a},但置信区间包含 0:检验与区间不一致,不下结论",
    ),
    (
        "size at least {d}%: the simultaneous interval [{lo}, {hi}] lies beyond the margin",
        "幅度至少 {d}%:联合置信区间 [{lo}, {hi}] 整体超出界限",
    ),
    (
        "size below {d}%: the simultaneous interval [{lo}, {hi}] lies within the margin",
        "幅度小于 {d}%:联合置信区间 [{lo}, {hi}] 整体在界限以内",
    ),
    (
        "size not settled: the simultaneous interval [{lo}, {hi}] reaches both sides of {d}%",
        "幅度未定:联合置信区间 [{lo}, {hi}] 跨越 {d}% 的两侧",
    ),
    (
        "equivalent: the simultaneous interval [{lo}, {hi}] lies within the +-{d}% margin",
        "相当:联合置信区间 [{lo}, {hi}] 整体在 ±{d}% 的界限以内",
    ),
    (
        "Holm p={p} < {a}, but the simultaneous interval [{lo}, {hi}] includes 0: no claim",
        "Holm p={p} < {a},但联合置信区间 [{lo}, {hi}] 包含 0:不下结论",
    ),
    (
        "the {lv} interval excludes 0 for this cell alone, but the simultaneous interval over "
        "the {k} cells [{lo}, {hi}] includes 0: not a claim",
        "仅就本组而言 {lv} 置信区间不包含 0,但 {k} 组的联合置信区间 [{lo}, {hi}] 包含 0:不构成结论",
    ),
    (
        "a real difference (Holm p={p}), but its estimate lies within the +-{d}% margin (the "
        "interval reaches [{lo}, {hi}]): significant, yet small",
        "差异真实存在 (Holm p={p}),但估计值在 ±{d}% 的界限以内(置信区间达到 [{lo}, {hi}]):"
        "显著,但很小",
    ),
    (
        "a real difference (Holm p={p}), and the whole interval lies within the +-{d}% margin: "
        "significant, but smaller than what matters",
        "差异真实存在 (Holm p={p}),且整个置信区间都在 ±{d}% 的界限以内:显著,但小到无关紧要",
    ),
    (
        "no spread in either arm (sd = 0): the interval has zero width and p is 0 or 1 - "
        "identical figures look copied or rounded, not measured",
        "两组都没有波动 (sd = 0):置信区间宽度为零,p 为 0 或 1——完全相同的数字像是复制或取整的,"
        "不像实测",
    ),
    (
        "no spread in either sample (sd = 0): a zero-width interval, not measured",
        "两个样本都没有波动 (sd = 0):置信区间宽度为零,不像实测",
    ),
    (
        "{k} run(s) with {m} <= 0 excluded: no work done (degenerate)",
        "已排除 {k} 次 {m} <= 0 的测试:没有完成任何工作(退化)",
    ),
    (
        "mean <= 0 (numerator {a}, denominator {b}): a ratio of throughputs or times needs "
        "positive means; refused",
        "均值 <= 0(分子 {a},分母 {b}):吞吐量或耗时的比值需要正的均值;拒绝计算",
    ),
    # adaptive repeats
    (
        "Holm p={p} < {a}, but the estimate lies within ±{d}%: no claim",
        "Holm p={p} < {a},但估计值在 ±{d}% 以内:不下结论",
    ),
    (
        "Holm p={p} < {a}, but no bounded interval excludes 0 on its side: no claim",
        "Holm p={p} < {a},但没有有界区间在其一侧排除 0:不下结论",
    ),
    (
        "adaptive: {r} rounds ({note}), group-sequential interval at nominal {lvl} with {df} df "
        "(looks after rounds {looks}, 95% over all looks)",
        "自适应:{r} 轮({note}),成组序贯置信区间,名义水平 {lvl},自由度 {df}"
        "(在第 {looks} 轮后查看,全部查看合计 95%)",
    ),
    # the adaptive stopping reasons (adaptive.REASONS) inside that note
    ("estimate above margin", "区间高于 0 且估计值高于界限"),
    ("estimate below margin", "区间低于 0 且估计值低于界限"),
    ("out of reach", "在轮次上限内难以得出结论"),
    ("stage 1", "第一阶段"),
    ("running", "进行中"),
    ("target width", "达到目标宽度"),
    ("above margin", "整个区间高于界限"),
    ("below margin", "整个区间低于界限"),
    ("within margin", "整个区间在界限以内"),
    ("max rounds", "达到轮次上限"),
    (
        "the first {m} rounds gave identical ratios: a zero-width interval, too good to be true "
        "(check the runs)",
        "前 {m} 轮的比值完全相同:置信区间宽度为零,好得不真实(请检查测试)",
    ),
    ("adaptive: {r} of the first {m} rounds measured", "自适应:前 {m} 轮中已测 {r} 轮"),
    # DM recommendation (dm.analysis), TPC-C data sets (tpcc.phase's prepare_steps detail)
    ("no smaller setting within 5% of the best", "没有更小的设置能达到最佳值的 5% 以内"),
    (
        "{w} warehouses, {i} items, {c} customers per district ({tool})",
        "{w} 个仓库,{i} 个商品,每区 {c} 个客户 ({tool})",
    ),
    ("loaded: {w} warehouses; {note}", "已加载:{w} 个仓库;{note}"),
    ("loaded: {w} warehouses", "已加载:{w} 个仓库"),
    ("consistency conditions {c} hold", "一致性条件 {c} 均成立"),
    (
        "consistency condition {c} ({rule}) violated in {v} rows, and {k} more",
        "一致性条件 {c} ({rule}) 有 {v} 行不满足,另有 {k} 条也不满足",
    ),
    (
        "consistency condition {c} ({rule}) violated in {v} rows",
        "一致性条件 {c} ({rule}) 有 {v} 行不满足",
    ),
    # saturation, steady state, stability
    ("USL: {note}", "USL:{note}"),
    (
        "no saturation claimed: the USL fit has no peak within the tested range and the last "
        "step is not established as flat",
        "不认定饱和:USL 拟合在测试范围内没有峰值,最后一段也未确认已持平",
    ),
    ("mean interval figure <= 0: no interval", "区间均值 <= 0:没有置信区间"),
    # compare.compare_inputs: the figure the comparison used against the other one
    (
        "steady-state TPS after the MSER-5 warm-up cut gives {a}, sysbench's whole-run TPS "
        "(warm-up included) gives {b}: they differ by more than the interval",
        "MSER-5 预热截断后的稳态 TPS 为 {a},sysbench 整个运行的 TPS(含预热)为 {b}:两者之差超过区间",
    ),
    (
        "sysbench's whole-run TPS (warm-up included) gives {a}, steady-state TPS after the "
        "MSER-5 warm-up cut gives {b}: they differ by more than the interval",
        "sysbench 整个运行的 TPS(含预热)为 {a},MSER-5 预热截断后的稳态 TPS 为 {b}:两者之差超过区间",
    ),
    (
        "successive seconds are correlated (lag-1 r = {r}): the change-point penalty is scaled "
        "by the long-run deviation ({x}x)",
        "相邻各秒相关 (lag-1 r = {r}):变点惩罚按长期标准差放大 ({x} 倍)",
    ),
    (
        "{k} dip event(s) ({f} to the floor); worst at t={t}s down to {r} of the baseline for {d}s",
        "{k} 次下跌({f} 次跌到底);最严重的在 t={t}s,降到基线的 {r},持续 {d}s",
    ),
    (
        "New-Order counts disagree: {a} new orders in the table, {b} counted by the driver",
        "New-Order 计数不一致:表中新增 {a} 个订单,驱动统计为 {b} 个",
    ),
    ("the driver printed no transaction counts", "驱动没有输出事务计数"),
    ("sysbench exited with status {s}", "sysbench 退出状态为 {s}"),
    (
        "level shifts at t={t}s (segment levels {lv} of the run median)",
        "在 t={t}s 处水平变化(各段水平为整次测试中位数的 {lv})",
    ),
]

_FIELD = re.compile(r"\{(\w+)\}")


def _pattern(template: str) -> re.Pattern:
    out, pos = [], 0
    for m in _FIELD.finditer(template):
        out.append(re.escape(template[pos : m.start()]))
        name = m.group(1)
        out.append(f"(?P<{name}>\\S+?)" if name == "arm" else f"(?P<{name}>.+?)")
        pos = m.end()
    out.append(re.escape(template[pos:]))
    return re.compile("".join(out), re.DOTALL)


_NOTES = [(_pattern(en), zh) for en, zh in NOTES]


def note(text: str, lang: str = "en") -> str:
    """One warning of the library in ``lang``; an unknown one stays as it is (English)."""
    if check_lang(lang) == "en" or not text:
        return text
    for pattern, zh in _NOTES:
        m = pattern.fullmatch(text)
        if m:
            fields = m.groupdict()
            if "note" in fields:
                translated = note(fields["note"], lang)
                if translated == fields["note"] and zh.startswith("{arm}"):
                    continue  # "a: b" where b is no known warning: not this template
                fields["note"] = translated
            for key in ("others", "who"):  # a list ("1, 3"; "server, client") said as
                if key in fields:  # Chinese lists are
                    fields[key] = fields[key].replace(", ", "、")
            # the template's punctuation in full width; the fields (figures, names, a nested
            # note already converted) keep theirs
            guarded = {k: _guard(v) if isinstance(v, str) else v for k, v in fields.items()}
            return _unguard(zh_punct(zh.format(**guarded)))
    return text


def notes(warnings, lang: str = "en") -> str:
    """A cell of warnings (a list, or one string joined by "; ") in ``lang``, joined by "; ";
    never cut."""
    if warnings is None or (isinstance(warnings, float) and math.isnan(warnings)):
        return ""
    items: Iterable = warnings if isinstance(warnings, list | tuple) else str(warnings).split("; ")
    items = [note(str(x), lang) for x in items if x]
    return ("；" if lang == "zh" else "; ").join(items)
