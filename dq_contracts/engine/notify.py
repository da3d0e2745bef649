"""Delivering the notifications of odcs/alerting.py: webhooks through httpx (Slack's and Teams' payload
shapes), mail through smtplib, to the SMTP server of the operator's environment (never one a contract
names).

Bounded: each delivery is tried `ATTEMPTS` times a tick, each attempt given `TIMEOUT_SECONDS`, with
`BACKOFF_SECONDS` between; a destination that fails every attempt is not tried again in that tick,
and no new attempt starts once a tick has spent `TICK_BUDGET_SECONDS`. What is not delivered stays
pending for the next tick; only a refusal for good (an HTTP 4xx but 408 and 429, an SMTP 5xx, a
destination the operator's list no longer allows) drops it, logged.
"""

from __future__ import annotations

import smtplib
import ssl
import time
from dataclasses import dataclass, replace
from email.message import EmailMessage
from typing import Any, Callable

import httpx

from dq_contracts.odcs.alerting import Delivery
from dq_contracts.odcs.support import AlertPolicy, refusal

ATTEMPTS = 3
TIMEOUT_SECONDS = 5.0
BACKOFF_SECONDS = (0.5, 1.0)  # before the second and the third attempt
TICK_BUDGET_SECONDS = 30.0  # well inside a sensor tick's 60 s


class Refused(Exception):
    """The destination answered that it will never take this notification."""


def slack_payload(delivery: Delivery) -> dict[str, Any]:
    # Slack reads &, < and > as markup (<!channel>, <url|text>): a contract's text is escaped
    text = delivery.text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return {"text": text}


def teams_payload(delivery: Delivery) -> dict[str, Any]:
    """A Teams Workflows webhook message: one Adaptive Card, its lines and a button to the check."""
    first, *rest = delivery.text.split("\n")
    body = [{"type": "TextBlock", "text": first, "weight": "Bolder", "wrap": True},
            *({"type": "TextBlock", "text": line, "wrap": True} for line in rest)]
    card = {"$schema": "http://adaptivecards.io/schemas/adaptive-card.json", "type": "AdaptiveCard",
            "version": "1.4", "body": body,
            "actions": [{"type": "Action.OpenUrl", "title": "Open the check in Dagster", "url": delivery.link}]}
    return {"type": "message", "attachments": [{"contentType": "application/vnd.microsoft.card.adaptive",
                                                "contentUrl": None, "content": card}]}


PAYLOADS: dict[str, Callable[[Delivery], dict[str, Any]]] = {"slack": slack_payload, "teams": teams_payload}


def post_webhook(delivery: Delivery, policy: AlertPolicy) -> None:
    # redirects are not followed: the operator allowed this host, not wherever it points
    response = httpx.post(delivery.address, json=PAYLOADS[delivery.tool](delivery), timeout=TIMEOUT_SECONDS,
                          follow_redirects=False)
    if 400 <= response.status_code < 500 and response.status_code not in (408, 429):
        raise Refused(f"HTTP {response.status_code}")
    response.raise_for_status()
    if response.status_code >= 300:
        raise Refused(f"HTTP {response.status_code} (a redirect is not followed)")


def send_mail(delivery: Delivery, policy: AlertPolicy) -> None:
    if not policy.smtp_host:
        raise ConnectionError("no SMTP server: the operator sets DQ_ALERTS_SMTP_HOST")
    if policy.tls not in ("starttls", "ssl", "none"):
        raise ConnectionError(f"DQ_ALERTS_SMTP_TLS is {policy.tls!r}: starttls, ssl or none")
    if policy.smtp_user and policy.tls == "none":
        raise ConnectionError("DQ_ALERTS_SMTP_USER is set with DQ_ALERTS_SMTP_TLS=none: a password is sent "
                              "only over TLS")
    mail = EmailMessage()
    mail["Subject"] = delivery.subject
    mail["From"] = policy.mail_from or "dq-contracts@localhost"
    mail["To"] = delivery.address
    mail.set_content(f"{delivery.text}\n")
    client = smtplib.SMTP_SSL if policy.tls == "ssl" else smtplib.SMTP
    extra = {"context": ssl.create_default_context()} if policy.tls == "ssl" else {}
    try:
        with client(policy.smtp_host, policy.port, timeout=TIMEOUT_SECONDS, **extra) as smtp:
            if policy.tls == "starttls":
                smtp.starttls(context=ssl.create_default_context())
            if policy.smtp_user:
                smtp.login(policy.smtp_user, policy.smtp_password or "")
            smtp.send_message(mail)
    except smtplib.SMTPRecipientsRefused as exc:
        raise Refused("the SMTP server refused the address") from exc
    except smtplib.SMTPResponseException as exc:
        if exc.smtp_code >= 500:
            raise Refused(f"SMTP {exc.smtp_code}") from exc
        raise


SENDERS: dict[str, Callable[[Delivery, AlertPolicy], None]] = {"mail": send_mail, "webhook": post_webhook}


@dataclass
class Outcome:
    delivered: list[Delivery]
    pending: list[Delivery]
    log: list[str]


def deliver(pending: list[Delivery], policy: AlertPolicy, sleep: Callable[[float], None] = time.sleep,
            clock: Callable[[], float] = time.monotonic) -> Outcome:
    """Try each pending delivery, in order, within the bounds above; never raises."""
    outcome = Outcome([], [], [])
    down: set[tuple[str, str]] = set()  # destinations that failed every attempt this tick
    started = clock()
    for delivery in pending:
        destination = delivery.destination
        where = (destination.tool, destination.address)
        problem = refusal(destination, policy)
        if problem:
            outcome.log.append(f"dropped {delivery.kind} of {delivery.id}: {problem}")
            continue
        if where in down or clock() - started > TICK_BUDGET_SECONDS:
            outcome.pending.append(delivery)
            continue
        error = _attempts(delivery, policy, sleep)
        if error is None:
            outcome.delivered.append(delivery)
            outcome.log.append(f"sent {delivery.kind} of {delivery.id} to {destination.shown}")
        elif isinstance(error, Refused):
            outcome.log.append(f"dropped {delivery.kind} of {delivery.id}: {destination.shown} refused it ({error})")
        else:
            down.add(where)
            outcome.pending.append(replace(delivery, tries=delivery.tries + 1))
            outcome.log.append(f"pending {delivery.kind} of {delivery.id}: {destination.shown} failed {ATTEMPTS} "
                               f"attempts ({type(error).__name__}: {_said(error)}); tried again next tick")
    return outcome


def _attempts(delivery: Delivery, policy: AlertPolicy, sleep: Callable[[float], None]) -> Exception | None:
    send = SENDERS[delivery.destination.transport]
    error: Exception | None = None
    for attempt in range(ATTEMPTS):
        if attempt:
            sleep(BACKOFF_SECONDS[attempt - 1])
        try:
            send(delivery, policy)
            return None
        except Refused as exc:
            return exc
        except Exception as exc:  # down, slow, reset: tried again, then left pending
            error = exc
    return error


def _said(error: Exception) -> str:
    """An error in one short line; a webhook's URL (its path is its secret) is cut to its origin."""
    text = " ".join(str(error).split())[:200]
    if isinstance(error, httpx.HTTPStatusError):
        return f"HTTP {error.response.status_code}"
    return text
