"""Failure episodes of contract checks, and what the contract's owners are told of them.

An episode opens when a check fails as often in a row as its severity asks (`FAILURES_TO_OPEN`: an
ERROR clause at once, a WARN clause the second time) and closes at its first pass. Each opening and
each closing is told once, to every destination of the contract's support block the operator allows
(support.py). The state (each check's failures in a row, whether its episode is open, and every
notification not yet delivered, a webhook there only as a digest of its URL) is JSON, kept in the
sensor's cursor: a notification leaves it only once it is delivered (or refused for good), so a
destination that is down loses nothing.

This module is pure: no engine, no Dagster; the sensor (dagster_defs/alerts.py) feeds it the check
evaluations of the instance's event log and delivers what it returns (engine/notify.py).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Mapping
from urllib.parse import quote, urlencode

from dq_contracts.odcs.support import AlertPolicy, Destination, allowed_destinations, destinations
from dq_contracts.odcs.visible import visible

# failures in a row that open an episode, by the severity of the failing result
FAILURES_TO_OPEN = {"ERROR": 1, "WARN": 2}
MAX_PENDING = 1000  # undelivered notifications kept; past it the oldest is dropped (and logged)


@dataclass(frozen=True)
class Watched:
    """A contract check as the sensor knows it from the plans: where it is and whom to tell."""

    asset_path: tuple[str, ...]
    name: str
    contract: str  # "<id> <version>"
    location: str  # `contracts/orders.odcs.yaml:42 schema.orders.properties.…`
    support: tuple[dict[str, Any], ...]

    @property
    def key(self) -> str:
        return "/".join(self.asset_path) + ":" + self.name


@dataclass(frozen=True)
class Evaluation:
    """One evaluation of a check, as the event log has it."""

    key: str  # Watched.key
    passed: bool
    severity: str  # ERROR or WARN
    sentence: str  # what was measured, in words (the result's description)
    partition: str | None = None
    id: str = ""  # where the event log has it: the run and the event's storage id


@dataclass(frozen=True)
class Delivery:
    """One notification to one destination, pending until it is delivered. As kept in the cursor
    (which the UI shows), a webhook is only its digest (`stored`): its URL is its secret; the
    sensor finds the URL again in the contract's support block before sending (`to_send`)."""

    id: str  # the evaluation's storage id and the check: one per destination
    check: str  # Watched.key
    kind: str  # failure or recovery
    subject: str
    text: str  # the body, lines of plain text
    link: str
    tool: str
    address: str
    tries: int = 0  # ticks that tried it and failed

    @property
    def destination(self) -> Destination:
        return Destination(self.tool, self.address, 0, "url")

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def stored(self) -> Delivery:
        if self.destination.transport == "mail" or self.address.startswith(DIGEST):
            return self
        return replace(self, address=digest(self.address))


DIGEST = "sha256:"


def digest(address: str) -> str:
    return DIGEST + hashlib.sha256(address.encode()).hexdigest()[:32]


@dataclass
class AlertState:
    """What the sensor's cursor holds between ticks."""

    # how far the event log was read: an opaque cursor per kind of run end; None before the first tick
    read: dict[str, str | None] | None = None
    checks: dict[str, dict[str, Any]] = field(default_factory=dict)  # only checks failing or in an episode
    pending: list[Delivery] = field(default_factory=list)

    @classmethod
    def from_cursor(cls, cursor: str | None) -> AlertState:
        if not cursor:
            return cls()
        try:
            raw = json.loads(cursor)
            return cls(raw.get("read"), dict(raw.get("checks") or {}),
                       [Delivery(**d) for d in raw.get("pending") or []])
        except (ValueError, TypeError, AttributeError):  # a cursor set by hand, or of another release
            return cls()

    def to_cursor(self) -> str:
        return json.dumps({"read": self.read, "checks": self.checks,
                           "pending": [d.to_json() for d in self.pending]}, sort_keys=True)


def step(state: Mapping[str, Any] | None, evaluation: Evaluation) -> tuple[dict[str, Any] | None, str | None]:
    """A check's new state (None: passing, nothing to keep) and what to tell: "failure" when an
    episode opens, "recovery" when one closes, else None."""
    fails, opened = int((state or {}).get("fails", 0)), bool((state or {}).get("open", False))
    if evaluation.passed:
        return None, "recovery" if opened else None
    fails += 1
    opens = not opened and fails >= FAILURES_TO_OPEN.get(evaluation.severity, 1)
    return {"fails": fails, "open": opened or opens}, "failure" if opens else None


def observe(state: AlertState, evaluations: list[Evaluation], watched: Mapping[str, Watched],
            policy: AlertPolicy) -> list[str]:
    """Feed evaluations (oldest first) through each check's episode; queue what is to be told in
    `state.pending`. Returns lines for the log (what was queued, what was dropped past MAX_PENDING)."""
    log: list[str] = []
    for evaluation in evaluations:
        check = watched.get(evaluation.key)
        if check is None:
            continue  # not a contract check of this sensor
        slot = evaluation.key + (f"[{evaluation.partition}]" if evaluation.partition else "")
        new, tell = step(state.checks.get(slot), evaluation)
        if new is None:
            state.checks.pop(slot, None)
        else:
            state.checks[slot] = new
        if tell is None:
            continue
        fails = (new or {}).get("fails", 0)
        subject, text, link = message(tell, check, evaluation, fails, policy.link_base)
        targets = allowed_destinations(check.support, policy)
        if not targets:
            log.append(f"{slot}: {tell}, but its contract names no destination the operator allows")
        for target in targets:
            state.pending.append(Delivery(f"{evaluation.id}:{slot}", check.key, tell, subject, text, link,
                                          target.tool, target.address).stored())
            log.append(f"{slot}: {tell} queued for {target.shown}")
    if len(state.pending) > MAX_PENDING:
        dropped = state.pending[:-MAX_PENDING]
        state.pending = state.pending[-MAX_PENDING:]
        log.append(f"{len(dropped)} undelivered notifications dropped (more than {MAX_PENDING} pending), "
                   f"the oldest {dropped[0].id}")
    return log


def to_send(pending: list[Delivery], watched: Mapping[str, Watched]) -> tuple[list[Delivery], list[str]]:
    """The pending deliveries with each webhook's URL found again in its contract's support block;
    one the contract no longer names is dropped (logged)."""
    found, log = [], []
    for delivery in pending:
        if not delivery.address.startswith(DIGEST):
            found.append(delivery)
            continue
        check = watched.get(delivery.check)
        urls = [d.address for d in destinations(check.support)[0] if d.tool == delivery.tool] if check else []
        url = next((u for u in urls if digest(u) == delivery.address), None)
        if url is None:
            log.append(f"dropped {delivery.kind} of {delivery.id}: its contract no longer names that {delivery.tool} "
                       "webhook")
        else:
            found.append(replace(delivery, address=url))
    return found, log


def check_link(base: str, asset_path: tuple[str, ...], name: str) -> str:
    """The check's page in the Dagster UI (as the UI's own links: /assets/<path>?view=checks&checkDetail=<name>)."""
    path = "/".join(quote(part, safe="") for part in asset_path)
    return f"{base.rstrip('/')}/assets/{path}?" + urlencode({"view": "checks", "checkDetail": name}, quote_via=quote)


def message(kind: str, check: Watched, evaluation: Evaluation, fails: int, base: str) -> tuple[str, str, str]:
    """(subject, body, link) of a notification, in plain text; the contract's text shown escaped."""
    where = "/".join(check.asset_path) + (f" partition {evaluation.partition}" if evaluation.partition else "")
    if kind == "failure":
        times = "" if fails <= 1 else f" ({fails} times in a row)"
        headline = f"FAIL {evaluation.severity} {where} {check.name}{times}"
    else:
        headline = f"RECOVERED {where} {check.name}: passes again"
    link = check_link(base, check.asset_path, check.name)
    lines = [headline, visible(evaluation.sentence), f"Clause: {check.location}", f"Contract: {check.contract}",
             f"Check in Dagster: {link}"]
    subject = " ".join(visible(f"[dq_contracts] {headline}").split())  # one header line, whatever a partition holds
    return subject, visible("\n".join(lines)), link
