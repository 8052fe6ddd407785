"""What every capture shares: its layout version, its timestamp and the unavailable value.

A fact that could not be read is recorded as ``{"unavailable": "<reason>"}`` in its place, never
raised; :func:`list_unavailable` lists them.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping
from typing import Any

#: Version of the capture's layout; bump when a key moves.
SCHEMA_VERSION = 1


def unavailable(reason: str) -> dict[str, str]:
    """The value recorded in place of a fact that could not be read."""
    return {"unavailable": str(reason)}


def is_unavailable(value: Any) -> bool:
    """True for a value made by :func:`unavailable`."""
    return isinstance(value, Mapping) and set(value) == {"unavailable"}


def list_unavailable(capture: Any, prefix: str = "") -> list[tuple[str, str]]:
    """Every unavailable value in a capture as ``(dotted.path, reason)``, in key order."""
    out: list[tuple[str, str]] = []
    if is_unavailable(capture):
        return [(prefix, capture["unavailable"])]
    if isinstance(capture, Mapping):
        for k in sorted(capture, key=str):
            out += list_unavailable(capture[k], f"{prefix}.{k}" if prefix else str(k))
    elif isinstance(capture, list | tuple):
        for i, v in enumerate(capture):
            out += list_unavailable(v, f"{prefix}[{i}]")
    return out


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
