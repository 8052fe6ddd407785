"""One HTTP client for the cluster's services: Prometheus, PD and DM's OpenAPI.

Built on ``httpx``. TLS (a CA file, a client certificate and key, verification on or off) and
authentication (a bearer token, or a user with a password) come from a study file's ``*_http``
section (:class:`tibenchlib.params.HttpAccess`); secrets are read from the environment
variables that section names, never from the file. Every failure is one :class:`HttpError`
line naming the URL, with any password in it shown as ``***``.
"""

from __future__ import annotations

import ssl
from typing import Any, Protocol
from urllib.parse import urlsplit, urlunsplit

import httpx

from .db import env_secret

__all__ = ["Access", "HttpClient", "HttpError", "shown_url"]


class Access(Protocol):
    """What the client reads of a study file's ``*_http`` section."""

    ca: str | None
    cert: str | None
    key: str | None
    verify: bool
    user: str | None
    password_env: str | None
    token_env: str | None


class HttpError(RuntimeError):
    """A service could not be reached, or answered with an HTTP error.

    ``status`` is the HTTP status (``None`` when no answer came) and ``body`` the answer's text.
    """

    def __init__(self, message: str, status: int | None = None, body: str = ""):
        super().__init__(message)
        self.status = status
        self.body = body

    @property
    def unreachable(self) -> bool:
        return self.status is None


def shown_url(url: str) -> str:
    """``url`` as a message may show it: a password in its user part becomes ``***``."""
    try:
        u = urlsplit(url)
        if u.password is None:
            return url
        host = u.hostname or ""
        netloc = f"{u.username}:***@{host}" + (f":{u.port}" if u.port else "")
        return urlunsplit(u._replace(netloc=netloc))
    except ValueError:
        return url.split("@")[-1]


def _secret(name: str | None, field: str, url: str) -> str | None:
    if not name:
        return None
    value = env_secret(name)
    if not value:
        raise HttpError(f"cannot use {shown_url(url)}: {field} names {name}, which is not set")
    return value


def _ssl_context(access: Access | None, url: str) -> ssl.SSLContext:
    """The system's CAs (as ``urllib`` used), or the study's CA file; the client certificate."""
    if access is None:
        return ssl.create_default_context()
    try:
        ctx = ssl.create_default_context(cafile=access.ca)
        if access.cert:
            ctx.load_cert_chain(access.cert, access.key)
    except (OSError, ssl.SSLError) as e:
        which = "ca" if access.ca and not access.cert else "ca/cert/key"
        raise HttpError(f"cannot use {shown_url(url)}: TLS {which} files unusable: {e}") from None
    if not access.verify:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    return ctx


def _auth(access: Access | None, url: str) -> httpx.Auth | None:
    if access is None:
        return None
    token = _secret(access.token_env, "token_env", url)
    if token:
        return _Bearer(token)
    if access.user:
        return httpx.BasicAuth(access.user, _secret(access.password_env, "password_env", url) or "")
    return None


class _Bearer(httpx.Auth):
    def __init__(self, token: str):
        self._token = token

    def auth_flow(self, request):
        request.headers["Authorization"] = f"Bearer {self._token}"
        yield request


class HttpClient:
    """Requests to one service at ``base_url`` (a path prefix is kept).

    Parameters
    ----------
    base_url
        e.g. ``https://10.0.1.10:9090``.
    access
        TLS and authentication, or ``None`` for plain HTTP without either.
    timeout
        Seconds to connect, and to wait for each part of the answer.
    """

    def __init__(self, base_url: str, access: Access | None = None, timeout: float = 10.0):
        self.base_url = base_url.rstrip("/")
        self.access = access
        self.timeout = timeout
        self._verify: ssl.SSLContext | None = None

    def url(self, path: str = "") -> str:
        return self.base_url + path

    def request(
        self,
        method: str,
        path: str = "",
        *,
        json: Any = None,
        data: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
    ) -> httpx.Response:
        """One request; :class:`HttpError` when there is no answer or its status is ≥ 400."""
        url = self.url(path)
        shown = shown_url(url)
        if self._verify is None:
            self._verify = _ssl_context(self.access, url)
        auth = _auth(self.access, url)
        try:
            with httpx.Client(verify=self._verify, timeout=self.timeout) as client:
                resp = client.request(method, url, json=json, data=data, headers=headers, auth=auth)
        except httpx.HTTPError as e:
            raise HttpError(f"cannot reach {shown}: {_reason(e)}") from None
        except ValueError as e:  # a URL httpx cannot read
            raise HttpError(f"cannot reach {shown}: {e}") from None
        if resp.status_code >= 400:
            body = resp.text
            detail = " ".join(body.split())[:300]
            raise HttpError(
                f"{shown}: HTTP {resp.status_code} {resp.reason_phrase}"
                + (f": {detail}" if detail else ""),
                status=resp.status_code,
                body=body,
            )
        return resp

    def get_json(self, path: str = "") -> Any:
        """``GET`` and decode the JSON answer."""
        resp = self.request("GET", path, headers={"Accept": "application/json"})
        try:
            return resp.json()
        except ValueError as e:
            raise HttpError(f"{shown_url(self.url(path))}: answer is not JSON: {e}") from None


def _reason(e: Exception) -> str:
    text = " ".join(str(e).split()) or type(e).__name__
    if "CERTIFICATE_VERIFY_FAILED" in text:
        text += " (give the service's CA file in ca, or set verify: false)"
    return text
