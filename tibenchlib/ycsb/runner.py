"""Run YCSB loads and runs: the upstream Java YCSB with tibench's JDBC binding, or go-ycsb.

Runners run and never parse (:func:`tibenchlib.parse.ycsb.parse_ycsb_file` reads the log).
The password never reaches a command line, a log or a record: the Java binding reads it from a
0600 file named by ``-p db.passwordfile=…``; go-ycsb reads it from a 0600 ``-P`` property file,
and the properties banner go-ycsb prints back is masked in the log when the run ends.

Which tool: :func:`choose_tool` picks go-ycsb for a cluster when it is installed (tibench's own
build, :mod:`tibenchlib.gobuild`, or PATH's; as report 001 runs it), the Java YCSB otherwise
(always on the embedded server).

A timed run (``maxexecutiontime``): the Java YCSB ends it itself; go-ycsb (v1.0.3 included)
defines the property but never reads it, so tibench sends it SIGINT at the deadline, on which
it stops its workers and prints its final figures (:func:`go_deadline_s`).

Client hosts (``ycsb.clients: [local, user@host…]``): :func:`run_on_hosts` runs the Java YCSB
on each, with :mod:`tibenchlib.hosts`' mechanics (pre-flight of ``java``, the start barrier,
the password in a 0600 file of the host's private directory, every client killed on abort);
the binding's jars are copied to each host once (:meth:`~tibenchlib.hosts.ssh.SshHost.
aput_files`), and each host's HdrHistogram files are copied back beside its log.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import sqlalchemy as sa

from .. import paths
from ..clients import execute_together
from ..db import CONFIG_PREFIX, CONFIG_SUFFIX, ConnInfo, secret_file
from ..hosts.execute import ClientJob, ClientResult, run_clients
from ..hosts.preflight import HostCheck
from ..hosts.runs import open_hosts
from ..hosts.spec import host_labels
from ..hosts.ssh import call, remote_dir
from ..tools import Outcome, execute, require, which
from ..ycsb_workload import IDENT as _IDENT
from ..ycsb_workload import Workload
from .build import BINDING_CLASS, CLIENT_CLASS, build_binding

__all__ = [
    "Workload",
    "YcsbError",
    "YcsbRun",
    "choose_tool",
    "create_table",
    "go_ycsb_command",
    "host_paths",
    "open_ycsb_hosts",
    "load",
    "row_count",
    "run",
    "run_on_hosts",
    "run_together",
    "ycsb_command",
]

Tool = Literal["ycsb", "go-ycsb"]
_MASK = "********"
#: go-ycsb's operationcount for a run bounded by maxexecutiontime only.
UNBOUNDED_OPERATIONS = 10**15


class YcsbError(RuntimeError):
    """A load or run failed, or the loaded table does not verify."""


@dataclass(frozen=True)
class YcsbRun:
    """One YCSB or go-ycsb invocation: what ran (password-free) and how it ended."""

    tool: Tool
    action: Literal["load", "run"]
    threads: int
    command: str
    outcome: Outcome
    error: str | None = None  # a client host that failed: one line naming it

    @property
    def log_path(self) -> Path:
        return self.outcome.log_path

    @property
    def ok(self) -> bool:
        return self.outcome.returncode == 0 and not self.outcome.timed_out and not self.error


def choose_tool(conn: ConnInfo) -> Tool:
    """go-ycsb for a cluster when it is installed; the Java YCSB otherwise and on the embedded
    server (whose build tibench controls)."""
    return "go-ycsb" if not conn.embedded and which("go-ycsb") else "ycsb"


def go_deadline_s(action: str, workload: Workload) -> float | None:
    """When tibench ends a go-ycsb invocation with SIGINT: a timed run's ``maxexecutiontime``
    (go-ycsb never reads it), whichever of it and ``operationcount`` comes first ending the
    run as YCSB's rule has it; None for a load and a run of a count only."""
    if action != "run":
        return None
    return float(workload.maxexecutiontime_s) if workload.maxexecutiontime_s else None


# -- the table ----------------------------------------------------------------------------------
def create_table(conn: ConnInfo, workload: Workload, *, recreate: bool = False) -> None:
    """Create ``workload.table`` as both tools expect it: ``ycsb_key`` primary key and
    ``field0..field{fieldcount-1}`` of ``VARCHAR(fieldlength)``. ``recreate`` drops it first
    (the caller asks the user before dropping data on a target it does not own)."""
    t = workload.table
    cols = ", ".join(
        f"`field{i}` VARCHAR({workload.fieldlength})" for i in range(workload.fieldcount)
    )
    eng = conn.engine()
    try:
        with eng.begin() as c:
            if recreate:
                c.exec_driver_sql(f"DROP TABLE IF EXISTS `{t}`")
            c.exec_driver_sql(
                f"CREATE TABLE IF NOT EXISTS `{t}` (`ycsb_key` VARCHAR(255) PRIMARY KEY, {cols})"
            )
    finally:
        eng.dispose()


def row_count(conn: ConnInfo, table: str = "usertable") -> int | None:
    """Rows in ``table``, or None when it does not exist."""
    if not _IDENT.match(table):
        raise ValueError(f"table: not a plain SQL identifier: {table!r}")
    eng = conn.engine()
    try:
        if not sa.inspect(eng).has_table(table):
            return None
        with eng.connect() as c:
            return int(c.exec_driver_sql(f"SELECT COUNT(*) FROM `{table}`").scalar_one())
    finally:
        eng.dispose()


# -- secrets ------------------------------------------------------------------------------------
@contextmanager
def _secret_file(content: str, directory: str | Path | None) -> Iterator[Path]:
    """:func:`tibenchlib.db.secret_file` in ``directory``, created when missing."""
    if directory is not None:
        Path(directory).mkdir(parents=True, exist_ok=True)
    with secret_file(content, directory) as p:
        yield p


def _mask_in_log(log: Path, secret: str | None) -> None:
    if not secret or not log.is_file():
        return
    text = log.read_bytes()
    if secret.encode() in text:
        log.write_bytes(text.replace(secret.encode(), _MASK.encode()))


# -- commands -----------------------------------------------------------------------------------
def _jdbc_url(conn: ConnInfo) -> str:
    url = f"jdbc:mariadb://{conn.host}:{conn.port}/{conn.database}"
    if conn.tls:
        mode = "verify-full" if conn.tls.get("verify_identity") else "verify-ca"
        url += f"?sslMode={mode}"
        if conn.tls.get("ca"):
            url += f"&serverSslCert={conn.tls['ca']}"
    return url


def _action_properties(action: str, workload: Workload) -> dict[str, str]:
    # maxexecutiontime bounds a load too: a load of a timed workload would stop part-way
    props = workload.properties()
    if action == "load":
        props.pop("maxexecutiontime", None)
    return props


def _p(props: dict[str, str]) -> list[str]:
    return [a for k, v in props.items() for a in ("-p", f"{k}={v}")]


def ycsb_command(
    action: Literal["load", "run"],
    conn: ConnInfo,
    workload: Workload,
    *,
    threads: int,
    classpath: str,
    password_file: str | Path | None = None,
    status_interval_s: int = 1,
    measurementtype: str = "hdrhistogram",
    batchsize: int = 100,
    extra: Sequence[str] = (),
    jvm_options: Sequence[str] = (),
) -> list[str]:
    """The Java YCSB command: ``java [jvm_options] -cp … site.ycsb.Client -load|-t -db
    tibench.ycsb.JdbcClient -threads N -s -p …``, password excluded (the binding reads
    ``password_file``)."""
    if threads < 1:
        raise ValueError(f"threads: must be at least 1, got {threads}")
    props = {
        **_action_properties(action, workload),
        "jdbc.url": _jdbc_url(conn),
        "db.user": conn.user,
        "jdbc.batchsize": str(batchsize),
        "measurementtype": measurementtype,
        "status.interval": str(status_interval_s),
    }
    if password_file is not None:
        props["db.passwordfile"] = str(password_file)
    cmd = ["java", *jvm_options, "-cp", classpath, CLIENT_CLASS]
    cmd.append("-load" if action == "load" else "-t")
    cmd += ["-db", BINDING_CLASS, "-threads", str(threads), "-s", *_p(props), *extra]
    return cmd


def go_ycsb_command(
    action: Literal["load", "run"],
    conn: ConnInfo,
    workload: Workload,
    *,
    threads: int,
    property_file: str | Path | None = None,
    extra: Sequence[str] = (),
) -> list[str]:
    """Report 001's form: ``go-ycsb load|run mysql -P <0600 file with mysql.password> -p
    mysql.host=… -p threadcount=N -p recordcount=… …``."""
    if threads < 1:
        raise ValueError(f"threads: must be at least 1, got {threads}")
    props = _action_properties(action, workload)
    props["workload"] = "core"
    if workload.operationcount is None:
        # go-ycsb exits when operationcount < threadcount (0 is not "unbounded" there): a count
        # no run reaches, so maxexecutiontime ends it
        props["operationcount"] = str(UNBOUNDED_OPERATIONS)
    props.update(
        {
            "mysql.host": conn.host,
            "mysql.port": str(conn.port),
            "mysql.user": conn.user,
            "mysql.db": conn.database,
            "threadcount": str(threads),
            "measurement.interval": "1",
            # each failed call's error in the log: why it failed, and the calls the deadline's
            # SIGINT cut short ("context canceled"), which are not the server's errors
            "silence": "false",
        }
    )
    cmd = ["go-ycsb", action, "mysql"]
    if property_file is not None:
        cmd += ["-P", str(property_file)]
    return cmd + _p(props) + list(extra)


def display_command(cmd: Sequence[str]) -> str:
    """The command as a user would type it: the long class path and secret files' paths elided."""
    shown, skip = [], False
    for a in cmd:
        if skip:
            shown.append("<tibench YCSB class path>")
            skip = False
            continue
        if a == "-cp":
            skip = True
        if a.startswith("db.passwordfile="):
            a = "db.passwordfile=<0600 password file>"
        if Path(a).name.startswith(CONFIG_PREFIX) and a.endswith(CONFIG_SUFFIX):
            a = "<0600 property file>"
        shown.append(a)
    return shlex.join(shown)


# -- running ------------------------------------------------------------------------------------
def _invoke(
    tool: Tool,
    action: Literal["load", "run"],
    conn: ConnInfo,
    workload: Workload,
    log_path: str | Path,
    *,
    threads: int,
    secret_dir: str | Path | None,
    timeout_s: float | None,
    home: str | Path | None,
    extra: Sequence[str],
    jvm_options: Sequence[str] = (),
) -> YcsbRun:
    if tool == "ycsb":
        classpath = build_binding(home)  # checks java too
        with _secret_file((conn.password or "") + "\n", secret_dir) as pw:
            cmd = ycsb_command(
                action, conn, workload, threads=threads, classpath=classpath,
                password_file=pw, extra=extra, jvm_options=jvm_options,
            )  # fmt: skip
            out = execute(cmd, log_path, timeout_s=timeout_s)
    elif tool == "go-ycsb":
        require("go-ycsb")
        secret = (conn.password or "").replace("\\", "\\\\")
        with _secret_file(f"mysql.password={secret}\n", secret_dir) as props:
            cmd = go_ycsb_command(
                action, conn, workload, threads=threads, property_file=props, extra=extra
            )
            out = execute(
                cmd, log_path, timeout_s=timeout_s,
                interrupt_after_s=go_deadline_s(action, workload),
            )  # fmt: skip
        _mask_in_log(Path(log_path), conn.password)  # go-ycsb prints its properties back
    else:
        raise ValueError(f"tool: 'ycsb' or 'go-ycsb', got {tool!r}")
    return YcsbRun(tool, action, threads, display_command(cmd), out)


def load(
    conn: ConnInfo,
    workload: Workload,
    log_path: str | Path,
    *,
    threads: int = 4,
    tool: Tool | None = None,
    recreate: bool = True,
    secret_dir: str | Path | None = None,
    timeout_s: float | None = None,
    home: str | Path | None = None,
    extra: Sequence[str] = (),
    jvm_options: Sequence[str] = (),
) -> YcsbRun:
    """Create ``usertable`` and load ``recordcount`` rows, then verify the row count.

    Parameters
    ----------
    conn
        The target; its password reaches the tool only through a 0600 file.
    workload
        Record count, field count and length; the proportions do not matter for a load.
    log_path
        Raw output (stdout and stderr), streamed as the tool writes it.
    threads
        Loader threads.
    tool
        ``ycsb`` or ``go-ycsb``; :func:`choose_tool` when None.
    recreate
        Drop the table first (a load into a non-empty table fails on duplicate keys).
    secret_dir
        Private folder for the password file (``paths.private_dir(study)``); a temp dir if None.
    timeout_s, home, extra, jvm_options
        Longest the load may take; the binding's build root (:func:`build.ycsb_home`); more
        arguments for the tool; options for the Java YCSB's JVM.

    Raises
    ------
    YcsbError
        The tool failed, or the table does not hold ``recordcount`` rows afterwards.
    """
    tool = tool or choose_tool(conn)
    create_table(conn, workload, recreate=recreate)
    r = _invoke(
        tool, "load", conn, workload, log_path, threads=threads, secret_dir=secret_dir,
        timeout_s=timeout_s, home=home, extra=extra, jvm_options=jvm_options,
    )  # fmt: skip
    if not r.ok:
        raise YcsbError(_failure(r))
    n = row_count(conn, workload.table)
    if n != workload.recordcount:
        raise YcsbError(
            f"{workload.table} holds {n} rows after the load, expected recordcount="
            f"{workload.recordcount} (log: {r.log_path})"
        )
    return r


def run(
    conn: ConnInfo,
    workload: Workload,
    log_path: str | Path,
    *,
    threads: int,
    tool: Tool | None = None,
    secret_dir: str | Path | None = None,
    timeout_s: float | None = None,
    home: str | Path | None = None,
    extra: Sequence[str] = (),
    jvm_options: Sequence[str] = (),
) -> YcsbRun:
    """One YCSB run (transactions) at ``threads`` client threads; the raw output goes to
    ``log_path``. A failed run is returned, not raised (``YcsbRun.ok``), so a sweep records it
    and goes on; parse the log with :func:`tibenchlib.parse.ycsb.parse_ycsb_file`."""
    tool = tool or choose_tool(conn)
    return _invoke(
        tool, "run", conn, workload, log_path, threads=threads, secret_dir=secret_dir,
        timeout_s=timeout_s, home=home, extra=extra, jvm_options=jvm_options,
    )  # fmt: skip


def run_together(
    conns: Sequence[ConnInfo],
    workload: Workload,
    log_paths: Sequence[str | Path],
    *,
    threads: int,
    tool: Tool | None = None,
    secret_dir: str | Path | None = None,
    timeout_s: float | None = None,
    home: str | Path | None = None,
    extras: Sequence[Sequence[str]] | None = None,
    jvm_options: Sequence[str] = (),
) -> list[YcsbRun]:
    """Several YCSB clients started together (one per entry of ``conns``: one per tidb-server,
    or the same server several times), each with ``threads`` threads and its own log, password
    file and ``extras`` entry (the Java YCSB's JVMs with ``jvm_options``); returns their runs in
    order once all have ended. A failed client is returned, not raised, and the others' logs
    are kept."""
    if not conns:
        raise ValueError("run_together: no client")
    extras = list(extras) if extras is not None else [()] * len(conns)
    if not len(conns) == len(log_paths) == len(extras):
        raise ValueError("run_together: conns, log_paths and extras differ in length")
    tool = tool or choose_tool(conns[0])
    classpath = build_binding(home) if tool == "ycsb" else None
    with ExitStack() as stack:
        cmds = []
        for conn, extra in zip(conns, extras, strict=True):
            if tool == "ycsb":
                pw = stack.enter_context(_secret_file((conn.password or "") + "\n", secret_dir))
                cmds.append(
                    ycsb_command(
                        "run",
                        conn,
                        workload,
                        threads=threads,
                        classpath=classpath,
                        password_file=pw,
                        extra=extra,
                        jvm_options=jvm_options,
                    )  # fmt: skip
                )
            else:
                secret = (conn.password or "").replace("\\", "\\\\")
                props = stack.enter_context(_secret_file(f"mysql.password={secret}\n", secret_dir))
                cmds.append(
                    go_ycsb_command(
                        "run", conn, workload, threads=threads, property_file=props, extra=extra
                    )
                )
        outs = execute_together(
            cmds, log_paths, timeout_s=timeout_s,
            interrupt_after_s=go_deadline_s("run", workload) if tool == "go-ycsb" else None,
        )  # fmt: skip
    if tool == "go-ycsb":
        for conn, p in zip(conns, log_paths, strict=True):
            _mask_in_log(Path(p), conn.password)
    return [
        YcsbRun(tool, "run", threads, display_command(c), o)
        for c, o in zip(cmds, outs, strict=True)
    ]


# -- client hosts -------------------------------------------------------------------------------
def open_ycsb_hosts(study, conn, *, store=None, arm: str | None = None) -> list[HostCheck]:
    """Pre-flight of ``ycsb.clients``' hosts for ``java`` (a host's own path: its ``java:``);
    raises :class:`tibenchlib.hosts.ssh.HostError`, one line per problem."""
    return open_hosts(
        study, conn, store=store, arm=arm, clients=study.ycsb.client_hosts, tool="java",
        field="java", report_interval_s=1,
    )  # fmt: skip


def host_paths(study, run_key: str) -> tuple[list[Path], list[Path]]:
    """Each client host's raw log and HdrHistogram folder of a run:
    ``raw/ycsb/<run>/<host>.log`` and ``<host>.hdr/``."""
    labels = host_labels([c.host for c in study.ycsb.client_hosts])
    logs = paths.host_run_logs(study.study, "ycsb", run_key, labels)
    return logs, [p.with_suffix(".hdr") for p in logs]


def run_on_hosts(
    ctx,
    workload: Workload,
    logs: Sequence[Path],
    hdr_dirs: Sequence[Path],
    *,
    threads: int,
    name: str,
    timeout_s: float | None = None,
    home: str | Path | None = None,
) -> tuple[list[YcsbRun], list[ClientResult]]:
    """One run of the Java YCSB on every client host of ``ctx.study`` (``threads`` each),
    started together; returns each client's run (``error`` names a host that failed) and
    result (for ``run_hosts``). ``name`` names the run's files on the hosts."""
    study, conn = ctx.study, ctx.conn
    checks = open_ycsb_hosts(study, conn, store=ctx.store, arm=ctx.arm.label)
    classpath = build_binding(home)
    jars = classpath.split(os.pathsep)
    secret = (conn.password or "") + "\n"
    with ExitStack() as stack:
        jobs = []
        for c, host, log, hd in zip(checks, study.ycsb.client_hosts, logs, hdr_dirs, strict=True):
            hd.mkdir(parents=True, exist_ok=True)
            if c.local:
                pw = stack.enter_context(_secret_file(secret, paths.private_dir(study.study)))
                out, cp, outputs = f"{hd}/", classpath, []
            else:
                d = remote_dir(study.study, c.label)
                bundle = call(c.ssh.aput_files(jars))
                cp = ":".join(f"{bundle}/{Path(j).name}" for j in jars)
                pw, out, outputs = f"{d}/{name}.cfg", f"{d}/hdr/", [("hdr", hd)]
            hdr_props = [
                "-p",
                "hdrhistogram.fileoutput=true",
                "-p",
                f"hdrhistogram.output.path={out}",
            ]
            argv = ycsb_command(
                "run", conn, workload, threads=threads, classpath=cp, password_file=pw,
                extra=hdr_props, jvm_options=study.ycsb.jvm_options,
            )  # fmt: skip
            if host.java:
                argv[0] = host.java
            jobs.append(ClientJob(c, argv, Path(log), threads, "" if c.local else secret, outputs))
        results = run_clients(jobs, study=study.study, name=name, timeout_s=timeout_s)
    runs = [
        YcsbRun("ycsb", "run", threads, display_command(j.argv), r.outcome, r.error)
        for j, r in zip(jobs, results, strict=True)
    ]
    return runs, results


def _failure(r: YcsbRun) -> str:
    o = r.outcome
    why = (
        f"{o.missing} is not installed" if o.missing
        else "timed out" if o.timed_out
        else f"exited {o.returncode}"
    )  # fmt: skip
    tail = r.log_path.read_text(errors="replace")[-1500:] if r.log_path.is_file() else ""
    return f"{r.command} {why} (log: {r.log_path}):\n{tail}"
