"""Reading a tool's log from disk in bounded memory: regular files only, lines of bounded length.

A log is read in chunks of :data:`CHUNK_BYTES` and handed on as lines, so a file of any size
is read with memory bounded by the chunk and the longest line. A line longer than
:data:`MAX_LINE_BYTES` (``/dev/zero``, a core dump, a binary copied by mistake) ends the reading
with :class:`NotALog`: no tool tibench reads prints such lines. Pipes, devices and sockets are
refused before they are opened (opening a FIFO blocks until a writer comes; ``/dev/zero``
never ends).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from os import PathLike

__all__ = ["CHUNK_BYTES", "MAX_LINE_BYTES", "MAX_TEXT_BYTES", "NotALog", "log_lines", "read_log"]

#: Bytes read at a time.
CHUNK_BYTES = 1 << 20
#: The longest line accepted; sysbench, YCSB and go-tpc lines are under 10 kB.
MAX_LINE_BYTES = 1 << 20
#: The largest log read whole (YCSB, go-tpc); sysbench logs of any size are streamed.
MAX_TEXT_BYTES = 512 << 20


class NotALog(ValueError):
    """The file is not a log tibench can read: not a regular file, or a line too long."""


def check_regular(path: str | PathLike, what: str) -> int:
    """The size of ``path``; :class:`NotALog` when it is not a regular file (``OSError`` when
    it cannot be stat-ed)."""
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        kinds = [(stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a pipe"),
                 (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"),
                 (stat.S_ISSOCK, "a socket")]  # fmt: skip
        kind = next((k for test, k in kinds if test(st.st_mode)), "something else")
        raise NotALog(f"not a {what}: {path} is {kind}, not a regular file")
    return st.st_size


def log_lines(path: str | PathLike, what: str) -> Iterator[str]:
    """The lines of a log (UTF-8, undecodable bytes replaced, ``\\r\\n`` and ``\\r`` made
    ``\\n``), each with its line break, read :data:`CHUNK_BYTES` at a time.

    Raises
    ------
    NotALog
        ``path`` is not a regular file (raised before it is opened), or a line is longer
        than :data:`MAX_LINE_BYTES` (raised once that many bytes are read without a break).
    OSError
        The file cannot be opened or read.
    """
    check_regular(path, what)
    with open(path, "rb") as fh:
        pending = b""
        line_no = 1
        while True:
            chunk = fh.read(CHUNK_BYTES)
            if not chunk:
                break
            data = pending + chunk
            # a lone \r ends a line too (text mode's universal newlines): split after either
            cut = max(data.rfind(b"\n"), data.rfind(b"\r"))
            if data.endswith(b"\r"):
                cut = max(data.rfind(b"\n", 0, len(data) - 1), data.rfind(b"\r", 0, len(data) - 1))
            if cut < 0:
                pending = data
                if len(pending) > MAX_LINE_BYTES:
                    raise NotALog(
                        f"not a {what}: line {line_no} is longer than "
                        f"{MAX_LINE_BYTES >> 20} MiB (no line break)"
                    )
                continue
            text, pending = data[: cut + 1], data[cut + 1 :]
            if len(pending) > MAX_LINE_BYTES:
                raise NotALog(
                    f"not a {what}: a line after line {line_no} is longer than "
                    f"{MAX_LINE_BYTES >> 20} MiB (no line break)"
                )
            lines = _decode(text).split("\n")[:-1]  # text ends with a line break
            line_no += len(lines)
            for x in lines:
                yield x + "\n"
        if pending:
            yield _decode(pending)


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")


def read_log(path: str | PathLike, what: str) -> str:
    """A whole log as text, read through :func:`log_lines`; :class:`NotALog` also when it is
    larger than :data:`MAX_TEXT_BYTES`."""
    size = check_regular(path, what)
    if size > MAX_TEXT_BYTES:
        raise NotALog(
            f"not a {what}: {path} is {size >> 20} MiB, more than the "
            f"{MAX_TEXT_BYTES >> 20} MiB a {what} is read whole"
        )
    return "".join(log_lines(path, what))
