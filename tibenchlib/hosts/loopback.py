"""Debian's OpenSSH server as stand-in client hosts on loopback addresses (tests and demos).

:class:`LoopbackSshd` starts one ``sshd -D`` per address (127.0.0.2, 127.0.0.3…), each with
its own configuration, a generated host key and a non-default port, accepting only a generated
user key; the ``known_hosts`` file it writes pins the host keys. Logging in as the user running
it, with ``HOME`` set to the hosts' private directory so that a session's shell reads none of
the user's start-up files (a ``~/.bashrc`` that starts other programs costs every command the
hosts run, on the CPUs the server under test shares with them). Stopped (every session it
served included) by :meth:`stop`.
"""

from __future__ import annotations

import getpass
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import psutil

__all__ = ["LoopbackSshd", "sshd_missing"]

SSHD = "/usr/sbin/sshd"


def sshd_missing() -> str | None:
    """Why loopback hosts cannot run here (None when they can)."""
    if not (shutil.which("sshd") or os.access(SSHD, os.X_OK)):
        return "sshd is not installed (make setup installs openssh-server)"
    if not shutil.which("ssh-keygen"):
        return "ssh-keygen is not installed (openssh-client)"
    return None


def _free_port(addr: str) -> int:
    with socket.socket() as s:
        s.bind((addr, 0))
        return s.getsockname()[1]


class LoopbackSshd:
    """``sshd`` on each of ``addresses`` under ``root`` (a private directory)."""

    def __init__(self, root: str | Path, addresses=("127.0.0.2", "127.0.0.3")):
        self.root = Path(root)
        self.addresses = list(addresses)
        self.user = getpass.getuser()
        self.key = self.root / "user_key"
        self.known_hosts = self.root / "known_hosts"
        self.ports: dict[str, int] = {}
        self.procs: dict[str, subprocess.Popen] = {}

    def destinations(self) -> list[str]:
        return [f"{self.user}@{a}:{self.ports[a]}" for a in self.addresses]

    def client_entries(self) -> list[dict]:
        """The study file's ``clients`` entries of the hosts (key and known_hosts given)."""
        return [
            {"host": d, "key": str(self.key), "known_hosts": str(self.known_hosts)}
            for d in self.destinations()
        ]

    def _keygen(self, path: Path) -> str:
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)],
            check=True,
            stdin=subprocess.DEVNULL,
        )
        return path.with_suffix(".pub").read_text().strip()

    def start(self, timeout: float = 10.0) -> LoopbackSshd:
        self.root.mkdir(parents=True, exist_ok=True)
        os.chmod(self.root, 0o700)
        if os.geteuid() == 0:
            Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # privilege separation
        pub = self._keygen(self.key)
        (self.root / "authorized_keys").write_text(pub + "\n")
        known = []
        for i, addr in enumerate(self.addresses):
            host_key = self.root / f"host_key_{i}"
            host_pub = self._keygen(host_key)
            port = _free_port(addr)
            self.ports[addr] = port
            known.append(f"[{addr}]:{port} {' '.join(host_pub.split()[:2])}")
            cfg = self.root / f"sshd_{i}.conf"
            cfg.write_text(
                "\n".join(
                    [
                        f"ListenAddress {addr}",
                        f"Port {port}",
                        f"HostKey {host_key}",
                        f"PidFile {self.root / f'sshd_{i}.pid'}",
                        f"AuthorizedKeysFile {self.root / 'authorized_keys'}",
                        "PubkeyAuthentication yes",
                        "PasswordAuthentication no",
                        "KbdInteractiveAuthentication no",
                        "PermitRootLogin prohibit-password",
                        "StrictModes no",
                        "UsePAM no",
                        "LogLevel ERROR",
                        "MaxSessions 50",
                        "MaxStartups 50",
                        "Subsystem sftp internal-sftp",  # tibench's files copied over SFTP
                        # a session's shell reads no start-up file of the user's (bash reads
                        # ~/.bashrc when started by sshd): hosts that do not depend on what a
                        # developer's shell starts; the working directory is still the home
                        f"SetEnv HOME={self.root}",
                    ]
                )
                + "\n"
            )
            self.procs[addr] = subprocess.Popen(
                [SSHD, "-D", "-e", "-f", str(cfg)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=open(self.root / f"sshd_{i}.log", "wb"),  # noqa: SIM115 - the child's
            )
        self.known_hosts.write_text("\n".join(known) + "\n")
        end = time.monotonic() + timeout
        for addr, port in self.ports.items():
            while True:
                if self.procs[addr].poll() is not None:
                    log = (self.root / f"sshd_{self.addresses.index(addr)}.log").read_text()
                    self.stop()
                    raise RuntimeError(f"sshd on {addr}:{port} exited: {log.strip()[-300:]}")
                with socket.socket() as s:
                    if s.connect_ex((addr, port)) == 0:
                        break
                if time.monotonic() > end:
                    self.stop()
                    raise RuntimeError(f"sshd on {addr}:{port} did not listen in {timeout:g} s")
                time.sleep(0.05)
        return self

    def kill_host(self, addr: str) -> None:
        """The host at ``addr`` dies: its sshd, every session it serves and what they run."""
        proc = self.procs.pop(addr, None)
        if proc is None:
            return
        try:
            tree = psutil.Process(proc.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            tree = []
        for p in [psutil.Process(proc.pid), *tree] if proc.poll() is None else tree:
            try:
                p.kill()
            except psutil.NoSuchProcess:
                pass
        proc.wait()

    def stop(self) -> None:
        for addr in list(self.procs):
            self.kill_host(addr)

    def __enter__(self) -> LoopbackSshd:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
