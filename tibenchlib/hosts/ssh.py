"""One SSH connection per client host (asyncssh), behind a small synchronous facade.

asyncssh runs in one event loop on a daemon thread of this process (:func:`call` hands it a
coroutine and waits, interruptible by Ctrl-C and SIGTERM). Commands are argument lists quoted
with :func:`shlex.join`, never strings built from user input; a secret travels on a command's
standard input into a 0600 file of the host's private directory, never on a command line.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import logging
import shlex
import threading
import time
from collections.abc import Coroutine, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..db import secrets_hidden
from .spec import Destination

if TYPE_CHECKING:
    import asyncssh

__all__ = ["HostError", "SshHost", "bundle_dir", "call", "remote_dir", "stop_script"]

# asyncssh logs every channel at INFO: only its warnings reach tibench's log
logging.getLogger("asyncssh").setLevel(logging.WARNING)

_loop: asyncio.AbstractEventLoop | None = None
_loop_lock = threading.Lock()


def asyncssh_module():
    """The asyncssh module, imported on first use."""
    with secrets_hidden():  # its import may start gcc (see below) with our environment
        # import inside: asyncssh looks for liboqs and nettle with ctypes.util.find_library when
        # imported, which can start gcc with this process's environment; only a study with
        # client hosts needs it, and the password variables are hidden while it is imported
        import asyncssh

    return asyncssh


class HostError(RuntimeError):
    """A client host that cannot be used; the message is one line naming it."""


def _event_loop() -> asyncio.AbstractEventLoop:
    global _loop
    with _loop_lock:
        if _loop is None or not _loop.is_running():
            loop = asyncio.new_event_loop()
            started = threading.Event()

            def serve() -> None:
                asyncio.set_event_loop(loop)
                loop.call_soon(started.set)
                loop.run_forever()

            threading.Thread(target=serve, name="tibench-ssh", daemon=True).start()
            started.wait()
            _loop = loop
        return _loop


def call(coro: Coroutine, timeout: float | None = None):
    """Run ``coro`` on the SSH event loop and return its result. The wait is in short slices,
    so KeyboardInterrupt (and SIGTERM turned into an exception) reaches the caller; the
    coroutine is then cancelled."""
    fut = asyncio.run_coroutine_threadsafe(coro, _event_loop())
    try:
        return _wait(fut, timeout)
    except BaseException:
        fut.cancel()
        raise


def _wait(fut: concurrent.futures.Future, timeout: float | None):
    end = None if timeout is None else time.monotonic() + timeout
    while True:
        try:
            return fut.result(0.2)
        except concurrent.futures.TimeoutError:
            if end is not None and time.monotonic() > end:
                raise TimeoutError(f"no answer within {timeout:g} s") from None


def remote_dir(study: str, label: str) -> str:
    """The host's private directory of one study's client (relative to the login's home):
    ``.tibench/<study>/<label>``, mode 0700, removed after each run."""
    return f".tibench/{study}/{label}"


def bundle_dir(files: Sequence[str | Path]) -> str:
    """Where a set of tibench's own files (the YCSB binding's jars, the TPC-C Lua driver) lives
    on a client host: ``.tibench/files/<hash of their names and contents>``, kept between runs
    (nothing secret in it) and shared by studies; another version of the files is another
    folder."""
    h = hashlib.sha256()
    for f in files:
        h.update(Path(f).name.encode() + b"\0" + Path(f).read_bytes() + b"\0")
    return f".tibench/files/{h.hexdigest()[:16]}"


def stop_script(directory: str) -> str:
    """Stop what runs from a private directory and remove it: every process whose pid is in a
    ``*.pid`` file there and whose command line names the directory (a client, a client still
    waiting for the start barrier, a sampling loop; never an unrelated process that reused the
    pid) gets SIGTERM, then SIGKILL after up to 2 s; prints ``killed=<pid>`` for each. Its
    parents (``.tibench/<study>``, ``.tibench``) go too when that leaves them empty."""
    d = shlex.quote(directory)
    return f"""D={d}
if [ -d "$D" ]; then
  ps=""
  for f in "$D"/*.pid; do
    [ -f "$f" ] || continue; p=$(cat "$f")
    case "$p" in ''|*[!0-9]*) continue;; esac
    if tr '\\0' ' ' < /proc/$p/cmdline 2>/dev/null | grep -qF -- "$D/"; then
      kill -TERM "$p" 2>/dev/null && ps="$ps $p" && echo "killed=$p"
    fi
  done
  i=0
  for p in $ps; do
    while [ -d /proc/$p ] && [ $i -lt 20 ]; do sleep 0.1; i=$((i+1)); done
    kill -KILL "$p" 2>/dev/null
  done
  rm -rf "$D"
  rmdir "$(dirname "$D")" .tibench 2>/dev/null
fi
true
"""


class SshHost:
    """A client host reached over SSH (``dest``), authenticated by ``key`` (a private key file)
    or the agent and ``~/.ssh``; its key checked against ``known_hosts`` (default
    ``~/.ssh/known_hosts``)."""

    def __init__(
        self,
        dest: Destination,
        *,
        key: str | None = None,
        known_hosts: str | None = None,
        label: str | None = None,
    ):
        self.dest = dest
        self.key = key
        self.known_hosts = known_hosts
        self.label = label or dest.label
        self.conn: asyncssh.SSHClientConnection | None = None

    def __str__(self) -> str:
        return str(self.dest)

    async def aconnect(self, timeout: float = 10.0) -> None:
        kw: dict = {"port": self.dest.port, "username": self.dest.user}
        if self.key:
            kw["client_keys"] = [self.key]
        if self.known_hosts:
            kw["known_hosts"] = self.known_hosts
        try:
            self.conn = await asyncio.wait_for(
                asyncssh_module().connect(self.dest.host, connect_timeout=timeout, **kw),
                timeout + 1,
            )
        except (TimeoutError, OSError, asyncssh_module().Error) as e:
            raise HostError(f"client host {self.dest}: unreachable: {_why(e)}") from None

    def connect(self, timeout: float = 10.0) -> SshHost:
        call(self.aconnect(timeout))
        return self

    @property
    def connected(self) -> bool:
        return self.conn is not None and not self.conn.is_closed()

    async def arun(
        self, argv: list[str] | str, *, stdin: str | None = None, timeout: float = 30.0
    ) -> asyncssh.SSHCompletedProcess:
        """Run a command (an argument list, quoted here; a string is a fixed shell snippet of
        this package) and return its completed process (``exit_status``, ``stdout``...)."""
        if self.conn is None:
            raise HostError(f"client host {self.dest}: not connected")
        cmd = argv if isinstance(argv, str) else shlex.join(argv)
        try:
            return await self.conn.run(cmd, input=stdin, check=False, timeout=timeout)
        except (TimeoutError, OSError, asyncssh_module().Error) as e:
            raise HostError(f"client host {self.dest}: {_why(e)}") from None

    async def aput_files(self, files: Sequence[str | Path]) -> str:
        """Copy ``files`` (local paths, distinct names) to :func:`bundle_dir` on the host over
        SFTP unless there already, and return that folder (relative to the login's home). The
        folder is filled under a temporary name and renamed when whole, so a copy cut short is
        never used."""
        d = bundle_dir(files)
        q = shlex.quote(d)
        r = await self.arun(f"test -d {q} && echo present; true")
        if "present" in str(r.stdout):
            return d
        tmp = f"{d}.tmp{time.time_ns()}"
        await self.arun(f"mkdir -p {shlex.quote(tmp)}")
        try:
            async with self.conn.start_sftp_client() as sftp:
                await sftp.put([str(f) for f in files], tmp)
        except (OSError, asyncssh_module().Error) as e:
            why = _why(e)
            raise HostError(f"client host {self.dest}: copying tibench's files: {why}") from None
        await self.arun(f"mv -T {shlex.quote(tmp)} {q} 2>/dev/null || rm -rf {shlex.quote(tmp)}")
        return d

    async def aget_dir(self, remote: str, local: Path) -> None:
        """Copy the files of a host's folder ``remote`` into the local folder ``local``."""
        local.mkdir(parents=True, exist_ok=True)
        try:
            async with self.conn.start_sftp_client() as sftp:
                if await sftp.isdir(remote):
                    names = [n for n in await sftp.listdir(remote) if n not in (".", "..")]
                    if names:
                        await sftp.get([f"{remote}/{n}" for n in names], str(local))
        except (OSError, asyncssh_module().Error) as e:
            raise HostError(f"client host {self.dest}: copying {remote} back: {_why(e)}") from None

    def run(self, argv, *, stdin: str | None = None, timeout: float = 30.0):
        return call(self.arun(argv, stdin=stdin, timeout=timeout))

    def close(self) -> None:
        if self.conn is not None:
            conn, self.conn = self.conn, None
            try:
                call(_close(conn), timeout=5)
            except (TimeoutError, OSError, asyncssh_module().Error):
                pass


async def _close(conn) -> None:
    conn.close()
    await conn.wait_closed()


def _why(e: BaseException) -> str:
    if isinstance(e, asyncio.TimeoutError | TimeoutError):
        return "timed out"
    text = str(e) or type(e).__name__
    return " ".join(text.split())
