"""Client hosts as the study file names them: ``local`` or an SSH destination.

A destination is ``user@host[:port]`` (an IPv6 address in brackets). No password is ever part
of it: ``user:secret@host`` is refused, and so is any ``password`` key beside it (the SSH key
file or the agent authenticates). Pure: no connection is opened here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["LOCAL", "Destination", "host_labels", "parse_destination"]

LOCAL = "local"

_DEST = re.compile(
    r"^(?P<user>[A-Za-z0-9._][A-Za-z0-9._-]*)@"
    r"(?P<host>[A-Za-z0-9][A-Za-z0-9.-]*|\[[0-9A-Fa-f:.]+\])"
    r"(?::(?P<port>\d{1,5}))?$"
)


@dataclass(frozen=True)
class Destination:
    """Where to log in: ``user`` at ``host``, SSH ``port``."""

    user: str
    host: str
    port: int = 22

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.user}@{host}" + (f":{self.port}" if self.port != 22 else "")

    @property
    def label(self) -> str:
        """A file-name-safe name of the host: ``host`` or ``host_port``."""
        name = self.host.replace(":", "-")
        return name if self.port == 22 else f"{name}_{self.port}"


def parse_destination(text: str) -> Destination:
    """``user@host[:port]`` as a :class:`Destination`; a clear :class:`ValueError` otherwise."""
    user_part = text.split("@", 1)[0]
    if "@" in text and ":" in user_part:
        raise ValueError(
            f"{text.split(':', 1)[0]}:<hidden>@…: a password never goes in the study file; "
            "give key: <private key file> or let the SSH agent authenticate"
        )
    m = _DEST.match(text)
    if not m:
        raise ValueError(f"{text!r} is not 'local' or user@host[:port] (e.g. bench@10.0.1.21)")
    port = int(m["port"]) if m["port"] else 22
    if not 0 < port < 65536:
        raise ValueError(f"{text!r}: SSH port {port} is out of range")
    return Destination(m["user"], m["host"].strip("[]"), port)


def host_labels(hosts: list[str]) -> list[str]:
    """One distinct file-name-safe label per client (``local``, ``10.0.1.21``, ``10.0.1.21_2222``;
    a name given twice gets ``-2``, ``-3``…): the name of each client's raw log."""
    base = [LOCAL if h == LOCAL else parse_destination(h).label for h in hosts]
    out, seen = [], {}
    for b in base:
        seen[b] = seen.get(b, 0) + 1
        out.append(b if seen[b] == 1 else f"{b}-{seen[b]}")
    return out
