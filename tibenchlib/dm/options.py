"""A client option file holding the password, for tools that read one (mydumper, myloader).

mydumper and myloader 0.10 accept ``--defaults-file``; libmariadb reads its ``[client]`` group, so
the password never appears on the command line, in ``ps`` or in the logged command.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..db import ConnInfo

PREFIX, SUFFIX = "client-", ".cnf"


@contextmanager
def client_defaults_file(info: ConnInfo, directory: str | Path) -> Iterator[Path]:
    """A ``[client]`` option file with the password, mode 0600 in ``directory``, removed after.

    ``directory`` is the study's private folder (:func:`tibenchlib.paths.private_dir`, 0700);
    :func:`remove_stale` deletes what a killed run left there.
    """
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=PREFIX, suffix=SUFFIX, dir=d)
    os.fchmod(fd, stat.S_IRUSR | stat.S_IWUSR)
    p = Path(name)
    with os.fdopen(fd, "w") as f:
        f.write("[client]\n")
        if info.password:
            if any(ch in info.password for ch in "\n\r"):
                raise ValueError("the password holds a line break: an option file cannot carry it")
            # quoted, so '#' or ';' inside the password is not read as a comment
            escaped = info.password.replace("\\", "\\\\").replace('"', '\\"')
            f.write(f'password="{escaped}"\n')
    try:
        yield p
    finally:
        p.unlink(missing_ok=True)


def remove_stale(directory: str | Path) -> int:
    """Delete option files a killed run left in ``directory``; returns how many."""
    n = 0
    for p in Path(directory).glob(f"{PREFIX}*{SUFFIX}"):
        p.unlink(missing_ok=True)
        n += 1
    return n


def connection_args(conn: ConnInfo, defaults_file: str | Path | None) -> list[str]:
    """The options mydumper and myloader share: the 0600 defaults file (which must come first:
    libmariadb reads it before the other options), host, port and user; never the password."""
    args = [f"--defaults-file={defaults_file}"] if defaults_file is not None else []
    return [*args, f"--host={conn.host}", f"--port={conn.port}", f"--user={conn.user}"]
