"""Resolve a study's arm into something to drive: a started server (or a cluster URL), a
connection, the server's flavor and version, and the study's catalog."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

import sqlalchemy as sa

from .binding import parse_policy
from .db import ConnInfo, ServerInfo, server_info
from .params import Arm, Study
from .safety import guard_destructive
from .server import EmbeddedServer, ServerError
from .store import Store

log = logging.getLogger(__name__)


class TargetError(RuntimeError):
    """The target cannot be reached or is misconfigured."""


class SettingsChanged(TargetError):
    """The embedded server no longer has the arm's settings (another client changed them)."""


@dataclass
class ArmContext:
    """Everything a phase needs to drive one arm."""

    study: Study
    arm: Arm
    conn: ConnInfo
    info: ServerInfo
    store: Store
    server: EmbeddedServer | None = None
    yes: bool = False

    @property
    def embedded(self) -> bool:
        return self.server is not None

    def engine(self, **kw) -> sa.Engine:
        return self.conn.engine(**kw)

    def guard(self, what: str) -> None:
        """Refuse a destructive step on a real cluster unless allowed (see :mod:`.safety`)."""
        guard_destructive(
            what,
            embedded=self.embedded,
            allowed=self.study.allow_destructive or self.yes,
            target=self.conn.masked_url(),
        )


def binding_prefix(spec: str | None) -> list[str]:
    """``numactl`` prefix for a CPU/NUMA binding spec such as ``node:0`` or ``cpus:0``."""
    if not spec or spec == "unbound":
        return []

    return parse_policy(spec).numactl_prefix()


def embedded_server(study: Study, arm: Arm, name: str = "embedded") -> EmbeddedServer:
    t = study.target_for(arm)
    options = {**t.server_options, **arm.server_options}
    binding = arm.cpu_binding or t.cpu_binding
    return EmbeddedServer(
        name=name, options=options, prefix=binding_prefix(binding), database=t.database
    )


def open_arm(study: Study, arm: Arm | str, *, yes: bool = False, store: Store | None = None):
    """Start (or reuse) the arm's server and connect; record the arm in the catalog."""
    arm = study.arm(arm) if isinstance(arm, str) else arm
    t = study.target_for(arm)
    store = store or Store.for_study(study)
    server = None
    if t.kind == "embedded":
        server = embedded_server(study, arm).ensure()
        restore_settings(server, arm.label)
        conn = server.conninfo()
    else:
        conn = ConnInfo.from_url(t.url, t.password, t.tls.model_dump() if t.tls.ca else None)
        if t.password is None:
            log.warning(
                "%s is not set: connecting to %s without a password",
                t.password_env,
                conn.masked_url(),
            )
    try:
        engine = conn.engine(database="")
        info = server_info(engine)
        engine.dispose()
    except sa.exc.DBAPIError as e:
        raise TargetError(
            f"cannot connect to {conn.masked_url()} for arm '{arm.label}': {e.orig}"
        ) from None
    _ensure_database(conn)
    store.record_arm(
        study.study,
        arm.label,
        options={**t.server_options, **arm.server_options},
        target=conn.masked_url(),
        flavor=info.flavor,
        version=info.version,
    )
    return ArmContext(study, arm, conn, info, store, server, yes)


def _ensure_database(conn: ConnInfo) -> None:
    try:
        conn.execute_on_server(f"CREATE DATABASE IF NOT EXISTS `{conn.database}`")
    except sa.exc.DBAPIError as e:
        log.warning("could not create database %s: %s", conn.database, e.orig)


_SIZE = re.compile(r"^(\d+)([KMGT])$", re.I)
_WORDS = {"on": "1", "true": "1", "yes": "1", "off": "0", "false": "0", "no": "0"}


def _normal(v) -> str:
    """A setting as the server reports it: ``256M`` → ``268435456``, ``ON``/``True`` → ``1``."""
    if isinstance(v, bool):
        return str(int(v))
    text = str(v).strip()
    m = _SIZE.match(text)
    if m:
        return str(int(m.group(1)) * 1024 ** ("KMGT".index(m.group(2).upper()) + 1))
    text = _WORDS.get(text.lower(), text)
    try:
        return format(float(text), "g")
    except ValueError:
        return text.lower()


def settings_mismatch(server: EmbeddedServer) -> list[tuple[str, object, object]]:
    """The options of ``server`` whose value on the running server differs: (name, wanted, read).

    Read back through the benchmark account (``@@GLOBAL.name``). An option that is no variable, or
    a variable reported as a flag for a value that is not one (``log_bin=binlog``), is not
    compared.
    """
    out = []
    eng = server.conninfo().engine(database="")
    try:
        with eng.connect() as c:
            for k, v in server.options.items():
                name = str(k).replace("-", "_")
                if not re.fullmatch(r"\w+", name):
                    continue
                try:
                    got = c.exec_driver_sql(f"SELECT @@GLOBAL.`{name}`").scalar_one()
                except sa.exc.DBAPIError:
                    continue
                want = _normal(v)
                if isinstance(got, int) and not re.fullmatch(r"-?[\d.e+]+", want):
                    continue
                if _normal(got) != want:
                    out.append((name, v, got))
    finally:
        eng.dispose()
    return out


def restore_settings(server: EmbeddedServer, arm: str) -> None:
    """Set back the arm's settings the running embedded server no longer has.

    A ``SET GLOBAL`` left behind (by another client, or an arm switch cut short) would otherwise
    refuse every run of the arm (:func:`verify_settings`) until the server restarts. Done when
    the arm is opened, under the server's lease: tibench owns the embedded server, and no run of
    this study is measuring on it then; a change while the arm's runs go on still stops them."""
    bad = settings_mismatch(server)
    if bad:
        log.warning(
            "embedded server '%s' had %s; arm '%s' sets %s: set back",
            server.name,
            ", ".join(f"{name}={got}" for name, _, got in bad),
            arm,
            ", ".join(f"{name}={want}" for name, want, _ in bad),
        )
        server.set_globals({name: want for name, want, _ in bad})


def verify_settings(ctx, spec) -> None:
    """Before a run: the embedded servers of ``ctx`` still have the arm's settings, or
    :class:`SettingsChanged` with one line (the run is not started)."""
    for srv in (getattr(ctx, "server", None), getattr(ctx, "target", None)):
        if not isinstance(srv, EmbeddedServer) or srv.pid is None:
            continue
        try:
            bad = settings_mismatch(srv)
        except (ServerError, sa.exc.OperationalError):
            # the server went down since the run loop found it alive: the run finds it down and
            # fails as any run on a dead server does, and the next run's check restarts it
            continue
        if bad:
            name, want, got = bad[0]
            raise SettingsChanged(
                f"run {spec.run_key} not started: the embedded server '{srv.name}' has "
                f"{name}={got}, arm '{ctx.arm.label}' sets {want} (changed by another client); "
                "run again to have it set back"
            )
