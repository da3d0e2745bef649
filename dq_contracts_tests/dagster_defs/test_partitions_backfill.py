"""An external partitioned table's checks backfilled over three days on a real `dagster dev`: launched
from the UI in a real headless Chromium (the table's partitioned checks job, "Launch backfill…"; the
UI sends GraphQL `launchPartitionBackfill` with the job's partition set), run by the daemon; then
what the UI shows for each partition, read through GraphQL and on the check's Partitions tab."""

from __future__ import annotations

import re
import textwrap
import time

import pytest
import sqlalchemy as sa
import yaml

from dq_contracts_tests.dagit import LOCATION, METADATA, metadata_of, start_dagster_dev
from dq_contracts_tests.browser import Browser
from dq_contracts_tests.browser import CHROMIUM_FLAGS, OUTPUT, chromium
from dq_contracts_tests.partition_cases import BAD_DAY, DDL, GOOD_DAY, ROWS
from dq_contracts_tests.partition_cases import FAILING_ON_THE_BAD_DAY, PER_PARTITION, TABLE_WIDE, contract

THIRD_DAY = "2026-06-03"
DAYS = [GOOD_DAY, BAD_DAY, THIRD_DAY]
# the third day is the first one's rows again, a day later: it passes every clause
THIRD_DAY_ROWS = [(i, code, amount, customer, status, THIRD_DAY, ts.replace(GOOD_DAY, THIRD_DAY))
                  for i, code, amount, customer, status, day, ts in ROWS if day == GOOD_DAY]
WARNING_CLAUSE = "status__missing_values"  # made `severity: warning` in this copy: a failure Dagster shows as WARN
# a page driven over DevTools loads in real time: no virtual time budget
BROWSER_FLAGS = [f for f in CHROMIUM_FLAGS if not f.startswith("--virtual-time-budget")]
JOB = "events__events__partitions"  # <contract>__<object>__partitions

BACKFILL = """
query Backfill($id: String!) {
  partitionBackfillOrError(backfillId: $id) {
    __typename
    ... on PartitionBackfill {
      status numPartitions partitionNames partitionSetName isAssetBackfill
      error { message }
      runs(limit: 10) { runId status tags { key value } }
    }
  }
}"""

BACKFILLS = """
{ partitionBackfillsOrError(limit: 10) { __typename ... on PartitionBackfills { results { id } } } }"""

EXECUTIONS = """
query Executions($key: AssetKeyInput!, $name: String!) {
  assetCheckExecutions(assetKey: $key, checkName: $name, limit: 20) {
    runId status partition
    evaluation { success severity partition %s }
  }
}""" % METADATA

PARTITION_STATUSES = """
query Statuses($keys: [AssetKeyInput!]) {
  assetNodes(assetKeys: $keys) {
    assetChecksOrError {
      ... on AssetChecks {
        checks {
          name
          partitionDefinition { name }
          partitionStatuses {
            __typename
            ... on AssetCheckTimePartitionStatuses { ranges { startKey endKey status } }
          }
        }
      }
    }
  }
}"""

FINISHED_RUN = {"SUCCESS", "FAILURE", "CANCELED"}
FINISHED_BACKFILL = {"COMPLETED", "COMPLETED_SUCCESS", "COMPLETED_FAILED", "FAILED", "CANCELED"}


def write_site(site):
    """What a user has: a contract declaring the table's daily partitions, the DuckDB file beside it,
    and a definitions file calling build_contract_defs with its defaults."""
    document = contract({"server": "wh", "type": "duckdb", "database": "wh.duckdb", "schema": "main"})
    status = next(p for p in document["schema"][0]["properties"] if p["name"] == "status")
    status["quality"][0]["severity"] = "warning"  # the missingValues rule: WARNING_CLAUSE
    (site / "contracts").mkdir(parents=True)
    (site / "contracts" / "events.odcs.yaml").write_text(yaml.safe_dump(document, sort_keys=False))
    engine = sa.create_engine(f"duckdb:///{site / 'contracts' / 'wh.duckdb'}")
    with engine.begin() as c:
        for statement in DDL:
            c.exec_driver_sql(statement)
        for row in [*ROWS, *THIRD_DAY_ROWS]:
            c.execute(sa.text("INSERT INTO events VALUES (:a, :b, :c, :d, :e, CAST(:f AS DATE), CAST(:g AS TIMESTAMP))"),
                      dict(zip("abcdefg", row)))
    engine.dispose()
    (site / "defs.py").write_text(textwrap.dedent("""\
        from pathlib import Path

        from dq_contracts import build_contract_defs

        defs = build_contract_defs(Path(__file__).parent / "contracts")
        """))
    (site / "workspace.yaml").write_text(yaml.safe_dump({"load_from": [{"python_file": {
        "relative_path": "defs.py", "location_name": LOCATION, "working_directory": "."}}]}))


def wait_backfill(dagit, backfill_id: str, runs: int, timeout: float = 300) -> dict:
    """The backfill once the daemon has submitted its runs and they have finished. Most of a minute: the
    backfill daemon looks every 30 s (Dagster's constant, no instance setting), submitting the runs at one
    look and marking the backfill completed at the next."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        backfill = dagit.query(BACKFILL, {"id": backfill_id})["partitionBackfillOrError"]
        if backfill.get("status") in FINISHED_BACKFILL and len(backfill["runs"]) >= runs and all(
                r["status"] in FINISHED_RUN for r in backfill["runs"]):
            return backfill
        time.sleep(0.5)
    raise AssertionError(f"backfill {backfill_id} did not finish in {timeout}s: {backfill}\n"
                         f"{dagit.log.read_text()[-4000:]}")


def launch_backfill_from_the_ui(dagit, profile) -> str:
    """As a person does: the job's Partitions tab, "Launch backfill…", the three days typed as a range,
    "Submit 3 runs". The id of the backfill that made."""
    browser = Browser(chromium(), [*BROWSER_FLAGS, f"--user-data-dir={profile}"])
    try:
        browser.open(f"http://127.0.0.1:{dagit.port}/locations/{LOCATION}/jobs/{JOB}/partitions")
        browser.wait_for_match(r"Launch backfill….*Missing partitions")
        browser.click_text("Launch backfill…")
        browser.wait_for_match("Select partitions to submit")
        browser.type_into("input[placeholder^='ex: ']", f"[{DAYS[0]}...{DAYS[-1]}]")
        browser.wait_for_match(r"Missing \(3\).*Submit 3 runs")
        OUTPUT.mkdir(parents=True, exist_ok=True)
        browser.screenshot(OUTPUT / "events_backfill_dialog.png")
        browser.click_text("Submit 3 runs", "button")
        browser.wait_for_match(r"Backfill history .* 3 partitions")
    finally:
        browser.close()
    backfills = dagit.query(BACKFILLS)["partitionBackfillsOrError"]["results"]
    assert len(backfills) == 1, backfills
    return backfills[0]["id"]


@pytest.fixture(scope="module")
def backfilled(tmp_path_factory):
    """`dagster dev` on the user's folder, after a backfill of the three days: (dagit, backfill)."""
    folder = tmp_path_factory.mktemp("partitions_backfill")
    write_site(folder / "site")
    (folder / "dagster_home").mkdir()
    (folder / "dagster_home" / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")  # else Dagster's defaults
    dagit = start_dagster_dev(folder / "site", folder / "dagster_home", folder / "dagster.log")
    try:
        dagit.wait_ready()
        # what the Skip button of Dagster's newsletter prompt sends; it would cover the pages otherwise
        assert dagit.query("mutation { setNuxSeen }")["setNuxSeen"]
        backfill_id = launch_backfill_from_the_ui(dagit, folder / "profile")
        yield dagit, wait_backfill(dagit, backfill_id, len(DAYS))
    finally:
        dagit.stop()


@pytest.mark.slow
def test_a_backfill_of_three_days_checks_each_day_and_fails_only_the_bad_days_clauses(backfilled):
    dagit, backfill = backfilled
    assert backfill["status"] == "COMPLETED_SUCCESS" and backfill["error"] is None, backfill
    assert not backfill["isAssetBackfill"] and backfill["partitionSetName"] == f"{JOB}_partition_set"
    assert backfill["numPartitions"] == 3 and sorted(backfill["partitionNames"]) == DAYS
    run_of = {}
    for run in backfill["runs"]:
        tags = {t["key"]: t["value"] for t in run["tags"]}
        # failing checks on an external table block nothing: each day's run succeeds
        assert run["status"] == "SUCCESS" and tags["dagster/backfill"], run
        run_of[tags["dagster/partition"]] = run["runId"]
    assert sorted(run_of) == DAYS

    seen: dict[str, dict[str, tuple[str, str]]] = {}
    for name in sorted(PER_PARTITION):
        executions = dagit.query(EXECUTIONS, {"key": {"path": ["events"]}, "name": name})["assetCheckExecutions"]
        assert sorted(e["partition"] for e in executions) == DAYS, (name, executions)  # one per day, no more
        for execution in executions:
            day, evaluation = execution["partition"], execution["evaluation"]
            assert execution["runId"] == run_of[day] and evaluation["partition"] == day
            assert metadata_of(evaluation)["dq_contracts/partition"] == day
            seen.setdefault(day, {})[name] = (execution["status"], evaluation["severity"])
    failed = {day: {n: severity for n, (status, severity) in checks.items() if status != "SUCCEEDED"}
              for day, checks in seen.items()}
    assert failed == {GOOD_DAY: {}, THIRD_DAY: {}, BAD_DAY: {
        n: "WARN" if n == WARNING_CLAUSE else "ERROR" for n in FAILING_ON_THE_BAD_DAY}}
    assert {s for _, (s, _) in seen[BAD_DAY].items()} == {"SUCCEEDED", "FAILED"}
    assert seen[BAD_DAY]["customer_id__unique"][0] == "SUCCEEDED"  # unique within the day

    # the failing rows a person is shown are the bad day's own
    bad = next(e for e in dagit.query(EXECUTIONS, {"key": {"path": ["events"]}, "name": "amount__minimum"})[
        "assetCheckExecutions"] if e["partition"] == BAD_DAY)
    assert f"'{BAD_DAY}'" in metadata_of(bad["evaluation"])["dq_contracts/sql"]
    assert metadata_of(bad["evaluation"])["dq_contracts/samples"] == "[-3.3]"
    # the table-wide clauses are not the backfill's: they read the whole table, in runs of their own
    for name in sorted(TABLE_WIDE):
        assert dagit.query(EXECUTIONS, {"key": {"path": ["events"]}, "name": name})["assetCheckExecutions"] == []


def statuses_by_day(check: dict) -> dict[str, str]:
    """A check's partition statuses, range by range, as one status per day of DAYS."""
    out = {}
    for r in check["partitionStatuses"]["ranges"]:
        for day in DAYS:
            if r["startKey"] <= day <= r["endKey"]:
                out[day] = r["status"]
    return out


@pytest.mark.slow
def test_the_ui_shows_each_partitions_check_status(backfilled, tmp_path):
    dagit, _ = backfilled
    nodes = dagit.query(PARTITION_STATUSES, {"keys": [{"path": ["events"]}]})["assetNodes"]
    checks = {c["name"]: c for c in nodes[0]["assetChecksOrError"]["checks"]}
    # what the check's Partitions tab and its row in the checks list are drawn from
    for name in sorted(PER_PARTITION):
        assert checks[name]["partitionDefinition"] is not None
        bad = "FAILED" if name in FAILING_ON_THE_BAD_DAY else "SUCCEEDED"
        assert statuses_by_day(checks[name]) == {GOOD_DAY: "SUCCEEDED", BAD_DAY: bad, THIRD_DAY: "SUCCEEDED"}, name
    for name in sorted(TABLE_WIDE):
        assert checks[name]["partitionDefinition"] is None and checks[name]["partitionStatuses"] is None

    # the check's Partitions tab in a real Chromium, clicked as a person clicks it (the tab is kept in
    # memory, not in the URL)
    shown = {}
    for name in ("amount__minimum", "customer_id__unique"):
        browser = Browser(chromium(), [*BROWSER_FLAGS, f"--user-data-dir={tmp_path / name}"])
        try:
            browser.open(f"http://127.0.0.1:{dagit.port}/assets/events?view=checks&checkDetail={name}")
            browser.wait_for_text("Execution history", "Partitions")
            browser.click_text("Partitions", "[role=tab]")
            browser.wait_for_match(r"Missing \(\d+\)")
            counts = dict(re.findall(r"(Failed|Passed|Missing) \((\d+)\)", flat(browser.text())))
            browser.click_text(next(t for t in browser.text().splitlines() if t.startswith("Missing (")), "label")
            for day in DAYS:  # each partition's own status and result, as its detail shows them
                browser.click_text(day, "*")
                found = browser.wait_for_match(rf"{day} (Failed|Passed|Succeeded) Latest execution .*? Description "
                                               rf"(.*?) Metadata .*dq_contracts/partition {day} ")
                shown[(name, day)] = (found.group(1), found.group(2))
                if name == "amount__minimum" and day == BAD_DAY:
                    OUTPUT.mkdir(parents=True, exist_ok=True)
                    browser.screenshot(OUTPUT / "events_check_partitions.png")
        finally:
            browser.close()
        # the counts beside the status filters: three days checked, the others never
        failing = name in FAILING_ON_THE_BAD_DAY
        assert counts["Failed"] == ("1" if failing else "0") and counts["Passed"] == ("2" if failing else "3"), counts
        assert int(counts["Missing"]) > 0
    assert shown == {
        ("amount__minimum", GOOD_DAY): ("Passed", "no value below 0 in 2 rows"),
        ("amount__minimum", BAD_DAY): ("Failed", "1 row of 3 below 0 (33.3 %)"),
        ("amount__minimum", THIRD_DAY): ("Passed", "no value below 0 in 2 rows"),
        ("customer_id__unique", GOOD_DAY): ("Passed", "no duplicate value of customer_id in 2 rows"),
        ("customer_id__unique", BAD_DAY): ("Passed", "no duplicate value of customer_id in 3 rows"),
        ("customer_id__unique", THIRD_DAY): ("Passed", "no duplicate value of customer_id in 2 rows"),
    }, shown
    assert (OUTPUT / "events_check_partitions.png").stat().st_size > 10_000


def flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)
