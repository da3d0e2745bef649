"""The partitioned table of the partition tests: its contract, rows, and which clauses read one partition."""

from __future__ import annotations

import sqlalchemy as sa
import copy


DECLARED = {"property": "dagsterPartitions", "value": {"type": "daily", "start": "2026-06-01"}}


CONTRACT = {
    "apiVersion": "v3.2.0", "kind": "DataContract", "id": "urn:events", "version": "1.0.0", "status": "active",
    "schema": [
        {"name": "events", "customProperties": [DECLARED], "properties": [
            {"name": "id", "logicalType": "integer", "primaryKey": True},
            {"name": "code", "logicalType": "string", "required": True,
             "logicalTypeOptions": {"minLength": 2, "maxLength": 3, "pattern": "^[A-Z]+$"},
             "quality": [{"metric": "nullValues", "mustBe": 0}]},
            {"name": "amount", "logicalType": "number", "logicalTypeOptions": {"minimum": 0, "multipleOf": 0.5}},
            {"name": "customer_id", "logicalType": "integer", "unique": True,
             "relationships": [{"to": "customers.id"}]},
            {"name": "status", "logicalType": "string", "enum": [{"value": "a"}, {"value": "b"}],
             "quality": [{"metric": "missingValues", "arguments": {"missingValues": ["n/a"]}, "mustBe": 0},
                         {"metric": "invalidValues", "arguments": {"validValues": ["a", "b"]}, "mustBe": 0}]},
            {"name": "day", "logicalType": "date", "partitioned": True, "partitionKeyPosition": 1},
            {"name": "ts", "logicalType": "timestamp"},
        ], "quality": [
            {"metric": "rowCount", "mustBeLessOrEqualTo": 2},
            {"metric": "duplicateValues", "arguments": {"properties": ["id", "day"]}, "mustBe": 0},
            {"type": "sql", "name": "negative_amounts", "mustBe": 0,
             "query": "SELECT COUNT(*) FROM {object} WHERE amount < 0 AND {partition}"},
            {"type": "sql", "name": "has_rows", "mustBeGreaterThan": 0, "query": "SELECT COUNT(*) FROM {object}"},
        ]},
        {"name": "customers", "properties": [{"name": "id", "logicalType": "integer"}]},
    ],
    "slaProperties": [{"property": "latency", "value": 1, "unit": "d", "element": "events.ts"}],
}


GOOD_DAY, BAD_DAY = "2026-06-01", "2026-06-02"


ROWS = [  # id, code, amount, customer_id, status, day, ts
    (1, "AB", 5.0, 1, "a", GOOD_DAY, "2026-06-01 10:00:00"),
    (2, "CD", 7.5, 2, "b", GOOD_DAY, "2026-06-01 11:00:00"),
    # the bad day breaks every clause judged per partition, and repeats no customer_id of its own
    (1, "x", -3.3, 9, "z", BAD_DAY, "2026-06-02 10:00:00"),
    (1, None, 4.0, 1, "n/a", BAD_DAY, "2026-06-02 11:00:00"),
    (3, "TOOLONG", 1.0, 2, "a", BAD_DAY, "2026-06-02 12:00:00"),
]


DDL = ["CREATE TABLE customers (id INTEGER)", "INSERT INTO customers VALUES (1), (2)",
       "CREATE TABLE events (id INTEGER, code VARCHAR(16), amount DECIMAL(10,2), customer_id INTEGER, "
       "status VARCHAR(8), day DATE, ts TIMESTAMP)"]


# The semantics, one row per clause kind: its reach on a partitioned object, and whether it passes
# on the good partition, on the bad one, and on the whole table (no partition).
SEMANTICS = [
    ("schema", "table", True, True, True),  # one catalog for the whole table
    ("code__not_null", "partition", True, False, False),
    ("code__null_values", "partition", True, False, False),
    ("code__min_length", "partition", True, False, False),
    ("code__max_length", "partition", True, False, False),
    ("code__pattern", "partition", True, False, False),
    ("amount__minimum", "partition", True, False, False),
    ("amount__multiple_of", "partition", True, False, False),
    ("status__accepted_values", "partition", True, False, False),
    ("status__missing_values", "partition", True, False, False),
    ("status__invalid_values", "partition", True, False, False),
    # unique within the partition: customer_id 1 and 2 are in both days, never twice in one
    ("customer_id__unique", "partition", True, True, False),
    ("id__primary_key", "partition", True, False, False),
    ("id__day__duplicate_values", "partition", True, False, False),
    ("row_count", "partition", True, False, False),  # at most 2 rows per partition; the table has 5
    ("customer_id__references_customers", "partition", True, False, False),
    ("negative_amounts", "partition", True, False, False),  # its query says {partition}
    ("has_rows", "table", True, True, True),  # no {partition}: the whole table, and the plan says so
    ("ts__freshness", "table", True, True, True),  # of the newest row anywhere: 06-01 alone would be 2 days old
]


def fill(engine: sa.Engine) -> sa.Engine:
    with engine.begin() as c:
        for statement in DDL:
            c.exec_driver_sql(statement)
        for row in ROWS:
            c.execute(sa.text("INSERT INTO events VALUES (:a, :b, :c, :d, :e, CAST(:f AS DATE), CAST(:g AS TIMESTAMP))"),
                      dict(zip("abcdefg", row)))
    return engine


PER_PARTITION = {name for name, reach, *_ in SEMANTICS if reach == "partition"}


TABLE_WIDE = {name for name, reach, *_ in SEMANTICS if reach == "table"} - {"ts__freshness"}


FAILING_ON_THE_BAD_DAY = PER_PARTITION - {"customer_id__unique"}


def contract(server: dict, *, declared: bool = True) -> dict:
    document = copy.deepcopy(CONTRACT)
    document["servers"] = [server]
    document["slaProperties"] = []  # the clock of the run is today's, and the rows are of June 2026
    if not declared:  # only ODCS's `partitioned: true`: the user's asset brings the partitions
        document["schema"][0]["customProperties"] = []
    return document


