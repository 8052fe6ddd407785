"""Client hosts for real: two OpenSSH servers on 127.0.0.2 and 127.0.0.3 (each its own sshd,
generated host key, generated user key, non-default port), the embedded MariaDB as target.

Skipped with the reason only where sshd is not installed (make setup installs openssh-server).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil
import pytest
import yaml
from helpers import ROOT, sysbench_seed

from tibenchlib.hosts.loopback import LoopbackSshd, sshd_missing
from tibenchlib.hosts.preflight import check_hosts, problems
from tibenchlib.hosts.runs import close_all, open_hosts
from tibenchlib.hosts.spec import parse_destination
from tibenchlib.hosts.ssh import HostError, SshHost
from tibenchlib.params import ClientHost, parse_study
from tibenchlib.server import embedded


@pytest.fixture
def data_dir(monkeypatch):
    """A private data directory on a short path (under pytest-xdist the usual one can make
    mariadbd's socket path longer than the 107 characters it accepts)."""
    d = Path(tempfile.mkdtemp(prefix="tbh-"))
    monkeypatch.setenv("TIBENCH_DATA", str(d))
    yield d
    embedded().stop()
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def hosts(tmp_path):
    why = sshd_missing()
    if why:
        pytest.skip(why)
    with LoopbackSshd(tmp_path / "sshd") as sshd:
        yield sshd
    close_all()


def _study(name: str, sshd: LoopbackSshd, **over) -> dict:
    """The CI study's sizes (params/ci.yaml) with one local and two SSH clients."""
    d = {
        "study": name,
        "target": {"kind": "embedded"},
        "dataset": {"tables": 2, "table_size": 1000, "prepare_threads": 2},
        "workloads": ["oltp_point_select", "oltp_update_non_index"],
        "threads": [3, 6],
        "duration_s": 2,
        "report_interval_s": 1,
        "repeats": 2,
        "arms": [{"label": "a"}],
        "clients": ["local", *sshd.client_entries()],
    }
    d.update(over)
    return d


def _leftovers(study: str) -> list[str]:
    """Processes of this machine (every loopback host's too) running a study's client."""
    out = []
    for p in psutil.process_iter(["cmdline"]):
        cmd = " ".join(p.info["cmdline"] or [])
        if f".tibench/{study}/" in cmd or f"/{study}/.private/" in cmd:
            out.append(cmd)
    return out


def _connect(entry: dict) -> SshHost:
    return SshHost(
        parse_destination(entry["host"]), key=entry["key"], known_hosts=entry["known_hosts"]
    ).connect()


class _Watch(threading.Thread):
    """Reads every host's process list (``ps`` over its own SSH session, and this machine's)
    and the modes of the hosts' private files, until stopped."""

    def __init__(self, sshd: LoopbackSshd, study: str):
        super().__init__(daemon=True)
        self.hosts = [_connect(e) for e in sshd.client_entries()]
        self.study = study
        self.lists: list[str] = []
        self.modes: list[str] = []
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            for h in self.hosts:
                self.lists.append(str(h.run(["ps", "-eo", "args"]).stdout))
                r = h.run(f"stat -c '%a %n' .tibench/{self.study}/* .tibench/{self.study}/*/*")
                self.modes.append(str(r.stdout))
            here = psutil.process_iter(["cmdline"])
            self.lists.append("\n".join(" ".join(p.info["cmdline"] or []) for p in here))


@pytest.mark.slow
def test_sweep_with_one_local_and_two_ssh_clients(hosts, data_dir, sysbench_bin):
    from tibenchlib import phases
    from tibenchlib.multiclient import merged_percentiles
    from tibenchlib.parse.sysbench import parse_sysbench_file
    from tibenchlib.store import Store
    from tibenchlib.target import open_arm

    study = parse_study(_study("hostsweep", hosts))
    phases.run_phase(study, "prepare", progress=False)
    password = open_arm(study, "a").conn.password
    assert password
    watch = _Watch(hosts, "hostsweep")
    watch.start()
    try:
        phases.run_phase(study, "sweep", progress=False)
    finally:
        watch.stop.set()
        watch.join()
    store = Store.for_study(study, record=False)
    runs = store.runs("hostsweep", phase="sweep")
    assert len(runs) == 8 and (runs["status"] == "ok").all(), runs[["run_key", "error"]]
    per_host = store.read("run_hosts", "hostsweep")
    labels = [parse_destination(e["host"]).label for e in hosts.client_entries()]
    assert sorted(per_host["host"].unique()) == sorted(["local", *labels])
    spreads = []
    for _, run in runs.iterrows():
        mine = per_host[per_host["run_key"] == run["run_key"]]
        logs = [Path(p) for p in mine["log_path"]]
        assert [p.name for p in logs] == ["local.log", *(f"{lab}.log" for lab in labels)]
        assert all(p.parent.parent.name == "sysbench" for p in logs)
        each = [parse_sysbench_file(p) for p in logs]
        assert all(p.summary["status"] == "ok" for p in each)
        assert [p.summary["threads"] for p in each] == list(mine["threads"])
        assert sum(mine["threads"]) == run["threads"]
        seeds = [sysbench_seed(p) for p in logs]  # each client its own requests
        assert None not in seeds and len(set(seeds)) == 3, seeds
        # TPS: the clients' sum; p95: read off the merged histogram, not a mean of p95s
        assert run["tps"] == pytest.approx(sum(p.summary["tps"] for p in each), rel=1e-6)
        assert run["lat_p95_ms"] == pytest.approx(
            merged_percentiles([p.histogram for p in each], [95])[95]
        )
        spreads.append(mine["started_at"].max() - mine["started_at"].min())
    # the start barrier: every client of a run starts at the agreed instant
    assert statistics.median(spreads) < 0.050, spreads
    checks = store.read("client_hosts", "hostsweep")
    remote = checks[checks["host"] != "local"]
    assert len(remote) == 2 and remote["problems"].isna().all()
    assert (remote["clock_offset_ms"].abs() < 1000).all() and (remote["clock_rtt_ms"] > 0).all()
    assert set(checks["tool_version"]) == {
        subprocess.run([sysbench_bin, "--version"], capture_output=True, text=True).stdout.strip()
    }
    samples = store.read("samples", "hostsweep")
    assert {f"client:{lab}" for lab in labels} <= set(samples["source"])
    # each host's contribution per cell: its TPS, its share (all shares add up to the run's
    # whole), its CPU demand, beside the merged TPS of the sweep's table
    from tibenchlib.report.hosts import host_contributions

    c = host_contributions(study)
    assert len(c) == 4 * 3 and (c["n"] == 2).all()
    for _, cell in c.groupby(["workload", "threads"]):
        assert list(cell["host"].astype(str)) == ["local", *labels]
        assert cell["tps_share"].sum() == pytest.approx(1.0)
        assert cell["tps"].sum() == pytest.approx(cell["merged_tps"].iloc[0], rel=1e-6)
        assert cell["cpu_demand"].notna().all() and (cell["cpu_demand"] > 0).all()
    assert (samples[samples["source"].str.startswith("client:")]["cpu_pct"] >= 0).all()
    # the password: in no host's process list during the runs, in no file of the study; the
    # remote credentials files were 0600 in 0700 folders, and are gone
    seen = "\n".join(watch.lists)
    assert ".tibench/hostsweep/" in seen and "--config-file=" in seen  # we did look mid-run
    assert password not in seen
    modes = [line.split() for m in watch.modes for line in m.splitlines()]
    cfg_modes = {mode for mode, name in modes if name.endswith(".cfg")}
    dir_modes = {mode for mode, name in modes if not name.endswith((".cfg", ".pid"))}
    assert cfg_modes == {"600"} and dir_modes == {"700"}, modes
    files = (data_dir / "hostsweep").rglob("*")  # the embedded server's own credentials aside
    leaks = [p for p in files if p.is_file() and password.encode() in p.read_bytes()]
    assert not leaks
    assert not (Path.home() / ".tibench" / "hostsweep").exists()  # nor its empty folder
    assert not _leftovers("hostsweep")


@pytest.mark.slow
def test_a_host_killed_mid_run_fails_that_run_naming_it(hosts, data_dir, sysbench_bin):
    from tibenchlib import phases
    from tibenchlib.parse.sysbench import parse_sysbench_file
    from tibenchlib.sysbench.runner import RunSpec, run_one, study_logs
    from tibenchlib.target import open_arm

    study = parse_study(
        _study("hostkill", hosts, workloads=["oltp_point_select"], duration_s=6, repeats=1)
    )
    phases.run_phase(study, "prepare", progress=False)
    ctx = open_arm(study, "a")
    open_hosts(study, ctx.conn, store=ctx.store, arm="a")
    spec = RunSpec("a", "oltp_point_select", 3, 1)
    logs = study_logs(study, spec)
    out = {}
    t = threading.Thread(target=lambda: out.update(rec=run_one(ctx, spec)))
    t.start()
    end = time.monotonic() + 60
    while "[ 2s ]" not in (logs[2].read_text() if logs[2].exists() else ""):
        assert time.monotonic() < end, "the third client never reported"
        time.sleep(0.1)
    victim = hosts.addresses[1]
    hosts.kill_host(victim)
    t.join(120)
    rec = out["rec"]
    dest = hosts.client_entries()[1]["host"]
    assert rec.status == "failed"
    assert rec.error.startswith(f"client host {dest}:") and "\n" not in rec.error
    # every log kept: the two others complete, the victim's up to its death
    assert all(p.is_file() for p in logs)
    assert parse_sysbench_file(logs[0]).summary["status"] == "ok"
    assert parse_sysbench_file(logs[1]).summary["status"] == "ok"
    assert "[ 2s ]" in logs[2].read_text()
    rows = ctx.store.read("run_hosts", "hostkill")
    assert rec.error.startswith(rows.set_index("destination").loc[dest, "error"]), rec.error
    assert "connection lost" in rec.error
    assert not _leftovers("hostkill")
    # the dead host's private folder (its client's secret file in it) stays until that host's
    # next pre-flight removes it; this host's label (its port) never comes back: remove it here
    _remove_dead_hosts_folder("hostkill", rows.set_index("destination").loc[dest, "host"])


def test_a_missing_tool_is_one_line_naming_host_and_tool(hosts, tmp_path):
    entries = hosts.client_entries()
    clients = [
        ClientHost(host="local"),
        ClientHost(**entries[0]),
        ClientHost(**entries[1], sysbench=str(tmp_path / "no" / "sysbench")),
    ]
    with _listening() as target:
        checks = check_hosts("hostmiss", clients, target, report_interval_s=1)
    assert problems(checks) == [
        f"client host {entries[1]['host']}: {tmp_path / 'no' / 'sysbench'} not found "
        "(install it there or give its path (sysbench:))"
    ]
    assert checks[1].version and checks[1].target_ok and checks[1].cores
    assert abs(checks[1].offset_s) < 1 and checks[1].rtt_s > 0
    for c in checks:
        if c.ssh:
            c.ssh.close()


def test_a_version_mismatch_is_refused_unless_allowed(hosts, tmp_path, data_dir):
    fake = tmp_path / "fake" / "sysbench"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'sysbench 1.1.0-fake'\n")
    fake.chmod(0o755)
    entries = hosts.client_entries()
    base = {
        "study": "hostver",
        "threads": [3],
        "clients": ["local", entries[0], {**entries[1], "sysbench": str(fake)}],
    }
    with _listening() as (host, port):
        conn = type("C", (), {"host": host, "port": port})
        with pytest.raises(HostError) as e:
            open_hosts(parse_study(base), conn)
        (line,) = str(e.value).splitlines()
        assert "versions differ" in line and "1.1.0-fake" in line
        assert "allow_mixed_versions: true" in line
        checks = open_hosts(parse_study({**base, "allow_mixed_versions": True}), conn)
        assert checks[2].version == "sysbench 1.1.0-fake"
    close_all()


def test_an_unreachable_host_is_one_line(hosts):
    bad = ClientHost(host="nobody@127.0.0.9:1", known_hosts=str(hosts.known_hosts))
    with _listening() as target:
        checks = check_hosts(
            "hostgone", [ClientHost(host="local"), bad], target, report_interval_s=1
        )
    (line,) = problems(checks)
    assert line.startswith("client host nobody@127.0.0.9:1: unreachable:")


@pytest.mark.slow
def test_resume_after_sigkill_leaves_nothing_running_on_the_hosts(hosts, tmp_path, data_dir):
    name = "hostresume"
    p = tmp_path / "study.yaml"
    p.write_text(yaml.safe_dump(_study(name, hosts, workloads=["oltp_point_select"], duration_s=3)))
    env = {**os.environ, "TIBENCH_DATA": str(data_dir)}
    cmd = [sys.executable, "-m", "tibenchlib.cli", "run", str(p), "--in-process"]
    first = subprocess.Popen(
        [*cmd, "--phase", "prepare", "--phase", "sweep"],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    private = Path.home() / ".tibench" / name
    end = time.monotonic() + 240
    try:
        while not list(private.glob("*/*.pid")):  # a run is under way on the hosts
            assert first.poll() is None and time.monotonic() < end
            time.sleep(0.05)
        time.sleep(0.5)
        first.send_signal(signal.SIGKILL)
        first.wait()
    finally:
        if first.poll() is None:
            first.kill()
    r = subprocess.run(
        [*cmd, "--phase", "sweep"], env=env, cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    from tibenchlib.store import Store

    runs = Store.for_study(parse_study(yaml.safe_load(p.read_text())), record=False).runs(name)
    # every planned run measured by the second invocation; none failed. On a 2-core machine
    # loaded by other work a 3-second run may print too few intervals (degenerate): that is the
    # machine, not the resume, and the phase then says so (exit 1)
    assert len(runs) == 4 and (runs["status"] != "failed").all(), runs[["run_key", "error"]]
    if r.returncode != 0:
        assert (runs["status"] == "degenerate").any() and "degenerate" in r.stderr, r.stderr
    assert (runs["status"] == "ok").sum() >= 3
    assert not _leftovers(name)
    assert not list(private.glob("*/*"))


class _listening:
    """A TCP port on 127.0.0.1 that accepts (a target the pre-flight can reach)."""

    def __enter__(self):
        import socket

        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        return ("127.0.0.1", self.sock.getsockname()[1])

    def __exit__(self, *exc):
        self.sock.close()


def test_the_environment_captures_every_client_host(hosts, tmp_path, data_dir):
    from tibenchlib import phases
    from tibenchlib.envcapture import host_summary, list_unavailable
    from tibenchlib.store import Store

    study = parse_study(_study("hostenv", hosts, phases=["environment"]))
    phases.run_phase(study, "environment", progress=False)
    cap = Store.for_study(study, record=False).environment_captures("hostenv")["a"]
    labels = [parse_destination(e["host"]).label for e in hosts.client_entries()]
    assert sorted(cap["client_hosts"]) == sorted(labels)
    here = host_summary(cap["host"])
    for lab in labels:
        c = cap["client_hosts"][lab]
        row = host_summary(c)
        # the loopback hosts are this machine: the same CPU, memory and kernel, read remotely
        for key in ("cpu_model", "logical_cpus", "kernel", "os", "sysbench"):
            assert row[key] == here[key], key
        assert (
            abs(row["memory_bytes"] - os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
            < 2**20
        )
        assert abs(c["clock_offset_ms"]) < 1000
        assert not [u for u in list_unavailable(c) if "cpu" in u[0] or "memory" in u[0]]
    close_all()


@pytest.mark.slow
def test_sigterm_kills_the_clients_on_every_host(hosts, tmp_path, data_dir):
    from tibenchlib import phases

    name = "hostterm"
    d = _study(name, hosts, workloads=["oltp_point_select"], duration_s=20, repeats=1)
    phases.run_phase(parse_study(d), "prepare", progress=False)
    p = tmp_path / "study.yaml"
    p.write_text(yaml.safe_dump(d))
    env = {**os.environ, "TIBENCH_DATA": str(data_dir)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tibenchlib.cli", "run", str(p), "--in-process", "--phase", "sweep"],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    private = Path.home() / ".tibench" / name
    end = time.monotonic() + 240
    try:
        while len(list(private.glob("*/*.pid"))) < 2:  # both hosts' clients under way
            assert proc.poll() is None and time.monotonic() < end
            time.sleep(0.05)
        time.sleep(2)
        assert len(_leftovers(name)) >= 3  # the local client and both hosts' (and samplers)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode != 0
    # nothing left on any host the moment tibench is gone, the credentials files removed
    assert not _leftovers(name), _leftovers(name)
    assert not list(private.glob("*/*"))


@pytest.mark.slow
def test_one_ssh_client_alone(hosts, data_dir, sysbench_bin):
    from tibenchlib import phases
    from tibenchlib.sysbench.runner import RunSpec, run_one, study_logs
    from tibenchlib.target import open_arm

    entry = hosts.client_entries()[0]
    study = parse_study(
        _study("hostone", hosts, workloads=["oltp_point_select"], threads=[2], clients=[entry])
    )
    phases.run_phase(study, "prepare", progress=False)
    ctx = open_arm(study, "a")
    rec = run_one(ctx, RunSpec("a", "oltp_point_select", 2, 1))
    assert rec.status == "ok", rec.error
    (log,) = study_logs(study, RunSpec("a", "oltp_point_select", 2, 1))
    assert log.name == f"{parse_destination(entry['host']).label}.log" and rec.tps > 0
    assert "more clients" not in rec.command
    samples = ctx.store.read("samples", "hostone")
    remote = samples[samples["source"] == f"client:{parse_destination(entry['host']).label}"]
    server = samples[samples["source"] == "server"]
    assert len(remote) and len(server)
    # both on one time axis: the host's samples within the server's span, give or take a second
    assert (
        server["t"].min() - 1.5 <= remote["t"].min()
        and remote["t"].max() <= server["t"].max() + 1.5
    )
    assert not _leftovers("hostone")
    close_all()


#: A client host's sysbench held to a twentieth of one CPU whatever its thread count (the CFS
#: bandwidth limit of the cgroup ``{tasks}`` belongs to; ``--version`` untouched, so pre-flight
#: sees the same version everywhere). ``exec`` keeps the client's pid: the host's sampling
#: reads the sysbench process itself, and its threads are born in the cgroup.
STARVED = """#!/bin/sh
case " $* " in *" --version "*) exec sysbench "$@";; esac
echo $$ > {tasks}
exec sysbench "$@"
"""


#: The starved host's CPU per 100 ms period (µs): so little that its sysbench threads wait for
#: a CPU nearly all the time, and the server, seldom asked, has time to spare.
QUOTA_US = 5000


@pytest.fixture
def starved_cgroup():
    """A cgroup whose tasks get at most 5 ms of CPU per 100 ms (cgroup v2's ``cpu.max``, or
    v1's ``cpu.cfs_quota_us``); yields its ``tasks`` (v1) or ``cgroup.procs`` (v2) file.
    Skips the test where no cgroup can be made (not root, a read-only cgroup file system)."""
    v2, v1 = Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/cpu")
    name = f"tibench-test-{os.getpid()}"
    g = None
    try:
        if "cpu" in (v2 / "cgroup.subtree_control").read_text().split():
            g = v2 / name
            g.mkdir()
            (g / "cpu.max").write_text(f"{QUOTA_US} 100000\n")
            tasks = g / "cgroup.procs"
        else:
            raise OSError("no cpu controller in cgroup v2")
    except OSError:
        try:
            g = v1 / name
            g.mkdir()
            (g / "cpu.cfs_period_us").write_text("100000\n")
            (g / "cpu.cfs_quota_us").write_text(f"{QUOTA_US}\n")
            tasks = g / "tasks"
        except OSError as e:
            pytest.skip(f"no cgroup with a CPU limit can be made here ({e})")
    try:
        yield tasks
    finally:
        end = time.monotonic() + 10
        while g.exists():
            try:
                g.rmdir()
            except OSError:  # a task still inside
                assert time.monotonic() < end
                time.sleep(0.2)


@pytest.mark.slow
def test_a_starved_client_host_is_named_by_the_diagnosis_and_shown(
    hosts, tmp_path, data_dir, starved_cgroup
):
    from tibenchlib import phases
    from tibenchlib.report.diagnosis import study_diagnosis
    from tibenchlib.report.hosts import contributions_table, host_contributions
    from tibenchlib.report.html import build_report

    name = "hoststarved"
    starved = tmp_path / "starved" / "sysbench"
    starved.parent.mkdir()
    starved.write_text(STARVED.format(tasks=starved_cgroup))
    starved.chmod(0o755)
    entry = hosts.client_entries()[1]
    # the starved host drives the whole load: its sliver of CPU is what the sweep measures, so
    # throughput is flat over the ladder however busy the machine's other CPUs are
    d = _study(
        name,
        hosts,
        workloads=["oltp_point_select"],
        threads=[8, 16],  # enough threads to use the host's sliver in full at both counts
        repeats=3,
        duration_s=4,  # a few of the host's one-second samples in every run
        clients=[{**entry, "sysbench": str(starved)}],
    )
    study = parse_study(d)
    phases.run_phase(study, "prepare", progress=False)
    phases.run_phase(study, "sweep", progress=False)
    label = parse_destination(entry["host"]).label
    (row,) = study_diagnosis(study, lang="en").to_dict("records")
    assert row["verdict"] == "client_cpu" and row["resource"] == f"client:{label}", row["sentence"]
    assert f"client host {label} CPU-bound" in row["sentence_en"]
    assert f"客户端主机 {label} CPU 瓶颈" in row["sentence_zh"]
    # the contributions say the same: the host gives all the TPS and wants more than its CPUs
    c = host_contributions(study)
    top = c[c["threads"] == 16].set_index("host")
    assert list(top.index) == [label] and top.loc[label, "n"] == 3
    assert top.loc[label, "tps_share"] == pytest.approx(1.0)
    assert top.loc[label, "cpu_demand"] >= 0.9
    assert top.loc[label, "cpu_demand_ci_low"] > 0  # every run sampled the host
    assert top.loc[label, "tps"] == pytest.approx(top.loc[label, "merged_tps"], rel=1e-6)
    for lang in ("en", "zh"):
        html = build_report(name, lang=lang).read_text()
        t = contributions_table(c, lang)
        assert all(h in html for h in t.columns)
        assert label in html
    # notebook 02 shows the same table, in the study's language (Chinese: the report's tables
    # are checked in both languages above, and a kernel costs seconds of CPU)
    shown = _notebook_text("02_sweep.ipynb", {**d, "lang": "zh"}, tmp_path / "zh")
    assert all(h in shown for h in contributions_table(c, "zh").columns) and label in shown
    assert not _leftovers(name)
    close_all()


def _notebook_text(notebook: str, study: dict, where: Path) -> str:
    """Every output of ``notebook`` executed on ``study`` (already measured), as text."""
    import papermill as pm

    from tibenchlib import paths
    from tibenchlib.notebook import ensure_kernelspec, kernel_dir

    where.mkdir(parents=True)
    p = where / "study.yaml"
    p.write_text(yaml.safe_dump(study, allow_unicode=True))
    jp = os.environ.get("JUPYTER_PATH", "")
    if str(kernel_dir()) not in jp.split(os.pathsep):
        os.environ["JUPYTER_PATH"] = os.pathsep.join(x for x in (str(kernel_dir()), jp) if x)
    out = where / notebook
    pm.execute_notebook(
        str(paths.notebooks_dir() / notebook), str(out),
        parameters={"params_path": str(p), "measure": False, "progress": False},
        cwd=str(ROOT), kernel_name=ensure_kernelspec(), progress_bar=False,
    )  # fmt: skip
    nb = json.loads(out.read_text(encoding="utf-8"))
    outs = [o for c in nb["cells"] if c["cell_type"] == "code" for o in c.get("outputs", [])]
    assert not [o for o in outs if o.get("output_type") == "error"]
    texts = []
    for o in outs:
        for k, v in {"text": o.get("text", ""), **o.get("data", {})}.items():
            if k == "text" or k.startswith("text/"):
                texts.append(v if isinstance(v, str) else "".join(v))
    return "\n".join(texts)


def _wait_for(path: Path, text: str, timeout: float = 120) -> None:
    end = time.monotonic() + timeout
    while text not in (path.read_text(errors="replace") if path.exists() else ""):
        assert time.monotonic() < end, f"{path.name} never printed {text!r}"
        time.sleep(0.1)


YCSB_A = {"recordcount": 1000, "readproportion": 0.5, "updateproportion": 0.5}


def _run_watched(hosts, study, phase: str):
    """Run ``phase`` of ``study`` while every host's process list is read; returns the
    catalog and what the lists showed. Checks the password appeared in none, and nothing of
    the study is left running or on disk on any host."""
    from tibenchlib import phases
    from tibenchlib.store import Store
    from tibenchlib.target import open_arm

    name = study.study
    password = open_arm(study, "a").conn.password
    assert password
    watch = _Watch(hosts, name)
    watch.start()
    try:
        phases.run_phase(study, phase, progress=False)
    finally:
        watch.stop.set()
        watch.join()
    seen = "\n".join(watch.lists)
    assert f".tibench/{name}/" in seen  # we did look mid-run
    assert password not in seen
    assert not _leftovers(name)
    assert not list((Path.home() / ".tibench" / name).glob("*/*"))
    return Store.for_study(study, record=False), seen


def _runs_by_host(store, study, phase: str, entry: dict):
    """Each run of a two-client phase (``local`` and ``entry``), all ``ok``, with its
    ``run_hosts`` rows and its clients' logs (``raw/<phase>/<run>/<host>.log``), two threads
    each, their own TPS, started together."""
    runs = store.runs(study.study, phase=phase)
    assert len(runs) == 2 and (runs["status"] == "ok").all(), runs[["run_key", "error"]]
    label = parse_destination(entry["host"]).label
    per_host = store.read("run_hosts", study.study)
    for _, run in runs.iterrows():
        mine = per_host[per_host["run_key"] == run["run_key"]]
        logs = [Path(p) for p in mine["log_path"]]
        assert [p.name for p in logs] == ["local.log", f"{label}.log"]
        assert all(p.parent.parent.name == phase for p in logs)
        assert list(mine["threads"]) == [2, 2] and run["threads"] == 4
        assert (mine["tps"] > 0).all()
        # started together (the median spread is the sweep test's to check; one run on a
        # loaded machine may spread wider, never by a run's length)
        assert mine["started_at"].max() - mine["started_at"].min() < 1.0
        yield run, mine, logs


@pytest.mark.slow
def test_ycsb_with_one_local_and_one_ssh_client(hosts, data_dir):
    from tibenchlib.ycsb import hdr

    if not shutil.which("java"):
        pytest.skip("java is not installed (default-jdk-headless)")
    name = "hostycsb"
    entry = hosts.client_entries()[0]
    d = _study(name, hosts, clients=1)
    d["ycsb"] = {
        "workloads": {"a": {**YCSB_A, "maxexecutiontime_s": 3}},
        "threads": [2],
        "repeats": 2,
        "clients": ["local", entry],
        "jvm_options": ["-XX:TieredStopAtLevel=1"],  # runs of 3 s: C2 would cost more CPU
    }
    study = parse_study(d)
    store, seen = _run_watched(hosts, study, "ycsb")
    for run, mine, logs in _runs_by_host(store, study, "ycsb", entry):
        # each host's histograms came back beside its log; the run's p95 is the merged one's
        clients = [hdr.read_client(p.with_suffix(".hdr")) for p in logs]
        assert all("READ" in c and "UPDATE" in c for c in clients)
        merged = hdr.merged_latency(clients)[hdr.ALL]
        assert run["lat_p95_ms"] == pytest.approx(merged["p95"])
        assert run["tps"] == pytest.approx(mine["tps"].sum(), rel=1e-6)
    checks = store.read("client_hosts", name)
    assert checks["problems"].isna().all() and checks["tool_version"].str.contains("openjdk").all()
    assert "db.passwordfile=" in seen  # the binding's password file, named mid-run
    assert "-XX:TieredStopAtLevel=1 -cp " in seen  # the study's JVM options, on the host too
    close_all()


def _tpcc_study(name: str, sshd: LoopbackSshd, clients: list, duration_s: int = 3) -> dict:
    d = _study(name, sshd, clients=1)
    d["tpcc"] = {
        "warehouses": [1], "items": 1000, "customers": 30, "threads": [4],
        "duration_s": duration_s, "repeats": 2, "wait": [False], "clients": clients,
    }  # fmt: skip
    return d


@pytest.mark.slow
def test_tpcc_with_one_local_and_one_ssh_client(hosts, data_dir, sysbench_bin):
    from tibenchlib.tpcc.runner import parse_driver_counts

    name = "hosttpcc"
    entry = hosts.client_entries()[0]
    study = parse_study(_tpcc_study(name, hosts, ["local", entry]))
    store, seen = _run_watched(hosts, study, "tpcc")
    for run, _, logs in _runs_by_host(store, study, "tpcc", entry):
        # the driver's counters summed over both hosts match the orders table's growth
        counts = [parse_driver_counts(p.read_text()) for p in logs]
        assert all(c and c["new_order"] > 0 for c in counts)
        seeds = [sysbench_seed(p) for p in logs]  # each host its own requests
        assert None not in seeds and seeds[0] != seeds[1], seeds
        summary = json.loads(run["summary_json"])
        assert summary["new_orders"] == sum(c["new_order"] for c in counts)
        assert summary["transactions"]["payment"] == sum(c["payment"] for c in counts)
    samples = store.read("samples", name)
    label = parse_destination(entry["host"]).label
    assert set(samples["source"]) == {f"client:{label}"}
    assert set(samples["run_key"]) == set(store.runs(name, phase="tpcc")["run_key"])
    assert (samples["cpu_pct"] > 0).any()
    assert "--config-file=" in seen  # sysbench's credentials file, named mid-run
    close_all()


def _remove_dead_hosts_folder(study: str, label: str) -> None:
    """The killed host's private folder is left, its client's secret file in it, until that
    host's next pre-flight removes it; a loopback host's label (its port) never comes back, so
    the test removes it."""
    left = Path.home() / ".tibench" / study / label
    assert list(left.glob("*.cfg")), left
    shutil.rmtree(left.parent)


def _kill_mid_run(hosts, log: Path, marker: str, run) -> dict:
    """Start ``run`` in a thread, kill the second loopback host once its client's ``log``
    shows ``marker``, and return what ``run`` returned (``out["rec"]``)."""
    out: dict = {}
    t = threading.Thread(target=lambda: out.update(rec=run()))
    t.start()
    try:
        _wait_for(log, marker)
        hosts.kill_host(hosts.addresses[1])
    finally:
        t.join(180)
    return out


@pytest.mark.slow
def test_a_tpcc_host_killed_mid_run_fails_that_run_naming_it(hosts, data_dir, sysbench_bin):
    from tibenchlib.parse.sysbench import parse_sysbench_file
    from tibenchlib.target import open_arm
    from tibenchlib.tpcc.phase import ensure_data, plan, run_one
    from tibenchlib.tpcc.runner import host_logs

    entries = hosts.client_entries()
    name = "hosttpcckill"
    study = parse_study(_tpcc_study(name, hosts, ["local", entries[1]], duration_s=8))
    ctx = open_arm(study, "a")
    ctx.tpcc_ready = set()
    ensure_data(ctx, 1, "sysbench")
    ctx.tpcc_ready.add(1)
    spec = plan(study)[0]
    logs = host_logs(study, spec.run_key)
    out = _kill_mid_run(hosts, logs[1], "[ 2s ]", lambda: run_one(ctx, spec, "sysbench"))
    rec = out["rec"]
    assert rec.status == "failed"
    assert rec.error.startswith(f"client host {entries[1]['host']}:") and "\n" not in rec.error
    assert "connection lost" in rec.error
    assert all(p.is_file() for p in logs) and "[ 2s ]" in logs[1].read_text()
    # the local client ran to its end, its log kept (its summary: sysbench may leave out the
    # report of the last second when the run ends as it falls due)
    local = parse_sysbench_file(logs[0]).summary
    assert local["status"] == "ok" and local["total_time_s"] == pytest.approx(8, abs=0.5), local
    rows = ctx.store.read("run_hosts", name)
    assert rows.set_index("destination").loc[entries[1]["host"], "error"] == rec.error
    assert not _leftovers(name)
    _remove_dead_hosts_folder(name, parse_destination(entries[1]["host"]).label)
    close_all()


@pytest.mark.slow
def test_a_ycsb_host_killed_mid_run_fails_that_run_naming_it(hosts, data_dir):
    from tibenchlib.target import open_arm
    from tibenchlib.ycsb.phase import ensure_loaded, plan, run_one
    from tibenchlib.ycsb.runner import host_paths

    if not shutil.which("java"):
        pytest.skip("java is not installed (default-jdk-headless)")
    entries = hosts.client_entries()
    name = "hostycsbkill"
    d = _study(name, hosts, clients=1)
    d["ycsb"] = {
        "workloads": {"a": {**YCSB_A, "maxexecutiontime_s": 10}},
        "threads": [2],
        "repeats": 1,
        "clients": ["local", entries[1]],
        "jvm_options": ["-XX:TieredStopAtLevel=1"],
    }
    study = parse_study(d)
    ctx = open_arm(study, "a")
    ensure_loaded(ctx)
    spec = plan(study)[0]
    logs, _ = host_paths(study, spec.run_key)
    out = _kill_mid_run(hosts, logs[1], " 2 sec: ", lambda: run_one(ctx, spec))
    rec = out["rec"]
    assert rec.status == "failed"
    assert rec.error.startswith(f"client host {entries[1]['host']}:") and "\n" not in rec.error
    assert "connection lost" in rec.error
    assert all(p.is_file() for p in logs) and " 2 sec: " in logs[1].read_text()
    assert "[OVERALL], RunTime(ms)" in logs[0].read_text()  # the local client ran to its end
    assert not _leftovers(name)
    _remove_dead_hosts_folder(name, parse_destination(entries[1]["host"]).label)
    close_all()


def test_ycsb_hosts_pre_flight_names_a_missing_java(hosts, tmp_path):
    from tibenchlib.ycsb.runner import open_ycsb_hosts

    entries = hosts.client_entries()
    missing = str(tmp_path / "no" / "java")
    study = parse_study(
        {"study": "hostjava", "ycsb": {"clients": ["local", {**entries[0], "java": missing}]}}
    )
    with _listening() as (host, port):
        conn = type("C", (), {"host": host, "port": port})
        with pytest.raises(HostError) as e:
            open_ycsb_hosts(study, conn)
    assert str(e.value) == (
        f"client host {entries[0]['host']}: {missing} not found "
        "(install it there or give its path (java:))"
    )
    close_all()


def test_the_environment_captures_ycsb_and_tpcc_client_hosts(hosts, tmp_path, data_dir):
    from tibenchlib import phases
    from tibenchlib.store import Store

    if not shutil.which("java"):
        pytest.skip("java is not installed (default-jdk-headless)")
    entries = hosts.client_entries()
    d = _study("hostenv2", hosts, clients=1, phases=["environment"])
    d["ycsb"] = {"clients": ["local", entries[0]]}
    d["tpcc"] = {"clients": ["local", entries[0], entries[1]], "threads": [3]}
    phases.run_phase(parse_study(d), "environment", progress=False)
    cap = Store.for_study(parse_study(d), record=False).environment_captures("hostenv2")["a"]
    first, second = (parse_destination(e["host"]).label for e in entries)
    assert sorted(cap["client_hosts"]) == sorted([first, second])
    # the host of both sections with both tools' versions, the other with sysbench's
    tools = cap["client_hosts"][first]["tools"]
    assert set(tools) == {"java", "sysbench"}
    assert tools["java"]["first_line"].startswith("openjdk")
    assert tools["sysbench"]["first_line"].startswith("sysbench")
    assert set(cap["client_hosts"][second]["tools"]) == {"sysbench"}
    close_all()
