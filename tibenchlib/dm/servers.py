"""The two private MariaDBs of a DM study: the source (the embedded default, with a binary log so
it can be replicated) and the target, a second instance with its own datadir under
``data/server/dm-target``. Both are :class:`tibenchlib.server.EmbeddedServer`: the same lifecycle,
lock-down and 0600 credentials, only their options differ.
"""

from __future__ import annotations

from ..server import EmbeddedServer

TARGET_NAME = "dm-target"

#: What the source needs to be a replication primary: a binary log in row format and an id.
SOURCE_OPTIONS: dict = {
    "log_bin": "binlog",
    "server_id": 1,
    "binlog_format": "ROW",
}

#: The target: another id (replication refuses equal ones) and performance_schema on, so
#: statement latency during a load can be read from its digest summary.
TARGET_OPTIONS: dict = {
    "server_id": 2,
    "performance_schema": 1,
    "performance_schema_consumer_events_statements_current": "ON",
    "performance_schema_consumer_events_statements_history_long": "ON",
}


#: What the target's benchmark account needs beyond the usual grants to be made a replica and to
#: set worker-count and mode (``slave_parallel_*``, ``gtid_slave_pos``); still no SUPER or FILE.
TARGET_GRANTS = ("REPLICATION SLAVE ADMIN",)


def source_server(name: str = "embedded", root=None, **options) -> EmbeddedServer:
    """The source (not started): the embedded server with :data:`SOURCE_OPTIONS` on top."""
    return EmbeddedServer(name=name, options={**SOURCE_OPTIONS, **options}, root=root)


def target_server(name: str = TARGET_NAME, root=None, **options) -> EmbeddedServer:
    """The target (not started): a second private MariaDB with :data:`TARGET_OPTIONS`."""
    return EmbeddedServer(
        name=name, options={**TARGET_OPTIONS, **options}, root=root, grants=TARGET_GRANTS
    )
