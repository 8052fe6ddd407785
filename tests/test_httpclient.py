"""The one HTTP client (Prometheus, PD, DM's OpenAPI) against a real local HTTP(S) server:
basic authentication, bearer tokens, TLS with verification on and off, a client certificate,
a 401 and a refused connection; and the study file's ``*_http`` sections."""

from __future__ import annotations

import base64
import http.server
import json
import socket
import ssl
import subprocess
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from tibenchlib import prometheus
from tibenchlib.db import child_env, secret_env_names
from tibenchlib.dm import openapi
from tibenchlib.dm.dmctl import DmStatusError
from tibenchlib.httpclient import HttpClient, HttpError, shown_url
from tibenchlib.params import HttpAccess, ParamsError, parse_study
from tibenchlib.tpch import tiflash

FIX = Path(__file__).parent / "fixtures"
QUERY_RANGE = FIX / "prometheus" / "prometheus-api-v1-query-range-docs-example.json"
PD_STORES = FIX / "tidb-cluster" / "pd-api-v1-stores-v8.1.0-tikv-tiflash-tidb-operator-test.json"
USER, PASSWORD, TOKEN = "prom", "s3cr:et pw", "tok-123.abc"


class _Handler(http.server.BaseHTTPRequestHandler):
    """``/basic/...`` wants USER/PASSWORD, ``/bearer/...`` wants TOKEN; what follows picks the
    answer: a real Prometheus range answer, a real PD stores answer, or the request echoed."""

    seen: list[dict]

    def _answer(self):
        self.seen.append({"path": self.path, "auth": self.headers.get("Authorization")})
        want = {
            "/basic/": "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode(),
            "/bearer/": f"Bearer {TOKEN}",
        }
        for prefix, expected in want.items():
            if self.path.startswith(prefix) and self.headers.get("Authorization") != expected:
                return 401, b'{"error": "unauthorized"}'
        if self.path.endswith("/api/v1/query_range"):
            return 200, QUERY_RANGE.read_bytes()
        if self.path.endswith("/pd/api/v1/stores"):
            return 200, PD_STORES.read_bytes()
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode() if length else ""
        return 200, json.dumps({"method": self.command, "body": body}).encode()

    def _reply(self):
        code, body = self._answer()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_DELETE = _reply  # noqa: N815 - the stdlib's names

    def log_message(self, *a):
        pass


def _serve(ssl_ctx: ssl.SSLContext | None = None):
    handler = type("H", (_Handler,), {"seen": []})
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    if ssl_ctx is not None:
        srv.socket = ssl_ctx.wrap_socket(srv.socket, server_side=True)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    scheme = "https" if ssl_ctx else "http"
    return srv, SimpleNamespace(url=f"{scheme}://127.0.0.1:{srv.server_port}", seen=handler.seen)


def _self_signed(d: Path, name: str) -> tuple[Path, Path]:
    cert, key = d / f"{name}.crt", d / f"{name}.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-keyout", str(key), "-out", str(cert), "-subj", f"/CN={name}",
         "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True,
    )  # fmt: skip
    return cert, key


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    d = tmp_path_factory.mktemp("tls")
    server, client = _self_signed(d, "server"), _self_signed(d, "client")
    return SimpleNamespace(server=server, client=client, dir=d)


@pytest.fixture
def plain():
    srv, info = _serve()
    yield info
    srv.shutdown()


def _tls_server(certs, client_ca: Path | None = None):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(*map(str, certs.server))
    if client_ca is not None:  # a server that wants the client's certificate
        ctx.load_verify_locations(str(client_ca))
        ctx.verify_mode = ssl.CERT_REQUIRED
    return _serve(ctx)


@pytest.fixture
def tls(certs):
    srv, info = _tls_server(certs)
    yield info
    srv.shutdown()


@pytest.fixture
def mtls(certs):
    srv, info = _tls_server(certs, client_ca=certs.client[0])
    yield info
    srv.shutdown()


def test_basic_auth_from_the_variable_password_env_names(plain, monkeypatch):
    monkeypatch.setenv("T_PROM_PW", PASSWORD)
    access = HttpAccess(user=USER, password_env="T_PROM_PW")
    got = HttpClient(plain.url + "/basic", access).get_json("/x")
    assert got["method"] == "GET"
    # without it: a 401, one line naming the URL, the status kept for callers
    with pytest.raises(HttpError) as e:
        HttpClient(plain.url + "/basic").get_json("/x")
    assert e.value.status == 401 and not e.value.unreachable
    assert str(e.value).startswith(f"{plain.url}/basic/x: HTTP 401") and "\n" not in str(e.value)
    monkeypatch.setenv("T_PROM_PW", "wrong")
    with pytest.raises(HttpError, match="HTTP 401"):
        HttpClient(plain.url + "/basic", access).get_json("/x")


def test_bearer_token_and_a_missing_variable(plain, monkeypatch):
    monkeypatch.setenv("T_PROM_TOKEN", TOKEN)
    access = HttpAccess(token_env="T_PROM_TOKEN")
    body = HttpClient(plain.url + "/bearer", access).request("POST", "/y", json={"a": 1}).json()
    assert body == {"method": "POST", "body": '{"a":1}'}
    assert plain.seen[-1]["auth"] == f"Bearer {TOKEN}"
    monkeypatch.delenv("T_PROM_TOKEN")
    with pytest.raises(HttpError, match="token_env names T_PROM_TOKEN, which is not set"):
        HttpClient(plain.url + "/bearer", access).get_json("/y")


def test_a_refused_connection_is_one_line_without_the_password():
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://user:hunter2@127.0.0.1:{port}"
    with pytest.raises(HttpError) as e:
        HttpClient(url, timeout=2).get_json("/api")
    msg = str(e.value)
    assert e.value.unreachable and msg.startswith(f"cannot reach http://user:***@127.0.0.1:{port}")
    assert "hunter2" not in msg and "\n" not in msg
    assert shown_url("http://a:b@h:1/p?q=1") == "http://a:***@h:1/p?q=1"


def test_tls_verify_on_needs_the_ca_and_off_accepts_any_certificate(tls, certs):
    with pytest.raises(HttpError, match="CERTIFICATE_VERIFY_FAILED.*give the service's CA"):
        HttpClient(tls.url).get_json("/z")
    assert HttpClient(tls.url, HttpAccess(ca=str(certs.server[0]))).get_json("/z")["method"]
    assert HttpClient(tls.url, HttpAccess(verify=False)).get_json("/z")["method"] == "GET"
    # another CA does not vouch for the server
    with pytest.raises(HttpError, match="CERTIFICATE_VERIFY_FAILED"):
        HttpClient(tls.url, HttpAccess(ca=str(certs.client[0]))).get_json("/z")
    with pytest.raises(HttpError, match="cannot use .*TLS ca files unusable"):
        HttpClient(tls.url, HttpAccess(ca=str(certs.dir / "missing.crt"))).get_json("/z")


def test_client_certificate(mtls, certs):
    ca = str(certs.server[0])
    with pytest.raises(HttpError, match="cannot reach"):
        HttpClient(mtls.url, HttpAccess(ca=ca)).get_json("/m")
    access = HttpAccess(ca=ca, cert=str(certs.client[0]), key=str(certs.client[1]))
    assert HttpClient(mtls.url, access).get_json("/m")["method"] == "GET"


def test_prometheus_over_tls_with_basic_auth(tls, certs, monkeypatch):
    monkeypatch.setenv("T_PROM_PW", PASSWORD)
    access = HttpAccess(ca=str(certs.server[0]), user=USER, password_env="T_PROM_PW")
    df = prometheus.query_range(tls.url + "/basic", "up", 1435781430, 1435781460, 15, access=access)
    assert len(df) == 6 and set(df["job"]) == {"prometheus", "node"}
    # a refused 401 is a warning of collect_run_metrics, never an exception
    monkeypatch.setenv("T_PROM_PW", "wrong")
    out, warnings = prometheus.collect_run_metrics(
        tls.url + "/basic", 1435781430, 1435781460, components=("tidb",), host_cpu=False,
        access=access,
    )  # fmt: skip
    assert out.empty and len(warnings) == 2 and all("HTTP 401" in w for w in warnings)


def test_pd_and_dm_openapi_through_the_same_client(plain, monkeypatch):
    monkeypatch.setenv("T_PD_TOKEN", TOKEN)
    stores = tiflash.pd_stores_fetcher(
        plain.url + "/bearer", access=HttpAccess(token_env="T_PD_TOKEN")
    )()
    assert stores == json.loads(PD_STORES.read_text())
    with pytest.raises(HttpError, match="HTTP 401"):
        tiflash.pd_stores_fetcher(plain.url + "/bearer")()
    dm = openapi.DmClient(plain.url + "/bearer", HttpAccess(token_env="T_PD_TOKEN"))
    assert json.loads(dm.create_task({"task": {"name": "t"}})["body"]) == {"task": {"name": "t"}}
    assert plain.seen[-1]["path"] == "/bearer/api/v1/tasks"
    with pytest.raises(DmStatusError) as e:
        openapi.DmClient(plain.url + "/bearer").masters()
    assert e.value.http_status == 401 and "HTTP 401" in str(e.value)


def _study(**kw):
    return parse_study({"study": "h", **kw})


def test_the_study_file_names_secrets_never_holds_them():
    s = _study(
        prometheus_url="https://10.0.1.10:9090",
        prometheus_http={"ca": "/etc/ca.pem", "user": "admin", "password_env": "PROM_PW"},
        tpch_scaling={"pd_url": "https://10.0.1.1:2379", "pd_http": {"token_env": "PD_TOKEN"}},
        dm={
            "master_url": "https://10.0.1.9:8261", "master_http": {"verify": False},
            "source_name": "s1", "source_url": "mysql+pymysql://root@10.0.1.7:3306/x",
        },
    )  # fmt: skip
    assert s.prometheus_http.password_env == "PROM_PW"
    assert s.tpch_scaling.pd_http.token_env == "PD_TOKEN" and not s.dm.master_http.verify
    # a literal secret: one line naming the field, the value never shown
    with pytest.raises(ParamsError) as e:
        _study(prometheus_http={"user": "admin", "password": "hunter2"})
    (line,) = [x for x in str(e.value).splitlines() if x.startswith("  - ")]
    assert "prometheus_http" in line and "password" in line and "hunter2" not in str(e.value)
    with pytest.raises(ParamsError) as e:
        _study(tpch_scaling={"pd_http": {"token_env": "eyJhbGciOi.J9-secret"}})
    assert "tpch_scaling.pd_http.token_env" in str(e.value)
    assert "eyJhbGciOi" not in str(e.value)
    with pytest.raises(ParamsError, match=r"prometheus_url.*\*\*\*.*prometheus_http.password_env"):
        _study(prometheus_url="http://admin:hunter2@10.0.1.10:9090")
    with pytest.raises(ParamsError, match="key needs cert"):
        _study(prometheus_http={"key": "/k.pem"})
    with pytest.raises(ParamsError, match="password_env needs user"):
        _study(prometheus_http={"password_env": "PW"})
    with pytest.raises(ParamsError, match="not both"):
        _study(prometheus_http={"user": "a", "token_env": "T"})


def test_notebook_kernels_get_the_http_secrets_by_file_not_environment():
    """The variables a study's ``*_http`` sections name are among those kept out of a kernel's
    environment (:func:`tibenchlib.db.secrets_for_kernels`)."""
    s = _study(
        prometheus_http={"user": "a", "password_env": "PROM_PW"},
        tpch_scaling={"pd_http": {"token_env": "PD_TOKEN"}},
        dm={"master_http": {"token_env": "DM_TOKEN"}},
    )
    names = secret_env_names(s.model_dump())
    assert {"PROM_PW", "PD_TOKEN", "DM_TOKEN", "TIBENCH_PASSWORD"} <= set(names)


def test_tools_never_inherit_an_http_secret(monkeypatch):
    """A tool started before the first request (sysbench's first run precedes the first
    Prometheus query) gets no variable the study names as an HTTP secret."""
    monkeypatch.setenv("T_EARLY_TOKEN", TOKEN)
    monkeypatch.setenv("T_EARLY_PW", PASSWORD)
    assert "T_EARLY_TOKEN" in child_env()
    _study(
        prometheus_http={"token_env": "T_EARLY_TOKEN"},
        dm={"master_http": {"user": "u", "password_env": "T_EARLY_PW"}},
    )
    env = child_env()
    assert "T_EARLY_TOKEN" not in env and "T_EARLY_PW" not in env
