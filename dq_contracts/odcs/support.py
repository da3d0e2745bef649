"""Who is told when a contract breaks: the channels of its ODCS `support` block, inside the operator's
allow-list.

ODCS `support[]` items are `{channel, url, tool, scope, description, invitationUrl}` (`url` required
in v3.0.x, optional from v3.1, which adds `id` and `customProperties`). A channel is a destination
when it is one of the rows of `CHANNELS`: a `mailto:` URL (whatever the tool) or a `tool: email`
channel that is an address; a `tool: slack` or `tool: teams` channel whose `url` is a webhook. Other
tools (discord, ticket, googlechat, other) are not notified.

Where an alert may go is the operator's decision, not the contract's (as for servers: declaration.py):
the operator lists the webhook hosts and the mail domains in the environment (`ALERT_SETTINGS`), and
the SMTP server with its credentials; a contract only names a destination inside that list. Anything
else is a warning of the contract (`validate` shows it at its file:line) and nothing is sent there.

This module is pure: no engine, no Dagster.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any, Mapping
from urllib.parse import unquote, urlsplit

from dq_contracts.odcs.url_secrets import without_userinfo

# (field of AlertPolicy, environment variable, list separator or None) — the operator's settings
ALERT_SETTINGS: tuple[tuple[str, str, str | None], ...] = (
    ("webhook_hosts", "DQ_ALERTS_WEBHOOK_HOSTS", ","),  # hooks.slack.com, *.webhook.office.com, http://h:port
    ("mail_domains", "DQ_ALERTS_MAIL_DOMAINS", ","),  # example.com, *.example.com
    ("ui_url", "DQ_ALERTS_UI_URL", None),  # the Dagster UI the links point to
    ("smtp_host", "DQ_ALERTS_SMTP_HOST", None),
    ("smtp_port", "DQ_ALERTS_SMTP_PORT", None),
    ("smtp_user", "DQ_ALERTS_SMTP_USER", None),
    ("smtp_password", "DQ_ALERTS_SMTP_PASSWORD", None),
    ("smtp_tls", "DQ_ALERTS_SMTP_TLS", None),  # starttls (default), ssl or none
    ("mail_from", "DQ_ALERTS_FROM", None),
)
DEFAULT_UI_URL = "http://127.0.0.1:3000"  # where `dagster dev` serves the UI
HTTPS_PORT = 443  # the only port a host entry (no scheme) allows
SMTP_TLS = {"starttls": 587, "ssl": 465, "none": 25}  # each mode and its default port

# A conservative address: a dot-atom local part of letters, digits, `_`, `+`, `-` (no `%`, `!`, `=`, `?`:
# old relays route `a%b@c` and `b!a@c` elsewhere, `=?…?=` is an RFC 2047 encoded word), and a domain of
# letters, digits and inner hyphens
_ADDRESS = re.compile(r"^[A-Za-z0-9_+-]+(\.[A-Za-z0-9_+-]+)*@((?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?\.)+"
                      r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)$")
MAX_ADDRESS = 254  # characters of a mail address (RFC 5321's path limit): the cursor keeps it whole
MAX_DESTINATIONS = 10  # notified per contract; past it a channel is a warning and nothing is sent there


@dataclass(frozen=True)
class Channel:
    """How one support tool is notified: by mail or by a webhook of a payload shape."""

    tool: str
    transport: str  # "mail" or "webhook"


CHANNELS: dict[str, Channel] = {c.tool: c for c in (
    Channel("email", "mail"),
    Channel("slack", "webhook"),  # Slack incoming webhook: {"text": …}
    Channel("teams", "webhook"),  # Teams Workflows webhook: a message with an Adaptive Card
)}


@dataclass(frozen=True)
class Destination:
    """One place a contract's alerts go: `support[index]`'s `field` names it."""

    tool: str  # a key of CHANNELS
    address: str  # a mail address, or a webhook URL
    index: int
    field: str  # "url" or "channel"

    @property
    def transport(self) -> str:
        return CHANNELS[self.tool].transport

    @property
    def shown(self) -> str:
        """The destination as logs and problems show it: a webhook's path is its secret, so only its origin."""
        if self.transport == "mail":
            return self.address
        return f"{self.tool} webhook {origin_shown(self.address)}"

    @property
    def origin(self) -> str:
        """What is down when it does not answer: a mail goes through the operator's SMTP server, a
        webhook to its host and port."""
        return "smtp" if self.transport == "mail" else origin_shown(self.address)

    def to_json(self) -> dict[str, Any]:
        return {"tool": self.tool, "address": self.address, "index": self.index, "field": self.field}


@dataclass(frozen=True)
class AlertPolicy:
    """The operator's alert settings (ALERT_SETTINGS), None or () where nothing was said."""

    webhook_hosts: tuple[str, ...] = ()
    mail_domains: tuple[str, ...] = ()
    ui_url: str | None = None
    smtp_host: str | None = None
    smtp_port: str | None = None
    smtp_user: str | None = None
    smtp_password: str | None = None
    smtp_tls: str | None = None
    mail_from: str | None = None

    @property
    def declared(self) -> bool:
        """Whether the operator allows any destination at all; with none, nothing is sent nor judged."""
        return bool(self.webhook_hosts or self.mail_domains)

    @property
    def link_base(self) -> str:
        """The UI the links point to, never with a user or password: a link goes to every destination."""
        return without_userinfo(self.ui_url or DEFAULT_UI_URL).rstrip("/")

    @property
    def ui_url_credentials(self) -> bool:
        """Whether the operator's UI URL holds a user or password (which link_base leaves out)."""
        return bool(self.ui_url) and without_userinfo(self.ui_url) != self.ui_url.strip()

    @property
    def tls(self) -> str:
        return (self.smtp_tls or "starttls").strip().lower()

    @property
    def port(self) -> int:
        return int(self.smtp_port) if self.smtp_port else SMTP_TLS.get(self.tls, 25)


def origin_shown(url: str) -> str:
    """A URL as any message shows it: its origin only (a webhook's path, and a user or password in
    it, are secrets), `…` for the rest; a URL that does not parse is shown as such, never in full."""
    try:
        parts = urlsplit(url)
        host, port = parts.hostname or "", parts.port
    except ValueError:
        return "(a URL that does not parse)"
    if not parts.scheme or not host:
        return "(not a URL)"
    origin = f"{parts.scheme}://{host}" + (f":{port}" if port else "")
    whole = url.rstrip("/") == f"{parts.scheme}://{parts.netloc}" and not parts.username
    return origin if whole else origin + "/…"


def alert_policy(environ: Mapping[str, str] | None = None) -> AlertPolicy:
    environ = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    for name, variable, separator in ALERT_SETTINGS:
        raw = environ.get(variable)
        if raw in (None, ""):
            continue
        values[name] = raw if separator is None else tuple(p.strip() for p in raw.split(separator) if p.strip())
    return AlertPolicy(**values)


def destinations(support: Any) -> tuple[list[Destination], list[tuple[int, str, str]]]:
    """The destinations of a contract's `support` block, and what cannot be one as (index, field,
    why): a malformed address or URL of a channel that should be notified."""
    found: list[Destination] = []
    wrong: list[tuple[int, str, str]] = []
    for index, item in enumerate(support if isinstance(support, (list, tuple)) else []):
        if not isinstance(item, dict):
            continue
        tool = str(item.get("tool") or "").strip().lower()
        url = str(item.get("url") or "").strip()
        if url.lower().startswith("mailto:"):
            addresses = [unquote(a).strip() for a in url[len("mailto:"):].split("?", 1)[0].split(",") if a.strip()]
            for address in addresses or [""]:
                if len(address) <= MAX_ADDRESS and _ADDRESS.match(address):
                    found.append(Destination("email", address, index, "url"))
                else:
                    wrong.append((index, "url", f"{shorten(address, 80)!r} is not a mail address (letters, digits, "
                                                "'.', '_', '+', '-' before the @)"))
        elif tool == "email":
            channel = str(item.get("channel") or "").strip()
            if len(channel) <= MAX_ADDRESS and _ADDRESS.match(channel):
                found.append(Destination("email", channel, index, "channel"))
            elif url:
                wrong.append((index, "url", f"an email channel's url is a mailto: URL, not {origin_shown(url)}"))
        elif tool in CHANNELS and url:
            found.append(Destination(tool, url, index, "url"))
    return found, wrong


def refusal(destination: Destination, policy: AlertPolicy) -> str | None:
    """Why the operator's allow-list does not let an alert go to `destination`, or None."""
    if destination.transport == "mail":
        domain = destination.address.rsplit("@", 1)[1].lower()
        if _matches(domain, policy.mail_domains):
            return None
        return (f"mail to {destination.address!r}: the domain {domain!r} is not one the operator allows "
                f"(DQ_ALERTS_MAIL_DOMAINS: {', '.join(policy.mail_domains) or 'none'}); nothing is sent there")
    shown = destination.shown
    try:
        parts = urlsplit(destination.address)
        host, port = (parts.hostname or "").lower(), parts.port
    except ValueError:
        return f"{shown} is not a URL; nothing is sent there"
    if parts.username or parts.password:
        return f"{shown}: a credential in the contract's URL is never sent; nothing is sent there"
    if parts.scheme == "https" and port in (None, HTTPS_PORT) and _matches(
            host, tuple(h for h in policy.webhook_hosts if "://" not in h)):
        return None  # a host entry is that host's https origin only: each other port would be an origin of its own
    origin = f"{parts.scheme}://{host}" + (f":{port}" if port else "")
    if any(_under(origin, parts.path, entry) for entry in policy.webhook_hosts if "://" in entry):
        return None  # the operator named this origin, or a path prefix of it, itself
    listed = ", ".join(origin_shown(h) if "://" in h else h for h in policy.webhook_hosts) or "none"
    return (f"{shown}: {origin} is not a webhook host the operator allows (DQ_ALERTS_WEBHOOK_HOSTS: {listed}; "
            "an https host on port 443, or an origin or URL prefix written with its scheme and port); nothing is "
            "sent there")


# what a server may read as another path: `%` escapes, `;` parameters (`..;` is `..` to Tomcat and
# Spring), `\\` (a `/` to IIS and some proxies); and a segment of dots only (`.`, `..`, `...`)
_NORMALISED = ("%", ";", "\\")


def _under(origin: str, path: str, entry: str) -> bool:
    """A URL of `origin` and `path` is one the operator's entry `scheme://host[:port][/prefix/]` allows:
    the same origin, and (when the entry has a path) a path under its prefix, whole segments only. A
    path that a server could read as another (a segment of dots, a `%` escape, a `;` or a `\\`) is under no prefix."""
    try:
        allowed = urlsplit(entry.strip())
        allowed_origin = f"{allowed.scheme.lower()}://{(allowed.hostname or '').lower()}" + (
            f":{allowed.port}" if allowed.port else "")
    except ValueError:
        return False
    if origin != allowed_origin:
        return False
    prefix = allowed.path.rstrip("/")
    if not prefix:
        return True
    if any(char in path for char in _NORMALISED) or any(
            segment.strip(".") == "" and segment for segment in path.split("/")):
        return False
    return path == prefix or path.startswith(prefix + "/")


def _matches(name: str, allowed: tuple[str, ...]) -> bool:
    """`name` is one of `allowed`, or under a `*.domain` of it."""
    for entry in (a.strip().lower() for a in allowed):
        if entry.startswith("*.") and name.endswith(entry[1:]) and len(name) > len(entry) - 1:
            return True
        if name == entry:
            return True
    return False


def shorten(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, an ellipsis saying it was."""
    return text if len(text) <= limit else text[:limit - 1] + "…"


def policy_warnings(policy: AlertPolicy) -> list[str]:
    """What is wrong in the operator's own alert settings (not a contract's): a warning of `validate`
    and of the code location's start."""
    if not policy.ui_url_credentials:
        return []
    return [f"the Dagster UI's URL holds a user or password, which is never sent: alert links go to every "
            f"destination a contract names, so they point to {policy.link_base} (its readers sign in themselves)"]


def support_refusals(support: Any, policy: AlertPolicy) -> list[tuple[list[str | int], str]]:
    """What the operator's allow-list refuses in a contract's support block, as (the parts of its
    path in the document, what is wrong); nothing when the operator allows no destination at all."""
    if not policy.declared:
        return []
    found, wrong = destinations(support)
    out: list[tuple[list[str | int], str]] = [(["support", i, f], f"support channel: {why}; nothing is sent there")
                                              for i, f, why in wrong]
    allowed: set[tuple[str, str]] = set()  # as allowed_destinations counts them: a place named twice is one
    for destination in found:
        problem = refusal(destination, policy)
        where = (destination.tool, destination.address.lower())
        if problem is None and where not in allowed and len(allowed) >= MAX_DESTINATIONS:
            problem = (f"{destination.shown}: a contract's alerts go to at most {MAX_DESTINATIONS} destinations; "
                       "nothing is sent there")
        if problem is None:
            allowed.add(where)
        if problem:
            out.append((["support", destination.index, destination.field], f"support channel: {problem}"))
    return out


def allowed_destinations(support: Any, policy: AlertPolicy) -> list[Destination]:
    """The destinations an alert of this contract goes to: those the operator's list allows."""
    if not policy.declared:
        return []
    allowed = {(d.tool, d.address.lower()): d for d in destinations(support)[0] if refusal(d, policy) is None}
    return list(allowed.values())[:MAX_DESTINATIONS]  # one message to a place the block names twice
