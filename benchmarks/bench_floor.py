"""The hand-written floors of bench_engine.py, and one floor run as a whole process of its own.

Two floors, each the SQL an expert writes by hand for the orders contract's count-style clauses:

* `floor` (the strongest): one aggregate of every measure with no COUNT(DISTINCT …), and one
  `GROUP BY` per key column for its repeated rows (on PostgreSQL `… HAVING count(*) > 1`, the
  repeated keys themselves), the compound-key `GROUP BY` and one catalog query;
* `floor_distinct` (the floor before): the same aggregate holding `count(col) - count(DISTINCT col)`
  for both key columns, the compound-key query and the catalog query.

    python benchmarks/bench_floor.py '{"engine": "duckdb", "floor": "floor", "path": "orders.duckdb"}'
    python benchmarks/bench_floor.py '{"engine": "postgres", "floor": "floor", "dsn": "host=… dbname=…",
                                       "schema": "orders_1000000_failing"}'

As a process it imports only its driver (duckdb or psycopg2), connects, sends the statements, prints
the measures as JSON and exits: what a person's script costs, start-up included, to compare with a
whole `dq-contracts check` run (bench_engine.py --whole).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the contract's patterns
from dq_contracts_tests.orders_contract import CURRENCY_PATTERN, EMAIL_PATTERN, STATUSES  # noqa: E402

# The regex operator is each engine's own
REGEX = {"duckdb": "regexp_matches({column}, '{pattern}')", "postgres": "{column} ~ '{pattern}'",
         "delta": "regexp_matches({column}, '{pattern}')", "spark": "{column} RLIKE '{pattern}'"}
# Spark's regex is Java's (no POSIX bracket class: \s for [:space:]), and its string literal reads
# backslash escapes, so each backslash is written twice
SPARK_PATTERN = {"[:space:]": r"\\s", "\\": r"\\"}
KEYS = ("order_id", "order_number")  # the single key columns: primaryKey and unique


def floor_aggregate(engine: str, table: str, distinct: bool = True) -> str:
    """Every count-style measure in one scan; `status NOT IN` once though the contract states it
    twice (enum and invalidValues). With `distinct`, the key columns' duplicates too, as
    count(col) - count(DISTINCT col)."""
    def matches(column: str, pattern: str) -> str:
        if engine == "spark":
            pattern = re.sub("|".join(map(re.escape, SPARK_PATTERN)), lambda m: SPARK_PATTERN[m.group(0)], pattern)
        return REGEX[engine].format(column=column, pattern=pattern)
    dups = "".join(f"\n  count({k}) - count(DISTINCT {k}) AS {k}_dups," for k in KEYS) if distinct else ""
    return f"""
SELECT
  count(*)                                                         AS rows,
  count(*) - count(order_id)                                       AS order_id_nulls,{dups}
  count(*) - count(customer_id)                                    AS customer_id_nulls,
  count(*) FILTER (WHERE customer_id < 1)                          AS customer_id_below,
  count(*) FILTER (WHERE status NOT IN ({", ".join(f"'{s}'" for s in STATUSES)})) AS status_bad,
  count(*) - count(order_total)                                    AS order_total_nulls,
  count(*) FILTER (WHERE order_total < 0)                          AS order_total_below,
  count(*) FILTER (WHERE order_total > 100000)                     AS order_total_above,
  count(*) FILTER (WHERE length(currency) < 3)                     AS currency_short,
  count(*) FILTER (WHERE length(currency) > 3)                     AS currency_long,
  count(*) FILTER (WHERE NOT {matches('currency', CURRENCY_PATTERN)}) AS currency_pattern,
  count(*) FILTER (WHERE NOT {matches('email', EMAIL_PATTERN)})       AS email_format,
  count(*) FILTER (WHERE discount_code IS NULL OR discount_code IN ('', 'N/A')) AS discount_missing,
  count(*) - count(created_at)                                     AS created_at_nulls,
  max(created_at)                                                  AS newest
FROM {table}
"""


def floor_key(engine: str, table: str, column: str) -> str:
    """A key column's repeated rows beyond the first. Measured on the failing table (DuckDB 1.5, 2
    cores, the aggregate plus both key columns): at 5M rows the plain aggregate with one `GROUP BY`
    per key column took 1.28-2.0 s, with one `count(col) - count(DISTINCT col)` statement per column
    1.26-2.6 s, with `GROUP BY … HAVING count(*) > 1` 2.0-2.7 s, both distinct counts in one
    statement 1.7-3.0 s and in the aggregate (floor_distinct) 2.2-3.2 s: on DuckDB the plain GROUP BY
    is kept. PostgreSQL's `GROUP BY … HAVING` runs with parallel workers, which no aggregate holding
    COUNT(DISTINCT …) gets, and its rows are the repeated keys themselves."""
    if engine == "postgres":
        return (f"SELECT coalesce(sum(n - 1), 0) FROM (SELECT {column}, count(*) AS n FROM {table} "
                f"WHERE {column} IS NOT NULL GROUP BY {column} HAVING count(*) > 1) AS dup")
    return (f"SELECT coalesce(sum(n - 1) FILTER (WHERE k IS NOT NULL), 0) FROM "
            f"(SELECT {column} AS k, count(*) AS n FROM {table} GROUP BY {column}) AS g")


def floor_compound(table: str) -> str:
    return f"""
SELECT coalesce(sum(n - 1), 0) FROM (
  SELECT customer_id, created_at, count(*) AS n FROM {table}
  WHERE customer_id IS NOT NULL AND created_at IS NOT NULL
  GROUP BY customer_id, created_at HAVING count(*) > 1) AS dup
"""


def floor_catalog(schema: str, engine: str = "duckdb") -> str:
    if engine == "spark":  # Spark's session catalog has no information_schema
        return f"DESCRIBE TABLE `{schema}`.orders"
    return ("SELECT column_name, data_type FROM information_schema.columns "
            f"WHERE table_schema = '{schema}' AND table_name = 'orders'")


FLOORS = ("floor", "floor_distinct")


def floor_statements(floor: str, engine: str, table: str, schema: str) -> list[tuple[str, str]]:
    """(what it measures, SQL) of one floor, in the order sent; "aggregate" is a row of measures."""
    if floor == "floor_distinct":
        return [("aggregate", floor_aggregate(engine, table)), ("compound", floor_compound(table)),
                ("catalog", floor_catalog(schema, engine))]
    return [("aggregate", floor_aggregate(engine, table, distinct=False)),
            *((f"{k}_dups", floor_key(engine, table, k)) for k in KEYS),
            ("compound", floor_compound(table)), ("catalog", floor_catalog(schema, engine))]


def collect(statements: list[tuple[str, str]], query) -> tuple[dict, int]:
    """The aggregate's measures with the key columns' duplicates among them, and the compound count;
    `query(sql)` returns (column names, rows)."""
    measures, compound = {}, 0
    for what, sql in statements:
        names, rows = query(sql)
        if what == "aggregate":
            measures.update(zip(names, rows[0]))
        elif what == "compound":
            compound = int(rows[0][0])
        elif what != "catalog":
            measures[what] = int(rows[0][0])
    return measures, compound


def main(spec: dict) -> None:
    """One floor as a whole process: connect, send, print."""
    engine = spec["engine"]
    if engine == "duckdb":
        import duckdb

        db = duckdb.connect(spec["path"], read_only=True)
        schema, table = "main", '"main".orders'
    else:
        import psycopg2

        db = psycopg2.connect(spec["dsn"])
        db.autocommit = True
        schema = spec["schema"]
        table = f'"{schema}".orders'

    def query(sql: str) -> tuple[list[str], list[tuple]]:
        cursor = db.cursor()
        cursor.execute(sql)
        rows = cursor.fetchall()
        return [d[0] for d in cursor.description], rows

    measures, compound = collect(floor_statements(spec["floor"], engine, table, schema), query)
    db.close()
    print(json.dumps({**measures, "compound": compound}, default=str))


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
