"""The ``tibench`` command: run phases, control the embedded server, capture, parse, compare.

Results go to stdout (JSON with ``--json``); progress and logs go to stderr, so
``tibench run params/ci.yaml --phase sweep --json | jq …`` works.
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
from pathlib import Path

from .params import PHASES, ParamsError, load_study


def _print_json(obj) -> None:
    json.dump(obj, sys.stdout, indent=1, ensure_ascii=False, default=str)
    sys.stdout.write("\n")


def _fail(msg: str, code: int = 2) -> int:
    print(f"tibench: error: {msg}", file=sys.stderr)
    return code


# -- run ---------------------------------------------------------------------------------------
def cmd_run(a) -> int:
    from . import phases
    from .notebook import PHASE_NOTEBOOKS, execute_phase_notebook
    from .paths import notebooks_dir
    from .sweep import estimate, plan

    study = load_study(a.params)
    selected = a.phase or list(study.phases)
    if not a.phase and not a.in_process:
        absent = [p for p in selected if not (notebooks_dir() / PHASE_NOTEBOOKS[p]).exists()]
        for p in absent:
            print(f"tibench: phase {p} has no notebook in this version: skipped", file=sys.stderr)
        selected = [p for p in selected if p not in absent]
    for p in selected:
        if p not in PHASES:
            return _fail(f"unknown phase '{p}' (phases: {', '.join(PHASES)})")
    if a.dry_run:
        specs = plan(study, arms=a.arm or None)
        est = estimate(study, specs)
        plan_out = {
            "study": study.study,
            "phases": selected,
            "runs": [s.__dict__ | {"run_key": s.run_key} for s in specs]
            if "sweep" in selected
            else [],
            "eta_s": est["eta_s"] if "sweep" in selected else 0,
            "disk_bytes": est["disk_bytes"] if "sweep" in selected else 0,
        }
        if a.json:
            _print_json(plan_out)
        else:
            print(
                f"study {study.study}: phases {', '.join(selected)}; sweep of "
                f"{len(plan_out['runs'])} runs, ETA {plan_out['eta_s'] / 60:.1f} min, "
                f"~{plan_out['disk_bytes'] / 1e6:.1f} MB of logs"
            )
            for r in plan_out["runs"]:
                print(f"  {r['seq']:4d}  {r['run_key']}")
        return 0
    from .db import remove_stale_configs
    from .lock import study_lock
    from .paths import private_dir

    results = {}
    # one lock for every phase; the notebooks' kernels run under it (see tibenchlib.lock)
    with study_lock(study.study):
        remove_stale_configs(private_dir(study.study))
        for p in selected:
            print(f"tibench: phase {p}", file=sys.stderr, flush=True)
            kw = dict(redo=a.redo, yes=a.yes, arms=a.arm or None)
            if a.in_process:
                phases.run_phase(study, p, progress=True, **kw)
            else:
                out = execute_phase_notebook(study.study, p, a.params, progress=True, **kw)
                print(f"tibench: executed notebook {out}", file=sys.stderr)
            results[p] = phases.read_results(study, p)
    if a.json:
        _print_json(results[selected[0]] if len(selected) == 1 else results)
    else:
        for p in selected:
            print(f"{p}: {len(results[p])} rows -> {phases.results_dir(study) / (p + '.json')}")
    return 0


# -- server ------------------------------------------------------------------------------------
def cmd_server(a) -> int:
    from .server import embedded

    srv = embedded(a.name)
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
    from . import paths
    from .envcapture import capture_host

    cap = {"host": capture_host(data_dir=paths.data_dir())}
    if a.params:
        from .phases import environment

        study = load_study(a.params)
        environment(study, yes=a.yes)
        from .store import Store

        cap["arms"] = Store.for_study(study).environment_captures(study.study)
    if a.json:
        _print_json(cap)
    else:
        from .envcapture import environment_tables

        for name, df in environment_tables(cap["host"] if not a.params else cap).items():
            print(f"## {name}\n{df.to_string(index=False)}\n")
    return 0


# -- parse -------------------------------------------------------------------------------------
def cmd_parse(a) -> int:
    rows = []
    unreadable = 0
    for f in a.files:
        # a file that cannot be read is a row with its own status, like any other bad input
        problem = _unreadable(f)
        if problem:
            print(f"tibench: {f}: {problem}", file=sys.stderr)
            rows.append({"file": f, "status": "unreadable", "error": problem})
            unreadable += 1
            continue
        if a.tool == "sysbench":
            from .parse.sysbench import parse_sysbench_file

            rows.append(parse_sysbench_file(f, intervals=False).summary)
        else:
            from .parse.gotpc import parse_tpch_output

            df = parse_tpch_output(Path(f).read_text(errors="replace"))
            rows += [dict(r, file=f) for r in json.loads(df.to_json(orient="records"))]
    if a.json:
        _print_json(rows)
    else:
        for r in rows:
            print(r)
    return 2 if unreadable == len(a.files) else 0


def _unreadable(f: str) -> str | None:
    p = Path(f)
    if p.is_dir():
        return "is a directory, not a log file"
    if not p.exists():
        return "no such file"
    try:
        with open(p, "rb") as fh:
            fh.read(1)
    except OSError as e:
        return f"cannot be read ({e.strerror})"
    return None


# -- compare -----------------------------------------------------------------------------------
def cmd_compare(a) -> int:
    from . import compare as cmpmod

    if a.table:
        if not (a.baseline_name and a.candidate_name):
            return _fail("--table needs --baseline NAME and --candidate NAME")
        df = cmpmod.compare_from_csv(
            a.table, a.baseline_name, a.candidate_name, delta_pct=a.delta, workload=a.workload
        )
    else:
        if not (a.baseline and a.candidate):
            return _fail("give BASELINE and CANDIDATE (log directories or STUDY/ARM), or --table")
        df = cmpmod.compare_refs(a.baseline, a.candidate, delta_pct=a.delta, workload=a.workload)
    if a.json:
        cols = [c for c in cmpmod.JSON_COLUMNS if c in df.columns]
        _print_json(json.loads(df[cols].to_json(orient="records")))
    else:
        print(cmpmod.report_table(df, lang=a.lang).to_string(index=False))
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tibench", description=__doc__.splitlines()[0])
    p.add_argument("-v", "--verbose", action="store_true", help="debug logging on stderr")
    sub = p.add_subparsers(dest="cmd", required=True)

    r = sub.add_parser("run", help="run a study's phases (notebooks through papermill)")
    r.add_argument("params", help="study YAML file")
    r.add_argument("--phase", action="append", help=f"one of {', '.join(PHASES)} (repeatable)")
    r.add_argument("--arm", action="append", help="only this arm (repeatable)")
    r.add_argument("--redo", action="store_true", help="run again what is already measured")
    r.add_argument("--dry-run", action="store_true", help="print the plan, ETA and disk estimate")
    r.add_argument("--json", action="store_true", help="result rows as JSON on stdout")
    r.add_argument("--yes", action="store_true", help="allow destructive steps on a real target")
    r.add_argument("--in-process", action="store_true", help="skip notebooks, call the library")
    r.set_defaults(func=cmd_run)

    s = sub.add_parser("server", help="the embedded MariaDB")
    s.add_argument("action", choices=["start", "stop", "status"])
    s.add_argument("--name", default="embedded")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_server)

    e = sub.add_parser("env", help="capture the environment (host; with --params, databases)")
    e.add_argument("--params", help="study YAML: also capture every arm's database")
    e.add_argument("--json", action="store_true")
    e.add_argument("--yes", action="store_true")
    e.set_defaults(func=cmd_env)

    pa = sub.add_parser("parse", help="parse tool output into JSON")
    pa.add_argument("tool", choices=["sysbench", "tpch"])
    pa.add_argument("files", nargs="+")
    pa.add_argument("--json", action="store_true")
    pa.set_defaults(func=cmd_parse)

    c = sub.add_parser("compare", help="A/B comparison with Fieller intervals")
    c.add_argument(
        "baseline", nargs="?", help="baseline: a directory of sysbench logs or STUDY/ARM"
    )
    c.add_argument("candidate", nargs="?", help="candidate: a directory of logs or STUDY/ARM")
    c.add_argument("--table", help="summary CSV: workload, threads, arm, tps[, lat_p95_ms, repeat]")
    c.add_argument("--baseline", dest="baseline_name", help="baseline arm name (with --table)")
    c.add_argument("--candidate", dest="candidate_name", help="candidate arm name (with --table)")
    c.add_argument("--workload", help="only this workload")
    c.add_argument("--delta", type=float, default=2.0, help="practical threshold δ in %%")
    c.add_argument("--lang", choices=["en", "zh"], default="en")
    c.add_argument("--json", action="store_true")
    c.set_defaults(func=cmd_compare)
    return p


def _terminate(signum, frame):
    # SIGTERM unwinds like Ctrl-C: papermill shuts its kernel down, children die with us, and
    # what was measured is already in the catalog.
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    a = build_parser().parse_args(argv)
    signal.signal(signal.SIGTERM, _terminate)
    logging.basicConfig(
        level=logging.DEBUG if a.verbose else logging.INFO,
        stream=sys.stderr,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        return a.func(a)
    except ParamsError as e:
        return _fail(str(e))
    except KeyboardInterrupt:
        return _fail("interrupted: measured runs are in the catalog; run again to resume", 130)
    except Exception as e:  # a clear message for the user; the traceback with -v
        if a.verbose:
            raise
        name = type(e).__name__
        if name == "PapermillExecutionError":
            return _fail(f"{getattr(e, 'ename', name)}: {getattr(e, 'evalue', e)}", 1)
        return _fail(f"{name}: {e}", 1)


if __name__ == "__main__":
    sys.exit(main())
