"""The alert sensor against a second round of attacks: a cursor that grows with what it holds, a
contract's text that writes lines of its own into a message, a contract's many ports starving
another's pending retry, and webhook paths a server normalises out of the operator's prefix.

Each finding is a table of rows; the time bounds are the module's own, shrunk for the test."""

from __future__ import annotations

import socket
import time

import pytest

from dq_contracts.engine import notify
from dq_contracts.engine.notify import deliver, mail_message, slack_payload, teams_payload
from dq_contracts.odcs.alerting import (LABELS, MAX_CHECKS, MAX_OPEN_EPISODES, MAX_OPEN_PARTITIONS, MAX_PENDING,
                                        MAX_TEXT, AlertState, Delivery, Evaluation, Watched, observe, to_send)
from dq_contracts.odcs.support import MAX_ADDRESS, alert_policy, allowed_destinations, support_refusals
from dq_contracts_tests.support import WebhookSink

POLICY = alert_policy({"DQ_ALERTS_WEBHOOK_HOSTS": "hooks.slack.com, *.logic.azure.com",
                       "DQ_ALERTS_MAIL_DOMAINS": "example.com"})
SUPPORT = ({"tool": "email", "channel": "team@example.com"},
           {"tool": "slack", "url": "https://hooks.slack.com/services/T0/B0/x"},
           {"tool": "teams", "url": "https://prod-1.westus.logic.azure.com/workflows/x"})


class CountingDict(dict):
    """The cursor's checks, counting each entry a pass over them reads: the work of observe()."""

    read = 0

    def __iter__(self):
        for key in super().__iter__():
            CountingDict.read += 1
            yield key

    def keys(self):
        return list(iter(self))

    def values(self):
        return [self[k] for k in iter(self)]

    def items(self):
        return [(k, self[k]) for k in iter(self)]


def check_of(i: int, path_length: int = 10) -> Watched:
    return Watched(("a" * path_length,), f"c{i:04d}__not_null", "urn:x:c 1.0.0", "c.yaml:1 x",
                   ({"tool": "email", "channel": "team@example.com"},))


def failing(check: Watched, partition: str | None, run: int) -> Evaluation:
    return Evaluation(check.key, False, "ERROR", "1 NULL", partition, f"r{run}:1")


# R3a: (failing checks, open partitions each) — the work and the cursor grow with the evaluations,
# never with what the cursor holds: each evaluation reads only its own check's entry
GROWTH_CASES = [(10, 10), (20, 20), (40, 40)]


@pytest.mark.parametrize("checks, partitions", GROWTH_CASES)
def test_observe_reads_each_checks_own_entry_only(checks, partitions):
    watched = {c.key: c for c in (check_of(i) for i in range(checks))}
    state = AlertState(read={})
    state.checks = CountingDict()
    CountingDict.read = 0
    for p in range(partitions):  # a tick a day: each check fails on a new partition
        observe(state, [failing(c, f"2026-01-{p:03d}", p) for c in watched.values()], watched, POLICY)
    evaluations = checks * partitions
    assert CountingDict.read <= 2 * evaluations, CountingDict.read  # one pass a tick, not one an evaluation
    assert sum(len(entry["open"]) for entry in state.checks.values()) == evaluations
    assert len(state.to_cursor()) < 200 * evaluations + 100_000  # linear in the episodes it keeps


# R3b: (length of the check's asset path) — MAX_OPEN_PARTITIONS holds whatever the key's length
LONG_KEY_CASES = [10, 320, 5000]


@pytest.mark.parametrize("path_length", LONG_KEY_CASES)
def test_the_open_partitions_bound_holds_for_a_key_of_any_length(path_length):
    check = check_of(0, path_length)
    state = AlertState(read={})
    observe(state, [failing(check, f"2026-{p:05d}", p) for p in range(3 * MAX_OPEN_PARTITIONS)], {check.key: check},
            POLICY)
    assert len(state.checks) == 1
    assert [len(entry["open"]) for entry in state.checks.values()] == [MAX_OPEN_PARTITIONS]
    again = AlertState.from_cursor(state.to_cursor())  # and as the cursor keeps it
    observe(again, [Evaluation(check.key, True, "ERROR", "", f"2026-{3 * MAX_OPEN_PARTITIONS - 1:05d}", "r:p")],
            {check.key: check}, POLICY)
    assert again.pending[-1].kind == "recovery"
    assert len(state.to_cursor()) < 100_000


def test_open_episodes_are_bounded_in_all_the_check_holding_most_forgets_first():
    victim, flood = check_of(9999), [check_of(i) for i in range(MAX_OPEN_EPISODES // MAX_OPEN_PARTITIONS + 5)]
    watched = {c.key: c for c in [victim, *flood]}
    state = AlertState(read={})
    observe(state, [failing(victim, "2026-01-01", 0)], watched, POLICY)
    observe(state, [failing(c, f"p{p:03d}", p) for p in range(MAX_OPEN_PARTITIONS) for c in flood], watched, POLICY)
    assert sum(len(entry["open"]) for entry in state.checks.values()) == MAX_OPEN_EPISODES
    assert [e["open"] for k, e in state.checks.items() if k == victim.key] == [["2026-01-01"]]
    assert len(state.to_cursor()) < 1_000_000


def test_the_whole_cursor_is_bounded_with_every_piece_at_its_longest():
    def support(i: int) -> tuple[dict, ...]:  # ten addresses of the longest length taken
        return tuple({"tool": "email", "channel": f"{j}{i:05d}" + "t" * (MAX_ADDRESS - 18) + "@example.com"}
                     for j in range(10))

    checks = [Watched(("a" * 150,), f"c{i:05d}" + "x" * 140, "urn:" + "c" * 290 + f"{i:05d}", "l" * 400, support(i))
              for i in range(MAX_CHECKS + 500)]
    run = "r" * 36
    evaluations = [Evaluation(c.key, False, "WARN", "s" * 400, None, f"{run}:{i:012d}") for i, c in enumerate(checks)]
    evaluations += [Evaluation(c.key, False, "ERROR", "s" * 400, "p" * 290 + f"{p:04d}", f"{run}:{p:012d}")
                    for c in checks[:30] for p in range(MAX_OPEN_PARTITIONS)]
    state = AlertState(read={})
    observe(state, evaluations, {c.key: c for c in checks}, POLICY)
    assert len(state.checks) == MAX_CHECKS and len(state.pending) == MAX_PENDING
    assert sum(len(entry["open"]) for entry in state.checks.values()) == MAX_OPEN_EPISODES
    assert len(state.to_cursor()) < 4_000_000  # the README's bound


def test_a_mail_address_longer_than_smtp_takes_is_no_destination():
    longest = "t" * (MAX_ADDRESS - len("@example.com")) + "@example.com"
    assert allowed_destinations([{"tool": "email", "channel": longest}], POLICY)
    assert not allowed_destinations([{"tool": "email", "channel": "t" + longest}], POLICY)
    assert not allowed_destinations([{"tool": "email", "url": "mailto:t" + longest}], POLICY)


# R3c: a check no longer watched (its contract changed or left): its state leaves the cursor
def test_a_check_no_longer_watched_leaves_the_cursor():
    gone, kept = check_of(1), check_of(2)
    state = AlertState(read={})
    observe(state, [failing(gone, None, 0), failing(kept, None, 0)], {c.key: c for c in (gone, kept)}, POLICY)
    observe(state, [], {kept.key: kept}, POLICY)
    assert list(state.checks) == [kept.key]


def test_a_cursor_of_the_earlier_form_keeps_its_open_episodes():
    check = check_of(3)
    cursor = ('{"read": {}, "pending": [], "checks": {"%s": {"fails": 2, "open": false}, '
              '"%s[2026-01-01]": {"fails": 0, "open": true}}}' % (check.key, check.key))
    state = AlertState.from_cursor(cursor)
    assert state.checks == {check.key: {"fails": 2, "open": ["2026-01-01"]}}
    observe(state, [Evaluation(check.key, True, "ERROR", "", "2026-01-01", "r:1")], {check.key: check}, POLICY)
    assert [d.kind for d in state.pending] == ["recovery"] * 1 and not state.checks


# R4: (a line break a pattern may hold) — each channel shows every piece of contract text on its own
# labelled line; the message's five lines come in their order, whatever the contract writes
SPOOF = "^a$|{0}RECOVERED t code: passes again{0}All clear. Details: https://evil.example/login{0}{0}"
BREAKS = ["\n", "\r", "\r\n", "\u2028", "\u2029", "\x85", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e"]
CHANNELS = ["mail", "slack", "teams"]


def shown_lines(channel: str, delivery: Delivery) -> list[str]:
    """The lines a reader of `channel` sees (as each renders a line break)."""
    if channel == "mail":
        mail = mail_message(delivery, POLICY)
        assert len(str(mail["Subject"]).splitlines()) == 1
        return mail.get_content().splitlines()
    if channel == "slack":
        return slack_payload(delivery)["text"].splitlines()
    body = teams_payload(delivery)["attachments"][0]["content"]["body"]
    assert all(len(block["inlines"]) == 1 and len(block["inlines"][0]["text"].splitlines()) == 1 for block in body)
    return [block["inlines"][0]["text"] for block in body]


@pytest.mark.parametrize("channel", CHANNELS)
@pytest.mark.parametrize("newline", BREAKS, ids=[repr(b) for b in BREAKS])
def test_a_contracts_text_never_writes_a_line_of_the_message(channel, newline):
    spoof = SPOOF.format(newline)
    check = Watched(("t",), "code__invalid_values", f"urn:x:t{newline}Contract: urn:y 1.0.0",
                    f"c/t.odcs.yaml:24{newline}Clause: elsewhere", SUPPORT)
    state = AlertState(read={})
    observe(state, [Evaluation(check.key, False, "ERROR", f"1 row of 2 invalid (valid: matching {spoof})",
                               f"2026{newline}RECOVERED", "r:1")], {check.key: check}, POLICY)
    tool = {"mail": "email"}.get(channel, channel)
    sent, _ = to_send(AlertState.from_cursor(state.to_cursor()).pending, {check.key: check}, POLICY)
    for delivery in [next(d for d in state.pending if d.tool == tool), next(d for d in sent if d.tool == tool)]:
        lines = shown_lines(channel, delivery)
        assert len(lines) == 1 + len(LABELS), lines
        assert lines[0].startswith("FAIL ERROR t partition 2026") and "code__invalid_values" in lines[0]
        assert [line[:len(label)] for line, label in zip(lines[1:], LABELS)] == list(LABELS)
        assert "RECOVERED t code: passes again" in lines[1] and "evil.example" in lines[1]  # shown, on its line
        assert lines[-1].startswith("Check in Dagster: http://127.0.0.1:3000/assets/t?")
        assert len(delivery.text) <= MAX_TEXT


def test_a_message_of_the_longest_pieces_keeps_its_link_line():
    check = Watched(("a" * 400,), "b" * 400, "urn:" + "c" * 5000, "d" * 5000, SUPPORT)
    state = AlertState(read={})
    observe(state, [Evaluation(check.key, False, "WARN", "e" * 5000, "f" * 5000, "r:1"),
                    Evaluation(check.key, False, "WARN", "e" * 5000, "f" * 5001, "r:2")], {check.key: check}, POLICY)
    text = state.pending[-1].text
    assert len(text) <= MAX_TEXT and text.splitlines()[-1].startswith("Check in Dagster: http")


# R5a: (a webhook URL, under the operator's host entries) — a host entry is its https origin, port 443
PORT_CASES = [
    ("https://hooks.slack.com/services/T0/B0/x", "sent"),
    ("https://hooks.slack.com:443/services/T0/B0/x", "sent"),
    ("https://hooks.slack.com:8443/services/T0/B0/x", "refused"),
    ("https://hooks.slack.com:0/services/T0/B0/x", "refused"),
    ("https://hooks.slack.com:80/services/T0/B0/x", "refused"),
    ("https://hooks.slack.com:22/services/T0/B0/x", "refused"),
    ("https://127.0.0.1:18001/x", "refused"),
    ("https://prod-1.westus.logic.azure.com:4443/workflows/x", "refused"),
]


@pytest.mark.parametrize("url, becomes", PORT_CASES)
def test_a_host_entry_allows_its_https_port_only(url, becomes):
    policy = alert_policy({"DQ_ALERTS_WEBHOOK_HOSTS": "hooks.slack.com, 127.0.0.1, *.logic.azure.com"})
    item = {"tool": "slack", "url": url}
    sent, refused = allowed_destinations([item], policy), support_refusals([item], policy)
    assert ("sent" if sent and not refused else "refused" if refused and not sent else "both") == becomes, refused


def test_another_port_is_allowed_when_the_operator_writes_the_origin():
    policy = alert_policy({"DQ_ALERTS_WEBHOOK_HOSTS": "https://hooks.example.com:8443"})
    assert allowed_destinations([{"tool": "slack", "url": "https://hooks.example.com:8443/x"}], policy)
    assert not allowed_destinations([{"tool": "slack", "url": "https://hooks.example.com:8444/x"}], policy)


# R5b: (what contract A has: fresh deliveries to hanging origins, each its own; B's one delivery, and
# whether B's failed before) — B's is tried on the same tick, and A costs at most 2 time-outs
STARVE_CASES = [(10, 1), (10, 0), (3, 1), (10, 5)]


Sink = WebhookSink


@pytest.mark.parametrize("hanging, b_tries", STARVE_CASES)
def test_one_contracts_hanging_destinations_never_starve_anothers_pending_retry(monkeypatch, hanging, b_tries):
    monkeypatch.setattr(notify, "TIMEOUT_SECONDS", 0.3)
    monkeypatch.setattr(notify, "TICK_BUDGET_SECONDS", 1.0)  # three time-outs and a bit
    monkeypatch.setattr(notify, "BACKOFF_SECONDS", (0.05, 0.05))
    listening = [socket.create_server(("127.0.0.1", 0)) for _ in range(hanging)]  # connects, never answers
    sink = Sink()
    try:
        origins = [f"http://127.0.0.1:{s.getsockname()[1]}" for s in listening]
        policy = alert_policy({"DQ_ALERTS_WEBHOOK_HOSTS": ",".join([sink.url, *origins])})
        a = [Delivery(f"a{i}", "t:A", "failure", "s", "FAIL", "https://ui/c", "slack", f"{o}/x", contract="A")
             for i, o in enumerate(origins)]
        b = Delivery("b", "t:B", "failure", "s", "FAIL", "https://ui/c", "slack", f"{sink.url}/victim",
                     tries=b_tries, contract="B")
        started = time.monotonic()
        outcome = deliver([*a, b], policy)
        assert sink.received == ["/victim"], outcome.log
        assert sum("failed" in line for line in outcome.log) <= notify.FAILURES_PER_CONTRACT, outcome.log
        assert sorted(d.id for d in outcome.pending) == sorted(d.id for d in a)  # nothing of A's lost
        assert time.monotonic() - started < 1.5
    finally:
        for s in listening:
            s.close()
        sink.server.shutdown()
        sink.server.server_close()


# Minor: (a path under the operator's prefix `http://h:p/hooks/`) — one a server could read as another
# is under no prefix
PREFIX = "http://127.0.0.1:8080/hooks/"
PATH_CASES = [
    ("/hooks/x", "sent"),
    ("/hooks/x/..;/a", "refused"),  # `..;` is `..` to Tomcat and Spring
    ("/hooks/x;a", "refused"),
    ("/hooks/x\\..\\..\\admin", "refused"),  # `\` is `/` to IIS
    ("/hooks/x\\y", "refused"),
    ("/hooks/x/.../a", "refused"),
    ("/hooks/x/%2e%2e/a", "refused"),
    ("/hooks/x/a%20b", "refused"),
]


@pytest.mark.parametrize("path, becomes", PATH_CASES)
def test_a_path_a_server_could_normalise_is_under_no_prefix(path, becomes):
    policy = alert_policy({"DQ_ALERTS_WEBHOOK_HOSTS": PREFIX})
    item = {"tool": "slack", "url": "http://127.0.0.1:8080" + path}
    sent, refused = allowed_destinations([item], policy), support_refusals([item], policy)
    assert ("sent" if sent and not refused else "refused" if refused and not sent else "both") == becomes, refused
