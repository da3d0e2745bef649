"""A URL of the operator's as the code that sends it reads it: its secrets and its endpoint.

A server's `_URL` is read by SQLAlchemy (engine/connections.py: `sa.make_url`), which splits it by
its own pattern, not as urllib does: a password runs to the first `@` after the user's `:`, raw `/`,
`?`, `#` and `:` included (`postgresql://u:s3cr/et#pw@h/db` has the password `s3cr/et#pw`, where
urlsplit finds `s3cr`). `_URL` mirrors that pattern (sqlalchemy/engine/url.py `_parse_url`),
and a test holds the two together on a table of URLs; urllib's reading is kept beside it, for the
URLs urllib-based code sends (the alerts' UI and webhook hosts). A driver also takes a password as
a query parameter (`?password=…`, psycopg2's and libpq's; `?passwd=…`, MySQL's; an ODBC
`odbc_connect=…;PWD=…`): each parameter named as one (`PASSWORD_PARAMETERS`, or holding a word of
`PASSWORD_WORDS`) is a secret too.

This module is pure: no engine, no Dagster (so no SQLAlchemy: its pattern is mirrored here).
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, unquote, urlsplit

# SQLAlchemy's URL pattern (`_parse_url`), as it is there: a scheme of word characters and `+`, then
# `user[:password]@` (the user without `:` or `/`, the password without `@`), host, port, database, query
_URL = re.compile(r"""
    (?P<name>[\w\+]+)://
    (?:
        (?P<username>[^:/]*)
        (?::(?P<password>[^@]*))?
    @)?
    (?:
        (?:
            \[(?P<ipv6host>[^/\?]+)\] |
            (?P<ipv4host>[^/:\?]+)
        )?
        (?::(?P<port>[^/\?]*))?
    )?
    (?:/(?P<database>[^\?]*))?
    (?:\?(?P<query>.*))?
    """, re.X)

# (query parameter, who takes it as a secret): matched without regard to case
PASSWORD_PARAMETERS: tuple[tuple[str, str], ...] = (
    ("password", "libpq/psycopg2, pymysql, Snowflake, Trino, PyHive"),
    ("passwd", "MySQLdb, pymysql"),
    ("pwd", "ODBC (pyodbc), Snowflake"),
    ("sslpassword", "libpq: the client key's passphrase"),
    ("token", "Databricks, Trino (JWT)"),
    ("access_token", "Databricks"),
    ("secret", "OAuth clients"),
    ("client_secret", "Azure AD, OAuth clients"),
    ("private_key_passphrase", "Snowflake"),
    ("private_key_file_pwd", "Snowflake"),
    ("passcode", "Snowflake MFA"),
    ("aws_secret_access_key", "Redshift, Athena"),
    ("aws_session_token", "Redshift, Athena"),
    ("credentials_base64", "BigQuery: a service account's key"),
    ("api_key", "HTTP drivers"),
)
# a parameter whose name holds one of these is taken for a secret too (a driver's name not in the table)
PASSWORD_WORDS = ("password", "passwd", "pwd", "secret", "token", "passphrase", "credential", "api_key", "apikey")
# a query parameter whose value is itself a connection string of `key=value;` pairs (ODBC's)
CONNECTION_STRINGS = ("odbc_connect",)


# a secret shorter than this is never masked: a 1-3 character mask would mask everything
MASKABLE_LENGTH = 4


def maskable(secrets) -> tuple[str, ...]:
    """The secrets worth masking, each once, in order (the operator's declared ones, a connection's)."""
    return tuple(dict.fromkeys(s for s in secrets if s and len(s) >= MASKABLE_LENGTH))


def is_password_parameter(name: str) -> bool:
    lowered = name.strip().lower()
    return lowered in {n for n, _ in PASSWORD_PARAMETERS} or any(word in lowered for word in PASSWORD_WORDS)


def url_secrets(url: str) -> tuple[str, ...]:
    """Every secret `url` holds, each as written and percent-decoded: the password as SQLAlchemy
    and as urllib read it, and each password-like query parameter (an ODBC string's `PWD=`)."""
    url = url.strip()
    found: list[str] = []
    parts = _URL.match(url)
    if parts is not None and parts.group("password"):
        found.append(parts.group("password"))
    try:
        found.append(urlsplit(url).password or "")
    except ValueError:  # a port that is no number: urllib refuses the whole URL
        pass
    query = parts.group("query") if parts is not None else None
    if query is not None:
        # as SQLAlchemy decodes them (parse_qsl), and each value as written too
        written = [tuple(p.split("=", 1)) for p in query.split("&") if "=" in p]
        for name, value in [*parse_qsl(query), *((unquote(n.replace("+", " ")), v) for n, v in written)]:
            if is_password_parameter(name):
                found.append(value)
            elif name.strip().lower() in CONNECTION_STRINGS:
                found.extend(v for k, v in _pairs(unquote(value)) if is_password_parameter(k))
    return tuple(dict.fromkeys(s for raw in found if raw for s in (raw, unquote(raw))))


def endpoint(url: str) -> tuple[str | None, int | str | None, str | None] | None:
    """(host, port, database) of `url` as SQLAlchemy reads them (a port that is no number as written:
    SQLAlchemy refuses it when it connects), or None when it is no URL SQLAlchemy reads."""
    found = _URL.match(url.strip())
    if found is None:
        return None
    port = found.group("port") or None
    database = found.group("database")
    return (found.group("ipv4host") or found.group("ipv6host") or None,
            int(port) if port and port.isdigit() else port, unquote(database) if database else None)


def query_of(url: str) -> list[tuple[str, str]]:
    """The query parameters of `url` as SQLAlchemy reads them (parse_qsl), in order; [] for no URL."""
    found = _URL.match(url.strip())
    return parse_qsl(found.group("query")) if found is not None and found.group("query") else []


def without_userinfo(url: str) -> str:
    """`url` with no user or password: whatever SQLAlchemy or urllib would read as its userinfo is
    cut, whichever reaches further (`https://admin:pa/ss@host` is `https://host`)."""
    url = url.strip()
    parts = _URL.match(url)
    if parts is None:
        return url
    start = len(parts.group("name")) + 3
    # SQLAlchemy's userinfo ends at the `@` after its user (and password); urllib's at the authority's last `@`
    end = (parts.end("password") if parts.group("password") is not None else parts.end("username")) + 1 \
        if parts.group("username") is not None else start
    authority = re.match(r"[^/?#]*", url[start:]).group(0)  # urllib's netloc
    if "@" in authority:
        end = max(end, start + authority.rindex("@") + 1)
    return url[:start] + url[end:]


def _pairs(text: str) -> list[tuple[str, str]]:
    """`key=value` pairs of an ODBC connection string; a `{…}` value may hold `;`."""
    return [(m.group(1), m.group(2)[1:-1] if m.group(2).startswith("{") else m.group(2))
            for m in re.finditer(r"([^=;]+)=(\{[^}]*\}|[^;]*)", text)]
