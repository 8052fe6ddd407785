"""Guards for real clusters: nothing that writes or drops data runs there without consent."""

from __future__ import annotations

import sys


class DestructiveRefused(PermissionError):
    """A step would write or drop data on a target the user has not allowed."""


def guard_destructive(
    what: str, *, embedded: bool, allowed: bool, target: str, stream=sys.stderr
) -> None:
    """Say what is about to happen; refuse on a real target unless ``allow_destructive``/``--yes``.

    Parameters
    ----------
    what
        The plan in words, e.g. "drop and re-create sbtest1..sbtest16 (10,000,000 rows each)".
    embedded
        True for tibench's private server: always allowed, it is tibench's own data.
    allowed
        ``allow_destructive: true`` in the params, or ``--yes`` on the command line.
    target
        The masked target URL, for the message.
    """
    if embedded:
        return
    if not allowed:
        raise DestructiveRefused(
            f"refusing to {what} on {target}: set allow_destructive: true in the params "
            "or pass --yes"
        )
    print(f"tibench: about to {what} on {target}", file=stream, flush=True)
