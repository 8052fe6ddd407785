"""The database server: version and flavor, global variables, the curated configuration rows, and
on TiDB its config and cluster tables (:func:`capture_database`)."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from ..db import classify_version
from .record import SCHEMA_VERSION, _now, is_unavailable, unavailable
from .redaction import redact

#: Global variables shown in the configuration table when the server has them. The tidb_* ones
#: are those the reference reports set (TiDB v5.1.4 vs v6.0.0 report, §3.3.3; TiFlash report).
CURATED_VARIABLES = tuple(
    """
    innodb_buffer_pool_size innodb_flush_log_at_trx_commit innodb_log_file_size
    innodb_flush_method sync_binlog log_bin binlog_format max_connections transaction_isolation
    tx_isolation thread_handling thread_pool_size performance_schema character_set_server
    tidb_hashagg_final_concurrency tidb_hashagg_partial_concurrency tidb_enable_async_commit
    tidb_enable_1pc tidb_guarantee_linearizability tidb_enable_clustered_index
    tidb_isolation_read_engines tidb_txn_mode tidb_enable_prepared_plan_cache
    tidb_mem_quota_query
    """.split()
)

#: ``SHOW CONFIG`` items shown on TiDB: those the reference reports tuned (§3.3.1–3.3.2 of the
#: v5.1.4 vs v6.0.0 report, the v3.0.5 baseline's max-procs and coprocessor pools).
CURATED_CONFIG = tuple(
    """
    prepared-plan-cache.enabled tikv-client.max-batch-wait-time performance.max-procs
    raftstore.store-pool-size raftstore.apply-pool-size rocksdb.max-background-jobs
    raftdb.max-background-jobs raftdb.allow-concurrent-memtable-write server.grpc-concurrency
    server.enable-request-batch pessimistic-txn.pipelined storage.block-cache.capacity
    readpool.coprocessor.high-concurrency readpool.coprocessor.normal-concurrency
    readpool.coprocessor.low-concurrency
    """.split()
)


def detect_flavor(version_string: str, version_comment: str | None = None) -> tuple[str, str]:
    """``(flavor, version)`` from ``SELECT VERSION()`` and optionally ``@@version_comment``.

    ``'8.0.11-TiDB-v8.5.4'`` → ``('tidb', 'v8.5.4')``; ``'10.11.6-MariaDB-0+deb12u1'`` →
    ``('mariadb', '10.11.6')``; anything else is ``mysql``. Delegates to
    :func:`tibenchlib.db.classify_version`, the one place that knows the rule.
    """
    info = classify_version(version_string, version_comment)
    return info.flavor, info.version


def _jsonable(v: Any) -> Any:
    if isinstance(v, bytes | bytearray):
        return bytes(v).decode("utf-8", "replace")
    if isinstance(v, Decimal):
        return int(v) if v == v.to_integral_value() else float(v)
    if isinstance(v, _dt.datetime | _dt.date | _dt.time):
        return v.isoformat()
    if isinstance(v, _dt.timedelta):
        return v.total_seconds()
    return v


def _query(engine, sql: str) -> list[dict] | dict:
    """Rows of one statement as dicts with lower-case keys; unavailable when it fails."""
    try:
        with engine.connect() as conn:
            result = conn.exec_driver_sql(sql)
            return [
                {str(k).lower(): _jsonable(v) for k, v in row._mapping.items()} for row in result
            ]
    except Exception as e:  # every driver and server error means the same here: not available
        reason = str(getattr(e, "orig", None) or e).splitlines()[0]
        return unavailable(f"{sql}: {type(e).__name__}: {reason}")


def _curated(variables: Mapping[str, Any], config: list[dict] | dict) -> list[dict]:
    rows = [
        {"scope": "global variable", "name": n, "value": variables[n]}
        for n in CURATED_VARIABLES
        if n in variables
    ]
    if isinstance(config, list):
        for name in CURATED_CONFIG:
            by_type: dict[str, list[str]] = {}
            for r in config:
                if r.get("name") == name:
                    by_type.setdefault(str(r.get("type")), []).append(str(r.get("value")))
            for typ, values in sorted(by_type.items()):
                distinct = sorted(set(values))
                rows.append(
                    {
                        "scope": f"{typ} config",
                        "name": name,
                        "value": " / ".join(distinct),
                        "instances": len(values),
                    }
                )
    return rows


def capture_database(engine, flavor: str | None = None) -> dict:
    """Describe the database server behind ``engine`` (a SQLAlchemy engine).

    Parameters
    ----------
    engine
        Connected to the server under test; every statement gets its own connection, so one
        refused statement cannot spoil the next.
    flavor
        What the caller believes the server is (``tidb``, ``mysql``, ``mariadb``). The flavor
        detected from ``VERSION()`` wins when they differ, and the difference is recorded in
        ``warnings``; TiDB-only statements run only when the server is TiDB.

    Returns
    -------
    dict
        ``kind``, ``schema_version``, ``captured_at``, ``url`` (password hidden), ``flavor``,
        ``version``, ``version_string``, ``version_comment``, ``global_variables`` (name →
        value), ``curated`` (rows ``scope``/``name``/``value`` for display), ``warnings``, and on
        TiDB ``tidb`` with ``tidb_version``, ``config`` (``SHOW CONFIG`` rows),
        ``cluster_info``, ``cluster_hardware``, ``cluster_systeminfo`` (rows with lower-case
        keys). Each failed statement is ``{"unavailable": reason}``. Secrets are redacted.
    """
    password = getattr(getattr(engine, "url", None), "password", None)
    try:
        url = engine.url.render_as_string(hide_password=True)
    except Exception as e:
        url = unavailable(f"{type(e).__name__}: {e}")
    cap: dict[str, Any] = {
        "kind": "database",
        "schema_version": SCHEMA_VERSION,
        "captured_at": _now(),
        "url": url,
        "warnings": [],
    }
    rows = _query(engine, "SELECT VERSION() AS version, @@version_comment AS version_comment")
    detected = None
    if is_unavailable(rows):
        cap["version_string"] = rows
    else:
        cap["version_string"] = rows[0]["version"]
        cap["version_comment"] = rows[0].get("version_comment")
        detected, cap["version"] = detect_flavor(str(rows[0]["version"]), cap["version_comment"])
    if detected and flavor and detected != flavor:
        cap["warnings"].append(f"flavor given as {flavor!r} but the server reports {detected!r}")
    cap["flavor"] = detected or flavor or unavailable("VERSION() failed and no flavor was given")

    variables = _query(engine, "SHOW GLOBAL VARIABLES")
    if not is_unavailable(variables):
        variables = {r["variable_name"]: r["value"] for r in variables}
    cap["global_variables"] = variables
    config: list[dict] | dict = []
    if cap["flavor"] == "tidb":
        config = _query(engine, "SHOW CONFIG")
        cap["tidb"] = {
            "tidb_version": _query(engine, "SELECT tidb_version() AS tidb_version"),
            "config": config,
            "cluster_info": _query(engine, "SELECT * FROM information_schema.cluster_info"),
            "cluster_hardware": _query(engine, "SELECT * FROM information_schema.cluster_hardware"),
            "cluster_systeminfo": _query(
                engine, "SELECT * FROM information_schema.cluster_systeminfo"
            ),
        }
    cap["curated"] = _curated(variables if isinstance(variables, dict) else {}, config)
    return redact(cap, secrets=[password])
