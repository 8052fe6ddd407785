"""Client hosts without a network: the study file's destinations, labels, log paths, the
/proc readings of a host's CPU demand, the start barrier's instant and spread."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import psutil
import pytest
from scipy import stats as st

from tibenchlib import paths
from tibenchlib.diagnose import cpu_per_run, diagnose
from tibenchlib.hosts.execute import ClientResult, agreed_start, start_spread_ms
from tibenchlib.hosts.preflight import HostCheck
from tibenchlib.hosts.proc import parse_readings, sample_rows, sampler_script
from tibenchlib.hosts.spec import Destination, host_labels, parse_destination
from tibenchlib.hosts.tables import contributions
from tibenchlib.params import ParamsError, parse_study
from tibenchlib.report.hosts import contributions_table, lead
from tibenchlib.tools import Outcome


def test_destinations_parse_with_and_without_port():
    assert parse_destination("bench@10.0.1.21") == Destination("bench", "10.0.1.21", 22)
    d = parse_destination("root@127.0.0.2:2222")
    assert (d.user, d.host, d.port, d.label) == ("root", "127.0.0.2", 2222, "127.0.0.2_2222")
    assert str(d) == "root@127.0.0.2:2222"
    assert parse_destination("u@[::1]:2200").host == "::1"


@pytest.mark.parametrize("bad", ["10.0.1.21", "bench@", "@host", "a b@host", "u@h:99999"])
def test_bad_destination_is_one_clear_error(bad):
    with pytest.raises(ValueError) as e:
        parse_destination(bad)
    assert bad in str(e.value) and "\n" not in str(e.value)


def test_labels_are_distinct_file_names():
    hosts = ["local", "a@10.0.0.1", "b@10.0.0.1", "a@10.0.0.2:2222", "local"]
    assert host_labels(hosts) == ["local", "10.0.0.1", "10.0.0.1-2", "10.0.0.2_2222", "local-2"]


def test_clients_as_hosts_in_the_study_file():
    s = parse_study(
        {
            "study": "t",
            "threads": [3, 6],
            "clients": [
                "local",
                "bench@10.0.1.21:2222",
                {"host": "bench@10.0.1.22", "sysbench": "/opt/sysbench", "key": "~/.ssh/k"},
            ],
        }
    )
    assert s.n_clients == 3
    assert [h.host for h in s.client_hosts] == ["local", "bench@10.0.1.21:2222", "bench@10.0.1.22"]
    assert s.client_hosts[2].sysbench == "/opt/sysbench" and s.client_hosts[0].local
    assert not s.allow_mixed_versions
    # endpoints keep their meaning
    assert parse_study({"study": "t", "clients": 2, "threads": [2]}).client_hosts is None


@pytest.mark.parametrize(
    "clients, where",
    [
        (["local", {"host": "bench@h", "password": "s3cret"}], "clients[1].password"),
        (["local", {"host": "bench@h", "ssh_pass": "s3cret"}], "clients[1].ssh_pass"),
        (["bench:s3cret@h"], "a password never goes in the study file"),
        (["local", "10.0.0.1:4000"], "clients[1]: '10.0.0.1:4000' is an endpoint"),
        (["local", "bench@"], "clients[1].host"),
        (["local", {"host": "bench@h", "port": 22}], "port"),
    ],
)
def test_bad_client_hosts_name_the_field_and_never_show_a_password(clients, where):
    with pytest.raises(ParamsError) as e:
        parse_study({"study": "t", "threads": [2], "clients": clients})
    assert where in str(e.value)
    assert "s3cret" not in str(e.value)


def test_ycsb_and_tpcc_take_the_same_client_hosts():
    hosts = ["local", "bench@10.0.1.21", {"host": "bench@10.0.1.22:2222", "java": "/opt/jdk/java",
             "sysbench": "/opt/sb/sysbench", "key": "k"}]  # fmt: skip
    s = parse_study({"study": "t", "ycsb": {"clients": hosts}, "tpcc": {"clients": hosts,
                     "threads": [3]}})  # fmt: skip
    assert [c.host for c in s.ycsb.client_hosts] == [c.host for c in s.tpcc.client_hosts]
    assert s.ycsb.n_clients == s.tpcc.n_clients == 3
    assert s.ycsb.client_hosts[2].java == "/opt/jdk/java"
    assert s.tpcc.client_hosts[2].sysbench == "/opt/sb/sysbench"
    # the numbers and endpoints of before still mean what they meant
    old = parse_study(
        {"study": "t", "ycsb": {"clients": 2}, "tpcc": {"clients": 2, "threads": [2]}}
    )
    assert old.ycsb.client_hosts is None and old.ycsb.n_clients == 2
    assert old.tpcc.client_hosts is None and old.tpcc.n_clients == 2


@pytest.mark.parametrize(
    ("section", "where"),
    [
        ({"ycsb": {"clients": ["local", "bench:s3cret@h"]}}, "ycsb.clients"),
        ({"tpcc": {"clients": ["local", {"host": "b@h", "password": "s3cret"}]}}, "tpcc.clients"),
        ({"ycsb": {"clients": ["local", "b@h"], "tool": "go-ycsb"}}, "tool: go-ycsb"),
        ({"tpcc": {"clients": ["local", "b@h"], "tool": "go-tpc"}}, "go-tpc takes the password"),
        ({"tpcc": {"clients": ["local", "b@h", "c@h"], "threads": [2]}}, "tpcc.threads: 2"),
    ],
)
def test_bad_ycsb_or_tpcc_client_hosts_are_one_line_naming_the_field(section, where):
    with pytest.raises(ParamsError) as e:
        parse_study({"study": "t", **section})
    assert where in str(e.value)
    assert "s3cret" not in str(e.value)


def test_host_logs_sit_in_one_folder_per_run(data_dir):
    logs = paths.host_run_logs("s", "sysbench", "a/oltp_read_only/t4/r1", ["local", "h_2222"])
    run = paths.raw_dir("s", "sysbench") / "a__oltp_read_only__t4__r1"
    assert logs == [run / "local.log", run / "h_2222.log"]


def _readings_from_this_host(seconds: int = 2, cpu: list | None = None) -> str:
    """The sampling loop run here, for real, against a busy child process (its CPU seconds
    as psutil reads them appended to ``cpu``)."""
    busy = subprocess.Popen(["sh", "-c", "while :; do :; done"])
    proc = psutil.Process(busy.pid)
    d = Path(os.environ["TIBENCH_DATA"]) / "probe"
    d.mkdir(parents=True)
    (d / "c.pid").write_text(f"{busy.pid}\n")
    loop = subprocess.Popen(
        ["sh", "-c", sampler_script(str(d), "c.pid", 0.5)],
        stdin=subprocess.PIPE,  # as over SSH: open, never written to
        stdout=subprocess.PIPE,
        text=True,
    )
    time.sleep(seconds)
    if cpu is not None:
        cpu.append(sum(proc.cpu_times()[:2]))
    assert (d / "c.pid.sampler.pid").read_text().strip() == str(loop.pid)  # stop_script's
    shutil.rmtree(d)  # the loop ends when its directory is gone
    out, _ = loop.communicate(timeout=10)
    busy.kill()
    busy.wait()
    return out


def test_host_cpu_demand_from_proc(data_dir):
    cpu: list = []
    readings = parse_readings(_readings_from_this_host(cpu=cpu))
    with_pid = [r for r in readings if r.get("utime") is not None]
    assert len(with_pid) >= 3
    t0 = readings[0]["ts"]
    rows = sample_rows(with_pid, source="client:h", t0=t0, offset_s=0.0, cores=os.cpu_count())
    assert list(rows["source"].unique()) == ["client:h"]
    assert (rows["t"].diff().dropna() > 0).all()
    # the spinning shell's CPU seconds between the first and last reading: what psutil saw
    # over its whole life at most, and a fair part of it (the machine may be busy)
    dt = with_pid[-1]["ts"] - with_pid[0]["ts"]
    seconds = float((rows["cpu_pct"] / 100 * dt / len(rows)).sum())
    assert 0.3 * cpu[0] < seconds <= cpu[0] + 0.05
    assert (rows["cpus_busy_pct"] > 0).all() and (rows["cpus_busy_pct"] <= 100).all()
    assert (rows["rss_bytes"] > 0).all()
    # the run-queue wait of its threads, as the local sampler reads it (never negative)
    assert rows["cpu_wait_pct"].notna().all() and (rows["cpu_wait_pct"] >= 0).all()
    # an offset of the host's clock moves the samples onto this machine's clock
    shifted = sample_rows(with_pid, source="client:h", t0=t0, offset_s=2.0, cores=1)
    assert (shifted["t"] == (rows["t"] - 2.0).round(3)).all()


def test_an_incomplete_last_block_is_dropped(data_dir):
    text = _readings_from_this_host(1)
    cut = text[: text.rstrip("\n").rfind("\nE")]  # the last block without its end marker
    assert len(parse_readings(cut)) == len(parse_readings(text)) - 1


def _run_sampler(tmp_path, path_tools: list[str], *, end: str, seconds: float = 1.6):
    """The sampling loop run here with ``PATH`` holding only ``path_tools`` (links to the real
    ones), against this test process, ended by closing its standard input (``end="stdin"``,
    the session closed) or removing its directory (``"dir"``); its readings and error
    output."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for t in path_tools:
        (bindir / t).symlink_to(shutil.which(t))
    d = tmp_path / "probe"
    d.mkdir()
    (d / "c.pid").write_text(f"{os.getpid()}\n")
    loop = subprocess.Popen(
        ["/bin/sh", "-c", sampler_script(str(d), "c.pid", 0.4)],
        stdin=subprocess.PIPE,  # as over SSH: open, never written to
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={"PATH": str(bindir), "LC_ALL": "C"},
    )
    time.sleep(seconds)
    if end == "dir":
        shutil.rmtree(d)
    loop.stdin.close()
    loop.stdin = None  # closed: nothing for communicate() to flush
    out, err = loop.communicate(timeout=5)
    return parse_readings(out), err


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_the_host_sampler_starts_no_process_while_it_samples(tmp_path):
    # with bash as the only program it can find, a loop that ran date, head, cat or sleep
    # would fail to (and, without its pause, spin): it must read everything with builtins
    readings, err = _run_sampler(tmp_path, ["bash"], end="stdin")  # ends with its session
    assert err == ""
    assert 3 <= len(readings) <= 6  # one block per 0.4 s over 1.6 s: the pause works
    assert all(r["utime"] is not None and r["wait"] is not None for r in readings)
    ts = [r["ts"] for r in readings]
    assert all(0.3 < b - a < 1.0 for a, b in zip(ts, ts[1:], strict=False))
    assert abs(ts[-1] - time.time()) < 5  # the host's epoch clock, from $EPOCHREALTIME


def test_without_bash_the_host_sampler_falls_back_to_a_posix_loop(tmp_path):
    readings, err = _run_sampler(tmp_path, ["sh", "date", "head", "cat", "sleep"], end="dir")
    assert err == ""
    assert len(readings) >= 3
    # the directory removed after the loop checked it and before it looked for the pid file
    # (its forked date and head take a while on a loaded machine) leaves the last block
    # without the process's line; every block before it has one
    assert all(r["utime"] is not None for r in readings[:-1])


def _check(label, session_s=0.0, local=False):
    return HostCheck(label=label, host="local" if local else f"u@{label}", tool="sysbench",
                     session_s=session_s)  # fmt: skip


def test_agreed_start_leaves_time_for_the_slowest_session():
    now = 1000.0
    fast = agreed_start([_check("a", 0.01), _check("b", 0.02)], now)
    slow = agreed_start([_check("a", 0.01), _check("b", 0.8)], now)
    assert now < fast < slow and slow - now >= 1.2
    assert agreed_start([_check("local", local=True)], now) > now


def test_start_spread_is_latest_minus_earliest():
    def res(start):
        return ClientResult(None, Outcome(0, Path("x"), start, start + 5), agreed=100.0)

    rs = [res(100.004), res(100.001), res(100.030)]
    assert start_spread_ms(rs) == pytest.approx(29.0)
    assert rs[2].start_delay_ms == pytest.approx(30.0)


LADDER = [1, 2, 4, 8, 16]
FLAT = {1: 1000.0, 2: 1900.0, 4: 3000.0, 8: 3050.0, 16: 3020.0}


def _sweep(shares: dict, cores: dict):
    """Runs levelling off from 4 threads and per-second samples at ``shares`` of ``cores``
    per source (a known truth for the diagnosis)."""
    rng = np.random.default_rng(1)
    runs, samples = [], []
    for t in LADDER:
        for r in (1, 2, 3):
            key = f"a/w/t{t}/r{r}"
            runs.append(
                {"run_key": key, "workload": "w", "arm": "a", "threads": t, "repeat": r,
                 "status": "ok", "tps": FLAT[t] * (1 + 0.01 * rng.standard_normal()),
                 "lat_p95_ms": t * (1 + 0.02 * rng.standard_normal())}
            )  # fmt: skip
            for src, share in shares.items():
                level = share * (1 + 0.01 * rng.standard_normal())
                for s in range(1, 11):
                    samples.append(
                        {"run_key": key, "source": src, "t": float(s),
                         "cpu_pct": 100 * cores[src] * level, "cores_allowed": cores[src]}
                    )  # fmt: skip
    return pd.DataFrame(runs), pd.DataFrame(samples)


def test_the_diagnosis_names_a_starved_client_host():
    runs, samples = _sweep(
        {"server": 0.45, "client": 0.30, "client:bench2": 0.97, "client:bench3": 0.35},
        {"server": 2, "client": 2, "client:bench2": 2, "client:bench3": 2},
    )
    (d,) = diagnose(runs, cpu_per_run(samples)).to_dict("records")
    assert d["verdict"] == "client_cpu" and d["resource"] == "client:bench2"
    assert "client host bench2 CPU-bound" in d["sentence_en"]
    assert "sysbench on client host bench2 uses 97%" in d["sentence_en"]
    assert "客户端主机 bench2 CPU 瓶颈" in d["sentence_zh"]


def test_client_hosts_with_headroom_are_not_the_limit():
    runs, samples = _sweep(
        {"server": 0.96, "client": 0.30, "client:bench2": 0.35},
        {"server": 2, "client": 2, "client:bench2": 4},
    )
    (d,) = diagnose(runs, cpu_per_run(samples)).to_dict("records")
    assert d["verdict"] == "server_cpu" and d["resource"] == "server"
    assert "sysbench on client host bench2 uses 35%" in d["sentence_en"]


def test_per_host_contributions_share_and_cpu_demand():
    runs = pd.DataFrame(
        {"run_key": ["a/w/t6/r1", "a/w/t6/r2", "a/w/t6/r3"], "arm": "a", "workload": "w",
         "threads": 6, "status": ["ok", "ok", "failed"]}
    )  # fmt: skip
    tps = {"a/w/t6/r1": (100, 200, 100), "a/w/t6/r2": (120, 180, 100), "a/w/t6/r3": (1, 1, 1)}
    hosts = ["local", "h2", "h3"]
    run_hosts = pd.DataFrame(
        [{"run_key": k, "host": h, "tps": v[i], "threads": 2} for k, v in tps.items()
         for i, h in enumerate(hosts)]
    )  # fmt: skip
    samples = pd.DataFrame(
        [{"run_key": k, "source": src, "t": float(s), "cpu_pct": pct, "cores_allowed": 2}
         for k in tps for src, pct in (("client", 50.0), ("client:h2", 190.0), ("client:h3", 20.0),
                                       ("server", 150.0)) for s in (1, 2)]
    )  # fmt: skip
    c = contributions(runs, run_hosts, samples).set_index("host")
    assert list(c.index) == hosts and (c["n"] == 2).all()  # the failed run left out
    m, lo, hi = _t_plain([200 / 400, 180 / 400])
    assert c.loc["h2", "tps_share"] == pytest.approx(m)
    assert (c.loc["h2", "tps_share_ci_low"], c.loc["h2", "tps_share_ci_high"]) == pytest.approx(
        (lo, hi)
    )
    assert c["tps_share"].sum() == pytest.approx(1.0)
    assert c.loc["h2", "cpu_demand"] == pytest.approx(0.95)
    assert c.loc["local", "cpu_demand"] == pytest.approx(0.25)
    assert contributions(runs, run_hosts)["cpu_demand"].isna().all()
    assert c.loc["h2", "tps"] == pytest.approx(190.0)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_contributions_for_people_in_both_languages(lang):
    c = pd.DataFrame(
        {"arm": "a", "workload": "oltp_point_select", "threads": 6, "host": ["local", "h2"],
         "n": 3, "tps": [210.0, 190.0], "tps_ci_low": [200.0, 150.0],
         "tps_ci_high": [220.0, 230.0], "tps_share": [0.525, 0.475],
         "tps_share_ci_low": [0.5, 0.45], "tps_share_ci_high": [0.55, 0.5],
         "cpu_demand": [0.25, 0.97], "cpu_demand_ci_low": [0.2, 0.9],
         "cpu_demand_ci_high": [0.3, 1.04], "merged_tps": 400.0, "merged_tps_ci_low": 380.0,
         "merged_tps_ci_high": 420.0}
    )  # fmt: skip
    t = contributions_table(c, lang)
    share, demand = [next(k for k in t if k.startswith(p)) for p in ("TPS ", "CPU ")]
    assert list(t[share]) == ["52.5 [50.0, 55.0]", "47.5 [45.0, 50.0]"]
    assert list(t[demand]) == ["25.0 [20.0, 30.0]", "97.0 [90.0, 104.0]"]
    assert (t.iloc[:, 5] == "400 [380, 420]").all()  # the merged TPS beside each host
    text = lead(c, lang)
    assert "2" in text and "h2" in text
    if lang == "zh":
        assert "客户端主机" in t.columns[3] and "置信区间" in share
        assert not set(",;:()") & set(text.replace("Student t", ""))
    else:
        assert t.columns[3] == "Client host"
    assert not len(contributions_table(c.iloc[:0], lang))


def _t_plain(values):
    v = np.asarray(values, float)
    half = st.t.ppf(0.975, v.size - 1) * v.std(ddof=1) / np.sqrt(v.size)
    return v.mean(), v.mean() - half, v.mean() + half


def test_tibench_files_go_to_one_folder_per_version(tmp_path):
    from tibenchlib.hosts.ssh import bundle_dir

    a, b = tmp_path / "tpcc.lua", tmp_path / "tpcc_common.lua"
    a.write_text("-- one\n")
    b.write_text("-- two\n")
    first = bundle_dir([a, b])
    assert first.startswith(".tibench/files/") and bundle_dir([a, b]) == first
    a.write_text("-- one, changed\n")  # another version of the driver: another folder
    assert bundle_dir([a, b]) != first


def test_asyncssh_is_imported_with_the_password_variables_hidden():
    """asyncssh looks for liboqs and nettle with ctypes.util.find_library when imported, which
    may start gcc with this process's environment: the password variables are not in it then,
    and are back afterwards."""
    code = """
import ctypes.util, os
seen = []
real = ctypes.util.find_library
def spy(name):
    seen.append((name, "TB_HIDDEN_PW" in os.environ))
    return real(name)
ctypes.util.find_library = spy
from tibenchlib import db
from tibenchlib.hosts.ssh import asyncssh_module
assert db.env_secret("TB_HIDDEN_PW") == "s3cret"
asyncssh_module()
print(seen, os.environ.get("TB_HIDDEN_PW"))
"""
    root = str(Path(__file__).resolve().parent.parent)
    env = {**os.environ, "TB_HIDDEN_PW": "s3cret", "PYTHONPATH": root}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    seen, after = out.stdout.rsplit(" ", 1)
    assert "True" not in seen and "oqs" in seen, seen  # looked for, never with the password
    assert after.strip() == "s3cret"


def test_cpu_account_adds_up_to_each_root_and_names_the_roles():
    from tibenchlib.hosts.cpuaccount import Seen, by_role, cpu_seconds

    def s(pid, ppid, name, own, kids=0.0):
        return (pid, 1.0), Seen(pid, ppid, name, own, kids)

    # before: tibench (10), mariadbd, sshd (20) with a session (21) running a sampling shell
    first = dict([s(10, 1, "python", 5.0, 1.0), s(11, 1, "mariadbd", 50.0),
                  s(20, 1, "sshd", 0.1), s(21, 20, "sshd", 0.2, 0.5),
                  s(22, 21, "sh", 0.3, 0.4)])  # fmt: skip
    # last readings: a local sysbench (12) and an ssh one (23) seen running, then ended; the
    # shell (22) ended too, having reaped short-lived children the readings never saw
    last = dict([s(10, 1, "python", 5.5, 1.0), s(11, 1, "mariadbd", 58.0),
                 s(12, 10, "sysbench", 2.0), s(20, 1, "sshd", 0.1),
                 s(21, 20, "sshd", 0.5, 0.5), s(22, 21, "sh", 0.35, 0.6),
                 s(23, 21, "sysbench", 1.9)])  # fmt: skip
    # at the end each parent's children-time holds its ended children's whole lives (the
    # sysbenches 0.1 s beyond their last readings, the shell 0.05 s)
    final = dict([s(10, 1, "python", 5.6, 1.0 + 2.1), s(11, 1, "mariadbd", 58.5),
                  s(20, 1, "sshd", 0.1),
                  s(21, 20, "sshd", 0.6, 0.5 + 2.0 + 0.35 + 0.65)])  # fmt: skip
    own, unseen = cpu_seconds(first, last, final)
    assert own[(12, 1.0)] == pytest.approx(2.0) and own[(22, 1.0)] == pytest.approx(0.05)
    # every root's own plus children growth is accounted for, no more, no less
    session = [k for k in own if k[0] in (21, 22, 23)]
    total = sum(own[k] for k in session) + sum(unseen.get(k, 0.0) for k in session)
    assert total == pytest.approx((0.6 + 3.5) - (0.2 + 0.5 + 0.3 + 0.4))  # the shell's too
    tibench = sum(own[k] + unseen.get(k, 0.0) for k in own if k[0] in (10, 12))
    assert tibench == pytest.approx((5.6 + 3.1) - (5.0 + 1.0))
    roles = by_role(first, last, final, role=_role)
    assert roles["sysbench (local)"] == pytest.approx(2.0)
    assert roles["sysbench (ssh)"] == pytest.approx(1.9)
    assert roles["mariadbd"] == pytest.approx(8.5)
    assert roles["sshd"] == pytest.approx(0.4)
    # the shell, its unseen children and the sysbench's last moments under sshd
    assert roles["ssh session: other"] == pytest.approx(0.05 + 0.2 + 0.1 + 0.05)
    assert roles["tibench (python)"] == pytest.approx(0.6)
    assert roles["tibench (python): children"] == pytest.approx(0.1)


def _role(key, procs):
    from tibenchlib.hosts.cpuaccount import role_of

    return role_of(key, procs, me=10)


def test_cpu_account_over_part_of_the_stretch_uses_the_readings_within_it():
    from tibenchlib.hosts.cpuaccount import CpuAccount, Seen

    def at(t, own):  # one process whose CPU time grows by `own` seconds over the readings
        return t, {(7, 1.0): Seen(7, 1, "mariadbd", own, 0.0)}

    acct = CpuAccount()
    acct.polls = [at(100.0, 1.0), at(101.0, 1.5), at(102.0, 2.5), at(103.0, 2.6)]
    assert acct.roles() == (3.0, {"mariadbd": pytest.approx(1.6)})
    # within [100.5, 102.2]: the readings at 101 and 102 only
    assert acct.roles(100.5, 102.2) == (1.0, {"mariadbd": pytest.approx(1.0)})
    assert acct.roles(102.5, 103.5) == (0.0, {})  # one reading: nothing to tell
