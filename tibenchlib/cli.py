"""The tibench command: run a study's phases, control the embedded server, capture, parse, compare.

Results go to stdout (JSON with ``--json``, aligned tables without); progress and logs go to
stderr, so ``tibench run params/ci.yaml --phase sweep --json | jq …`` works.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import logging
import os
import shutil
import signal
import sys
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from . import __version__, paths, phasenames

# The one module that imports inside functions by design: each subcommand imports the modules it
# needs when it runs, so that `tibench --version` and `tibench parse` start without pandas,
# pydantic, SQLAlchemy, SciPy or nbformat (tests/test_cli_startup.py holds it to that).


def _print_json(obj) -> None:
    json.dump(obj, sys.stdout, indent=1, ensure_ascii=False, default=str)
    sys.stdout.write("\n")


def _fail(msg: str, code: int = 2) -> int:
    print(f"tibench: error: {msg}", file=sys.stderr)
    return code


# -- run ---------------------------------------------------------------------------------------
def cmd_run(a) -> int:
    # import inside: the CLI's light start-up (see the note at the top)
    from . import phases, studyplan
    from .notebook import PHASE_NOTEBOOKS, execute_phase_notebook
    from .params import load_study

    study = load_study(a.params)
    selected = studyplan.ordered_phases(study, a.phase)
    studyplan.check_arms(study, selected, a.arm)
    if not a.in_process and not a.dry_run:
        absent = [paths.notebook_file(PHASE_NOTEBOOKS[p]) for p in selected]
        absent = [str(nb) for nb in absent if not nb.exists()]
        if absent:
            return _fail(f"notebook not found: {', '.join(absent)} (or run with --in-process)")
    if a.dry_run:
        plan_out = studyplan.dry_run(study, selected, a.arm)
        if a.json:
            _print_json(plan_out)
        else:
            print(_dry_run_text(plan_out))
        return 0
    # import inside: the CLI's light start-up (see the note at the top)
    from .db import remove_stale_configs
    from .lock import study_lock
    from .paths import private_dir
    from .server import leases
    from .studyplan import embedded_servers, human_duration

    results, took = {}, {}
    before = {st["name"] for st in _servers() if st["running"]}
    t_run = time.monotonic()
    # one lock for every phase, and the leases of its servers from the first phase to the last
    # (no other study changes their settings between notebooks); the kernels run under both
    with (
        study_lock(study.study),
        leases(embedded_servers(study, selected)),
        _stopped_on_error(before, a.keep_server),  # interrupted or failed: servers as found
    ):
        remove_stale_configs(private_dir(study.study))
        for k, p in enumerate(selected, start=1):
            print(f"tibench: [{k}/{len(selected)}] {p}", file=sys.stderr, flush=True)
            t_phase = time.monotonic()
            kw = dict(redo=a.redo, yes=a.yes, arms=studyplan.arms_for(study, p, a.arm))
            if kw["arms"] == []:
                print(f"tibench: phase {p}: none of the selected arms is in it", file=sys.stderr)
                results[p] = []
                continue
            if a.in_process:
                phases.run_phase(study, p, progress=True, **kw)
            else:
                try:
                    execute_phase_notebook(study.study, p, a.params, progress=True, **kw)
                except Exception as e:
                    if type(e).__name__ == "PapermillExecutionError":
                        _stop_servers(before, a.keep_server)
                        return _fail(_notebook_failure(study.study, p, e), 1)
                    raise
            results[p] = phases.read_results(study, p)
            took[p] = human_duration(time.monotonic() - t_phase)
        stopped = _stop_servers(before, a.keep_server)  # under the leases: no one else's yet
    if a.json:
        _print_json(results[selected[0]] if len(selected) == 1 else results)
    else:
        for p in selected:
            where = _shown(paths.phase_results(study.study, p))
            print(f"{p}: {len(results[p])} rows in {took.get(p, '0 s')} -> {where}")
    out = sys.stderr if a.json else sys.stdout
    print(f"\nstudy {study.study}: {len(selected)} phases in "
          f"{human_duration(time.monotonic() - t_run)}", file=out)  # fmt: skip
    # the commands it names must reach the same data directory
    given = getattr(a, "data_dir", None)
    flag = f" --data-dir {_shown(paths.data_dir())}" if given else ""
    for line in _run_summary(study, a.in_process, stopped, flag):
        print(line, file=out)
    return 0


def _servers() -> list[dict]:
    """The status of every embedded server under the data directory."""
    # import inside: the CLI's light start-up (see the note at the top)
    from .server import embedded

    top = paths.servers_dir()
    names = sorted(d.name for d in top.iterdir() if d.is_dir()) if top.is_dir() else []
    return [embedded(n).status() for n in names]


@contextlib.contextmanager
def _stopped_on_error(before: set[str], keep: bool):
    """Stop the servers this run started when it ends by an error or an interruption."""
    try:
        yield
    except BaseException:
        _stop_servers(before, keep)
        raise


def _stop_servers(before: set[str], keep: bool) -> list[str]:
    """Stop the embedded servers that were not running before this run (unless ``keep``);
    return their names."""
    # import inside: the CLI's light start-up (see the note at the top)
    from .server import embedded

    started = [st["name"] for st in _servers() if st["running"] and st["name"] not in before]
    if keep:
        return []
    for name in started:
        embedded(name).stop()
    return started


def _shown(p: Path) -> str:
    """A path relative to the current directory when it is inside it (what a user types)."""
    try:
        return str(Path(p).resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(p)


def _stop_command(name: str, flag: str = "") -> str:
    return f"tibench{flag} server stop" + ("" if name == "embedded" else f" --name {name}")


def _run_summary(study, in_process: bool, stopped: list[str], flag: str = "") -> list[str]:
    """What to read next, which servers the run stopped and which are still running; ``flag``
    is added to every command named (``--data-dir DIR`` when the run was given one)."""
    name = study.study
    lines = _findings_lines(study, flag)
    if in_process:
        lines.append(f"results: {_shown(paths.study_dir(name))}/results/")
    else:
        lines.append(f"executed notebooks: {_shown(paths.study_dir(name))}/notebooks/")
    lines.append(
        f"report: tibench{flag} report {name}  (writes {_shown(paths.study_dir(name))}/report/)"
    )
    if stopped:
        lines.append(f"stopped the embedded MariaDB this run started: {', '.join(stopped)} "
                     "(--keep-server keeps it running)")  # fmt: skip
    for st in _servers():
        if st["running"]:
            stop = _stop_command(st["name"], flag)
            lines.append(f"still running: embedded MariaDB '{st['name']}' (pid {st['pid']}, "
                         f"port {st['port']}): {stop} stops it")  # fmt: skip
    return lines


#: How many findings the run's summary prints (answers first); the rest are one command away.
SUMMARY_FINDINGS = 8
#: Findings that answer a question, printed before those that say there is no answer yet.
_ANSWERS = ("better", "worse", "equivalent", "bottleneck", "saturated", "rising")


def _findings_lines(study, flag: str = "") -> list[str]:
    """The study's findings, first in the run's summary: the answers first, at most
    :data:`SUMMARY_FINDINGS`, then the command that prints them all (also saved as
    ``results/findings.json``)."""
    # import inside: the CLI's light start-up (see the note at the top)
    from . import findings

    lang = study.lang
    try:
        found = findings.study_findings(study)
        findings.save(study.study, found)
    except Exception as e:  # the measurements are safe in the catalog; say why, don't fail
        return [f"findings: not computed ({type(e).__name__}: {e}); "
                f"try: tibench{flag} findings {study.study}"]  # fmt: skip
    every = [f for fs in found.values() for f in fs]
    if not every:
        return []
    every.sort(key=lambda f: f.verdict not in _ANSWERS)  # stable: phase order within each
    head = "发现：" if lang == "zh" else "findings:"
    shown = every[:SUMMARY_FINDINGS]
    lines = [head] + [_wrap(findings.render(f, lang), "- ", "  ") for f in shown]
    more = len(every) - SUMMARY_FINDINGS
    if more > 0:
        lines.append(
            f"（另有 {more} 条：tibench{flag} findings {study.study}）"
            if lang == "zh"
            else f"({more} more: tibench{flag} findings {study.study})"
        )
    if any(f.caveats for f in every):  # stand-ins and scaled designs: said where all are shown
        lines.append(
            f"（部分结论附有须知（替代方案、缩小的设计）：tibench{flag} findings {study.study}）"
            if lang == "zh"
            else f"(some findings carry notes on stand-ins and scaled designs: "
            f"tibench{flag} findings {study.study})"
        )
    return [*lines, ""]


def _dry_run_text(plan_out: dict) -> str:
    # import inside: the CLI's light start-up (see the note at the top)
    from .studyplan import human_bytes, human_duration
    from .texttable import format_table

    rows = [
        [e["phase"], e["runs"], human_duration(e["eta_s"]), human_bytes(e["disk_bytes"]), e["note"]]
        for e in plan_out["phases"]
    ]
    for row, e in zip(rows, plan_out["phases"], strict=True):
        if "eta_min_s" in e:  # adaptive repeats: from the least to the most it may run
            row[1] = f"{e['runs_min']}–{e['runs']}"
            row[2] = f"{human_duration(e['eta_min_s'])}–{human_duration(e['eta_s'])}"
    rows.append(
        ["total", "", human_duration(plan_out["eta_s"]), human_bytes(plan_out["disk_bytes"]), ""]
    )
    head = (
        f"study {plan_out['study']}: ETA {human_duration(plan_out['eta_s'])}, "
        f"~{human_bytes(plan_out['disk_bytes'])} of disk (rough figures besides the sweep's)"
    )
    lines = [head, "", format_table(["phase", "runs", "time", "disk", "what"], rows, max_width=90)]
    lines += [f"{e['phase']}: {e['rule']}" for e in plan_out["phases"] if e.get("rule")]
    if plan_out["runs"]:
        most = any(e.get("rule") for e in plan_out["phases"])
        lines += ["", "sweep runs, in order" + (" (the most it may run):" if most else ":")]
        lines += [f"  {r['seq']:4d}  {r['run_key']}" for r in plan_out["runs"]]
    return "\n".join(lines)


def _notebook_failure(study: str, phase: str, e) -> str:
    """Where to look when a phase's notebook failed: the executed copy and the failing cell."""
    # import inside: the CLI's light start-up (see the note at the top)
    from .notebook import executed_path

    source = (getattr(e, "source", "") or "").strip().splitlines()
    first = source[0] if source else ""
    count = getattr(e, "exec_count", None)
    where = f"cell {getattr(e, 'cell_index', '?')}" + (f" (In [{count}])" if count else "")
    return (
        f"phase {phase} failed in {where}: {first}\n"
        f"  {getattr(e, 'ename', type(e).__name__)}: {getattr(e, 'evalue', e)}\n"
        f"  open the executed notebook: {executed_path(study, phase)}"
    )


# -- runs --------------------------------------------------------------------------------------
def cmd_runs(a) -> int:
    # import inside: the CLI's light start-up (see the note at the top)
    from .studyplan import progress, study_from
    from .texttable import format_frame

    _check_catalog(a.study)
    study = study_from(a.study)
    _check_catalog(study)
    df = progress(study)
    if a.json:
        _print_json(json.loads(df.to_json(orient="records")))
    else:
        print(f"study {study.study}: done, failed and pending per phase and arm")
        print(format_frame(df))
    return 0


def _check_catalog(ref) -> None:
    """Refuse a study whose ``results.sqlite`` is a directory or empty (0 bytes), before it
    reads as no catalog or an empty one. ``ref``: a Study, or a name or params path."""
    # import inside: the CLI's light start-up (see the note at the top)
    from .store import check_catalog_path

    if isinstance(ref, str):
        if ref.endswith((".yaml", ".yml")) or Path(ref).is_file():
            return
        try:
            check_catalog_path(paths.catalog_file(ref), reading=True)
        except paths.PathError:
            return  # not a study name: study_from says so
    elif not ref.results_url:
        check_catalog_path(paths.catalog_file(ref.study), reading=True)


# -- tools -------------------------------------------------------------------------------------
def cmd_tools(a) -> int:
    # import inside: the CLI's light start-up (see the note at the top)
    from .report.tools import study_tools_rows, tools_table
    from .studyplan import study_from
    from .texttable import format_frame

    study = study_from(a.study)
    rows = study_tools_rows(study, lang=a.lang or study.lang)
    if a.json:
        _print_json(json.loads(rows.to_json(orient="records")))
    elif not len(rows):
        print(f"study {study.study}: no sweep, ycsb or tpcc runs in the catalog yet")
    else:
        print(f"study {study.study}: throughput, p95 and p99 per tool and thread count [95% CI]")
        print(format_frame(tools_table(rows, a.lang or study.lang)))
    return 0


# -- server ------------------------------------------------------------------------------------
def cmd_server(a) -> int:
    # import inside: the CLI's light start-up (see the note at the top)
    from .server import embedded

    srv = embedded(a.name)
    if a.action == "stop" and a.name != "embedded" and not srv.root.exists():
        # the default server is "stopped" before its first start; another name is a typo
        known = (
            sorted(p.name for p in srv.root.parent.iterdir()) if srv.root.parent.is_dir() else []
        )
        return _fail(
            f"server --name {a.name}: no such embedded server (none at {srv.root}; "
            f"known: {', '.join(known) or 'none'})"
        )
    if a.action == "start":
        srv.ensure()
    elif a.action == "stop":
        srv.stop()
    st = srv.status()
    if a.json:
        _print_json(st)
    else:
        state = f"running, pid {st['pid']}, 127.0.0.1:{st['port']}" if st["running"] else "stopped"
        print(f"embedded server '{st['name']}': {state} (datadir {st['datadir']})")
    return 0


# -- env ---------------------------------------------------------------------------------------
def cmd_env(a) -> int:
    # import inside: the CLI's light start-up (see the note at the top)
    from .envcapture import capture_host
    from .params import load_study

    cap = {"host": capture_host(data_dir=paths.data_dir())}
    if a.params:
        # import inside: the CLI's light start-up (see the note at the top)
        from .phases import run_phase

        study = load_study(a.params)
        run_phase(study, "environment", yes=a.yes)
        # import inside: the CLI's light start-up (see the note at the top)
        from .store import Store

        cap["arms"] = Store.for_study(study).environment_captures(study.study)
    if a.json:
        _print_json(cap)
    else:
        # import inside: the CLI's light start-up (see the note at the top)
        from .envcapture import environment_tables

        for name, df in environment_tables(cap["host"] if not a.params else cap).items():
            print(f"## {name}\n{df.to_string(index=False)}\n")
    return 0


# -- parse -------------------------------------------------------------------------------------
def cmd_parse(a) -> int:
    # import inside: the CLI's light start-up (see the note at the top)
    from .parse.files import NotALog, read_log

    rows = []
    empty = 0  # files unreadable, or holding nothing the tool writes
    for f in a.files:
        # a file that cannot be read is a row with its own status, like any other bad input
        problem = _unreadable(f)
        if problem:
            print(f"tibench: {f}: {problem}", file=sys.stderr)
            rows.append({"file": f, "status": "unreadable", "error": problem})
            empty += 1
            continue
        if a.tool == "sysbench":
            # import inside: the CLI's light start-up (see the note at the top)
            from .parse.sysbench import parse_sysbench_file

            found = [parse_sysbench_file(f, intervals=False).summary]
        elif a.tool == "tpcc":
            # import inside: the CLI's light start-up (see the note at the top)
            from .parse.gotpc import parse_tpcc_file

            found = [parse_tpcc_file(f).summary]
        elif a.tool == "ycsb":
            # import inside: the CLI's light start-up (see the note at the top)
            from .parse.ycsb import parse_ycsb_file

            found = [parse_ycsb_file(f).summary]
        else:
            # import inside: the CLI's light start-up (see the note at the top)
            from .parse.gotpc import parse_tpch_output

            try:
                df = parse_tpch_output(read_log(f, "go-tpc TPC-H log"))
            except NotALog as e:  # a line too long: noise, not a log
                found = [{"file": f, "status": "failed", "error": str(e)}]
            else:
                found = [dict(r, file=f) for r in json.loads(df.to_json(orient="records"))]
                found = found or [{"file": f, "status": "failed", "error": None}]
        none = _no_output(a.tool, found[0])
        if none:
            none = ("is empty: " if os.path.getsize(f) == 0 else "holds ") + none
            # the sysbench parser reads text without a sysbench line as a run cut before its
            # summary ("truncated"); the others' own words say what this line says
            if a.tool == "sysbench" or not found[0]["error"]:
                found[0]["error"] = none
            print(f"tibench: {f}: {none}", file=sys.stderr)
            empty += 1
        rows += found
    if a.json:
        _print_json(rows)
    else:
        print(_parse_text(a.tool, rows))
    return 2 if empty == len(a.files) else 0


def _no_output(tool: str, row: dict) -> str | None:
    """What a file lacks when it holds nothing the tool writes (empty, another tool's output,
    noise), from its first parsed ``row``; None when it holds the tool's output, a run cut
    short or failed included (its row says so)."""
    if row.get("status") == "ok":
        return None
    error = row.get("error") or ""
    if tool == "sysbench":
        seen = row.get("sysbench_version") or row.get("intervals") or row.get("events")
        foreign = not seen and error.startswith("truncated: no summary")
        what = "no sysbench output (no version line, interval line or statistics)"
    elif tool == "tpch":
        foreign = "query" not in row  # no [Current] or [Summary] line at all
        what = "no TPC-H result (no go-tpc '[Current]' or '[Summary] Qn: …s' line)"
    elif tool == "tpcc":
        foreign = error == "no go-tpc TPC-C lines in the output"
        what = "no TPC-C result (no go-tpc TPC-C lines)"
    else:
        foreign = error in ("empty file", "not YCSB or go-ycsb output")
        what = "no YCSB result (not YCSB or go-ycsb output)"
    return what if foreign else None


def _unreadable(f: str) -> str | None:
    p = Path(f)
    if p.is_dir():
        return "is a directory, not a log file"
    if not p.exists():
        return "no such file"
    if not p.is_file():  # a FIFO would block the read, /dev/zero would never end
        return "is not a regular file (a pipe, device or socket), not a log file"
    try:
        with open(p, "rb") as fh:
            fh.read(1)
    except OSError as e:
        return f"cannot be read ({e.strerror})"
    return None


def _parse_text(tool: str, rows: list[dict]) -> str:
    """The parsed rows as an aligned table: the figures a reader compares, one line per run."""
    # import inside: the CLI's light start-up (see the note at the top)
    from .texttable import format_table

    if tool == "tpch":
        cols = list(dict.fromkeys(k for r in rows for k in r))
        return format_table(cols, [[r.get(c) for c in cols] for r in rows])
    if tool == "tpcc":
        cols = ["file", "status", "tpmc", "tpm_total", "efficiency_pct", "runtime_s"]
        out = format_table(
            [*cols[:-2], "efficiency %", "runtime s"], [[r.get(c) for c in cols] for r in rows]
        )
        return "\n".join([out, *(f"{r['file']}: {r['error']}" for r in rows if r.get("error"))])
    if tool == "ycsb":
        return _parse_text_ycsb(rows)
    cols = ["file", "status", "threads", "tps", "qps", "lat avg ms", "lat pct ms", "errors/s"]
    table = [
        [
            r.get("file"),
            r.get("status"),
            r.get("threads"),
            r.get("tps"),
            r.get("qps"),
            (r.get("latency_ms") or {}).get("avg"),
            (r.get("latency_ms") or {}).get("percentile_value"),
            r.get("errors_per_s"),
        ]
        for r in rows
    ]
    pct = {r.get("percentile") for r in rows} - {None}
    if len(pct) == 1:
        cols[6] = f"lat p{pct.pop():g} ms"
    out = format_table(cols, table)
    failed = [f"{r.get('file')}: {r.get('error')}" for r in rows if r.get("error")]
    return "\n".join([out, *failed])


def _parse_text_ycsb(rows: list[dict]) -> str:
    """One line per file and operation: the run's throughput, then each operation's figures."""
    # import inside: the CLI's light start-up (see the note at the top)
    from .texttable import format_table

    cols = ["file", "status", "tool", "ops/s", "operation", "count", "errors"]
    cols += ["avg ms", "p95 ms", "p99 ms"]
    table = []
    for r in rows:
        head = [r.get("file"), r.get("status"), r.get("tool"), r.get("throughput_ops_s")]
        ops = r.get("operations") or {}
        if not ops:
            table.append(head + [None] * 6)
        for op, n in ops.items():
            lat = (r.get("latency_ms") or {}).get(op) or {}
            errs = (r.get("errors") or {}).get(op, 0)
            table.append(head + [op, n, errs, lat.get("avg"), lat.get("p95"), lat.get("p99")])
    out = format_table(cols, table)
    failed = [f"{r.get('file')}: {r.get('error')}" for r in rows if r.get("error")]
    return "\n".join([out, *failed])


# -- compare -----------------------------------------------------------------------------------
def cmd_compare(a) -> int:
    # import inside: the CLI's light start-up (see the note at the top)
    from . import compare as cmpmod
    from .report.comparison import report_table

    if a.paired and (a.table or not (Path(a.baseline or "").is_dir() and a.candidate)):
        return _fail("--paired pairs two directories of logs by the round in their names")
    if a.table:
        if not (a.baseline_name and a.candidate_name):
            return _fail("--table needs --baseline NAME and --candidate NAME")
        df = cmpmod.compare_from_csv(
            a.table, a.baseline_name, a.candidate_name, delta_pct=a.delta, workload=a.workload
        )
    else:
        if not (a.baseline and a.candidate):
            return _fail("give BASELINE and CANDIDATE (log directories or STUDY/ARM), or --table")
        missing = _missing_side(a.baseline, a.candidate)
        if missing:
            return _fail(missing)
        kw = {"paired": True} if a.paired else {}
        try:
            df = cmpmod.compare_refs(
                a.baseline, a.candidate, delta_pct=a.delta, workload=a.workload, **kw
            )
        except FileNotFoundError as e:  # STUDY/ARM of a study never run here: bad input
            return _fail(f"{e}: run that study first, or name a folder of sysbench logs", 2)
    if a.json:
        cols = [c for c in cmpmod.JSON_COLUMNS if c in df.columns]
        _print_json(json.loads(df[cols].to_json(orient="records")))
    else:
        # import inside: the CLI's light start-up (see the note at the top)
        from .texttable import format_frame

        print(format_frame(report_table(df, lang=a.lang), max_width=80))
        if a.paired:
            print(cmpmod.PAIRED_NOTE)
    if a.paired and a.json:
        print(cmpmod.PAIRED_NOTE, file=sys.stderr)
    return 0


def _missing_side(baseline: str, candidate: str) -> str | None:
    """The side of ``compare`` that is neither a directory nor a ``STUDY/ARM`` reference, named
    with what to give; None when each side is one or the other. When one side is a directory,
    the other is taken for a directory too (``STUDY/ARM`` on one side only is no comparison)."""
    sides = [("baseline", baseline), ("candidate", candidate)]
    dirs = [Path(ref).is_dir() for _, ref in sides]
    for (side, ref), is_dir in zip(sides, dirs, strict=True):
        if is_dir:
            continue
        if Path(ref).exists():
            return f"{side} {ref}: is a file; give the directory of sysbench logs it is in"
        study, sep, arm = ref.partition("/")
        as_ref = sep and study and arm and not ref.startswith((".", "~")) and study != ".."
        if any(dirs) or not as_ref:
            return (
                f"{side} {ref}: no such directory (give two directories of sysbench logs, "
                "or two STUDY/ARM references)"
            )
    return None


# -- report ------------------------------------------------------------------------------------
def cmd_report(a) -> int:
    # import inside: the CLI's light start-up (see the note at the top)
    from .notebook import PHASE_NOTEBOOKS
    from .params import ParamsError
    from .report import html
    from .studyplan import study_from

    # a params file or a study's name; the language defaults to the study's own `lang`
    _check_catalog(a.study)
    try:
        study = study_from(a.study)
        name, lang = study.study, a.lang or study.lang
    except ParamsError:
        if a.study.endswith((".yaml", ".yml")) or Path(a.study).exists():
            raise
        name, lang = a.study, a.lang or "en"
    else:
        _check_catalog(study)
    out = html.build_report(name, lang=lang, fmt=a.format)
    for phase in PHASE_NOTEBOOKS:
        st = html.phase_status(name, phase)
        print(f"{phase:<14} {html.TEXT[lang][st.state]}", file=sys.stderr)
    print(f"figures and tables: {html.report_dir(name)}", file=sys.stderr)
    print(out)
    return 0


def _add_report_parser(cmd) -> None:
    rp = cmd("report", "one self-contained HTML report of a study, with its figures and tables")
    rp.add_argument(
        "study", help="the study's name (its directory under the data directory) or YAML"
    )
    rp.add_argument(
        "--lang", choices=["en", "zh"], default=None,
        help="language of the report's headings and tables (default: the study's lang, else en)",
    )  # fmt: skip
    rp.add_argument("--format", choices=["html"], default="html", help="output format (html)")
    rp.set_defaults(func=cmd_report)


def cmd_diagnose(a) -> int:
    # import inside: the CLI's light start-up (see the note at the top)
    from .report.diagnosis import as_json, diagnosis_table, note, sentences, study_diagnosis
    from .studyplan import study_from
    from .texttable import format_frame

    study = study_from(a.study)
    _check_catalog(study)
    lang = a.lang or study.lang
    cores = {}
    for item in a.component_cores or []:
        comp, _, n = item.partition("=")
        try:
            cores[comp.strip()] = float(n)
        except ValueError:
            return _fail(f"--component-cores {item!r}: expected COMPONENT=CPUS, e.g. tidb=16")
    d = study_diagnosis(study, lang=lang, component_cores=cores or None)
    if a.json:
        _print_json(as_json(d.drop(columns=["sentence_en", "sentence_zh"])))
        return 0
    if not len(d):
        print(f"study {study.study}: no sweep runs in the catalog, nothing to diagnose")
        return 0
    table = diagnosis_table(d, lang)
    if not a.verbose:
        table = _essential(table, d, lang)
    print(format_frame(table, max_width=200 if a.verbose else 40))
    print()
    for s in sentences(d):
        print(_wrap(s, "- ", "  "))
    print()
    print(_wrap(note(lang)))
    if not a.verbose:
        print(_wrap(_MORE[lang]))
    return 0


#: The hint under ``diagnose``'s short table, in the reader's language.
_MORE = {
    "en": "(-v: every column; --json: every figure)",
    "zh": "（-v：显示全部列；--json：输出全部数值）",
}


#: What a terminal table or paragraph must fit (``diagnose``, ``runs``).
TERMINAL_WIDTH = 120
#: The diagnosis columns a terminal shows without ``-v``, by position in ``diagnosis_table``
#: (workload, arm, verdict, resource at its limit, saturates from, runs, CPU demand of it),
#: under short headers so the table fits :data:`TERMINAL_WIDTH`.
_ESSENTIAL = [0, 1, 2, 3, 4, 6, 7]
_SHORT_HEAD = {
    "en": [
        "workload",
        "arm",
        "verdict",
        "at its limit",
        "saturates at",
        "n",
        "CPU demand [95% CI]",
    ],
    # the report's own headers (report.diagnosis), shortened where they are long
    "zh": ["测试场景", "测试组", "结论", "瓶颈资源", "饱和起点", "n", "CPU 需求 [95% 置信区间]"],
}


def _essential(table, d, lang: str):
    """The diagnosis table's essential columns, a missing figure shown as "—"."""
    # import inside: the CLI's light start-up (see the note at the top)
    from .report.diagnosis import saturation_text

    out = table[[table.columns[i] for i in _ESSENTIAL]].copy()
    out.columns = _SHORT_HEAD[lang]
    # the diagnosis's own answer, shortened: a peak at the ladder's top is no saturation point
    said = [
        saturation_text(st, n, m, lang, short=True)
        for st, n, m in zip(d["saturation"], d["n_sat"], d["n_max"], strict=True)
    ]
    out.iloc[:, 4] = [x if x != "n/a" else "—" for x in said]
    return out.replace({"": "—", "n/a": "—", "nan": "—"})


def _wrap(text: str, first: str = "", rest: str = "") -> str:
    """``text`` wrapped to the terminal's width, at most :data:`TERMINAL_WIDTH` display
    columns (a CJK character takes two), never inside a number or an interval."""
    # import inside: the CLI's light start-up (see the note at the top)
    from .terminal import wrap

    return wrap(text, None, first, rest)


def cmd_findings(a) -> int:
    # import inside: the CLI's light start-up (see the note at the top)
    from . import findings
    from .registry import PHASES
    from .studyplan import study_from

    study = study_from(a.study)
    _check_catalog(study)
    lang = a.lang or study.lang
    found = findings.study_findings(study)
    try:
        findings.save(study.study, found)
    except OSError as e:  # a study on a read-only folder is read, its findings shown unsaved
        logging.getLogger(__name__).warning("findings not saved: %s", e)
    if a.json:
        _print_json(
            {p: [{**f.to_dict(), "text": findings.render(f, lang)} for f in fs]
             for p, fs in found.items()}
        )  # fmt: skip
        return 0
    titles = {p.name: p.title(lang) for p in PHASES}
    if not any(found.values()):
        print(f"study {study.study}: nothing measured yet, no findings")
        return 0
    print(findings.terminal_text(found, titles, lang))
    print()
    return 0


def _add_findings_parser(cmd) -> None:
    fp = cmd("findings", "what the study found, one sentence per finding, with its interval")
    fp.add_argument("study", help="the study's name (its catalog under the data directory) or YAML")
    fp.add_argument("--json", action="store_true", help="the findings as JSON on stdout")
    fp.add_argument(
        "--lang", choices=["en", "zh"], default=None,
        help="language of the sentences (default: the study's lang)",
    )  # fmt: skip
    fp.set_defaults(func=cmd_findings)


def _add_diagnose_parser(cmd) -> None:
    dp = cmd(
        "diagnose",
        "which resource limits each workload of a sweep (client CPU, server CPU, other), "
        "with its numbers and intervals",
    )
    dp.add_argument("study", help="the study's name (its catalog under the data directory) or YAML")
    dp.add_argument("--json", action="store_true", help="the diagnosis rows as JSON on stdout")
    dp.add_argument(
        "--lang", choices=["en", "zh"], default=None,
        help="language of the table and sentences (default: the study's lang)",
    )  # fmt: skip
    dp.add_argument(
        "--component-cores", action="append", metavar="COMPONENT=CPUS",
        help="CPUs per instance of a TiDB component, e.g. tidb=16 (repeatable): Prometheus "
        "gives the cores busy, this gives the share",
    )  # fmt: skip
    dp.set_defaults(func=cmd_diagnose)


def _version() -> str:
    try:
        return version("tibench")
    except PackageNotFoundError:
        return __version__


def build_parser() -> argparse.ArgumentParser:
    common = _common_options()
    p = argparse.ArgumentParser(
        prog="tibench", description=__doc__.splitlines()[0], parents=[common]
    )
    p.add_argument("--version", action="version", version=f"tibench {_version()}")
    sub = p.add_subparsers(dest="cmd", required=True, metavar="COMMAND")

    def cmd(name: str, help: str) -> argparse.ArgumentParser:
        return sub.add_parser(
            name, help=help, description=help.replace("%%", "%"), parents=[common]
        )

    for add in (
        _add_run_parser,
        _add_catalog_parsers,
        _add_server_and_env_parsers,
        _add_parse_parser,
        _add_compare_parser,
        _add_report_parser,
        _add_diagnose_parser,
        _add_findings_parser,
    ):
        add(cmd)
    return p


def _common_options() -> argparse.ArgumentParser:
    """-v and --data-dir, accepted before and after the subcommand."""
    # SUPPRESS keeps a subcommand's default from overwriting what was given before it
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
        help="debug logging on stderr, and the full traceback of an error",
    )  # fmt: skip
    common.add_argument(
        "--data-dir", metavar="DIR", default=argparse.SUPPRESS,
        help="where results, catalogs and the embedded server live (default: $TIBENCH_DATA, "
        "else data/ of the project, or of the current directory when installed)",
    )  # fmt: skip
    return common


def _add_run_parser(cmd) -> None:
    """``tibench run``."""
    r = cmd("run", "run a study's phases (its notebooks, through papermill)")
    r.add_argument("params", help="the study's YAML file")
    r.add_argument(
        "--phase", action="append", metavar="NAME",
        help=f"run only this phase: {', '.join(phasenames.NAMES)} (repeatable; run in this order)",
    )  # fmt: skip
    r.add_argument(
        "--arm", action="append", metavar="LABEL",
        help="run only this arm, NUMA policy or TPC-H arm (repeatable)",
    )  # fmt: skip
    r.add_argument("--redo", action="store_true", help="run again what is already measured")
    r.add_argument(
        "--dry-run", action="store_true",
        help="print what would run, with time and disk estimates per phase; run nothing",
    )  # fmt: skip
    r.add_argument(
        "--json", action="store_true",
        help="result rows (or the dry run's plan) as JSON on stdout",
    )  # fmt: skip
    r.add_argument(
        "--yes", action="store_true",
        help="allow steps that write or drop data on a target other than the embedded server",
    )  # fmt: skip
    r.add_argument(
        "--in-process", action="store_true",
        help="call the library directly instead of executing the notebooks",
    )  # fmt: skip
    r.add_argument(
        "--keep-server", action="store_true",
        help="leave running the embedded MariaDB servers this run started (default: stop them)",
    )  # fmt: skip
    r.set_defaults(func=cmd_run)


def _add_catalog_parsers(cmd) -> None:
    """``tibench runs`` and ``tibench tools``: what the catalog holds."""
    ru = cmd("runs", "what is done, failed and pending per phase and arm, from the catalog")
    ru.add_argument("study", help="the study's name (its catalog under the data directory) or YAML")
    ru.add_argument("--json", action="store_true", help="the rows as JSON on stdout")
    ru.set_defaults(func=cmd_runs)

    to = cmd("tools", "sysbench, YCSB and TPC-C side by side per thread count, with intervals")
    to.add_argument("study", help="the study's name (its catalog under the data directory) or YAML")
    to.add_argument("--json", action="store_true", help="the rows as JSON on stdout")
    to.add_argument("--lang", choices=["en", "zh"], default=None, help="language of the table")
    to.set_defaults(func=cmd_tools)


def _add_server_and_env_parsers(cmd) -> None:
    """``tibench server`` and ``tibench env``."""
    s = cmd("server", "start, stop or show the embedded MariaDB")
    s.add_argument("action", choices=["start", "stop", "status"], help="what to do")
    s.add_argument("--name", default="embedded", help="which embedded server (default: embedded)")
    s.add_argument("--json", action="store_true", help="its status as JSON on stdout")
    s.set_defaults(func=cmd_server)

    e = cmd("env", "capture the environment: this host, and with --params every arm's database")
    e.add_argument("--params", help="a study's YAML file: also capture every arm's database")
    e.add_argument("--json", action="store_true", help="the capture as JSON on stdout")
    e.add_argument(
        "--yes", action="store_true",
        help="allow steps that write data on a target other than the embedded server",
    )  # fmt: skip
    e.set_defaults(func=cmd_env)


def _add_parse_parser(cmd) -> None:
    """``tibench parse``."""
    pa = cmd("parse", "read sysbench, TPC-H, TPC-C or YCSB tool output into a table (or JSON)")
    pa.add_argument(
        "tool", choices=["sysbench", "tpch", "tpcc", "ycsb"],
        help="which tool wrote the files (tpch, tpcc: go-tpc / tiup bench; ycsb: the Java YCSB "
        "or go-ycsb, told apart by output)",
    )  # fmt: skip
    pa.add_argument("files", nargs="+", help="the tool's output files")
    pa.add_argument("--json", action="store_true", help="every parsed field as JSON on stdout")
    pa.set_defaults(func=cmd_parse)


def _add_compare_parser(cmd) -> None:
    """``tibench compare``."""
    c = cmd("compare", "A/B comparison with Fieller 95%% intervals, Welch p values and verdicts")
    c.add_argument(
        "baseline", nargs="?", help="baseline: a directory of sysbench logs or STUDY/ARM"
    )
    c.add_argument("candidate", nargs="?", help="candidate: a directory of logs or STUDY/ARM")
    c.add_argument(
        "--table", metavar="CSV",
        help="a summary CSV instead: workload, threads, arm, tps[, lat_p95_ms, repeat]",
    )  # fmt: skip
    c.add_argument(
        "--baseline", dest="baseline_name", metavar="NAME", help="baseline arm (with --table)"
    )
    c.add_argument(
        "--candidate", dest="candidate_name", metavar="NAME", help="candidate arm (with --table)"
    )
    c.add_argument("--workload", help="compare only this workload")
    c.add_argument(
        "--delta", type=float, default=2.0, metavar="PCT",
        help="smallest difference in %% that counts in the verdict (default: 2)",
    )  # fmt: skip
    c.add_argument(
        "--lang", choices=["en", "zh"], default="en", help="language of the table's headers"
    )
    c.add_argument("--json", action="store_true", help="the comparison rows as JSON on stdout")
    c.add_argument(
        "--paired", action="store_true",
        help="pair two log directories by the round in the log names (..._r3.log); assumes "
        "both arms ran together in each round",
    )  # fmt: skip
    c.set_defaults(func=cmd_compare)


#: Loggers that, once tibench is told to stop, only repeat the interrupt: papermill's "Kernel died
#: while waiting for execute reply", asyncio's "Task exception was never retrieved" (the
#: DeadKernelError of the cell that was running) when the phase notebook's kernel is shut down,
#: and SQLAlchemy's pool, whose "Exception closing connection" carries the interrupt's traceback
#: when it lands while a connection is being closed.
INTERRUPT_ECHOES = ("papermill", "asyncio", "sqlalchemy.pool")


def _not_an_echo(record: logging.LogRecord) -> bool:
    return not record.name.startswith(INTERRUPT_ECHOES)


def _terminate(signum, frame):
    # SIGTERM and Ctrl-C unwind alike: papermill shuts its kernel down, children die with us, and
    # what was measured is already in the catalog. The user gets one line saying so. The filter
    # sits on the handlers: a logger's own filter misses its children's records (SQLAlchemy logs
    # under one logger per pool class).
    for handler in logging.getLogger().handlers:
        handler.addFilter(_not_an_echo)
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    try:
        a = build_parser().parse_args(argv)
    except KeyboardInterrupt:  # Ctrl-C before tibench's own handler is set: nothing ran yet
        return _fail("interrupted before anything ran", 130)
    a.verbose = getattr(a, "verbose", False)
    with paths.using_data_dir(getattr(a, "data_dir", None)):
        return _main(a)


def _main(a) -> int:
    signal.signal(signal.SIGTERM, _terminate)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # not where ignored (&)
        signal.signal(signal.SIGINT, _terminate)
    logging.basicConfig(
        level=logging.DEBUG if a.verbose else logging.INFO,
        stream=sys.stderr,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        code = a.func(a)
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        return _closed_stdout()
    except KeyboardInterrupt:
        return _fail("interrupted: measured runs are in the catalog; run again to resume", 130)
    except Exception as e:  # a clear message for the user; the traceback with -v
        if _is_params_error(e):
            return _fail(str(e))
        if a.verbose:
            raise
        name = type(e).__name__
        full = _disk_full(e)
        if full:
            return _fail(full, 2)
        if hasattr(e, "exit_code"):  # bad input found before anything ran (e.g. the catalog)
            return _fail(f"{name}: {e}", e.exit_code)
        if name == "PapermillExecutionError":
            return _fail(f"{getattr(e, 'ename', name)}: {getattr(e, 'evalue', e)}", 1)
        return _fail(f"{name}: {e}", 1)


def _is_params_error(e: Exception) -> bool:
    # only a subcommand that read a study file imported params: without it, no ParamsError
    params = sys.modules.get(f"{__package__}.params")
    return params is not None and isinstance(e, params.ParamsError)


def _disk_full(e: BaseException) -> str | None:
    """One line naming where the disk filled up, or None when ``e`` is not a full disk.

    ``OSError: [Errno 28]`` from a write names no file, and SQLite says only "database or disk
    is full": the line names the file when known, else the data directory's file system.
    An error that says so itself (the catalog's :class:`~tibenchlib.store.CatalogDiskFull`)
    is shown as it is."""
    if "no space left" in str(e):
        return None
    try:
        data_free = shutil.disk_usage(paths.data_dir()).free
    except OSError:
        data_free = None
    err = e
    while err is not None:
        if isinstance(err, OSError) and err.errno == errno.ENOSPC:
            break
        if "database or disk is full" in str(err):
            break
        # SQLite's "disk I/O error" when its journal cannot grow on a full disk
        if "disk I/O error" in str(err) and data_free is not None and data_free < (1 << 20):
            break
        err = err.__cause__ or err.__context__
    if err is None:
        return None
    # the full device is the one that holds the file, links resolved: a study folder linked to
    # another disk names that disk and its free space, not the data directory's
    where = Path(os.path.realpath(getattr(err, "filename", None) or paths.data_dir()))
    try:
        free = shutil.disk_usage(next(d for d in (where, *where.parents) if d.exists())).free
    except OSError:
        free = None
    left = f", {free >> 20} MiB free" if free is not None else ""
    return (
        f"no space left on the device holding {where}{left}: free some space and run again "
        "(measured runs are in the catalog; the run being written is measured again)"
    )


def _closed_stdout() -> int:
    """The reader of stdout went away (``tibench … | head``): stop quietly, as Unix tools do.

    Python would report the broken pipe again when it flushes stdout at exit, so stdout is
    pointed at /dev/null first.
    """
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return 141  # 128 + SIGPIPE, what a shell reports for a tool killed by the closed pipe


if __name__ == "__main__":
    sys.exit(main())
