"""A client option file holding the password, for tools that read one (mydumper, myloader).

mydumper and myloader 0.10 accept ``--defaults-file``; libmariadb reads its ``[client]`` group, so
the password never appears on the command line, in ``ps`` or in the logged command.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..db import ConnInfo, private_file, remove_stale_files

PREFIX, SUFFIX = "client-", ".cnf"


@contextmanager
def client_defaults_file(info: ConnInfo, directory: str | Path) -> Iterator[Path]:
    """A ``[client]`` option file with the password, mode 0600 in ``directory``, removed after.

    ``directory`` is the study's private folder (:func:`tibenchlib.paths.private_dir`, 0700);
    :func:`remove_stale` deletes what a killed run left there.
    """
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    text = "[client]\n"
    if info.password:
        if any(ch in info.password for ch in "\n\r"):
            raise ValueError("the password holds a line break: an option file cannot carry it")
        # quoted, so '#' or ';' inside the password is not read as a comment
        escaped = info.password.replace("\\", "\\\\").replace('"', '\\"')
        text += f'password="{escaped}"\n'
    with private_file(text, d, PREFIX, SUFFIX) as p:
        yield p


def remove_stale(directory: str | Path) -> int:
    """Delete option files a killed run left in ``directory``; returns how many."""
    return remove_stale_files(directory, PREFIX, SUFFIX)


def connection_args(conn: ConnInfo, defaults_file: str | Path | None) -> list[str]:
    """The options mydumper and myloader share: the 0600 defaults file (which must come first:
    libmariadb reads it before the other options), host, port and user; never the password."""
    args = [f"--defaults-file={defaults_file}"] if defaults_file is not None else []
    return [*args, f"--host={conn.host}", f"--port={conn.port}", f"--user={conn.user}"]
