"""Fresh DBAPI connections from whatever the caller holds, and the server's flavor.

The TPC-H loader and runner set session variables (timeouts, read engines, optimizer flags) and
hold one connection per worker or stream. Pooled connections would carry those settings into the
next user, so every connection here is detached from its pool and closed for good afterwards.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import sqlalchemy as sa

from ..db import ConnInfo, ServerInfo, classify_version, local_files

#: Something that returns a new DBAPI (pymysql) connection each time it is called.
ConnectionFactory = Callable[[], Any]


def connector(
    target: sa.Engine | ConnInfo | ConnectionFactory, *, send_files: bool = False
) -> ConnectionFactory:
    """A factory of new DBAPI connections.

    Parameters
    ----------
    target
        A SQLAlchemy engine (its connection arguments apply), a
        :class:`~tibenchlib.db.ConnInfo`, or a callable returning a DBAPI connection.
    send_files
        The connections offer LOAD DATA LOCAL (:func:`tibenchlib.db.local_files`); each still
        sends only the file its statement names (:func:`tibenchlib.db.sending_local_file`).
        A callable ``target`` makes its connections as it sees fit.
    """
    if isinstance(target, ConnInfo):
        target = target.engine()
    if isinstance(target, sa.Engine):
        # a pool of its own, always empty: every connection is new, made with send_files
        pool = target.pool.recreate() if send_files else target.pool

        def factory() -> Any:
            if send_files:
                with local_files():
                    proxy = pool.connect()
            else:
                proxy = pool.connect()
            proxy.detach()  # closed by us, never handed back to the pool
            return proxy.dbapi_connection

        return factory
    if callable(target):
        return target
    raise TypeError(f"need an Engine, ConnInfo or connection factory, not {type(target).__name__}")


def server_info(conn: Any) -> ServerInfo:
    """Flavor and version of the server behind a DBAPI connection."""
    with conn.cursor() as cur:
        cur.execute("SELECT VERSION(), @@version_comment")
        version, comment = cur.fetchone()
    return classify_version(str(version), str(comment) if comment is not None else None)


def session_sql(settings: dict[str, Any] | None) -> list[str]:
    """``SET SESSION`` statements for a dict of session variables.

    Strings are quoted (``tidb_isolation_read_engines='tiflash,tidb'``); numbers and booleans
    are passed as literals. Names are checked so a settings dict cannot smuggle in SQL.
    """
    out = []
    for name, value in (settings or {}).items():
        bare = name.removeprefix("@@session.").removeprefix("@@")
        if not bare.replace("_", "").isalnum():
            raise ValueError(f"not a session variable name: {name!r}")
        if isinstance(value, bool):
            literal = "ON" if value else "OFF"
        elif isinstance(value, int | float):
            literal = repr(value)
        else:
            literal = "'" + str(value).replace("\\", "\\\\").replace("'", "''") + "'"
        out.append(f"SET @@session.{bare} = {literal}")
    return out
