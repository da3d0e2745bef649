"""Failure episodes of contract checks, and what the contract's owners are told of them.

An episode opens when a check fails as often in a row as its severity asks (`FAILURES_TO_OPEN`: an
ERROR clause at once, a WARN clause the second time) and closes at its first pass. A partitioned
check has an episode per partition, but its failures in a row are counted per check, across its
partitions (a daily partition is checked once: counted per partition, a WARN would never open).
Each opening and each closing is told once, to every destination of the contract's support block
the operator allows (support.py). The state (each check's failures in a row, whether its episode is
open, and every notification not yet delivered, a webhook there only as a digest of its URL) is
JSON, kept in the sensor's cursor, every part of it bounded (the MAX_ constants): a notification
leaves it only once it is delivered (or refused for good, or past those bounds, logged), so a
destination that is down loses nothing.

This module is pure: no engine, no Dagster; the sensor (dagster_defs/alerts.py) feeds it the check
evaluations of the instance's event log and delivers what it returns (engine/notify.py).
"""

from __future__ import annotations

import bisect
import hashlib
import heapq
import json
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Mapping
from urllib.parse import quote, urlencode

from dq_contracts.odcs.support import AlertPolicy, Destination, allowed_destinations, shorten
from dq_contracts.odcs.url_secrets import without_userinfo
from dq_contracts.odcs.visible import one_line as visible_one_line

# failures in a row that open an episode, by the severity of the failing result
FAILURES_TO_OPEN = {"ERROR": 1, "WARN": 2}
MAX_PENDING = 1000  # undelivered notifications kept; past it the oldest of the contract holding most is dropped
MAX_PENDING_PER_CONTRACT = 100  # one contract's share: past it its own oldest is dropped (logged)
MAX_OPEN_PARTITIONS = 100  # open episodes kept per check; past it the lowest partition's is forgotten (logged)
MAX_OPEN_EPISODES = 2000  # open episodes kept in all; past it the check holding most forgets its lowest (logged)
MAX_CHECKS = 3000  # checks kept failing; past it the oldest with no open episode forgets its failures in a row
MAX_PART = 300  # characters of one piece of a contract's text in a message (a name, a sentence, an id)
MAX_HEADLINE = 400  # characters of a message's first line (names and a partition, each at most MAX_PART)
MAX_LINK = 1000  # a longer link to the check's page is replaced by the UI's own
MAX_SUBJECT = 200
# characters of a message's body: its five lines (LABELS), each within its own bound, so none is ever cut away
LABELS = ("Result: ", "Clause: ", "Contract: ", "Check in Dagster: ")
MAX_TEXT = MAX_HEADLINE + sum(map(len, LABELS)) + 3 * MAX_PART + MAX_LINK + len(LABELS)


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
    sensor finds the URL again in the contract's support block before sending (`to_send`). Nor
    does the cursor keep its subject, body and link, but what renders them again with the check
    (`facts`): a contract's text is in the cursor once per check, not once per destination."""

    id: str  # the evaluation's storage id and the check: one per destination
    check: str  # Watched.key
    kind: str  # failure or recovery
    subject: str
    text: str  # the body, lines of plain text
    link: str
    tool: str
    address: str
    tries: int = 0  # ticks that tried it and failed
    contract: str = ""  # Watched.contract: its share of the pending queue, its turn in delivering
    facts: dict[str, Any] | None = None  # the evaluation's severity, sentence, partition and failures in a row

    @property
    def destination(self) -> Destination:
        return Destination(self.tool, self.address, 0, "url")

    def to_json(self) -> dict[str, Any]:
        kept = asdict(self)
        if self.facts is not None:  # rendered again before sending
            kept.update(subject="", text="", link="")
        return kept

    def stored(self) -> Delivery:
        if self.destination.transport == "mail" or self.address.startswith(DIGEST):
            return self
        return replace(self, address=digest(self.address))


DIGEST = "sha256:"


def digest(address: str) -> str:
    return DIGEST + hashlib.sha256(address.encode()).hexdigest()[:32]


def kept_as(name: str) -> str:
    """A check's key, a partition's or a contract's as the cursor keeps it: a long one by its digest
    (a contract's names may be any length; the cursor's size is bounded)."""
    return name if len(name) <= MAX_PART else digest(name)


@dataclass
class AlertState:
    """What the sensor's cursor holds between ticks."""

    # how far the event log was read: an opaque cursor per kind of run end; None before the first tick
    read: dict[str, str | None] | None = None
    # per check (kept_as its key) that fails or is in an episode, and only while it is watched:
    # {"fails": its failures in a row, "open": the sorted partitions ("" unpartitioned) whose episode is open}
    checks: dict[str, dict[str, Any]] = field(default_factory=dict)
    pending: list[Delivery] = field(default_factory=list)

    @classmethod
    def from_cursor(cls, cursor: str | None) -> AlertState:
        if not cursor:
            return cls()
        try:
            raw = json.loads(cursor)
            return cls(raw.get("read"), _checks(raw.get("checks") or {}),
                       [Delivery(**{"subject": "", "text": "", "link": "", **d}) for d in raw.get("pending") or []])
        except (ValueError, TypeError, AttributeError):  # a cursor set by hand, or of another release
            return cls()

    def to_cursor(self) -> str:
        return json.dumps({"read": self.read, "checks": self.checks,
                           "pending": [d.to_json() for d in self.pending]}, sort_keys=True)


def _checks(raw: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The cursor's checks, each `{"fails": n, "open": [partition, …]}`; an entry of an earlier release
    (`key` and `key[partition]` apart, `open` true or false) is read into that form; anything else is left."""
    checks: dict[str, dict[str, Any]] = {}
    for name, value in raw.items():
        if not isinstance(value, dict):
            continue
        key, partition = (name[:-1].split("[", 1) if name.endswith("]") and "[" in name else (name, ""))
        entry = checks.setdefault(key, {"fails": 0, "open": []})
        fails, opened = value.get("fails"), value.get("open")
        if type(fails) is int and fails > 0:
            entry["fails"] = max(entry["fails"], fails)
        if opened is True:
            opened = [partition]
        entry["open"] = sorted({*entry["open"], *(p for p in opened if isinstance(p, str))}
                               if isinstance(opened, list) else entry["open"])[-MAX_OPEN_PARTITIONS:]
    return {key: entry for key, entry in checks.items() if entry["fails"] or entry["open"]}


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
    `state.pending`. Returns lines for the log (what was queued, what was dropped past the bounds).
    Each evaluation touches its own check's entry only: the work grows with the evaluations, not with
    what the cursor holds."""
    log: list[str] = []
    kept = {kept_as(key) for key in watched}
    for gone in [key for key in state.checks if key not in kept]:  # a check no longer watched: its state too
        del state.checks[gone]
    for evaluation in evaluations:
        check = watched.get(evaluation.key)
        if check is None:
            continue  # not a contract check of this sensor
        key = kept_as(evaluation.key)
        # failures in a row are the check's, the episode its partition's ("" when unpartitioned)
        partition = kept_as(evaluation.partition) if evaluation.partition else ""
        entry = state.checks.get(key) or {"fails": 0, "open": []}
        new, tell = step({"fails": entry["fails"], "open": _holds(entry["open"], partition)}, evaluation)
        _keep(state.checks, key, partition, entry, new, log)
        if tell is None:
            continue
        slot = shorten(evaluation.key + (f"[{evaluation.partition}]" if evaluation.partition else ""), MAX_PART)
        fails = (new or {}).get("fails", 0)
        subject, text, link = message(tell, check, evaluation, fails, policy.link_base)
        targets = allowed_destinations(check.support, policy)
        if not targets:
            log.append(f"{slot}: {tell}, but its contract names no destination the operator allows")
        for target in targets:
            facts = {"severity": evaluation.severity, "sentence": shorten(evaluation.sentence, MAX_PART),
                     "partition": evaluation.partition and shorten(evaluation.partition, MAX_PART), "fails": fails}
            state.pending.append(Delivery(f"{evaluation.id}:{slot}", key, tell, subject, text, link, target.tool,
                                          target.address, contract=kept_as(check.contract), facts=facts).stored())
            log.append(f"{slot}: {tell} queued for {target.shown}")
    _bound_episodes(state.checks, log)
    _bound_checks(state.checks, log)
    state.pending, dropped = bounded(state.pending)
    if dropped:
        log.append(f"{len(dropped)} undelivered notifications dropped (more than {MAX_PENDING_PER_CONTRACT} pending "
                   f"of one contract, or {MAX_PENDING} in all), the oldest {dropped[0].id}")
    return log


def _holds(opened: list[str], partition: str) -> bool:
    at = bisect.bisect_left(opened, partition)
    return at < len(opened) and opened[at] == partition


def _keep(checks: dict[str, dict[str, Any]], key: str, partition: str, entry: dict[str, Any],
          new: dict[str, Any] | None, log: list[str]) -> None:
    """Keep a check's new state in its one entry (`key`, whatever its length: the same form the
    bounds count): its failures in a row, and its open episodes as a sorted list of partitions ("" for
    an unpartitioned check); at most MAX_OPEN_PARTITIONS of them; no entry for a check passing."""
    opened = entry["open"]
    if new is None:  # a pass: the check's run of failures ends, and its partition's episode
        entry["fails"] = 0
        if _holds(opened, partition):
            opened.pop(bisect.bisect_left(opened, partition))
    else:
        entry["fails"] = new["fails"]
        if new["open"] and not _holds(opened, partition):
            bisect.insort(opened, partition)
        for forgotten in opened[:-MAX_OPEN_PARTITIONS]:
            log.append(f"{shorten(key, MAX_PART)}[{shorten(forgotten, MAX_PART)}]: its open episode forgotten (more "
                       f"than {MAX_OPEN_PARTITIONS} partitions of one check open); its recovery will not be told")
        del opened[:-MAX_OPEN_PARTITIONS]
    if entry["fails"] or opened:
        checks[key] = entry
    else:
        checks.pop(key, None)


def _bound_episodes(checks: dict[str, dict[str, Any]], log: list[str]) -> None:
    """At most MAX_OPEN_EPISODES open episodes in all: past it the check holding most forgets its
    lowest partition's, so one contract's many failing checks never make another's forgotten first."""
    total = sum(len(entry["open"]) for entry in checks.values())
    if total <= MAX_OPEN_EPISODES:
        return
    largest = [(-len(entry["open"]), key) for key, entry in checks.items()]
    heapq.heapify(largest)
    forgotten = 0
    while total > MAX_OPEN_EPISODES:
        size, key = heapq.heappop(largest)
        checks[key]["open"].pop(0)
        total, forgotten = total - 1, forgotten + 1
        heapq.heappush(largest, (size + 1, key))
    for key in [key for key, entry in checks.items() if not entry["open"] and not entry["fails"]]:
        del checks[key]
    log.append(f"{forgotten} open episodes forgotten (more than {MAX_OPEN_EPISODES} open in all, the lowest "
               "partitions of the checks holding most); their recoveries will not be told")


def _bound_checks(checks: dict[str, dict[str, Any]], log: list[str]) -> None:
    """At most MAX_CHECKS entries: past it the oldest failing checks with no open episode (at most
    MAX_OPEN_EPISODES have one) forget their failures in a row (a WARN's first failure, counted again)."""
    over = len(checks) - MAX_CHECKS
    if over <= 0:
        return
    forgotten = [key for key, entry in checks.items() if not entry["open"]][:over]
    for key in forgotten:
        del checks[key]
    log.append(f"{len(forgotten)} checks' failures in a row forgotten (more than {MAX_CHECKS} checks failing)")


def bounded(pending: list[Delivery]) -> tuple[list[Delivery], list[Delivery]]:
    """(pending within its bounds, what was dropped): each contract keeps its newest
    MAX_PENDING_PER_CONTRACT; past MAX_PENDING in all, the contract holding most loses its oldest, so
    one contract's flood never evicts another's alerts."""
    by_contract: dict[str, list[Delivery]] = {}
    for delivery in pending:
        by_contract.setdefault(delivery.contract, []).append(delivery)
    dropped = [d for queue in by_contract.values() for d in queue[:-MAX_PENDING_PER_CONTRACT]]
    for contract, queue in by_contract.items():
        by_contract[contract] = queue[-MAX_PENDING_PER_CONTRACT:]
    while sum(len(q) for q in by_contract.values()) > MAX_PENDING:
        largest = max(by_contract.values(), key=len)
        dropped.append(largest.pop(0))
    kept = {id(d) for queue in by_contract.values() for d in queue}
    return [d for d in pending if id(d) in kept], dropped


def to_send(pending: list[Delivery], watched: Mapping[str, Watched],
            policy: AlertPolicy) -> tuple[list[Delivery], list[str]]:
    """The pending deliveries whose destination the contract still names, among those the operator
    allows now (a webhook's URL found again by its digest); any other is dropped (logged)."""
    found, log = [], []
    by_kept = {kept_as(key): check for key, check in watched.items()}
    for delivery in pending:
        check = by_kept.get(delivery.check)
        named = allowed_destinations(check.support, policy) if check else []
        if delivery.address.startswith(DIGEST):
            match = next((d for d in named if d.tool == delivery.tool and digest(d.address) == delivery.address), None)
        else:
            match = next((d for d in named if d.tool == delivery.tool and d.address.lower() == delivery.address.lower()),
                         None)
        if match is None:
            log.append(f"dropped {delivery.kind} of {delivery.id}: its contract no longer names that "
                       f"{'address' if delivery.destination.transport == 'mail' else delivery.tool + ' webhook'} "
                       "among those the operator allows")
        else:
            found.append(rendered(replace(delivery, address=match.address), check, policy))
    return found, log


def rendered(delivery: Delivery, check: Watched, policy: AlertPolicy) -> Delivery:
    """`delivery` with its subject, body and link rendered again from its facts (as the cursor keeps it)."""
    if delivery.text or delivery.facts is None:
        return delivery
    facts = delivery.facts
    evaluation = Evaluation(check.key, delivery.kind == "recovery", str(facts.get("severity") or "ERROR"),
                            str(facts.get("sentence") or ""), facts.get("partition"))
    subject, text, link = message(delivery.kind, check, evaluation, int(facts.get("fails") or 0), policy.link_base)
    return replace(delivery, subject=subject, text=text, link=link)


def check_link(base: str, asset_path: tuple[str, ...], name: str) -> str:
    """The check's page in the Dagster UI (as the UI's own links: /assets/<path>?view=checks&checkDetail=<name>),
    never with a user or password of `base`: a link goes to every destination."""
    base = without_userinfo(base)
    path = "/".join(quote(part, safe="") for part in asset_path)
    return f"{base.rstrip('/')}/assets/{path}?" + urlencode({"view": "checks", "checkDetail": name}, quote_via=quote)


def one_line(text: Any) -> str:
    """A piece of a contract's text as a message shows it: on one line whatever it holds (visible.one_line:
    a pattern's newline cannot start a line of its own that reads as the message's), every character
    that hides text escaped too, at most MAX_PART characters."""
    return shorten(visible_one_line(text), MAX_PART)


def message(kind: str, check: Watched, evaluation: Evaluation, fails: int, base: str) -> tuple[str, str, str]:
    """(subject, body, link) of a notification, in plain text. The body is always five lines, in this
    order: the headline, then `Result:`, `Clause:`, `Contract:` and `Check in Dagster:`, each piece of
    a contract's text on its own labelled line (one_line), so none can push the others down."""
    where = one_line("/".join(check.asset_path)) + (f" partition {one_line(evaluation.partition)}"
                                                    if evaluation.partition else "")
    if kind == "failure":
        times = "" if fails <= 1 else f" ({fails} times in a row)"
        headline = f"FAIL {one_line(evaluation.severity)} {where} {one_line(check.name)}{times}"
    else:
        headline = f"RECOVERED {where} {one_line(check.name)}: passes again"
    link = check_link(base, check.asset_path, check.name)
    link = link if len(link) <= MAX_LINK else without_userinfo(base).rstrip("/")
    pieces = (one_line(evaluation.sentence), one_line(check.location), one_line(check.contract), link)
    lines = [shorten(headline, MAX_HEADLINE), *(label + piece for label, piece in zip(LABELS, pieces))]
    subject = " ".join(f"[dq_contracts] {headline}".split())
    return shorten(subject, MAX_SUBJECT), "\n".join(lines), link
