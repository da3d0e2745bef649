"""The alert sensor against a contract written to abuse it: slow and hanging destinations on
127.0.0.1, a contract flooding the pending queue, text that would render as links, secrets in
messages, partitions that never repeat, oversized text, stale and routed mail addresses.

Each finding is a table of rows; the time bounds are the module's own, shrunk for the test."""

from __future__ import annotations

import datetime as dt
import json
import socketserver
import threading
import time

import pytest

from dq_contracts.engine import notify
from dq_contracts.engine.notify import deliver, slack_payload, teams_payload
from dq_contracts.odcs.alerting import (MAX_OPEN_PARTITIONS, MAX_PENDING, MAX_PENDING_PER_CONTRACT, MAX_SUBJECT, MAX_TEXT, AlertState,
                                        Delivery, Evaluation, Watched, observe, to_send)
from dq_contracts.odcs.support import MAX_DESTINATIONS, alert_policy, allowed_destinations, support_refusals
from dq_contracts_tests.support import WebhookSink


class Slow:
    """A TCP server on 127.0.0.1 slow to answer: `trickle` sends an HTTP status line then a byte every
    0.2 s (a client timing out each read only waits 9 s), `smtp` its 220 greeting so, `silent`
    reads and says nothing."""

    def __init__(self, mode: str):
        stopping = self.stopping = threading.Event()

        class Handler(socketserver.BaseRequestHandler):
            def handle(self):
                if mode != "smtp":
                    self.request.recv(65536)
                said = {"trickle": b"HTTP/1.1 200 OK\r\nX-a: " + b"b" * 40, "silent": b"",
                        "smtp": b"220 " + b"x" * 40}[mode]
                for byte in said:
                    if stopping.wait(0.2):
                        return
                    try:
                        self.request.sendall(bytes([byte]))
                    except OSError:
                        return
                stopping.wait(60)

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    def close(self):
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()


Sink = WebhookSink


@pytest.fixture
def short_bounds(monkeypatch):
    """The module's bounds, shrunk: an attempt 0.5 s in all (the slow servers send a byte each 0.2 s),
    a tick 1.5 s."""
    monkeypatch.setattr(notify, "TIMEOUT_SECONDS", 0.5)
    monkeypatch.setattr(notify, "TICK_BUDGET_SECONDS", 1.5)
    monkeypatch.setattr(notify, "BACKOFF_SECONDS", (0.1, 0.1))


def hook(contract: str, url: str, tries: int = 0, tool: str = "slack") -> Delivery:
    return Delivery(f"r:{contract}:{url}", f"t:{contract}", "failure", "s", "FAIL", "https://ui/c", tool, url,
                    tries=tries, contract=contract)


def webhooks(*urls: str) -> str:
    return ",".join(urls)


# A1: (what the destination does, the transport) — one delivery returns within its attempt's 0.5 s
SLOW_CASES = [("trickle", "webhook"), ("silent", "webhook"), ("smtp", "mail")]


@pytest.mark.parametrize("mode, transport", SLOW_CASES)
def test_a_slow_destination_is_cut_at_its_deadline_not_at_each_read(short_bounds, mode, transport):
    slow = Slow(mode)
    try:
        environ = {"DQ_ALERTS_WEBHOOK_HOSTS": slow.url, "DQ_ALERTS_MAIL_DOMAINS": "example.com",
                   "DQ_ALERTS_SMTP_HOST": "127.0.0.1", "DQ_ALERTS_SMTP_PORT": str(slow.port),
                   "DQ_ALERTS_SMTP_TLS": "none"}
        delivery = hook("c", f"{slow.url}/services/x") if transport == "webhook" else Delivery(
            "r:1", "t:c", "failure", "s", "FAIL", "https://ui/c", "email", "team@example.com", contract="c")
        started = time.monotonic()
        outcome = deliver([delivery], alert_policy(environ))
        took = time.monotonic() - started
        assert took < 1.2, outcome.log  # one attempt of 0.5 s: a time-out is not tried again this tick
        assert [d.id for d in outcome.pending] == [delivery.id]  # nothing lost
        assert "failed 1 attempt (TimeoutError" in outcome.log[0], outcome.log
    finally:
        slow.close()


def test_a_tick_returns_within_its_budget_however_many_destinations_hang(short_bounds):
    servers = [Slow("trickle") for _ in range(6)]
    try:
        pending = [hook(f"c{i}", f"{s.url}/x") for i, s in enumerate(servers)]
        started = time.monotonic()
        outcome = deliver(pending, alert_policy({"DQ_ALERTS_WEBHOOK_HOSTS": webhooks(*(s.url for s in servers))}))
        assert time.monotonic() - started < 2.0  # the 1.5 s budget, and the thread's wake-up
        assert len(outcome.pending) == 6
    finally:
        for server in servers:
            server.close()


# A2: (the attacker's pending deliveries: how many paths on each hanging origin, and ticks that tried them)
FAIRNESS_CASES = [
    ("five paths on one hanging origin, before the victim", [5], 0),
    ("three hanging origins, before the victim", [1, 1, 1], 0),
    ("three hanging origins that failed before, before the victim", [1, 1, 1], 1),
    ("twenty paths on each of two hanging origins", [20, 20], 0),
]


@pytest.mark.parametrize("what, paths, tries", FAIRNESS_CASES, ids=[c[0] for c in FAIRNESS_CASES])
def test_a_contracts_hanging_destinations_never_hold_back_another_contracts_alert(short_bounds, what, paths, tries):
    servers, sink = [Slow("silent") for _ in paths], Sink()
    try:
        pending = [hook("attacker", f"{s.url}/services/{i}", tries) for s, n in zip(servers, paths) for i in range(n)]
        pending.append(hook("victim", f"{sink.url}/victim"))
        policy = alert_policy({"DQ_ALERTS_WEBHOOK_HOSTS": webhooks(sink.url, *(s.url for s in servers))})
        outcome = deliver(pending, policy)
        assert sink.received == ["/victim"], what  # delivered on the same tick
        assert len(outcome.pending) == sum(paths)  # the attacker's: nothing lost
    finally:
        for server in [*servers, sink]:
            server.close()


POLICY = alert_policy({"DQ_ALERTS_WEBHOOK_HOSTS": "hooks.slack.com", "DQ_ALERTS_MAIL_DOMAINS": "example.com"})
VICTIM = Watched(("payments",), "id__not_null", "urn:victim 1.0.0", "v.yaml:9 x",
                 ({"tool": "email", "channel": "oncall@example.com"},))


def attacker(destinations: int) -> Watched:
    return Watched(("junk",), "id__not_null", "urn:attacker 1.0.0", "a.yaml:9 x",
                   tuple({"tool": "slack", "url": f"https://hooks.slack.com/services/T0/B0/{i}"}
                         for i in range(destinations)))


def failing(check: Watched, run: int, partition: str | None = None, severity: str = "ERROR") -> Evaluation:
    return Evaluation(check.key, False, severity, "1 NULL", partition, f"run{run}:{run}")


# A3: (the attacker's destinations, its failing evaluations, queued before the victim's)
FLOOD_CASES = [(1001, 1), (11, 200), (10, MAX_PENDING)]


@pytest.mark.parametrize("destinations, failures", FLOOD_CASES)
def test_a_flooding_contract_never_evicts_another_contracts_alert(destinations, failures):
    flood = attacker(destinations)
    state = AlertState(read={})
    observe(state, [failing(VICTIM, 0)], {VICTIM.key: VICTIM}, POLICY)
    for run in range(failures):  # each a new episode: a pass between
        observe(state, [failing(flood, run), Evaluation(flood.key, True, "ERROR", "", None, f"p{run}:1")],
                {flood.key: flood}, POLICY)
    assert [d.address for d in state.pending if d.check == VICTIM.key] == ["oncall@example.com"]
    assert sum(d.check == flood.key for d in state.pending) <= MAX_PENDING_PER_CONTRACT
    assert len({d.address for d in state.pending if d.check == flood.key}) <= MAX_DESTINATIONS


def test_a_contract_naming_more_destinations_than_its_share_is_warned_past_it():
    support = attacker(MAX_DESTINATIONS + 2).support
    assert len(allowed_destinations(support, POLICY)) == MAX_DESTINATIONS
    warned = support_refusals(support, POLICY)
    assert [path for path, _ in warned] == [["support", MAX_DESTINATIONS, "url"], ["support", MAX_DESTINATIONS + 1,
                                                                                    "url"]]
    assert f"at most {MAX_DESTINATIONS} destinations" in warned[0][1] and "T0/B0" not in warned[0][1]


# A4: text of a contract that Slack's mrkdwn or a Teams TextBlock's Markdown would render
INJECTIONS = ["[Reset your password](https://evil.example/login)", "**URGENT** call +1 555 0100", "_quiet_ ~gone~",
              "<https://evil.example|the check>", "<!channel>", "![x](https://evil.example/pixel.png)",
              "# Heading", "`code`"]


@pytest.mark.parametrize("text", INJECTIONS)
def test_a_contracts_text_shows_as_written_in_slack(text):
    payload = slack_payload(Delivery("r:1", "t:c", "failure", "s", f"FAIL\n{text}", "https://ui/c", "slack", "u"))
    assert payload["mrkdwn"] is False  # *, _, ~, ` shown as they are
    assert payload["unfurl_links"] is payload["unfurl_media"] is False  # no preview fetched from a URL in it
    assert "<" not in payload["text"] and ">" not in payload["text"]  # no <url|text> link, no mention


@pytest.mark.parametrize("text", INJECTIONS)
def test_a_contracts_text_shows_as_written_in_teams(text):
    card = teams_payload(Delivery("r:1", "t:c", "failure", "s", f"FAIL\n{text}", "https://ui/c", "teams", "u"))
    body = card["attachments"][0]["content"]["body"]
    # a TextBlock reads Markdown; a TextRun of a RichTextBlock never does
    assert {b["type"] for b in body} == {"RichTextBlock"}
    assert [i["type"] for b in body for i in b["inlines"]] == ["TextRun", "TextRun"]
    assert body[1]["inlines"][0]["text"] == text


# A5: (a support item, the operator's list) — no message about it shows its path
SECRET_CASES = [
    ({"tool": "slack", "url": "https://hooks.slack.com:99999/services/T0/B0/SECRET"}, "hooks.slack.com"),
    ({"tool": "slack", "url": "https://[hooks.slack.com/services/T0/B0/SECRET"}, "hooks.slack.com"),
    ({"tool": "teams", "url": "https://evil.example/workflows/SECRET"}, "hooks.slack.com"),
    ({"tool": "email", "channel": "team", "url": "https://lists.example.com/SECRET"}, "hooks.slack.com"),
    ({"tool": "slack", "url": "https://hooks.slack.com/services/T9/B0/x"},
     "https://hooks.slack.com/services/T0/B0/SECRET"),  # the operator's own full URL, not shown either
]


@pytest.mark.parametrize("item, hosts", SECRET_CASES)
def test_a_message_about_a_destination_shows_its_origin_only(item, hosts):
    policy = alert_policy({"DQ_ALERTS_WEBHOOK_HOSTS": hosts, "DQ_ALERTS_MAIL_DOMAINS": "example.com"})
    said = [message for _, message in support_refusals([item], policy)]
    assert said and not any("SECRET" in m for m in said), said


# A6: (severity, each evaluation as partition+P/F, what each one tells)
PARTITION_EPISODES = [
    ("WARN", ["d1F", "d2F"], [None, "failure"]),  # twice in a row, counted per check across partitions
    ("WARN", ["d1F", "d2P", "d3F"], [None, None, None]),  # a pass in between: not in a row
    ("WARN", ["d1F", "d2F", "d2P"], [None, "failure", "recovery"]),  # the episode is the partition's
    ("WARN", ["d1F", "d2F", "d1P"], [None, "failure", None]),  # d1 opened none: its pass tells nothing
    ("ERROR", ["d1F", "d2F", "d1P", "d2P"], ["failure", "failure", "recovery", "recovery"]),
]


@pytest.mark.parametrize("severity, results, told", PARTITION_EPISODES)
def test_a_partitioned_checks_failures_in_a_row_are_counted_across_its_partitions(severity, results, told):
    check = Watched(("sales",), "amount__null_values", "urn:x 1.0.0", "c.yaml:1 x",
                    ({"tool": "email", "channel": "team@example.com"},))
    state, said = AlertState(read={}), []
    for run, result in enumerate(results):
        before = len(state.pending)
        observe(state, [Evaluation(check.key, result[-1] == "P", severity, "", result[:-1], f"r{run}:1")],
                {check.key: check}, POLICY)
        said.append(state.pending[-1].kind if len(state.pending) > before else None)
    assert said == told


def test_ten_years_of_daily_partitions_keep_a_bounded_cursor():
    check = Watched(("sales",), "amount__null_values", "urn:x 1.0.0", "c.yaml:1 x",
                    ({"tool": "email", "channel": "team@example.com"},))
    state = AlertState(read={})
    for day in range(3650):  # each daily partition checked once, a WARN failing on each
        partition = (dt.date(2016, 1, 1) + dt.timedelta(day)).isoformat()
        observe(state, [Evaluation(check.key, False, "WARN", "3 NULLs", partition, f"r{day}:1")],
                {check.key: check}, POLICY)
    assert state.pending  # told: the WARN failed on two partitions in a row
    assert len(state.pending) <= MAX_PENDING_PER_CONTRACT
    assert len(state.checks) <= MAX_OPEN_PARTITIONS + 1  # the check's count, and its newest open partitions
    assert len(state.to_cursor()) < 100_000


def test_oversized_text_of_a_contract_is_cut_in_the_message_and_the_cursor():
    pattern = "^(" + "a|" * 50_000 + "b)$"
    check = Watched(("items",), "code__pattern", "urn:x:" + "A" * 200_000 + " 1.0.0", "b.yaml:14 x",
                    tuple({"tool": "email", "channel": f"t{i}@example.com"} for i in range(50)))
    state = AlertState(read={})
    observe(state, [Evaluation(check.key, False, "ERROR", f"1 row not matching {pattern}", None, "r:1")],
            {check.key: check}, POLICY)
    assert len(state.pending) == MAX_DESTINATIONS
    assert all(len(d.text) <= MAX_TEXT and len(d.subject) <= MAX_SUBJECT for d in state.pending)
    assert "…" in state.pending[0].text
    assert len(state.to_cursor()) < 30_000
    assert json.loads(state.to_cursor())  # still a cursor


# A8: (the pending address, the contract's support block now, the operator's mail domains) — sent or dropped
STALE_CASES = [
    ("old@example.com", [{"tool": "email", "channel": "new@example.com"}], "example.com", "dropped"),
    ("old@example.com", [], "example.com", "dropped"),
    ("Team@Example.com", [{"tool": "email", "url": "mailto:team@example.com"}], "example.com", "sent"),
    ("team@example.com", [{"tool": "email", "channel": "team@example.com"}], "other.example", "dropped"),
]


@pytest.mark.parametrize("address, support, domains, becomes", STALE_CASES)
def test_a_pending_mail_goes_only_to_an_address_the_contract_still_names(address, support, domains, becomes):
    check = Watched(("t",), "c", "urn:x 1.0.0", "x.yaml:1 x", tuple(support))
    delivery = Delivery("r:1", check.key, "failure", "s", "FAIL", "https://ui/c", "email", address, contract="urn:x")
    sendable, log = to_send([delivery], {check.key: check}, alert_policy({"DQ_ALERTS_MAIL_DOMAINS": domains}))
    assert ("sent" if sendable else "dropped") == becomes, log


# A9 and URL prefixes: (a support item, what it becomes under ALLOW)
ALLOW = {"DQ_ALERTS_WEBHOOK_HOSTS": "https://hooks.slack.com/services/T0123/, *.logic.azure.com",
         "DQ_ALERTS_MAIL_DOMAINS": "example.com"}
ADDRESS_CASES = [
    ("mailto:first.last+tag@example.com", "sent"),
    ("mailto:a_b-c@example.com", "sent"),
    ("mailto:a%25b@example.com", "refused"),  # a%b: old relays route it to b
    ("mailto:b!a@example.com", "refused"),  # UUCP bang path
    ("mailto:=?utf-8?q?x=40evil.example?=@example.com", "refused"),  # an RFC 2047 encoded word
    ("mailto:a=b@example.com", "refused"),
    ("mailto:.a@example.com", "refused"),
    ("mailto:a..b@example.com", "refused"),
    ("mailto:a@-example.com", "refused"),
    ("mailto:%22a%20b%22@example.com", "refused"),  # a quoted local part
    ("https://hooks.slack.com/services/T0123/B0/x", "sent"),  # under the operator's prefix
    ("https://hooks.slack.com/services/T01234/B0/x", "refused"),  # another tenant, a longer name
    ("https://hooks.slack.com/services/T9999/B0/x", "refused"),  # another tenant
    ("https://hooks.slack.com/services/T0123/../T9999/B0/x", "refused"),  # out of the prefix again
    ("https://hooks.slack.com/services/T0123/%2e%2e/T9999/B0/x", "refused"),
    ("https://hooks.slack.com/services/T0123%2fB0/x", "refused"),
    ("https://hooks.slack.com:444/services/T0123/B0/x", "refused"),
    ("http://hooks.slack.com/services/T0123/B0/x", "refused"),
    ("https://prod-1.westus.logic.azure.com/workflows/x", "sent"),  # a host entry still allows its host
]


@pytest.mark.parametrize("url, becomes", ADDRESS_CASES, ids=[str(i) for i in range(len(ADDRESS_CASES))])
def test_a_destination_is_sent_to_only_in_a_conservative_form_inside_the_operators_list(url, becomes):
    item = {"channel": "a", "tool": "email" if url.startswith("mailto:") else "slack", "url": url}
    policy = alert_policy(ALLOW)
    sent, refused = allowed_destinations([item], policy), support_refusals([item], policy)
    assert ("sent" if sent and not refused else "refused" if refused and not sent else "both") == becomes, refused



def test_the_cursor_keeps_what_renders_a_message_again_not_its_text_per_destination():
    check = Watched(("items",), "code__pattern", "urn:x:" + "A" * 5_000 + " 1.0.0", "b.yaml:14 x",
                    tuple({"tool": "email", "channel": f"t{i}@example.com"} for i in range(MAX_DESTINATIONS)))
    state = AlertState(read={})
    observe(state, [Evaluation(check.key, False, "WARN", "1 row not matching " + "a|" * 5_000, "2026-01-01", "r:1"),
                    Evaluation(check.key, False, "WARN", "again", "2026-01-02", "r:2")], {check.key: check}, POLICY)
    cursor = state.to_cursor()
    assert "AAAA" not in cursor  # the contract's id is rendered again from the check, not kept
    again, _ = to_send(AlertState.from_cursor(cursor).pending, {check.key: check}, POLICY)
    assert [(d.subject, d.text, d.link) for d in again] == [(d.subject, d.text, d.link) for d in state.pending]
    assert "FAIL WARN items partition 2026-01-02 code__pattern (2 times in a row)" in again[0].text


# C: (the operator's DQ_ALERTS_UI_URL, the base every link has) — no link or text carries its user or password
UI_URL_CASES = [
    ("https://admin:UIpassw0rd@dagster.internal", "https://dagster.internal"),
    ("https://admin:UIpassw0rd@dagster.internal:3000/dagster/", "https://dagster.internal:3000/dagster"),
    ("https://admin@dagster.internal", "https://dagster.internal"),  # a user alone is the UI's login too
    ("https://admin:UI%2Fpassw0rd@dagster.internal", "https://dagster.internal"),  # percent-encoded
    ("https://admin:UI/passw0rd@dagster.internal", "https://dagster.internal"),  # a raw `/`: SQLAlchemy's reading
    ("https://admin:UI@passw0rd@dagster.internal", "https://dagster.internal"),  # a raw `@`: urllib's reading
    ("https://dagster.internal/ui", "https://dagster.internal/ui"),  # no credentials: as written
]


@pytest.mark.parametrize("ui_url, base", UI_URL_CASES)
def test_no_alert_link_or_text_carries_the_ui_urls_credentials(ui_url, base):
    policy = alert_policy({"DQ_ALERTS_MAIL_DOMAINS": "example.com", "DQ_ALERTS_UI_URL": ui_url})
    check = Watched(("items",), "id__not_null", "urn:x 1.0.0", "c.yaml:3 x", ({"tool": "email",
                                                                              "channel": "team@example.com"},))
    state = AlertState(read={})
    observe(state, [Evaluation(check.key, False, "ERROR", "1 NULL", None, "r:1")], {check.key: check}, policy)
    sent, _ = to_send(state.pending, {check.key: check}, policy)
    assert [d.link for d in sent] == [f"{base}/assets/items?view=checks&checkDetail=id__not_null"]
    shown = " ".join(f"{d.subject} {d.text} {d.link}" for d in sent)
    assert f"Check in Dagster: {base}/assets/items" in shown
    assert not any(part in shown for part in ("admin", "UIpassw0rd", "passw0rd", "%2F")), shown


def test_validate_and_the_code_location_warn_that_the_ui_urls_credentials_are_never_sent(tmp_path):
    from dq_contracts.odcs.load import load_contracts

    (tmp_path / "contracts").mkdir()
    (tmp_path / "contracts" / "t.odcs.yaml").write_text(json.dumps({
        "apiVersion": "v3.1.0", "kind": "DataContract", "id": "t", "version": "1.0.0", "status": "active",
        "schema": [{"name": "t", "properties": [{"name": "a", "logicalType": "integer"}]}]}))
    environ = {"DQ_ALERTS_UI_URL": "https://admin:UIpassw0rd@dagster.internal"}
    warned = [p.render() for p in load_contracts([tmp_path / "contracts"], environ=environ).problems]
    assert warned == ["DQ_ALERTS_UI_URL: warning: the Dagster UI's URL holds a user or password, which is never "
                      "sent: alert links go to every destination a contract names, so they point to "
                      "https://dagster.internal (its readers sign in themselves)"]
    assert load_contracts([tmp_path / "contracts"], environ={"DQ_ALERTS_UI_URL": "https://h"}).problems == []
