"""A run's earlier attempts: before a run is measured again (a failed attempt, ``--redo``, or
files the catalog does not know), what the last attempt left is moved aside, never overwritten.

A log ``<run>.log`` goes to ``<run>.attempt<N>.log``; a run's folder ``<run>`` (DM) to
``<run>.attempt<N>``.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

log = logging.getLogger(__name__)


def _parts(path: Path, folder: bool) -> tuple[str, str]:
    """The name before and after ``.attempt<N>`` in ``path``'s earlier attempts."""
    return (path.name, "") if folder else (path.stem, path.suffix)


def earlier_attempts(path: Path, *, folder: bool = False) -> list[Path]:
    """The earlier attempts of a run's log (or, with ``folder``, of its folder), in order."""
    stem, suffix = _parts(path, folder)
    name = re.compile(rf"{re.escape(stem)}\.attempt(\d+){re.escape(suffix)}")
    found = [(m, p) for p in path.parent.glob(f"{stem}.attempt*") if (m := name.fullmatch(p.name))]
    return [p for m, p in sorted(found, key=lambda mp: int(mp[0][1]))]


def set_aside(path: Path, *, folder: bool = False) -> int:
    """Move what an earlier attempt left at ``path`` (a log, or with ``folder`` a run's folder)
    to the next ``.attempt<N>``; returns this attempt's number (1 for a first run)."""
    stem, suffix = _parts(path, folder)
    n = len(earlier_attempts(path, folder=folder))
    if path.exists():
        n += 1
        dest = path.with_name(f"{stem}.attempt{n}{suffix}")
        path.rename(dest)
        log.info("earlier %s of this run kept as %s", "folder" if folder else "log", dest)
    return n + 1
