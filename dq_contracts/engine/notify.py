"""Delivering the notifications of odcs/alerting.py: webhooks through httpx (Slack's and Teams' payload
shapes), mail through smtplib, to the SMTP server of the operator's environment (never one a contract
names).

Bounded: each delivery is tried `ATTEMPTS` times a tick, each attempt given `TIMEOUT_SECONDS` in all
(connecting, sending and the whole answer: a server trickling its answer a byte at a time is cut
there), with `BACKOFF_SECONDS` between; an attempt that times out is not repeated. A destination
that fails is down for the rest of the tick, known by its origin (a webhook's host and port, the
SMTP server for mail), so paths of one hanging host cost one time-out; and the tick never runs past
`TICK_BUDGET_SECONDS`. Deliveries are served fairly: one of each contract in turn, fresh and pending
alike, and a contract whose deliveries failed `FAILURES_PER_CONTRACT` times this tick waits for the
next, so one contract's failing destinations never hold back another's. What is
not delivered stays pending for the next tick; only a refusal for good (an HTTP 4xx but 408 and 429,
an SMTP 5xx, a destination the operator's list no longer allows) drops it, logged.
"""

from __future__ import annotations

import itertools
from collections import Counter
import re
import smtplib
import ssl
import threading
import time
from dataclasses import dataclass, replace
from email.message import EmailMessage
from typing import Any, Callable

import httpx

from dq_contracts.odcs.alerting import Delivery
from dq_contracts.odcs.support import AlertPolicy, origin_shown, refusal

ATTEMPTS = 3
TIMEOUT_SECONDS = 5.0  # an attempt's whole time, not each read's
BACKOFF_SECONDS = (0.5, 1.0)  # before the second and the third attempt
TICK_BUDGET_SECONDS = 30.0  # well inside a sensor tick's 60 s: no attempt runs past it
# a contract's share of a tick: after this many of its deliveries fail (time out, or are down), its
# others wait for the next tick, so its hanging destinations cost at most 2 time-outs of the tick
FAILURES_PER_CONTRACT = 2


class Refused(Exception):
    """The destination answered that it will never take this notification."""


def slack_payload(delivery: Delivery) -> dict[str, Any]:
    # Slack reads &, < and > as markup (<!channel>, <url|text>): a contract's text is escaped; and
    # `mrkdwn: false` shows *, _, ~ and ` as they are, not as bold, italics, struck or code; a URL in
    # a contract's text is not unfurled (no preview fetched from it)
    text = delivery.text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return {"text": text, "mrkdwn": False, "unfurl_links": False, "unfurl_media": False}


def teams_payload(delivery: Delivery) -> dict[str, Any]:
    """A Teams Workflows webhook message: one Adaptive Card, its lines and a button to the check. Each
    line is a TextRun of a RichTextBlock: a TextBlock reads its text as Markdown (a contract's
    `[text](url)` would be a link, `**x**` bold), a TextRun never does."""
    first, *rest = delivery.text.split("\n")
    body = [{"type": "RichTextBlock", "inlines": [{"type": "TextRun", "text": first, "weight": "Bolder"}]},
            *({"type": "RichTextBlock", "inlines": [{"type": "TextRun", "text": line}]} for line in rest)]
    card = {"$schema": "http://adaptivecards.io/schemas/adaptive-card.json", "type": "AdaptiveCard",
            "version": "1.4", "body": body,
            "actions": [{"type": "Action.OpenUrl", "title": "Open the check in Dagster", "url": delivery.link}]}
    return {"type": "message", "attachments": [{"contentType": "application/vnd.microsoft.card.adaptive",
                                                "contentUrl": None, "content": card}]}


PAYLOADS: dict[str, Callable[[Delivery], dict[str, Any]]] = {"slack": slack_payload, "teams": teams_payload}


def post_webhook(delivery: Delivery, policy: AlertPolicy, seconds: float) -> None:
    # redirects are not followed: the operator allowed this host, not wherever it points
    response = httpx.post(delivery.address, json=PAYLOADS[delivery.tool](delivery), timeout=seconds,
                          follow_redirects=False)
    if 400 <= response.status_code < 500 and response.status_code not in (408, 429):
        raise Refused(f"HTTP {response.status_code}")
    response.raise_for_status()
    if response.status_code >= 300:
        raise Refused(f"HTTP {response.status_code} (a redirect is not followed)")


def mail_message(delivery: Delivery, policy: AlertPolicy) -> EmailMessage:
    mail = EmailMessage()
    mail["Subject"] = delivery.subject
    mail["From"] = policy.mail_from or "dq-contracts@localhost"
    mail["To"] = delivery.address
    mail.set_content(f"{delivery.text}\n")
    return mail


def send_mail(delivery: Delivery, policy: AlertPolicy, seconds: float) -> None:
    if not policy.smtp_host:
        raise ConnectionError("no SMTP server: the operator sets DQ_ALERTS_SMTP_HOST")
    if policy.tls not in ("starttls", "ssl", "none"):
        raise ConnectionError(f"DQ_ALERTS_SMTP_TLS is {policy.tls!r}: starttls, ssl or none")
    if policy.smtp_user and policy.tls == "none":
        raise ConnectionError("DQ_ALERTS_SMTP_USER is set with DQ_ALERTS_SMTP_TLS=none: a password is sent "
                              "only over TLS")
    mail = mail_message(delivery, policy)
    client = smtplib.SMTP_SSL if policy.tls == "ssl" else smtplib.SMTP
    extra = {"context": ssl.create_default_context()} if policy.tls == "ssl" else {}
    try:
        with client(policy.smtp_host, policy.port, timeout=seconds, **extra) as smtp:
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


SENDERS: dict[str, Callable[[Delivery, AlertPolicy, float], None]] = {"mail": send_mail, "webhook": post_webhook}


@dataclass
class Outcome:
    delivered: list[Delivery]
    pending: list[Delivery]
    log: list[str]


def deliver(pending: list[Delivery], policy: AlertPolicy, sleep: Callable[[float], None] = time.sleep,
            clock: Callable[[], float] = time.monotonic) -> Outcome:
    """Try each pending delivery, fairly (`fair_order`), within the bounds above; never raises. What
    stays pending keeps its order (oldest first: what the pending queue's bounds drop first)."""
    outcome = Outcome([], [], [])
    down: set[str] = set()  # origins that failed this tick
    failed: Counter[str] = Counter()  # deliveries of each contract that failed this tick
    deadline = clock() + TICK_BUDGET_SECONDS
    age = {id(d): i for i, d in enumerate(pending)}
    kept: list[tuple[int, Delivery]] = []
    for delivery in fair_order(pending):
        destination = delivery.destination
        problem = refusal(destination, policy)
        if problem:
            outcome.log.append(f"dropped {delivery.kind} of {delivery.id}: {problem}")
            continue
        spent = failed[delivery.contract] >= FAILURES_PER_CONTRACT
        if destination.origin in down or deadline - clock() <= 0 or spent:
            kept.append((age[id(delivery)], delivery))
            continue
        error, tried = _attempts(delivery, policy, sleep, clock, deadline)
        if error is not None and not isinstance(error, Refused):
            failed[delivery.contract] += 1
        if error is None:
            outcome.delivered.append(delivery)
            outcome.log.append(f"sent {delivery.kind} of {delivery.id} to {destination.shown}")
        elif isinstance(error, Refused):
            outcome.log.append(f"dropped {delivery.kind} of {delivery.id}: {destination.shown} refused it ({error})")
        else:
            if not isinstance(error, smtplib.SMTPResponseException):  # a 4xx to one mail: the server is up
                down.add(destination.origin)
            kept.append((age[id(delivery)], replace(delivery, tries=delivery.tries + 1)))
            said = f"{type(error).__name__}: {_said(error, delivery.address)}"
            outcome.log.append(f"pending {delivery.kind} of {delivery.id}: {destination.shown} failed {tried} "
                               f"attempt{'s' * (tried != 1)} ({said}); tried again next tick")
    outcome.pending = [d for _, d in sorted(kept, key=lambda kept_one: kept_one[0])]
    return outcome


def fair_order(pending: list[Delivery]) -> list[Delivery]:
    """One delivery of each contract in turn (round robin), fresh and pending alike, each contract's
    own oldest first: however many of one contract's notifications come first, or failed before,
    another contract's first one is tried in the first round."""
    queues: dict[str, list[Delivery]] = {}
    for delivery in pending:
        queues.setdefault(delivery.contract, []).append(delivery)
    return [d for row in itertools.zip_longest(*queues.values()) for d in row if d is not None]


def _attempts(delivery: Delivery, policy: AlertPolicy, sleep: Callable[[float], None],
              clock: Callable[[], float], deadline: float) -> tuple[Exception | None, int]:
    """The error that ends the attempts (None: delivered), and how many were made."""
    send = SENDERS[delivery.destination.transport]
    error: Exception = TimeoutError("the tick's time was spent")
    made = 0
    for attempt in range(ATTEMPTS):
        if attempt:
            if deadline - clock() <= BACKOFF_SECONDS[attempt - 1]:
                break  # the tick's budget is spent
            sleep(BACKOFF_SECONDS[attempt - 1])
        seconds = min(TIMEOUT_SECONDS, deadline - clock())
        if seconds <= 0:
            break
        made += 1
        try:
            within(seconds, lambda: send(delivery, policy, seconds))
            return None, made
        except Refused as exc:
            return exc, made
        except (TimeoutError, httpx.TimeoutException) as exc:  # slow or hanging: once is enough this tick
            return exc, made
        except Exception as exc:  # down, reset: tried again, then left pending
            error = exc
    return error, made


def within(seconds: float, call: Callable[[], None]) -> None:
    """`call()`, given `seconds` in all. A client's own timeout is per read (httpx, smtplib), so a server
    answering a byte at a time would hold it for ever: the call runs in a thread, waited for `seconds`,
    then left (a daemon, its reads still timed out) and the attempt counted as timed out."""
    done: list[BaseException | None] = []

    def run() -> None:
        try:
            call()
            done.append(None)
        except BaseException as exc:  # handed to the waiting thread
            done.append(exc)

    worker = threading.Thread(target=run, name="dq_contracts-notify", daemon=True)
    worker.start()
    worker.join(seconds)
    if not done:
        raise TimeoutError(f"no complete answer within {seconds:.1f} s")
    if done[0] is not None:
        raise done[0]


_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]+")


def _said(error: Exception, address: str) -> str:
    """An error in one short line; a URL in it (a webhook's path is its secret) is cut to its origin."""
    if isinstance(error, httpx.HTTPStatusError):
        return f"HTTP {error.response.status_code}"
    text = " ".join(str(error).replace(address, origin_shown(address)).split())
    return _URL.sub(lambda m: origin_shown(m.group()), text)[:200]
