"""Start several client commands together and wait for all of them.

One run with several clients (one per tidb-server address, or one server several times) starts
every client at once, each writing its own log, and keeps every outcome: a client that failed
fails the run, and the others' logs stay where they were written. Combining the clients'
figures is :mod:`tibenchlib.multiclient`'s job.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Sequence
from pathlib import Path

from .tools import Outcome, execute

__all__ = ["endpoint_conns", "execute_together", "failed_clients", "split_threads"]


def execute_together(
    commands: Sequence[Sequence[str]],
    log_paths: Sequence[str | Path],
    *,
    timeout_s: float | None = None,
    env: dict | None = None,
    interrupt_after_s: float | None = None,
) -> list[Outcome]:
    """Run ``commands`` at the same time, each writing to its ``log_paths`` entry, and return
    their :class:`~tibenchlib.tools.Outcome` in the same order once all have ended.

    Each command is started by its own thread right after a barrier, so they start within a
    few milliseconds of each other; ``Outcome.started_at`` records each one's actual start
    (what :func:`tibenchlib.multiclient.align_series` aligns on). A missing executable is an
    outcome with ``missing`` set, as for one client. ``interrupt_after_s``: each command gets
    SIGINT once it has run that long (:func:`tibenchlib.tools.execute`).
    """
    if len(commands) != len(log_paths):
        raise ValueError(
            f"execute_together: {len(commands)} commands but {len(log_paths)} log paths"
        )
    if len({str(Path(p)) for p in log_paths}) != len(log_paths):
        raise ValueError("execute_together: two clients would write the same log file")
    outcomes: list[Outcome | None] = [None] * len(commands)
    errors: list[BaseException] = []
    barrier = threading.Barrier(len(commands)) if commands else None

    def one(i: int) -> None:
        try:
            barrier.wait()
            outcomes[i] = execute(
                commands[i], log_paths[i], timeout_s=timeout_s, env=env,
                interrupt_after_s=interrupt_after_s,
            )  # fmt: skip
        except BaseException as e:  # re-raised in the caller's thread
            errors.append(e)

    threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(len(commands))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return outcomes  # type: ignore[return-value]


def failed_clients(outcomes: Sequence[Outcome]) -> list[int]:
    """Positions of the clients that did not end well: missing tool, timeout, non-zero exit."""
    return [
        i for i, o in enumerate(outcomes) if o.missing or o.timed_out or o.returncode not in (0,)
    ]


def split_threads(threads: int, clients: int) -> list[int]:
    """``threads`` shared by ``clients`` as evenly as possible (the first ones take the rest)."""
    if clients < 1 or threads < clients:
        raise ValueError(f"{threads} threads cannot be shared by {clients} clients")
    base, rest = divmod(threads, clients)
    return [base + (i < rest) for i in range(clients)]


def endpoint_conns(conn, clients: int | Sequence[str]) -> list:
    """One connection per client: ``conn`` ``clients`` times, or ``conn`` at each ``host:port``
    (a ``clients`` parameter as :func:`tibenchlib.params.check_endpoints` validates it)."""
    if isinstance(clients, int):
        return [conn] * clients
    out = []
    for e in clients:
        host, _, port = e.rpartition(":")
        out.append(dataclasses.replace(conn, host=host.strip("[]"), port=int(port)))
    return out
