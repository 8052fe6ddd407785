"""Environment capture: what the client host and the database server were when a study ran.

Small collectors each fill one section of a plain dict, which is saved as JSON beside the
results. A collector never raises: a missing ``/proc`` or ``/sys`` file, a tool that is not
installed, a statement the server refuses, all become ``{"unavailable": "<reason>"}`` in place of
the value, and capture goes on. :func:`list_unavailable` lists them.

Secrets never reach a capture: :func:`redact` replaces values whose key names a secret and the
password part of URLs, and both capture functions apply it before returning.

Only :func:`save_capture` writes a file.

The package holds one module per concern:

- :mod:`.record`: the layout version and the unavailable value every capture shares;
- :mod:`.sources`: the roots a host capture reads, file reads and tool runs that never raise;
- :mod:`.host`: CPU, NUMA, memory, OS and Python collectors, :func:`capture_host`,
  :func:`host_summary`; :func:`read_numa_nodes` is the one reader of the NUMA nodes in sysfs;
- :mod:`.disks` and :mod:`.software`: the disks, and the tools and packages installed;
- :mod:`.database`: :func:`capture_database`;
- :mod:`.redaction`: :func:`redact` and :func:`save_capture`;
- :mod:`.tables`: :func:`environment_tables` for display;
- :mod:`.diff`: :func:`config_diff` between two arms;
- :mod:`.plan`: the environment phase's dry-run :func:`estimate`.
"""

from __future__ import annotations

from .database import CURATED_CONFIG, CURATED_VARIABLES, capture_database, detect_flavor
from .diff import config_diff
from .host import _HOST_COLLECTORS as _HOST_COLLECTORS  # tests replace its entries
from .host import (
    capture_host,
    host_summary,
    parse_numactl_hardware,
    read_numa_nodes,
)
from .plan import CAPTURE_BYTES, CAPTURE_S, estimate
from .record import SCHEMA_VERSION, is_unavailable, list_unavailable, unavailable
from .redaction import redact, save_capture
from .software import tool_version
from .tables import environment_tables

__all__ = [
    "CAPTURE_BYTES",
    "CAPTURE_S",
    "CURATED_CONFIG",
    "CURATED_VARIABLES",
    "SCHEMA_VERSION",
    "capture_database",
    "capture_host",
    "config_diff",
    "detect_flavor",
    "environment_tables",
    "estimate",
    "host_summary",
    "is_unavailable",
    "list_unavailable",
    "parse_numactl_hardware",
    "read_numa_nodes",
    "redact",
    "save_capture",
    "tool_version",
    "unavailable",
]
