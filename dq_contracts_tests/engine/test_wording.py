"""What a person reads of a result: one sentence in words and units for every check kind, and the
clause's own query that lists the rows at fault. Real checks on a real DuckDB file; each case is
data: the table, the contract, and the sentence one check must say."""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import sqlalchemy as sa

from dq_contracts.engine import sentences as wording
from dq_contracts.engine.contracts import Warehouses, run_contract
from dq_contracts.odcs.load import load_contracts
from dq_contracts.engine.results import CheckResult
from dq_contracts_tests.support import duckdb_with

NOW = dt.datetime(2026, 6, 1, 12, 0, tzinfo=dt.timezone.utc)


def ago(**delta: float) -> str:
    """A naive UTC timestamp this long before NOW, as SQL text."""
    return (NOW - dt.timedelta(**delta)).strftime("%Y-%m-%d %H:%M:%S")


# --- tables, in SQL ----------------------------------------------------------------------------------

ORDERS = (  # 120 orders, amounts 1..120, no NULL
    "CREATE TABLE orders (order_id INTEGER, customer_id INTEGER, amount DECIMAL(10, 2), note VARCHAR)",
    "INSERT INTO orders SELECT i AS order_id, i AS customer_id, i AS amount, 'ok' AS note FROM range(1, 121) AS r (i)",
)
ITEMS = (  # 5 items: two point at orders that do not exist, one at none
    "CREATE TABLE items (item_id INTEGER, order_id INTEGER)",
    "INSERT INTO items VALUES (1, 1), (2, 2), (3, 998), (4, 999), (5, NULL)",
)
CUSTOMERS = (  # 500 rows, customer 1 four times: 3 duplicates
    "CREATE TABLE customers (customer_id INTEGER)",
    "INSERT INTO customers SELECT CASE WHEN i <= 4 THEN 1 ELSE i END AS customer_id FROM range(1, 501) AS r (i)",
)
EVENTS = "CREATE TABLE events (event_id INTEGER, loaded_at TIMESTAMP)"


def events_loaded(at: str) -> tuple[str, ...]:
    return EVENTS, f"INSERT INTO events VALUES (1, '{ago(days=40)}'), (2, '{at}')"


# --- contracts ---------------------------------------------------------------------------------------

def orders(*properties: dict, quality: list | None = None) -> dict:
    """The orders object: order_id and amount as given, or plainly declared."""
    given = {p["name"]: p for p in properties}
    declared = [given.get(name, {"name": name, "logicalType": kind})
                for name, kind in (("order_id", "integer"), ("customer_id", "integer"), ("amount", "number"),
                                   ("note", "string"))]
    return {"name": "orders", "properties": declared, **({"quality": quality} if quality else {})}


EVENTS_OBJECT = {"name": "events", "properties": [{"name": "event_id", "logicalType": "integer"},
                                                  {"name": "loaded_at", "logicalType": "timestamp"}]}


def latency(value: float, unit: str) -> list[dict]:
    return [{"property": "latency", "value": value, "unit": unit, "element": "events.loaded_at"}]


@dataclass(frozen=True)
class Case:
    name: str
    setup: tuple[str, ...]  # SQL that builds the warehouse
    objects: list[dict]
    check: str  # the check whose sentence is read
    message: str | re.Pattern  # the sentence exactly, or a pattern it matches whole
    passed: bool
    sla: list[dict] = field(default_factory=list)


CASES = [
    Case("a minimum with 1 bad row of 120",
         (*ORDERS, "UPDATE orders SET amount = -5 WHERE order_id = 7"),
         [orders({"name": "amount", "logicalType": "number", "logicalTypeOptions": {"minimum": 0}})],
         "amount__minimum", "1 row of 120 below 0 (0.8 %)", False),
    Case("an exclusive maximum with 3 bad rows",
         ORDERS, [orders({"name": "amount", "logicalType": "number", "logicalTypeOptions": {"exclusiveMaximum": 118}})],
         "amount__exclusive_maximum", "3 rows of 120 at or above 118 (2.5 %)", False),
    Case("a required column with no NULL passes",
         ORDERS, [orders({"name": "order_id", "logicalType": "integer", "required": True})],
         "order_id__not_null", "no NULL in 120 rows", True),
    Case("a required column with NULLs",
         (*ORDERS, "UPDATE orders SET order_id = NULL WHERE order_id IN (3, 4)"),
         [orders({"name": "order_id", "logicalType": "integer", "required": True})],
         "order_id__not_null", "2 NULLs in 120 rows (1.7 %)", False),
    Case("NULLs as a percent under the threshold say count and percent",
         (*ORDERS, "UPDATE orders SET note = NULL WHERE order_id <= 3"),
         [orders({"name": "note", "logicalType": "string", "quality": [
             {"metric": "nullValues", "mustBeLessThan": 5, "unit": "percent"}]})],
         "note__null_values", "3 NULLs in 120 rows (2.5 %); the contract wants less than 5 %", True),
    Case("NULLs as a percent over the threshold",
         (*ORDERS, "UPDATE orders SET note = NULL WHERE order_id <= 12"),
         [orders({"name": "note", "logicalType": "string", "quality": [
             {"metric": "nullValues", "mustBeLessThan": 5, "unit": "percent"}]})],
         "note__null_values", "12 NULLs in 120 rows (10 %); the contract wants less than 5 %", False),
    Case("duplicates of a unique column",
         CUSTOMERS, [{"name": "customers", "properties": [
             {"name": "customer_id", "logicalType": "integer", "unique": True}]}],
         "customer_id__unique", "3 duplicate values of customer_id in 500 rows (0.6 %)", False),
    Case("a compound primary key with a repeated and a NULL key",
         ("CREATE TABLE lines (order_id INTEGER, line INTEGER)",
          "INSERT INTO lines VALUES (1, 1), (1, 2), (1, 2), (2, NULL)"),
         [{"name": "lines", "properties": [
             {"name": "order_id", "logicalType": "integer", "primaryKey": True, "primaryKeyPosition": 1},
             {"name": "line", "logicalType": "integer", "primaryKey": True, "primaryKeyPosition": 2}]}],
         "primary_key", "2 duplicate or NULL keys of order_id, line in 4 rows (50 %)", False),
    Case("a pattern broken by one value",
         (*ORDERS, "UPDATE orders SET note = 'NOT OK' WHERE order_id = 9"),
         [orders({"name": "note", "logicalType": "string", "logicalTypeOptions": {"pattern": "^[a-z]+$"}})],
         "note__pattern", "1 row of 120 not matching ^[a-z]+$ (0.8 %)", False),
    Case("a pattern kept",
         ORDERS, [orders({"name": "note", "logicalType": "string", "logicalTypeOptions": {"pattern": "^[a-z]+$"}})],
         "note__pattern", "every value matching ^[a-z]+$ in 120 rows", True),
    Case("freshness: minutes old, days allowed",
         events_loaded(ago(minutes=30)), [EVENTS_OBJECT],
         "loaded_at__freshness", "newest row 30 min old; the contract allows 2 d", True, latency(2, "d")),
    Case("freshness: hours old, an hour allowed",
         events_loaded(ago(hours=5)), [EVENTS_OBJECT],
         "loaded_at__freshness", "newest row 5 h old; the contract allows 1 h", False, latency(1, "h")),
    Case("freshness: days old, a day and a half allowed",
         events_loaded(ago(days=3)), [EVENTS_OBJECT],
         "loaded_at__freshness", "newest row 3 d old; the contract allows 1.5 d", False, latency(36, "h")),
    Case("freshness: seconds old, minutes allowed",
         events_loaded(ago(seconds=45)), [EVENTS_OBJECT],
         "loaded_at__freshness", "newest row 45 s old; the contract allows 1.5 h", True, latency(90, "min")),
    Case("freshness of a classified column says no age",
         events_loaded(ago(minutes=30)),
         [{"name": "events", "properties": [{"name": "event_id", "logicalType": "integer"},
                                            {"name": "loaded_at", "logicalType": "timestamp",
                                             "classification": "restricted"}]}],
         "loaded_at__freshness",
         "the newest value's age is withheld (the column is classified); it is within the 2 d the contract allows",
         True, latency(2, "d")),
    Case("a row count met",
         ORDERS, [orders(quality=[{"metric": "rowCount", "mustBeGreaterThan": 0}])],
         "row_count", "120 rows; the contract wants more than 0", True),
    Case("a row count missed",
         ("CREATE TABLE orders (order_id INTEGER, customer_id INTEGER, amount DECIMAL(10, 2), note VARCHAR)",),
         [orders(quality=[{"metric": "rowCount", "mustBeGreaterThan": 0}])],
         "row_count", "0 rows; the contract wants more than 0", False),
    Case("items pointing at orders that do not exist",
         (*ORDERS, *ITEMS),
         [orders(), {"name": "items", "properties": [
             {"name": "item_id", "logicalType": "integer"},
             {"name": "order_id", "logicalType": "integer", "relationships": [{"to": "orders.order_id"}]}]}],
         "order_id__references_orders", "2 rows of 5 pointing at no orders.order_id (40 %)", False),
    Case("a SQL rule",
         ORDERS, [orders(quality=[{"type": "sql", "name": "big_orders",
                                   "query": "SELECT COUNT(*) FROM {object} WHERE amount > 116", "mustBe": 0}])],
         "big_orders", "SQL rule returned 4; the contract wants = 0", False),
    Case("a SQL rule that could return a classified value is refused",
         ORDERS, [orders({"name": "amount", "logicalType": "number", "classification": "confidential"},
                         quality=[{"type": "sql", "name": "top_amount",
                                   "query": "SELECT MAX(amount) FROM {object}", "mustBe": 0}])],
         "top_amount",
         re.compile(r"not run: SQL rule refused: the query reads the classified column 'amount' in a form that "
                    r"could return or encode its values.+"),
         False),
    Case("a refused SQL rule is not run",
         ORDERS, [orders(quality=[{"type": "sql", "name": "wipe", "query": "DELETE FROM {object}", "mustBe": 0}])],
         "wipe", re.compile(r"not run: SQL rule refused: .+"), False),
    Case("schema differences, each named",
         ("CREATE TABLE t (a INTEGER, extra INTEGER)", "INSERT INTO t VALUES (1, 2)"),
         [{"name": "t", "properties": [{"name": "a", "logicalType": "string", "physicalType": "VARCHAR"},
                                       {"name": "c", "logicalType": "string"}]}],
         "schema", "2 columns differ from the contract: missing c; a: declared VARCHAR, found INTEGER "
                   "(1 undeclared column: extra)", False),
    Case("a schema as declared",
         ORDERS, [orders()], "schema", "all 4 declared columns present, of the declared types", True),
    Case("a missing table cannot be evaluated",
         ("CREATE TABLE other (a INTEGER)",),
         [orders({"name": "amount", "logicalType": "number", "logicalTypeOptions": {"minimum": 0}})],
         "amount__minimum", re.compile(r"could not be evaluated: .*orders.* does not exist.*"), False),
]


def run(tmp_path: Path, setup: tuple[str, ...], objects: list[dict], sla: list[dict] | None = None,
        only: str | None = None) -> dict[str, CheckResult]:
    """Every check of the contract (or the one named `only`) on a DuckDB file built by `setup`, at NOW."""
    duckdb_with(tmp_path / "wh.duckdb", *setup)
    doc = {"apiVersion": "v3.2.0", "kind": "DataContract", "id": "w", "version": "1.0.0", "status": "active",
           "servers": [{"server": "local", "type": "duckdb", "database": "wh.duckdb"}], "schema": objects}
    if sla:
        doc["slaProperties"] = sla
    path = tmp_path / "w.odcs.json"
    path.write_text(json.dumps(doc))
    loaded = load_contracts([path])
    assert loaded.plans, [p.render() for p in loaded.problems]
    selected = {o.name: [only] for o in loaded.plans[0].objects} if only else None
    with Warehouses({}) as warehouses:
        return {r.name: r for r in run_contract(loaded.plans[0], warehouses, now=NOW, selected=selected)}


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_result_reads_as_a_sentence(case, tmp_path):
    results = run(tmp_path, case.setup, case.objects, case.sla)
    got = results[case.check]
    assert got.passed is case.passed, (got.message, got.error)
    if isinstance(case.message, re.Pattern):
        assert case.message.fullmatch(got.message), got.message
    else:
        assert got.message == case.message
    assert got.to_json()["message"] == got.message
    assert all(r.message for r in results.values())  # every result says something
    # alone, as in an op of its own (a relationship's), the check says the same
    (tmp_path / "alone").mkdir()
    alone = run(tmp_path / "alone", case.setup, case.objects, case.sla, only=case.check)
    assert (alone[case.check].passed, alone[case.check].message) == (got.passed, got.message)


@pytest.mark.parametrize("seconds, text", [
    (0, "0 s"), (45, "45 s"), (59.4, "59 s"), (9.96, "10 s"), (60, "1 min"), (1806.5, "30 min"), (5400, "1.5 h"),
    (36000, "10 h"), (172800, "2 d"), (31 * 86400 + 43200, "32 d"),
])
def test_durations_read_in_human_units(seconds, text):
    assert wording.duration(seconds) == text


@pytest.mark.parametrize("samples, text", [
    ([9999], "9999"), ([9999, 10000], "9999, 10000"), ([-3.3, 2.5], "-3.3, 2.5"), (["vip", None], "'vip', NULL"),
    ([[7, "x"], [8, None]], "(7, 'x'), (8, NULL)"), (["it's, here"], '"it\'s, here"'), ([True], "True"),
])
def test_samples_read_on_one_line(samples, text):
    """The samples' text metadata, which Dagster shows inline beside the JSON behind a click."""
    assert wording.samples_text(samples) == text


# --- the clause's own query ------------------------------------------------------------------------

def rows_of(database: Path, sql: str) -> list[tuple]:
    engine = sa.create_engine(f"duckdb:///{database}", connect_args={"read_only": True})
    try:
        with engine.connect() as c:
            return [tuple(r) for r in c.exec_driver_sql(sql).fetchall()]
    finally:
        engine.dispose()


def test_the_failing_rows_query_of_a_range_returns_exactly_the_offending_rows(tmp_path):
    setup = (*ORDERS,
             "UPDATE orders SET amount = -5 WHERE order_id = 7",
             "UPDATE orders SET amount = -0.01 WHERE order_id = 19",
             "UPDATE orders SET amount = 0 WHERE order_id = 20",  # the bound itself is allowed
             "UPDATE orders SET amount = NULL WHERE order_id = 21",  # and so is NULL
             "UPDATE orders SET amount = -100 WHERE order_id = 88")
    contract = [orders({"name": "order_id", "logicalType": "integer", "primaryKey": True},
                       {"name": "amount", "logicalType": "number", "logicalTypeOptions": {"minimum": 0}})]
    result = run(tmp_path, setup, contract)["amount__minimum"]
    assert result.observed == 3 and result.message == "3 rows of 120 below 0 (2.5 %)"
    got = rows_of(tmp_path / "wh.duckdb", result.sql)
    assert sorted((order_id, float(amount)) for order_id, amount in got) == [(7, -5.0), (19, -0.01), (88, -100.0)]
    # the one scan that measured it is kept apart, for a debug log
    assert " AS m0" in result.aggregate_sql and " AS m0" not in result.sql
    assert "aggregate_sql" not in result.to_json() and result.to_json()["sql"] == result.sql  # once per object


BAD_ORDERS = (
    *ORDERS, *ITEMS,
    "UPDATE orders SET amount = -1 WHERE order_id IN (1, 2)",
    "UPDATE orders SET note = 'toolongnote' WHERE order_id IN (3, 4, 5)",
    "UPDATE orders SET note = NULL WHERE order_id = 6",
    "UPDATE orders SET customer_id = 8 WHERE order_id IN (9, 10)",
    "UPDATE orders SET order_id = 12 WHERE order_id = 11",
    "UPDATE orders SET order_id = NULL WHERE order_id = 13",
    "UPDATE orders SET amount = 7.5 WHERE order_id = 14",
)
BAD_CONTRACT = [
    orders({"name": "order_id", "logicalType": "integer", "primaryKey": True},
           {"name": "customer_id", "logicalType": "integer", "unique": True},
           {"name": "amount", "logicalType": "number",
            "logicalTypeOptions": {"minimum": 0, "maximum": 119, "multipleOf": 1}},
           {"name": "note", "logicalType": "string", "required": True, "enum": [{"value": "ok"}],
            "logicalTypeOptions": {"maxLength": 4, "pattern": "^o"},
            "quality": [{"metric": "missingValues", "arguments": {"missingValues": [None, "toolongnote"]},
                         "mustBe": 0},
                        {"metric": "invalidValues", "arguments": {"validValues": ["ok"]}, "mustBe": 0}]}),
    {"name": "items", "properties": [
        {"name": "item_id", "logicalType": "integer"},
        {"name": "order_id", "logicalType": "integer", "relationships": [{"to": "orders.order_id"}]}]},
]
ROW_LEVEL = {"range", "length", "pattern", "accepted_values", "missing_values", "invalid_values", "multiple_of",
             "not_null", "null_values", "relationship"}
KEYED = {"unique", "primary_key", "duplicate_values"}


def test_every_failing_rows_query_lists_what_its_check_counted(tmp_path):
    results = run(tmp_path, BAD_ORDERS, BAD_CONTRACT)
    listed = {r.kind for r in results.values() if r.kind in ROW_LEVEL | KEYED}
    assert listed == ROW_LEVEL - {"null_values"} | {"unique", "primary_key"}, listed
    for name, result in results.items():
        if result.kind not in ROW_LEVEL | KEYED:
            continue
        assert not result.passed and result.error is None and result.observed > 0, (name, result.message)
        got = rows_of(tmp_path / "wh.duckdb", result.sql)
        if result.kind in ROW_LEVEL:  # one line per offending row
            assert len(got) == result.observed, (name, result.sql, got)
        else:  # one line per key held more than once (its last column: how many rows), or with a NULL part
            extra = sum(n - 1 if None not in key else n for *key, n in got)
            assert extra == result.observed, (name, result.sql, got)


@pytest.mark.parametrize("kind, query", [
    # tables are named with their schema (DuckDB's `main` when the server names none)
    ("freshness", re.compile(r'SELECT max\("main"\."events"\."loaded_at"\) AS newest\s+FROM "main"\."events"')),
    ("row_count", re.compile(r'SELECT count\(\*\) AS rows\s+FROM "main"\."events"')),
    ("sql", re.compile(r'SELECT COUNT\(\*\) FROM "main"\."events" WHERE event_id > 1')),
    ("schema", None),
])
def test_a_clause_without_rows_to_list_shows_the_value_it_judges(tmp_path, kind, query):
    rule = {"type": "sql", "query": "SELECT COUNT(*) FROM {object} WHERE event_id > 1", "mustBe": 0}
    objects = [{**EVENTS_OBJECT, "quality": [{"metric": "rowCount", "mustBeGreaterThan": 0}, rule]}]
    results = run(tmp_path, events_loaded(ago(hours=1)), objects, latency(2, "d"))
    result = next(r for r in results.values() if r.kind == kind)
    if query is None:
        assert result.sql is None
    else:
        assert query.fullmatch(result.sql.strip()), result.sql
        assert len(rows_of(tmp_path / "wh.duckdb", result.sql)) == 1


# --- never a value of the data -----------------------------------------------------------------------

PLANTED = "zz-planted-4417"


def test_no_sentence_shows_a_value_of_the_data(tmp_path):
    setup = (*BAD_ORDERS, f"UPDATE orders SET note = '{PLANTED}' WHERE order_id = 30",
             "UPDATE orders SET amount = -987654 WHERE order_id = 31")
    results = run(tmp_path, setup, BAD_CONTRACT)
    samples = json.dumps([r.samples for r in results.values()])
    assert PLANTED in samples and "-987654" in samples  # the values are there to be shown, in samples only
    for result in results.values():
        assert PLANTED not in result.message and "987654" not in result.message, result.message


def test_a_result_built_without_its_plan_still_says_what_went_wrong(tmp_path):
    doc = {"apiVersion": "v3.2.0", "kind": "DataContract", "id": "w", "version": "1.0.0", "status": "active",
           "servers": [{"server": "local", "type": "duckdb", "database": "absent.duckdb"}],
           "schema": [orders({"name": "amount", "logicalType": "number", "logicalTypeOptions": {"minimum": 0}})]}
    path = tmp_path / "w.odcs.json"
    path.write_text(json.dumps(doc))
    with Warehouses({}) as warehouses:
        results = run_contract(load_contracts([path]).plans[0], warehouses, now=NOW)
    assert results and all(not r.passed and r.error for r in results)
    assert all(r.message == f"could not be evaluated: {r.error}" for r in results)


def test_the_closed_sets_are_their_strings_and_refuse_any_other():
    """Severity, status, reason and a problem's severity and reach are StrEnums: compared and
    written as the strings they always were, and a spelling outside the set is refused."""
    from dq_contracts.engine.results import Status, status_of
    from dq_contracts.odcs.clauses.vocabulary import Reason
    from dq_contracts.odcs.plans import Severity
    from dq_contracts.odcs.problems import Problem, Reach

    assert json.dumps([Severity.ERROR, Status.FAIL, Reason.PROSE, Reach.CLAUSE]) == '["ERROR", "fail", "prose", "clause"]'
    assert f"{Status.WARN:<5}|" == "warn |" and Severity.WARN == "WARN"
    assert [status_of(False, s, e) for s, e in (("ERROR", False), ("WARN", False), ("WARN", True))] == [
        Status.FAIL, Status.WARN, Status.ERROR]
    assert Problem("f", "m", severity="warning", reach="clause").to_json()["scope"] == "clause"
    for refused in (lambda: Problem("f", "m", severity="fatal"), lambda: Problem("f", "m", reach="file"),
                    lambda: Reason("no_such_reason")):
        with pytest.raises(ValueError):
            refused()
