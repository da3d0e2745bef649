"""The alert sensor on real parts: a Dagster instance where a DuckDB table's checks are really
evaluated, the sensor ticked with build_sensor_context, a local SMTP server (aiosmtpd) and local
webhook endpoints (http.server) on 127.0.0.1.

The scenario is a table of steps: what the table holds before the checks run (or no run), how the
endpoints answer, and what each endpoint must have received at that tick."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from email import message_from_bytes, policy
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import dagster as dg
import pytest
import sqlalchemy as sa
from aiosmtpd.controller import Controller

from dq_contracts import build_contract_defs
from dq_contracts.engine.notify import slack_payload, teams_payload
from dq_contracts.odcs.alerting import AlertState, Delivery, Evaluation, check_link, step
from dq_contracts.odcs.load import load_contracts
from dq_contracts.odcs.support import ALERT_SETTINGS, alert_policy, allowed_destinations, support_refusals

CONTRACT = """
apiVersion: v3.1.0
kind: DataContract
id: urn:shop:items
version: 1.0.0
status: active
servers:
  - server: local
    type: duckdb
    database: wh.duckdb
    schema: main
schema:
  - name: items
    properties:
      - name: id
        logicalType: integer
        required: true
      - name: price
        logicalType: number
        quality:
          - metric: nullValues
            mustBe: 0
            severity: warning
support:
  - channel: data-team
    tool: email
    url: mailto:data-team@example.com
  - channel: '#items'
    tool: slack
    url: {hooks}/slack/T0/B0/secret
  - channel: items
    tool: teams
    url: {hooks}/teams/workflow
  - channel: someone else
    tool: email
    url: mailto:someone@elsewhere.example
  - channel: another hook
    tool: slack
    url: {other}/slack/stolen
"""

ROWS = {"good": "(1, 1.0)", "error": "(NULL, 1.0)", "warn": "(1, NULL)"}

# (the table before the checks run, or None: no run; the webhooks' answer; SMTP up; what is received:
#  the headline of each mail, Slack and Teams message, in order; what it shows)
STEPS = [
    ("good", 200, True, [], "a first run that passes: nothing to tell"),
    ("error", 200, True, ["FAIL ERROR items id__not_null"], "an ERROR clause fails: told at once"),
    ("error", 200, True, [], "it fails again: the same episode, nothing new"),
    ("good", 200, True, ["RECOVERED items id__not_null: passes again"], "its first pass: recovery told"),
    ("warn", 200, True, [], "a WARN clause fails once: nothing yet"),
    ("warn", 200, True, ["FAIL WARN items price__null_values (2 times in a row)"], "twice in a row: told"),
    ("warn", 200, True, [], "three times: the same episode"),
    ("good", 200, True, ["RECOVERED items price__null_values: passes again"], "recovered"),
    ("error", 503, False, [], "destinations down: retried with a bound, the tick returns, nothing sent"),
    (None, 200, True, ["FAIL ERROR items id__not_null"], "back up: the pending notification is delivered"),
    (None, 200, True, [], "and only once"),
]


class Hooks:
    """A webhook endpoint on 127.0.0.1: records each POST and the status it answered (`status`)."""

    def __init__(self):
        self.received: list[tuple[str, dict, int]] = []
        self.status = 200
        hooks = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                hooks.received.append((self.path, json.loads(body), hooks.status))
                self.send_response(hooks.status)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def headlines(self, path_start: str) -> list[str]:
        out = []
        for path, payload, status in self.received:
            if path.startswith(path_start) and status == 200:  # taken
                out.append(payload["text"].split("\n")[0] if "text" in payload else
                           payload["attachments"][0]["content"]["body"][0]["inlines"][0]["text"])
        return out


class Mailbox:
    def __init__(self):
        self.messages = []

    async def handle_DATA(self, server, session, envelope):
        self.messages.append((list(envelope.rcpt_tos), message_from_bytes(envelope.content, policy=policy.default)))
        return "250 OK"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Smtp:
    """aiosmtpd on 127.0.0.1, stopped and started again on the same port."""

    def __init__(self, mailbox: Mailbox):
        self.mailbox, self.port, self.controller = mailbox, free_port(), None

    def start(self):
        self.controller = Controller(self.mailbox, hostname="127.0.0.1", port=self.port)
        self.controller.start()

    def stop(self):
        if self.controller is not None:
            self.controller.stop()
            self.controller = None


@pytest.fixture
def endpoints():
    hooks, other, mailbox = Hooks(), Hooks(), Mailbox()
    smtp = Smtp(mailbox)
    smtp.start()
    yield hooks, other, mailbox, smtp
    for server in (hooks.server, other.server):
        server.shutdown()
    smtp.stop()


def set_rows(which: str) -> None:
    engine = sa.create_engine("duckdb:///contracts/wh.duckdb")
    with engine.begin() as c:
        c.exec_driver_sql("CREATE OR REPLACE TABLE items (id INTEGER, price DOUBLE)")
        c.exec_driver_sql(f"INSERT INTO items VALUES {ROWS[which]}")
    engine.dispose()


def test_the_contracts_owners_are_told_once_per_episode_and_of_recovery(tmp_path, monkeypatch, endpoints):
    hooks, other, mailbox, smtp = endpoints
    monkeypatch.chdir(tmp_path)
    for name, value in {"DQ_ALERTS_WEBHOOK_HOSTS": f"hooks.slack.com, {hooks.url}",
                        "DQ_ALERTS_MAIL_DOMAINS": "example.com", "DQ_ALERTS_SMTP_HOST": "127.0.0.1",
                        "DQ_ALERTS_SMTP_PORT": str(smtp.port), "DQ_ALERTS_SMTP_TLS": "none",
                        "DQ_ALERTS_FROM": "dq@example.com", "DQ_ALERTS_UI_URL": "http://dagster.example:3000/"
                        }.items():
        monkeypatch.setenv(name, value)
    contract = tmp_path / "contracts" / "items.odcs.yaml"
    contract.parent.mkdir()
    contract.write_text(CONTRACT.format(hooks=hooks.url, other=other.url))
    (tmp_path / "home").mkdir()
    instance = dg.DagsterInstance.local_temp(str(tmp_path / "home"))
    defs = build_contract_defs(contract.parent, contract_jobs=True)
    sensor = defs.resolve_sensor_def("dq_contracts_alerts")
    assert sensor.default_status == dg.DefaultSensorStatus.STOPPED
    job = defs.resolve_job_def("items__checks")

    cursor = sensor.evaluate_tick(dg.build_sensor_context(instance=instance)).cursor  # turned on: from now
    for rows, status, smtp_up, expected, what in STEPS:
        hooks.status = status
        if smtp_up and smtp.controller is None:
            smtp.start()
        elif not smtp_up:
            smtp.stop()
        before = (len(mailbox.messages), len(hooks.headlines("/slack")), len(hooks.headlines("/teams")))
        if rows is not None:
            set_rows(rows)
            job.execute_in_process(instance=instance, raise_on_error=False)
        started = time.monotonic()
        tick = sensor.evaluate_tick(dg.build_sensor_context(instance=instance, cursor=cursor))
        cursor = tick.cursor
        mails = [m["Subject"].removeprefix("[dq_contracts] ") for _, m in mailbox.messages[before[0]:]]
        assert mails == expected, what
        assert hooks.headlines("/slack")[before[1]:] == expected, what
        assert hooks.headlines("/teams")[before[2]:] == expected, what
        if not smtp_up:
            pending = json.loads(cursor)["pending"]
            assert len(pending) == 3, what  # mail, Slack, Teams: kept for the next tick
            assert "secret" not in cursor and hooks.url not in cursor  # the UI shows a cursor: no webhook URL
            # three attempts, a second's backoff and a half; the Slack and Teams webhooks share one origin,
            # down after the first's three 503s: the second is not tried this tick
            assert [p for p, _, status in hooks.received if status == 503] == ["/slack/T0/B0/secret"] * 3
            assert time.monotonic() - started < 20

    # refused destinations: nothing ever reached them
    assert other.received == []
    assert {r for rcpts, _ in mailbox.messages for r in rcpts} == {"data-team@example.com"}
    # what a mail says: the sentence, the clause's place, the link to the check's page
    first = mailbox.messages[0][1].get_content()
    assert "NULL" in first
    assert "items.odcs.yaml:17 schema.items.properties.id.required" in first
    assert "http://dagster.example:3000/assets/items?view=checks&checkDetail=id__not_null" in first


def test_a_support_channel_the_operator_does_not_allow_is_a_warning_at_its_line(tmp_path):
    contract = tmp_path / "items.odcs.yaml"
    contract.write_text(CONTRACT.format(hooks="http://127.0.0.1:9", other="https://hooks.evil.example"))
    environ = {"DQ_ALERTS_WEBHOOK_HOSTS": "http://127.0.0.1:9", "DQ_ALERTS_MAIL_DOMAINS": "example.com"}
    found = [p for p in load_contracts([contract], environ=environ).problems if p.path.startswith("support")]
    assert [(p.line, p.severity, p.path) for p in found] == [
        (36, "warning", "support[3].url"), (39, "warning", "support[4].url")]
    assert "elsewhere.example" in found[0].message and "DQ_ALERTS_MAIL_DOMAINS" in found[0].message
    assert "https://hooks.evil.example/…" in found[1].message and "stolen" not in found[1].message
    assert load_contracts([contract], environ={}).problems == []  # no allow-list: alerts off, nothing judged


ALLOW = {"DQ_ALERTS_WEBHOOK_HOSTS": "hooks.slack.com, *.logic.azure.com, http://127.0.0.1:8080",
         "DQ_ALERTS_MAIL_DOMAINS": "example.com, *.corp.example"}
# (a support item, what it becomes: "sent: <tool> <address>" or "refused: <words of the warning>", or None: not notified)
CHANNEL_CASES = [
    ({"channel": "a", "tool": "email", "url": "mailto:team@example.com"}, "sent: email team@example.com"),
    ({"channel": "a", "url": "mailto:Team@EXAMPLE.com?subject=x"}, "sent: email Team@EXAMPLE.com"),
    ({"channel": "a", "tool": "email", "url": "mailto:a@x.corp.example,b@evil.example"}, "refused: 'evil.example'"),
    ({"channel": "ops@example.com", "tool": "email"}, "sent: email ops@example.com"),
    ({"channel": "a", "tool": "email", "url": "mailto:team@example.com.evil.example"}, "refused: domain"),
    ({"channel": "a", "tool": "email", "url": "mailto:x@example.com%0ABcc:y@evil.example"}, "refused: not a mail"),
    ({"channel": "a", "tool": "email", "url": "https://lists.example.com/team"}, "refused: mailto"),
    ({"channel": "a", "tool": "slack", "url": "https://hooks.slack.com/services/T/B/x"},
     "sent: slack https://hooks.slack.com/services/T/B/x"),
    ({"channel": "a", "tool": "slack", "url": "http://hooks.slack.com/services/T/B/x"}, "refused: not a webhook host"),
    ({"channel": "a", "tool": "slack", "url": "https://hooks.slack.com.evil.example/x"}, "refused: not a webhook"),
    ({"channel": "a", "tool": "slack", "url": "https://u:p@hooks.slack.com/services/x"}, "refused: credential"),
    ({"channel": "a", "tool": "slack", "url": "https://my-org.slack.com/archives/C0123"}, "refused: my-org.slack.com"),
    ({"channel": "a", "tool": "teams", "url": "https://prod-01.westus.logic.azure.com/workflows/x"},
     "sent: teams https://prod-01.westus.logic.azure.com/workflows/x"),
    ({"channel": "a", "tool": "teams", "url": "http://127.0.0.1:8080/hook"}, "sent: teams http://127.0.0.1:8080/hook"),
    ({"channel": "a", "tool": "teams", "url": "http://127.0.0.1:8081/hook"}, "refused: http://127.0.0.1:8081"),
    ({"channel": "#help", "tool": "slack"}, None),  # no URL: nothing to send to
    ({"channel": "a", "tool": "discord", "url": "https://discord.com/x"}, None),
    ({"channel": "a", "tool": "ticket", "url": "https://jira.example.com"}, None),
]


@pytest.mark.parametrize("item, becomes", CHANNEL_CASES, ids=[str(i) for i in range(len(CHANNEL_CASES))])
def test_a_support_channel_is_sent_to_only_inside_the_operators_lists(item, becomes):
    policy = alert_policy(ALLOW)
    sent = [f"sent: {d.tool} {d.address}" for d in allowed_destinations([item], policy)]
    refused = [message for _, message in support_refusals([item], policy)]
    if becomes is None:
        assert (sent, refused) == ([], [])
    elif becomes.startswith("sent"):
        assert (sent, refused) == ([becomes], [])
    else:
        assert refused and becomes.removeprefix("refused: ") in refused[-1], refused
        assert all(not s.endswith("evil.example") for s in sent)


def test_the_readme_names_every_alert_setting():
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    section = readme.split("### Telling the contract's owners", 1)[1].split("\n## ", 1)[0]
    assert set(re.findall(r"\bDQ_ALERTS_[A-Z_]+[A-Z]\b", section)) == {v for _, v, _ in ALERT_SETTINGS}


@pytest.mark.parametrize("options, code", [([], 0), (["--strict"], 1)])  # --strict: a CI gate, warnings fail
def test_validate_prints_a_refused_channel_at_its_line(tmp_path, options, code):
    (tmp_path / "contracts").mkdir()
    (tmp_path / "contracts" / "items.odcs.yaml").write_text(
        CONTRACT.format(hooks="https://hooks.slack.com/services", other="https://hooks.evil.example"))
    env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", str(tmp_path)),
           "DQ_ALERTS_WEBHOOK_HOSTS": "hooks.slack.com", "DQ_ALERTS_MAIL_DOMAINS": "example.com"}
    done = subprocess.run([str(Path(sys.executable).parent / "dq-contracts"), "validate", *options, "contracts/"],
                          cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == code, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    said = "" if options else "warning: "  # --strict says a warning as the error it counts as
    assert lines[0] == (f"contracts/items.odcs.yaml:36: {said}support[3].url: support channel: mail to "
                        "'someone@elsewhere.example': the domain 'elsewhere.example' is not one the operator allows "
                        "(DQ_ALERTS_MAIL_DOMAINS: example.com); nothing is sent there")
    if not options:
        readme = (Path(__file__).parents[2] / "README.md").read_text()
        section = " ".join(readme.split("### Telling the contract's owners", 1)[1].split("\n## ", 1)[0].split())
        assert f"`{lines[0]}`" in section  # the README shows the line as validate prints it
    assert lines[1].startswith(f"contracts/items.odcs.yaml:39: {said}support[4].url: support channel: slack webhook "
                               "https://hooks.evil.example/…: https://hooks.evil.example is not a webhook host")


@pytest.mark.parametrize("option, status", [("running", dg.DefaultSensorStatus.RUNNING),
                                            ("stopped", dg.DefaultSensorStatus.STOPPED), ("none", None)])
def test_the_component_builds_the_alert_sensor_as_its_option_says(tmp_path, option, status):
    from dagster.components.testing.utils import component_defs

    from dq_contracts.dagster_defs.component import ContractsComponent

    (tmp_path / "contracts").mkdir()
    (tmp_path / "contracts" / "items.odcs.yaml").write_text(CONTRACT.format(hooks="https://h", other="https://o"))
    defs = component_defs(component=ContractsComponent(contracts_dir=str(tmp_path / "contracts"), alert_sensor=option,
                                                       alert_ui_url="https://dagster.example.com"))
    sensors = [s for s in defs.sensors or [] if s.name.startswith("dq_contracts_alerts")]
    assert [s.default_status for s in sensors] == ([status] if status else [])


def test_the_link_is_the_uis_own_check_page_with_each_part_quoted():
    assert check_link("https://dagster.example.com/", ("warehouse", "order items"), "id__not_null") == (
        "https://dagster.example.com/assets/warehouse/order%20items?view=checks&checkDetail=id__not_null")


@pytest.mark.parametrize("cursor", [None, "", "not json", "[1, 2]", '{"pending": [{"id": 1}]}'])
def test_a_cursor_set_by_hand_starts_the_sensor_afresh(cursor):
    state = AlertState.from_cursor(cursor)
    assert (state.read, state.checks, state.pending) == (None, {}, [])


# (severity, each evaluation passed or failed, what each one tells)
EPISODES = [
    ("ERROR", "FFP", ["failure", None, "recovery"]),
    ("ERROR", "PP", [None, None]),
    ("WARN", "FPFFFP", [None, None, None, "failure", None, "recovery"]),
    ("WARN", "FP", [None, None]),  # one WARN failure alone is no episode: its pass tells nothing
    ("ERROR", "FPF", ["failure", "recovery", "failure"]),  # a new episode after a pass
]


@pytest.mark.parametrize("severity, results, told", EPISODES)
def test_an_episode_opens_as_its_severity_says_and_closes_at_its_first_pass(severity, results, told):
    state, said = None, []
    for result in results:
        state, tell = step(state, Evaluation("t:c", result == "P", severity, ""))
        said.append(tell)
    assert said == told


def test_a_contracts_text_mentions_no_one_in_slack_and_teams_gets_one_card_with_a_button():
    delivery = Delivery("r:1:t:c", "t:c", "failure", "s", "FAIL ERROR t c\n<!channel> & <https://x|y>", "https://ui/c",
                        "slack", "https://hooks.slack.com/x")
    assert slack_payload(delivery) == {"text": "FAIL ERROR t c\n&lt;!channel&gt; &amp; &lt;https://x|y&gt;",
                                       "mrkdwn": False, "unfurl_links": False, "unfurl_media": False}
    card = teams_payload(delivery)["attachments"][0]
    assert card["contentType"] == "application/vnd.microsoft.card.adaptive"
    assert [b["inlines"][0]["text"] for b in card["content"]["body"]] == ["FAIL ERROR t c", "<!channel> & <https://x|y>"]
    assert card["content"]["actions"] == [{"type": "Action.OpenUrl", "title": "Open the check in Dagster",
                                           "url": "https://ui/c"}]


def test_the_readme_settings_block_as_written_delivers(tmp_path, monkeypatch, endpoints):
    """The README's block of `export` lines, run by bash as written, its values pointed at the local
    servers (only the values: names, quoting and forms are the README's), then one failing run: the
    mail and the Slack and Teams messages arrive, under a URL-prefix entry as the README shows."""
    hooks, _, mailbox, smtp = endpoints
    section = (Path(__file__).parents[2] / "README.md").read_text().split("### Telling the contract's owners", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section.split("\n## ", 1)[0], re.S).group(1)
    local = {"DQ_ALERTS_WEBHOOK_HOSTS": f'"{hooks.url}/slack/T0/,{hooks.url}/teams/"',
             "DQ_ALERTS_MAIL_DOMAINS": '"example.com,*.example.com"', "DQ_ALERTS_SMTP_HOST": "127.0.0.1",
             "DQ_ALERTS_SMTP_TLS": "none", "DQ_ALERTS_SMTP_PORT": str(smtp.port), "DQ_ALERTS_SMTP_USER": "''",
             "DQ_ALERTS_SMTP_PASSWORD": "''", "DQ_ALERTS_FROM": "dq@example.com",
             "DQ_ALERTS_UI_URL": "http://dagster.example:3000"}
    written = set(re.findall(r"\b(DQ_ALERTS_[A-Z_]+)=", block))
    assert written == set(local), written  # the block sets exactly these
    for name, value in local.items():  # a value runs to the next space outside quotes, or the line's end
        block = re.sub(rf"\b{name}=(\"[^\"]*\"|'[^']*'|\S+)", lambda _: f"{name}={value}", block)
    shell = subprocess.run(["bash", "-c", block + "\nenv -0"], env={"PATH": os.environ["PATH"]},
                           capture_output=True, text=True, timeout=30, check=True)
    environ = dict(item.split("=", 1) for item in shell.stdout.split("\0") if item.startswith("DQ_ALERTS_"))
    monkeypatch.chdir(tmp_path)
    for name in local:
        monkeypatch.delenv(name, raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    contract = tmp_path / "contracts" / "items.odcs.yaml"
    contract.parent.mkdir()
    contract.write_text(CONTRACT.format(hooks=hooks.url, other="https://hooks.evil.example"))
    (tmp_path / "home").mkdir()
    instance = dg.DagsterInstance.local_temp(str(tmp_path / "home"))
    defs = build_contract_defs(contract.parent, contract_jobs=True)
    sensor = defs.resolve_sensor_def("dq_contracts_alerts")
    cursor = sensor.evaluate_tick(dg.build_sensor_context(instance=instance)).cursor
    set_rows("error")
    defs.resolve_job_def("items__checks").execute_in_process(instance=instance, raise_on_error=False)
    sensor.evaluate_tick(dg.build_sensor_context(instance=instance, cursor=cursor))
    told = ["FAIL ERROR items id__not_null"]
    assert [m["Subject"].removeprefix("[dq_contracts] ") for _, m in mailbox.messages] == told
    assert hooks.headlines("/slack") == told and hooks.headlines("/teams") == told
    assert "http://dagster.example:3000/assets/items?view=checks&checkDetail=id__not_null" in \
        mailbox.messages[0][1].get_content()
