"""One runner per study: an exclusive lock on ``data/<study>/.lock`` held for a whole
``tibench run``, every phase.

The lock is re-entrant within the process that holds it and for its descendants: ``tibench run``
executes notebooks in a child kernel whose phase functions take the same lock, so the holder
names itself in :data:`ENV` and a descendant that finds its holder there proceeds under the
parent's lock instead of failing against it.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from . import paths

#: ``<lock file>:<holder pid>`` of the lock a process holds, inherited by its children.
ENV = "TIBENCH_STUDY_LOCK"

_held: dict[str, int] = {}  # lock file -> depth, in this process


class StudyLocked(RuntimeError):
    """Another tibench is running this study."""


def lock_path(study: str) -> Path:
    return paths.lock_file(study)


def _ancestors() -> set[int]:
    out, pid = set(), os.getpid()
    while pid > 1:
        try:
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
        out.add(pid)
    return out


def _inherited(p: Path) -> bool:
    """Whether an ancestor process holds the lock on ``p`` and said so in :data:`ENV`."""
    held = os.environ.get(ENV, "")
    path, _, pid = held.rpartition(":")
    if path != str(p) or not pid.isdigit():
        return False
    try:
        recorded = p.read_text().strip()
    except OSError:
        return False
    return recorded == pid and int(pid) in _ancestors()


@contextmanager
def study_lock(study: str) -> Iterator[None]:
    """Hold the study's lock; :class:`StudyLocked` at once (naming the holder's pid) if another
    process has it."""
    p = lock_path(study)
    key = str(p)
    if _held.get(key) or _inherited(p):
        _held[key] = _held.get(key, 0) + 1
        try:
            yield
        finally:
            _held[key] -= 1
        return
    p.parent.mkdir(parents=True, exist_ok=True)
    f = open(p, "a+")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        f.seek(0)
        holder = f.read().strip() or "unknown"
        f.close()
        raise StudyLocked(
            f"study '{study}' is being run by another tibench (pid {holder}, lock {p}): "
            "wait for it to finish or stop it"
        ) from None
    f.seek(0)
    f.truncate()
    f.write(str(os.getpid()))
    f.flush()
    old_env = os.environ.get(ENV)
    os.environ[ENV] = f"{p}:{os.getpid()}"
    _held[key] = 1
    try:
        yield
    finally:
        _held.pop(key, None)
        if old_env is None:
            os.environ.pop(ENV, None)
        else:
            os.environ[ENV] = old_env
        fcntl.flock(f, fcntl.LOCK_UN)
        f.close()
