"""Pre-flight of a study's client hosts, one clear line per problem, before anything runs.

For every host: reachable over SSH; what a killed run left in its private directory killed and
removed; the tool present, at the same version everywhere (unless ``allow_mixed_versions``);
the target's ``host:port`` reachable from it; its clock offset against this machine measured
(an offset larger than the report interval would misalign the per-interval series: an error).
The figures are kept (:func:`check_rows`) in the catalog's ``client_hosts`` table.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field

from .spec import LOCAL, host_labels, parse_destination
from .ssh import HostError, SshHost, call, remote_dir, stop_script

__all__ = ["HostCheck", "check_hosts", "check_rows", "clock_offset", "problems"]

#: Pings of the clock exchange; the one with the shortest round trip gives the offset.
CLOCK_PINGS = 7


@dataclass
class HostCheck:
    """What pre-flight found on one client host."""

    label: str
    host: str  # "local" or the destination
    tool: str
    version: str | None = None
    offset_s: float = 0.0  # host clock minus this machine's clock
    rtt_s: float = 0.0  # round trip of the best clock ping
    target_ok: bool | None = None
    cores: int | None = None
    clk_tck: int = 100
    pagesize: int = 4096
    session_s: float = 0.0  # time to open a session and run a command there
    killed: list[int] = field(default_factory=list)  # stale processes a killed run left
    problems: list[str] = field(default_factory=list)
    ssh: SshHost | None = field(default=None, repr=False)

    @property
    def local(self) -> bool:
        return self.host == LOCAL


def _probe_script(directory: str, tool: str, target_host: str, target_port: int) -> str:
    t = shlex.quote(tool)
    th, tp = shlex.quote(target_host), shlex.quote(str(target_port))
    return (
        stop_script(directory)
        + f"""T={t}
if command -v "$T" >/dev/null 2>&1; then echo "version=$("$T" --version 2>&1 | head -n 1)"
else echo "version="; fi
if command -v bash >/dev/null 2>&1; then
  if timeout 5 bash -c 'exec 3<>"/dev/tcp/$0/$1"' {th} {tp} 2>/dev/null; then echo target=ok
  else echo target=no; fi
else echo target=unknown; fi
echo "cores=$(nproc)"; echo "clk_tck=$(getconf CLK_TCK)"; echo "pagesize=$(getconf PAGESIZE)"
"""
    )


def _kv(text: str) -> dict[str, str]:
    out: dict[str, str] = {"killed": ""}
    for line in text.splitlines():
        k, sep, v = line.partition("=")
        if not sep:
            continue
        if k == "killed":
            out["killed"] += f" {v.strip()}"
        else:
            out.setdefault(k.strip(), v.strip())
    return out


async def clock_offset(ssh: SshHost, pings: int = CLOCK_PINGS) -> tuple[float, float]:
    """``(offset, rtt)`` seconds: the host's clock minus this machine's, from the ping with the
    shortest round trip over one open session (NTP's estimator: the remote reading is taken
    at the midpoint; its error is at most half the round trip)."""
    proc = await ssh.conn.create_process("while read x; do date +%s.%N; done")
    best = None
    try:
        for _ in range(pings):
            t0 = time.time()
            proc.stdin.write("x\n")
            line = await asyncio.wait_for(proc.stdout.readline(), 10)
            t1 = time.time()
            remote = float(line.strip())
            cand = (t1 - t0, remote - (t0 + t1) / 2)
            best = cand if best is None or cand[0] < best[0] else best
    finally:
        proc.stdin.write_eof()
        proc.close()
    return best[1], best[0]


async def _check_remote(
    c: HostCheck, study: str, target: tuple[str, int], key, known_hosts, timeout: float
) -> None:
    d = parse_destination(c.host)
    c.ssh = SshHost(d, key=key, known_hosts=known_hosts, label=c.label)
    try:
        await c.ssh.aconnect(timeout)
        t0 = time.monotonic()
        r = await c.ssh.arun(_probe_script(remote_dir(study, c.label), c.tool, *target))
        c.session_s = time.monotonic() - t0
        kv = _kv(str(r.stdout))
        c.version = kv.get("version") or None
        c.killed = [int(p) for p in kv["killed"].split()]
        c.target_ok = {"ok": True, "no": False}.get(kv.get("target", ""))
        c.cores = int(kv["cores"]) if kv.get("cores", "").isdigit() else None
        c.clk_tck = int(kv["clk_tck"]) if kv.get("clk_tck", "").isdigit() else 100
        c.pagesize = int(kv["pagesize"]) if kv.get("pagesize", "").isdigit() else 4096
        c.offset_s, c.rtt_s = await clock_offset(c.ssh)
    except HostError as e:
        c.problems.append(str(e))
    except (TimeoutError, OSError, ValueError) as e:
        c.problems.append(f"client host {c.host}: pre-flight failed: {e or type(e).__name__}")


def _check_local(c: HostCheck, target: tuple[str, int]) -> None:
    exe = shutil.which(c.tool)
    if exe:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30)
        lines = (out.stdout or out.stderr).strip().splitlines()
        c.version = lines[0].strip() if lines else None
    try:
        with socket.create_connection(target, timeout=5):
            c.target_ok = True
    except OSError:
        c.target_ok = False
    c.cores = len(os.sched_getaffinity(0))


def check_hosts(
    study: str,
    clients,
    target: tuple[str, int],
    *,
    report_interval_s: float,
    allow_mixed_versions: bool = False,
    tool: str = "sysbench",
    field: str = "sysbench",
    timeout: float = 10.0,
) -> list[HostCheck]:
    """Check every client host (``clients``: :class:`tibenchlib.params.ClientHost` entries,
    ``labels`` from :func:`.spec.host_labels`) for ``tool`` (a host's own path of it in its
    entry's ``field``) and return one :class:`HostCheck` each, their ``problems`` filled in
    (see :func:`problems` for all of them as lines). Remote hosts are checked at the same
    time; their connections stay open in ``HostCheck.ssh``."""
    labels = host_labels([c.host for c in clients])
    checks = [
        HostCheck(label=lab, host=c.host, tool=getattr(c, field, None) or tool)
        for lab, c in zip(labels, clients, strict=True)
    ]

    async def remote_all():
        await asyncio.gather(
            *(
                _check_remote(ch, study, target, c.key, c.known_hosts, timeout)
                for ch, c in zip(checks, clients, strict=True)
                if not ch.local
            )
        )

    call(remote_all())
    for ch in checks:
        if ch.local:
            _check_local(ch, target)
    for ch in checks:
        if ch.problems:
            continue  # unreachable: nothing more to say about it
        where = "this machine" if ch.local else f"client host {ch.host}"
        if ch.version is None:
            hint = "install it" if ch.local else f"install it there or give its path ({field}:)"
            ch.problems.append(f"{where}: {ch.tool} not found ({hint})")
        if ch.target_ok is False:
            ch.problems.append(f"{where}: cannot reach the target {target[0]}:{target[1]}")
        if abs(ch.offset_s) > report_interval_s:
            ch.problems.append(
                f"{where}: clock {ch.offset_s * 1000:+.0f} ms off this machine's "
                f"(±{ch.rtt_s * 500:.0f} ms), more than the report interval "
                f"({report_interval_s:g} s): synchronise its clock (chrony, systemd-timesyncd)"
            )
    versions = {ch.label: ch.version for ch in checks if ch.version}
    if len(set(versions.values())) > 1 and not allow_mixed_versions:
        listed = ", ".join(f"{k} {v!r}" for k, v in versions.items())
        first = next(ch for ch in checks if ch.version)
        first.problems.append(
            f"client hosts: {tool} versions differ ({listed}): install one version everywhere "
            "or set allow_mixed_versions: true"
        )
    return checks


def problems(checks: list[HostCheck]) -> list[str]:
    return [p for c in checks for p in c.problems]


def check_rows(checks: list[HostCheck], study: str, arm: str) -> list[dict]:
    """The ``client_hosts`` catalog rows of a pre-flight."""
    now = time.time()
    return [
        {
            "study": study,
            "arm": arm,
            "host": c.label,
            "destination": c.host,
            "checked_at": now,
            "tool_version": c.version,
            "clock_offset_ms": c.offset_s * 1000,
            "clock_rtt_ms": c.rtt_s * 1000,
            "reaches_target": c.target_ok,
            "cores": c.cores,
            "session_ms": c.session_s * 1000,
            "problems": "\n".join(c.problems) or None,
        }
        for c in checks
    ]
