"""LOAD DATA LOCAL INFILE against a hostile target: a small server speaking the MySQL protocol
answers queries with a request for a local file; the client never sends a file it did not name."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from helpers import run_cli

from tibenchlib.db import ConnInfo, LocalFileRefused, sending_local_file
from tibenchlib.store import CatalogError, Store
from tibenchlib.tpch._conn import connector

CLIENT_LOCAL_FILES = 0x80  # the capability flag a client sets to offer LOAD DATA LOCAL
SECRET = "root's own secret 7f3a\n"


def _packet(seq: int, payload: bytes) -> bytes:
    return len(payload).to_bytes(3, "little") + bytes([seq & 0xFF]) + payload


def _read(sock: socket.socket) -> tuple[int, bytes] | None:
    def exactly(n: int) -> bytes | None:
        buf = b""
        while len(buf) < n:
            chunk = sock.recv(n - len(buf))
            if not chunk:
                return None
            buf += chunk
        return buf

    head = exactly(4)
    if head is None:
        return None
    body = exactly(int.from_bytes(head[:3], "little"))
    return None if body is None else (head[3], body)


def _handshake() -> bytes:
    """Protocol 10 greeting of a MySQL 5.7: LOAD DATA LOCAL, no TLS, native password auth."""
    caps = 0xF7FF | (0x81BF << 16)  # no SSL
    salt = b"abcdefghijklmnopqrst"
    return (
        b"\x0a5.7.44-fake\x00"
        + struct.pack("<I", 7)
        + salt[:8]
        + b"\x00"
        + struct.pack("<H", caps & 0xFFFF)
        + b"\x21"
        + struct.pack("<H", 2)
        + struct.pack("<H", caps >> 16)
        + bytes([21])
        + b"\x00" * 10
        + salt[8:]
        + b"\x00mysql_native_password\x00"
    )


OK = b"\x00\x00\x00\x02\x00\x00\x00"
EOF = b"\xfe\x00\x00\x02\x00"


def _lenc(b: bytes) -> bytes:
    return bytes([len(b)]) + b


def _rows(seq: int, row: tuple[str, str]) -> bytes:
    """A text result set of one row of two VARCHAR columns (what SHOW VARIABLES returns)."""
    out = _packet(seq, b"\x02")
    for i, name in enumerate((b"Variable_name", b"Value")):
        col = b"".join(_lenc(x) for x in (b"def", b"", b"", b"", name, name))
        col += b"\x0c\x21\x00" + struct.pack("<I", 64) + b"\xfd\x00\x00\x00\x00\x00"
        out += _packet(seq + 1 + i, col)
    out += _packet(seq + 3, EOF)
    out += _packet(seq + 4, b"".join(_lenc(v.encode()) for v in row))
    return out + _packet(seq + 5, EOF)


@dataclass
class FakeServer:
    """Accepts any login; answers ``SET`` with OK and every other query with a request for
    ``asked``. With ``loads_only``, only ``LOAD DATA`` gets the request; ``SELECT`` and ``SHOW``
    get one row (the version, or ``("0", "0")``), the rest OK. Keeps every packet received."""

    asked: str
    loads_only: bool = False
    port: int = 0
    received: list[bytes] = field(default_factory=list)
    client_flags: list[int] = field(default_factory=list)

    def serve(self, listener: socket.socket) -> None:
        while True:
            try:
                s, _ = listener.accept()
            except OSError:
                return
            try:
                self._session(s)
            except OSError:
                pass
            finally:
                s.close()

    def _session(self, s: socket.socket) -> None:
        s.sendall(_packet(0, _handshake()))
        got = _read(s)
        if got is None:
            return
        self.client_flags.append(int.from_bytes(got[1][:4], "little"))
        s.sendall(_packet(got[0] + 1, OK))
        while (got := _read(s)) is not None:
            seq, body = got
            self.received.append(body)
            if body[:1] != b"\x03":  # anything but COM_QUERY (COM_QUIT...)
                return
            query = body[1:].lstrip().upper()
            if query.startswith(b"SET") or (
                self.loads_only and not query.startswith((b"SELECT", b"SHOW", b"LOAD DATA"))
            ):
                s.sendall(_packet(seq + 1, OK))
                continue
            if self.loads_only and not query.startswith(b"LOAD DATA"):
                first = "5.7.44-fake" if b"VERSION" in query else "0"
                s.sendall(_rows(seq + 1, (first, "0")))
                continue
            s.sendall(_packet(seq + 1, b"\xfb" + self.asked.encode()))
            while (got := _read(s)) is not None:  # the file's packets, then an empty one
                seq, body = got
                self.received.append(body)
                if body == b"":
                    break
            if got is None:
                return
            s.sendall(_packet(seq + 1, OK))

    def got(self, text: str) -> bool:
        return text.encode() in b"".join(self.received)


@pytest.fixture
def secret(tmp_path):
    p = tmp_path / "secret"
    p.write_text(SECRET)
    p.chmod(0o600)
    return p


def _fake(asked: str, loads_only: bool = False) -> Iterator[FakeServer]:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    srv = FakeServer(asked, loads_only, listener.getsockname()[1])
    threading.Thread(target=srv.serve, args=(listener,), daemon=True).start()
    try:
        yield srv
    finally:
        listener.close()


@pytest.fixture
def hostile(secret):
    yield from _fake(str(secret))


@pytest.fixture
def hostile_to_loads(secret):
    """Asks for the secret only when the client runs LOAD DATA."""
    yield from _fake(str(secret), loads_only=True)


def _info(port: int) -> ConnInfo:
    return ConnInfo("127.0.0.1", port, "root", "sbtest", password="pw")


def test_a_target_asking_for_a_file_gets_nothing_and_one_line(hostile, tmp_path):
    study = tmp_path / "study.yaml"
    study.write_text(
        "study: hostile\ntarget:\n  kind: url\n"
        f"  url: mysql+pymysql://root@127.0.0.1:{hostile.port}/sbtest\n"
    )
    r = run_cli("--data-dir", str(tmp_path / "data"), "env", "--params", str(study), timeout=120)
    assert not hostile.got(SECRET.strip())
    assert hostile.received, "the client never reached the fake server"
    errors = [x for x in r.stderr.splitlines() if x.startswith("tibench: error:")]
    assert len(errors) == 1, r.stderr
    assert "LOAD DATA LOCAL INFILE" in errors[0] and str(hostile.asked) in errors[0]
    assert "Traceback" not in r.stderr and "TypeError" not in r.stderr
    assert r.returncode != 0


def test_target_connections_do_not_offer_local_files(hostile):
    eng = _info(hostile.port).engine()
    try:
        with pytest.raises(Exception, match="LOAD DATA LOCAL INFILE"), eng.connect() as c:
            c.exec_driver_sql("SELECT VERSION()")
    finally:
        eng.dispose()
    assert hostile.client_flags and not any(f & CLIENT_LOCAL_FILES for f in hostile.client_flags)
    assert not hostile.got(SECRET.strip())


def test_the_loader_refuses_every_file_but_the_one_it_names(hostile_to_loads, tmp_path):
    hostile = hostile_to_loads
    mine = tmp_path / "part.tbl"
    mine.write_text("1|x|\n")
    conn = connector(_info(hostile.port), send_files=True)()
    with pytest.raises(LocalFileRefused, match="did not offer"):
        with sending_local_file(conn, mine), conn.cursor() as cur:
            cur.execute("LOAD DATA LOCAL INFILE %s INTO TABLE t", (str(mine),))
    assert hostile.client_flags[-1] & CLIENT_LOCAL_FILES
    assert not hostile.got(SECRET.strip()) and not hostile.got("1|x|")


def test_the_loader_sends_the_file_it_names(tmp_path):
    mine = tmp_path / "part.tbl"
    mine.write_text("1|named part|\n")
    for srv in _fake(str(mine), loads_only=True):
        conn = connector(_info(srv.port), send_files=True)()
        try:
            with sending_local_file(conn, mine), conn.cursor() as cur:
                cur.execute("LOAD DATA LOCAL INFILE %s INTO TABLE t", (str(mine),))
            # outside the statement, the same file is refused
            with pytest.raises(LocalFileRefused), conn.cursor() as cur:
                cur.execute("LOAD DATA LOCAL INFILE 'other' INTO TABLE t")
        finally:
            conn.close()
        assert srv.received.count(b"1|named part|\n") == 1


def test_a_results_server_asking_for_a_file_gets_nothing(hostile):
    with pytest.raises(CatalogError, match="LOAD DATA LOCAL INFILE"):
        Store(f"mysql+pymysql://root@127.0.0.1:{hostile.port}/results")
    assert hostile.received and not hostile.got(SECRET.strip())
