"""Secrets never reach a capture: :func:`redact`, and :func:`save_capture`, which redacts once
more before it writes (the only function of the package that writes a file)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .record import is_unavailable

# Judged on the name's last word, so that settings *about* secrets keep their values
# (max_password_errors, max_seeks_for_key, default_password_lifetime).
_SECRET_LAST = set(
    "password passwd pwd secret token auth credential credentials passphrase".split()
)
_KEY_QUALIFIERS = set(
    "ssl tls api private access secret encryption master client file sign".split()
)
# A boolean-looking value under a secret-sounding name is a setting, not a secret
# (tidb_enable_foreign_key = ON, disconnect_on_expired_password = OFF).
_HARMLESS = {"", "on", "off", "true", "false", "yes", "no", "0", "1", "none", "null"}
_URL_PASSWORD = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*://[^/\s:@]*:)([^@\s/]+)(@)")
_NAME_KEYS = ("name", "variable_name", "Variable_name", "NAME")


def _secret_name(name: str) -> bool:
    tokens = [t for t in re.split(r"[^a-z0-9]+", name.lower()) if t]
    if not tokens:
        return False
    last = tokens[-1]
    if last in _SECRET_LAST or last.endswith(("password", "passwd", "secret", "token")):
        return True
    if last == "key":
        # ssl_key, api-key, security.cluster-ssl-key; not primary_key or seeks_for_key.
        return len(tokens) > 1 and tokens[-2] in _KEY_QUALIFIERS
    return last.endswith("key")  # apikey, filekey, secretaccesskey


def _harmless(value: Any) -> bool:
    return (
        value is None
        or isinstance(value, bool)
        or (isinstance(value, str) and value.strip().lower() in _HARMLESS)
    )


def redact(obj: Any, secrets: Iterable[str | None] = ()) -> Any:
    """A copy of ``obj`` with secrets replaced by ``***``.

    Replaced: the value under any key whose last word names a secret (password, passwd,
    pwd, secret, token, auth, credential(s), passphrase; key after ssl, tls, api, private,
    access and the like; a word ending in key such as apikey), unless the value is empty or
    boolean-like; in a ``{name: ..., value: ...}`` record (``SHOW CONFIG`` rows) the ``name``
    is judged the same way; the password in any URL (``scheme://user:pw@host`` →
    ``scheme://user:***@host``); and every occurrence of the strings in ``secrets`` that are at
    least 4 characters long (shorter ones would blank out ordinary text).
    """
    known = sorted({s for s in secrets if s and len(s) >= 4}, key=len, reverse=True)

    def scrub(s: str) -> str:
        s = _URL_PASSWORD.sub(r"\1***\3", s)
        for secret in known:
            s = s.replace(secret, "***")
        return s

    def walk(x: Any) -> Any:
        if isinstance(x, str):
            return scrub(x)
        if isinstance(x, Mapping):
            named = next((x[k] for k in _NAME_KEYS if k in x), None)
            secret_record = "value" in x and isinstance(named, str) and _secret_name(named)
            out = {}
            for k, v in x.items():
                hide = _secret_name(str(k)) or (secret_record and k == "value")
                out[k] = "***" if hide and not _harmless(v) and not is_unavailable(v) else walk(v)
            return out
        if isinstance(x, list | tuple):
            return [walk(v) for v in x]
        return x

    return walk(obj)


def save_capture(capture: Mapping[str, Any], path: str | Path) -> Path:
    """Write a capture as JSON (sorted keys, indented, redacted once more); returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(redact(capture), sort_keys=True, indent=2, default=str)
    path.write_text(text + "\n", encoding="utf-8")
    return path
