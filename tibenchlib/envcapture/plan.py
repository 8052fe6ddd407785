"""The environment phase's dry-run entry: :func:`estimate`."""

from __future__ import annotations

#: Rough cost of one arm's capture: reading every global variable (and on TiDB the config and
#: cluster tables). A planning figure: the demo's three captures on the embedded MariaDB took
#: 3 s together on a loaded 2-core host.
CAPTURE_S = 3.0
#: Rough size of one capture's JSON on disk.
CAPTURE_BYTES = 100_000


def estimate(study, arms: list[str] | None = None) -> dict:
    """Dry-run entry of the environment phase: one capture per arm."""
    n = len(arms or study.arms)
    return {
        "phase": "environment",
        "runs": n,
        "eta_s": n * CAPTURE_S,
        "disk_bytes": n * CAPTURE_BYTES,
        "note": f"{n} environment capture{'s' if n != 1 else ''} (rough)",
    }
