"""What differs between two arms' database captures: :func:`config_diff`."""

from __future__ import annotations

import pandas as pd

# Variables that differ between any two captures without being configuration.
_VOLATILE = frozenset(
    {
        "gtid_binlog_pos",
        "gtid_binlog_state",
        "gtid_current_pos",
        "gtid_slave_pos",
        "timestamp",
        "pid_file",
        "port",
        "socket",
        "server_uid",
        "server_id",
        "hostname",
        "log_error",
        "general_log_file",
        "slow_query_log_file",
        "innodb_buffer_pool_load_at_startup",
    }
)


def config_diff(captures: dict, baseline: str, candidate: str) -> pd.DataFrame:
    """What differs between two arms' database captures: version and global variables.

    Parameters
    ----------
    captures
        Arm label → environment capture (``{"database": {...}, ...}``), as the catalog keeps.

    Returns
    -------
    DataFrame ``setting, <baseline>, <candidate>``: one row per differing setting (volatile
    values such as ports, sockets and GTID positions left out).
    """
    rows = []
    a = (captures.get(baseline) or {}).get("database") or {}
    b = (captures.get(candidate) or {}).get("database") or {}
    for key in ("flavor", "version_string"):
        if a.get(key) != b.get(key):
            rows.append({"setting": key, baseline: a.get(key), candidate: b.get(key)})
    va = a.get("global_variables") if isinstance(a.get("global_variables"), dict) else {}
    vb = b.get("global_variables") if isinstance(b.get("global_variables"), dict) else {}
    for k in sorted(set(va) | set(vb)):
        if k.lower() in _VOLATILE or va.get(k) == vb.get(k):
            continue
        rows.append({"setting": k, baseline: va.get(k), candidate: vb.get(k)})
    return pd.DataFrame(rows, columns=["setting", baseline, candidate])
