"""One run's clients on several hosts, started at one agreed instant and gathered whole.

The start barrier: once every remote host holds its credentials file, this machine picks an
instant ``T`` far enough ahead for a session to open on the slowest host
(:func:`agreed_start`); each host sleeps until ``T`` on its own clock (corrected by the
measured offset), notes its actual start and ``exec``\\ s the tool; local clients wait for ``T``
here. The spread of the actual starts is recorded per run.

Each host's output is streamed into its raw log here as it is written, so a host that dies
keeps what it printed. A host that fails (non-zero exit, lost connection, timeout) fails the
run with one line naming it; on a timeout, an error or an abort (Ctrl-C, SIGTERM) every remote
client is killed through its pid file, and the host's private directory (credentials file
included) is removed after every run. What a SIGKILL of tibench leaves is killed and removed
by the next pre-flight.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ..tools import Outcome, execute
from .preflight import HostCheck
from .proc import parse_readings, sample_rows, sampler_script
from .ssh import HostError, asyncssh_module, call, remote_dir, stop_script

__all__ = ["ClientJob", "ClientResult", "agreed_start", "run_clients", "start_spread_ms"]

#: Seconds added to the slowest host's session start when picking the agreed instant.
START_MARGIN_S = 0.25


@dataclass
class ClientJob:
    """One client of a run: where (``check``), what (``argv``; a remote one reads its
    credentials from ``cfg_name`` in the host's private directory), and its raw log."""

    check: HostCheck
    argv: list[str]
    log: Path
    threads: int
    secret: str = ""  # the remote credentials file's text (stdin only, never argv)
    #: folders the client writes besides its output (YCSB's histograms): ``(name in the host's
    #: private directory, local folder)``, made before the start and copied back at the end
    outputs: list[tuple[str, Path]] = field(default_factory=list)


@dataclass
class ClientResult:
    """How one client ended."""

    job: ClientJob
    outcome: Outcome
    agreed: float
    error: str | None = None
    samples: pd.DataFrame = field(default_factory=pd.DataFrame)

    @property
    def start_delay_ms(self) -> float:
        return (self.outcome.started_at - self.agreed) * 1000


def agreed_start(checks: list[HostCheck], now: float | None = None) -> float:
    """The instant every client starts at: now + the slowest session start + a margin."""
    slowest = max([c.session_s for c in checks if not c.local] or [0.0])
    return (time.time() if now is None else now) + 1.5 * slowest + START_MARGIN_S


def start_spread_ms(results: list[ClientResult]) -> float:
    """Latest minus earliest actual start of the clients (ms, this machine's clock)."""
    starts = [r.outcome.started_at for r in results]
    return (max(starts) - min(starts)) * 1000 if starts else 0.0


def _wrapper(directory: str, name: str, argv: list[str], start_remote: float) -> str:
    """The client's shell on the host: its pid noted (the directory spelled out, so that
    :func:`~tibenchlib.hosts.ssh.stop_script` knows it while it waits), a sleep until the agreed
    instant on the host's clock, the actual start on stderr, then ``exec`` of the tool."""
    pid = shlex.quote(f"{directory}/{name}.pid")
    return (
        f"echo $$ > {pid}; n=$(date +%s.%N); "
        f's=$(awk -v t={start_remote:.6f} -v n="$n" \'BEGIN{{d=t-n; if (d<0) d=0; '
        f'printf "%.6f", d}}\'); sleep "$s"; date +%s.%N >&2; '
        f"exec {shlex.join(argv)} 2>&1"
    )


class _Remote:
    def __init__(self, job: ClientJob, study: str, name: str):
        self.job, self.study, self.name = job, study, name
        self.check = job.check
        self.ssh = job.check.ssh
        self.dir = remote_dir(study, job.check.label)
        self.proc = None
        self.sampler = None
        self.readings = ""

    @property
    def alive(self) -> bool:
        return self.ssh is not None and self.ssh.connected

    async def put_secret(self) -> None:
        d, top = shlex.quote(self.dir), shlex.quote(f".tibench/{self.study}")
        outs = "".join(f" {shlex.quote(f'{self.dir}/{sub}')}" for sub, _ in self.job.outputs)
        await self.ssh.arun(
            f"umask 077; mkdir -p {d}{outs} && chmod 700 .tibench {top} {d} && "
            f"cat > {d}/{self.name}.cfg",
            stdin=self.job.secret,
        )

    async def fetch_outputs(self) -> str | None:
        """Copy the client's output folders back; the line naming the host when that fails."""
        for sub, local in self.job.outputs:
            try:
                await self.ssh.aget_dir(f"{self.dir}/{sub}", local)
            except HostError as e:
                return str(e)
        return None

    async def run(self, agreed: float, timeout_s: float | None) -> ClientResult:
        job = self.job
        job.log.parent.mkdir(parents=True, exist_ok=True)
        t_remote = agreed + self.check.offset_s
        started = finished = None
        error = None
        rc = None
        timed_out = False
        with open(job.log, "wb") as out:
            try:
                self.proc = await self.ssh.conn.create_process(
                    _wrapper(self.dir, self.name, job.argv, t_remote), encoding=None
                )
                self.sampler = await self.ssh.conn.create_process(
                    sampler_script(self.dir, f"{self.name}.pid")
                )
                sampling = asyncio.ensure_future(self._sample())

                async def pump_out():
                    while chunk := await self.proc.stdout.read(65536):
                        out.write(chunk)
                        out.flush()

                async def pump_err():
                    nonlocal started
                    while line := await self.proc.stderr.readline():
                        text = line.decode(errors="replace")
                        if started is None:
                            try:
                                started = float(text) - self.check.offset_s
                                continue
                            except ValueError:
                                pass
                        out.write(line)
                        out.flush()

                try:
                    await asyncio.wait_for(
                        asyncio.gather(pump_out(), pump_err(), self.proc.wait()),
                        timeout_s,
                    )
                    rc = self.proc.exit_status
                    if self.proc.exit_signal:
                        error = f"client host {self.ssh}: killed by {self.proc.exit_signal[0]}"
                except TimeoutError:
                    timed_out = True
                    error = f"client host {self.ssh}: still running after {timeout_s:g} s"
                    await self.stop()
                finally:
                    sampling.cancel()
            except (OSError, asyncssh_module().Error) as e:
                t = time.time() - agreed
                error = f"client host {self.ssh}: connection lost {t:.1f} s into the run ({e})"
                rc = None
        finished = time.time()
        if error is None and rc not in (0,):
            error = f"client host {self.ssh}: {job.argv[0]} exited {rc}"
        if self.alive and job.outputs:
            lost = await self.fetch_outputs()
            error = error or lost
        if started is None:
            started = agreed if error else time.time()
        outcome = Outcome(rc, job.log, started, finished, timed_out)
        rows = sample_rows(
            parse_readings(self.readings),
            source=f"client:{self.check.label}",
            t0=agreed,
            offset_s=self.check.offset_s,
            cores=self.check.cores or 1,
            clk_tck=self.check.clk_tck,
            pagesize=self.check.pagesize,
        )
        return ClientResult(job, outcome, agreed, error, rows)

    async def _sample(self) -> None:
        try:
            while line := await self.sampler.stdout.readline():
                self.readings += line
        except (OSError, asyncssh_module().Error):
            pass

    async def stop(self) -> None:
        """Stop the client and its sampling loop if still running, remove the private directory
        (credentials file included), close the sessions. Idempotent; a host that is gone has
        nothing left to stop (the next pre-flight cleans what a lost connection left)."""
        if self.alive:
            try:
                await self.ssh.arun(stop_script(self.dir), timeout=15)
            except Exception:  # noqa: BLE001 - see above
                pass
        for p in (self.sampler, self.proc):
            if p is not None:
                p.close()


def _local(job: ClientJob, agreed: float, timeout_s, on_start, on_end) -> ClientResult:
    time.sleep(max(0.0, agreed - time.time()))
    out = execute(job.argv, job.log, timeout_s=timeout_s, on_start=on_start)
    if on_end is not None:
        on_end()
    err = None
    if out.missing or out.timed_out or out.returncode != 0:
        why = (
            f"{out.missing} is not installed"
            if out.missing
            else "timed out"
            if out.timed_out
            else f"{job.argv[0]} exited {out.returncode}"
        )
        err = f"local client: {why}"
    return ClientResult(job, out, agreed, err)


def run_clients(
    jobs: list[ClientJob],
    *,
    study: str,
    name: str,
    timeout_s: float | None = None,
    on_local_start=None,
    on_local_end=None,
) -> list[ClientResult]:
    """Run ``jobs`` together (one per client) and return their results in order.

    ``name`` names the run's files in the hosts' private directories. Every remote host gets
    its credentials file first; then all start at :func:`agreed_start`. ``on_local_start(pid)``
    and ``on_local_end()`` are called around each local client (its resource sampling).
    Raises only on an abort (after killing every client); a failed client is a result with
    ``error`` set."""
    remotes = {i: _Remote(j, study, name) for i, j in enumerate(jobs) if not j.check.local}
    pids: list[int] = []

    def started(pid: int) -> None:
        pids.append(pid)
        if on_local_start is not None:
            on_local_start(pid)

    async def main():
        await asyncio.gather(*(r.put_secret() for r in remotes.values()))
        agreed = agreed_start([j.check for j in jobs])
        tasks = []
        for i, j in enumerate(jobs):
            if i in remotes:
                tasks.append(remotes[i].run(agreed, timeout_s))
            else:
                tasks.append(asyncio.to_thread(_local, j, agreed, timeout_s, started, on_local_end))
        try:
            return list(await asyncio.gather(*tasks))
        finally:
            await asyncio.gather(*(r.stop() for r in remotes.values()))

    try:
        return call(main())
    except BaseException:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass

        async def abort():
            await asyncio.gather(*(r.stop() for r in remotes.values()))

        try:
            call(abort(), timeout=20)
        except Exception:  # noqa: BLE001 - the abort's own cause is what matters
            pass
        raise
