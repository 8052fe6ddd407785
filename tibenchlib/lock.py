"""One runner per study: an exclusive lock on ``data/<study>/.lock`` held for a whole
``tibench run``, every phase; and one study per embedded server: a lease on the server, taken
before its settings are changed and held while the study measures on it.

The lock is re-entrant within the process that holds it and for its descendants: ``tibench run``
executes notebooks in a child kernel whose phase functions take the same lock, so the holder
names itself in :data:`ENV` and a descendant that finds its holder there proceeds under the
parent's lock instead of failing against it.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from . import paths

#: ``<lock file>:<holder pid>`` of the lock a process holds, inherited by its children.
ENV = "TIBENCH_STUDY_LOCK"

#: How long a study waits for an embedded server another study holds before it is refused.
WAIT_ENV = "TIBENCH_SERVER_WAIT_S"
DEFAULT_WAIT_S = 60.0

_held: dict[str, int] = {}  # lock file -> depth, in this process
_leases: dict[str, tuple] = {}  # lease file -> (open file, lock file it lasts as long as)


class ServerBusy(RuntimeError):
    """Another study measures on the embedded server."""


class StudyLocked(RuntimeError):
    """Another tibench is running this study."""


class BadWait(ValueError):
    """:data:`WAIT_ENV` is set to something that is not a number of seconds."""

    exit_code = 2  # bad input, as a bad params file: nothing was run


def wait_seconds() -> float:
    """How long to wait for a busy embedded server: :data:`WAIT_ENV`, else
    :data:`DEFAULT_WAIT_S`; :class:`BadWait` names the variable when it is not seconds."""
    value = os.environ.get(WAIT_ENV, "").strip()
    if not value:
        return DEFAULT_WAIT_S
    try:
        wait_s = float(value)
    except ValueError:
        wait_s = float("nan")
    if not 0 <= wait_s < float("inf"):
        raise BadWait(
            f"{WAIT_ENV}={value!r} is not a number of seconds: set it to how long a study waits "
            f"for an embedded server another one uses (e.g. {DEFAULT_WAIT_S:g}), or unset it"
        )
    return wait_s


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
            if not _held[key]:
                _held.pop(key)
                _release_leases(key)
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
        _release_leases(key)
        if old_env is None:
            os.environ.pop(ENV, None)
        else:
            os.environ[ENV] = old_env
        fcntl.flock(f, fcntl.LOCK_UN)
        f.close()


def _study_of(lock_file: str) -> str:
    return Path(lock_file).parent.name


def _current_lock() -> str | None:
    """The lock file of the study this process runs (its own lock, or its parent's)."""
    if _held:
        return next(reversed(_held))
    held = os.environ.get(ENV, "")
    path, _, pid = held.rpartition(":")
    return path if path and _inherited(Path(path)) else None


def _release_leases(lock_key: str) -> None:
    for lease_key, (f, owner) in list(_leases.items()):
        if owner is not None and owner == lock_key:
            del _leases[lease_key]
            fcntl.flock(f, fcntl.LOCK_UN)
            f.close()


def _holder(f) -> tuple[int | None, str]:
    f.seek(0)
    pid, _, lock_file = f.read().strip().partition(" ")
    return (int(pid) if pid.isdigit() else None), lock_file


@contextmanager
def server_lease(lease_file: Path, server: str, wait_s: float | None = None) -> Iterator[None]:
    """Hold the lease on an embedded server: no other study changes its settings, restarts or
    stops it while this one measures.

    Taken by a process that runs a study (holds its lock), the lease lasts as long as that lock;
    taken by one that does not (``tibench server stop``), only for the block. It is re-entrant in
    the process that holds it and for its descendants running the same study (the kernels of a
    ``tibench run``). Another study waits up to ``wait_s`` (:data:`WAIT_ENV`, default
    :data:`DEFAULT_WAIT_S`), then :class:`ServerBusy` names the holder.
    """
    key = str(lease_file)
    if key in _leases:
        yield
        return
    lock_key = _current_lock()
    if wait_s is None:
        wait_s = wait_seconds()
    fd = os.open(lease_file, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    f = os.fdopen(fd, "r+")
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            pid, holder = _holder(f)
            if lock_key is not None and holder == lock_key and pid in _ancestors():
                f.close()  # the study's own parent holds it
                yield
                return
            if time.monotonic() >= deadline:
                f.close()
                who = f"study '{_study_of(holder)}'" if holder else "tibench server"
                raise ServerBusy(
                    f"embedded server '{server}' is in use by {who} (pid {pid}); waited "
                    f"{wait_s:g}s ({WAIT_ENV}): run again when it has finished"
                ) from None
            time.sleep(min(0.5, max(0.0, deadline - time.monotonic())))
    f.seek(0)
    f.truncate()
    f.write(f"{os.getpid()} {lock_key or ''}")
    f.flush()
    _leases[key] = (f, lock_key)
    if lock_key is not None:
        yield  # released with the study's lock
        return
    try:
        yield
    finally:
        del _leases[key]
        fcntl.flock(f, fcntl.LOCK_UN)
        f.close()
