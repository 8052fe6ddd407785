"""Binding policies: parsing, the numactl prefix, and verification on real bound processes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tibenchlib import binding, cpulist
from tibenchlib.binding import BindingError, Policy, parse_policy

HAS_NUMACTL = shutil.which("numactl") is not None
needs_numactl = pytest.mark.skipif(not HAS_NUMACTL, reason="numactl is not installed")
needs_numa = pytest.mark.skipif(
    not Path("/sys/devices/system/node/node0").exists(), reason="kernel shows no NUMA node"
)


def test_cpulist_round_trip():
    assert cpulist.parse_cpulist("0-3,8,10-11\n") == [0, 1, 2, 3, 8, 10, 11]
    assert cpulist.format_cpulist([11, 0, 1, 2, 3, 8, 10]) == "0-3,8,10-11"
    assert cpulist.parse_cpulist("") == []
    with pytest.raises(ValueError):
        cpulist.parse_cpulist("0-x")


@pytest.mark.parametrize(
    "text, label, prefix",
    [
        ("unbound", "unbound", []),
        ("", "unbound", []),
        ("node:0", "node:0", ["numactl", "--cpunodebind=0", "--membind=0"]),
        ("node=1", "node:1", ["numactl", "--cpunodebind=1", "--membind=1"]),
        ("interleave", "interleave:all", ["numactl", "--interleave=all"]),
        ("interleave:1,0", "interleave:0-1", ["numactl", "--interleave=0-1"]),
        ("cpus:0", "cpus:0", ["numactl", "--physcpubind=0"]),
        ("physcpubind=2,0-1", "cpus:0-2", ["numactl", "--physcpubind=0-2"]),
    ],
)
def test_parse_policy_and_prefix(text, label, prefix):
    p = parse_policy(text)
    assert p.label == label
    assert p.numactl_prefix() == prefix
    assert parse_policy(p.label) == p


def test_bad_policies_are_errors():
    with pytest.raises(ValueError, match="unknown CPU binding"):
        parse_policy("socket:0")
    with pytest.raises(ValueError):
        Policy("node")
    with pytest.raises(ValueError):
        Policy("cpus", cpus=())


def test_mem_policy_strings():
    assert binding._parse_mem_policy("bind:1") == ("bind", [1])
    assert binding._parse_mem_policy("interleave=static:0-2") == ("interleave", [0, 1, 2])
    assert binding._parse_mem_policy("default") == ("default", [])


def _fake_sys(tmp_path: Path) -> Path:
    """A two-node sysfs tree: node0 = CPUs 0-1, node1 = CPUs 2-3, 4 GiB each."""
    for n, cpus in ((0, "0-1"), (1, "2-3")):
        d = tmp_path / "devices" / "system" / "node" / f"node{n}"
        d.mkdir(parents=True)
        (d / "cpulist").write_text(cpus + "\n")
        (d / "meminfo").write_text(f"Node {n} MemTotal:        4194304 kB\n")
    return tmp_path


def test_numa_nodes_fake_and_real(tmp_path):
    df = binding.numa_nodes(_fake_sys(tmp_path))
    assert df["node"].tolist() == [0, 1]
    assert df["cpus"].tolist() == [[0, 1], [2, 3]]
    assert df["mem_total"].tolist() == [4 << 30, 4 << 30]
    assert binding.numa_nodes(tmp_path / "nowhere").empty
    real = binding.numa_nodes()
    if len(real):
        assert set().union(*real["cpus"]) >= set(os.sched_getaffinity(0))


@needs_numactl
def test_check_policy_rejects_what_cannot_apply(tmp_path):
    fake = _fake_sys(tmp_path)
    assert binding.check_policy("node:1", fake, allowed_cpus={0, 1, 2, 3}).node == 1
    with pytest.raises(BindingError, match="node 7 does not exist"):
        binding.check_policy("node:7", fake, allowed_cpus={0, 1, 2, 3})
    with pytest.raises(BindingError, match="none of node 1"):
        binding.check_policy("node:1", fake, allowed_cpus={0, 1})
    with pytest.raises(BindingError, match="not available"):
        binding.check_policy("cpus:0,9", fake, allowed_cpus={0, 1})
    with pytest.raises(BindingError, match="do not exist"):
        binding.check_policy("interleave:0,5", fake, allowed_cpus={0, 1})


# --- real processes ------------------------------------------------------------------------


def _start(prefix: list[str]) -> subprocess.Popen:
    """Start ``prefix + sleep 30`` and wait until numactl has exec'd sleep (same pid)."""
    proc = subprocess.Popen([*prefix, "sleep", "30"])
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            if Path(f"/proc/{proc.pid}/comm").read_text().strip() == "sleep":
                return proc
        except OSError:
            pass
        time.sleep(0.01)
    proc.kill()
    raise AssertionError(f"{prefix} did not exec sleep")


@pytest.fixture
def started(kill_after):
    """``started(policy)`` is the pid of a ``sleep`` running under the policy."""
    return lambda policy: kill_after(_start(policy.numactl_prefix())).pid


@needs_numactl
@needs_numa
@pytest.mark.parametrize("text", ["unbound", "node:0", "interleave:all", "cpus:0"])
def test_verify_binding_on_real_process(started, text):
    if text == "cpus:0" and 0 not in os.sched_getaffinity(0):
        pytest.skip("CPU 0 is not available to this process")
    policy = binding.check_policy(text)
    result = binding.verify_binding(started(policy), policy)
    assert result["verified"], result["detail"]
    seen = result["mem_policy"]
    if policy.kind == "node":
        assert seen == "bind:0"
    elif policy.kind == "interleave":
        assert seen.startswith("interleave:")
    else:
        assert seen == "default"
    if policy.kind == "cpus":
        assert result["cpus_allowed"] == "0"


@needs_numactl
@needs_numa
def test_cpu_list_restriction_is_visible(started):
    if len(os.sched_getaffinity(0)) < 2 or 0 not in os.sched_getaffinity(0):
        pytest.skip("needs CPU 0 and at least two usable CPUs")
    result = binding.verify_binding(started(parse_policy("cpus:0")), "cpus:0")
    assert "restricted to 1 of" in result["detail"]


@needs_numactl
@needs_numa
def test_mismatch_is_an_error_not_a_silent_run(started):
    pid = started(parse_policy("unbound"))
    with pytest.raises(BindingError, match="expected 'bind:0'") as err:
        binding.verify_binding(pid, "node:0")
    assert err.value.result["verified"] is False
    out = binding.verify_binding(pid, "node:0", raise_on_failure=False)
    assert out["verified"] is False
    if len(os.sched_getaffinity(0)) > 1:
        with pytest.raises(BindingError, match="expected 0"):
            binding.verify_binding(pid, "cpus:0")
    pid2 = started(parse_policy("node:0"))
    with pytest.raises(BindingError, match="expected 'default'"):
        binding.verify_binding(pid2, "unbound")


def test_gone_process_cannot_be_verified():
    p = subprocess.Popen(["true"])
    p.wait()
    with pytest.raises(BindingError, match="is process"):
        binding.verify_binding(p.pid, "unbound")


@needs_numactl
@needs_numa
def test_a_repinned_thread_is_seen():
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs two usable CPUs")
    code = (
        "import os, threading, time\n"
        "def pin():\n"
        "    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})\n"
        "    time.sleep(30)\n"
        "threading.Thread(target=pin, daemon=True).start()\n"
        "print('ready', flush=True)\n"
        "time.sleep(30)\n"
    )
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "ready"
        time.sleep(0.2)
        with pytest.raises(BindingError, match="some threads run on other CPUs"):
            binding.verify_binding(p.pid, "unbound")
    finally:
        p.kill()
        p.wait()
