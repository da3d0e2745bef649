"""A SQL rule is judged as a syntax tree and runs from that tree (DESIGN: Trust boundary, rule 2).

Each attack is one row: a query a contract could hold, and a word of the reason it is refused. Every
row goes the real path (a contract file loaded and compiled, then run on DuckDB and on PostgreSQL):
it is refused when compiled (`validate` reports it), and refused again where it would run, so even
a plan whose refusal was lost runs nothing. Accepted rules run and pass or fail as their data says.
"""

from __future__ import annotations

import dataclasses
import json

import pytest
import sqlalchemy as sa
import yaml

from dq_contracts.odcs.load import load_contracts
from dq_contracts.odcs.partitions import partition_for
from dq_contracts.engine.runner import run_object

PLANTED = "918273645"  # the classified value: no result, error or SQL shown may hold it

NESTED_REPLACE = "replace(" * 8 + "'x'" + ", 'x', 'xxxxxxxxxx')" * 8  # 1e8 characters from one

ATTACKS = [
    # (id, query, words of the reason: one of them, `|` between, where dialects word it differently)
    # functions in attribute notation, and rows used as values
    ("attr row_to_json", "SELECT COUNT(*) FROM {object} t WHERE t.row_to_json IS NOT NULL", "not a declared column"),
    ("attr (t).row_to_json", "SELECT COUNT(*) FROM {object} t WHERE (t).row_to_json IS NOT NULL", "DOT"),
    ("attr pg_read_file", "SELECT COUNT(*) FROM {object} t WHERE t.pg_read_file = ''", "not a declared column"),
    ("attr through a subquery", "SELECT COUNT(*) FROM (SELECT 1 AS row_to_json) a, (SELECT id FROM {object}) s "
     "WHERE s.row_to_json IS NOT NULL", "not a declared column"),
    ("whole row to_json", "SELECT LENGTH(CAST(to_json(t) AS TEXT)) FROM {object} t", "to_json|as a value"),
    ("whole row cast", "SELECT MAX(LENGTH(t::text)) FROM {object} t", "as a value"),
    ("whole row count", "SELECT COUNT(t) FROM {object} t", "as a value"),
    ("whole row ROW(t.*)", "SELECT COUNT(*) FROM {object} t WHERE ROW(t.*) IS NOT NULL", "row()|whole rows"),
    ("whole row t.*", "SELECT COUNT(*) FROM (SELECT t.* FROM {object} t) s", "whole rows"),
    ("select star", "SELECT * FROM {object} LIMIT 1", "whole rows"),
    # tables other than the contract's own objects
    ("pg_authid", "SELECT COUNT(*) FROM pg_catalog.pg_authid", "not an object of this contract"),
    ("information_schema", "SELECT COUNT(*) FROM information_schema.tables", "not an object of this contract"),
    ("other schema", "SELECT COUNT(*) FROM other_schema.t", "not an object of this contract"),
    ("another contract's table", "SELECT COUNT(*) FROM stranger", "not an object of this contract"),
    ("own table in another schema", "SELECT COUNT(*) FROM other_schema.orders", "not an object of this contract"),
    ("duckdb_settings()", "SELECT COUNT(*) FROM duckdb_settings()", "duckdb_settings"),
    ("read_csv", "SELECT COUNT(*) FROM read_csv('x.csv')", "read_csv"),
    ("file name", "SELECT COUNT(*) FROM 'x.csv'", "not an object of this contract"),
    ("table function", "SELECT COUNT(*) FROM {object}, json_each('[1]')", "json_each"),
    ("scalar subquery elsewhere", "SELECT (SELECT COUNT(*) FROM stranger)", "not an object of this contract"),
    # casts to types whose input runs a lookup
    ("regclass", "SELECT CAST(CAST('orders' AS regclass) AS INTEGER)", "regclass"),
    ("regproc", "SELECT COUNT(*) FROM {object} WHERE 'pg_read_file'::regproc IS NOT NULL", "regproc"),
    ("xml", "SELECT COUNT(*) FROM {object} WHERE CAST('<a/>' AS xml) IS NOT NULL", "XML"),
    # operators that call functions
    ("text search @@", "SELECT COUNT(*) FROM {object} WHERE region @@ 'eu'", "match_against|does not parse"),
    ("custom operator", "SELECT COUNT(*) FROM {object} WHERE amount OPERATOR(pg_catalog.+) 1 > 0", "OPERATOR"),
    # placeholders hiding in comments and literals
    ("placeholder in a line comment", "SELECT COUNT(*) FROM {object} -- {object}", "comment"),
    ("placeholder in a block comment", "SELECT COUNT(*) FROM {object} /* {property} */", "comment"),
    ("placeholder in a literal", "SELECT COUNT(*) FROM {object} WHERE region = '{object}'", "string"),
    ("placeholder inside a literal", "SELECT COUNT(*) FROM {object} WHERE region = 'x{property}y'", "string"),
    ("placeholder in a dollar quote", "SELECT COUNT(*) FROM {object} WHERE region = $${object}$$",
     "string|does not parse"),
    ("placeholder in a quoted name", 'SELECT COUNT(*) FROM "{object}"', "quoted name"),
    ("the reserved prefix", "SELECT COUNT(*) FROM {object} WHERE region = 'dq_placeholder_x'", "reserved"),
    # encodings of a classified column's values
    ("classified generate_series", "SELECT COUNT(*) FROM {object}, generate_series(1, ascii(ssn))",
     "classified column"),
    ("classified sum(length)", "SELECT SUM(LENGTH(ssn)) FROM {object}", "classified column"),
    ("classified max", "SELECT MAX(ssn) FROM {object}", "classified column"),
    ("classified like", "SELECT COUNT(*) FROM {object} WHERE ssn LIKE '9%'", "classified column"),
    ("classified group by", "SELECT COUNT(*) FROM {object} GROUP BY ssn", "classified column"),
    ("classified order by", "SELECT COUNT(*) FROM (SELECT id FROM {object} ORDER BY ssn LIMIT 1) s",
     "classified column"),
    ("classified case", "SELECT SUM(CASE WHEN ssn > '5' THEN 1 ELSE 0 END) FROM {object}", "classified column"),
    ("classified join key", "SELECT COUNT(*) FROM {object} o JOIN customers c ON c.name = o.ssn",
     "classified column"),
    ("classified through an alias", "SELECT MAX(x) FROM (SELECT ssn AS x FROM {object}) s", "classified column"),
    ("classified in a window", "SELECT COUNT(*) FROM (SELECT ROW_NUMBER() OVER (ORDER BY ssn) AS n FROM {object}) s",
     "classified column"),
    # names resolved by scope, as the database does (the second review's attacks)
    ("a column list renames the classified column", "SELECT MAX(LENGTH(a)) FROM {object} AS p(a, b, c)",
     "renames a table's columns"),
    ("USING joins on the classified column", "SELECT COUNT(*) FROM {object} JOIN customers c USING (ssn)",
     "classified column|not a declared column"),
    ("NATURAL JOIN on the classified column", "SELECT COUNT(*) FROM {object} NATURAL JOIN (SELECT '9' AS ssn) g",
     "classified column"),
    ("a CTE out of its scope", "SELECT (SELECT COUNT(*) FROM pg_roles) FROM (WITH pg_roles AS (SELECT 1 AS x) "
     "SELECT 1 AS one) d", "no CTE of that name is visible"),
    ("a CTE named like a table", "WITH customers AS (SELECT 1 AS id) SELECT COUNT(*) FROM customers",
     "named like a table"),
    ("an alias reused in a subquery", "SELECT MAX(LENGTH(p.ssn)) FROM {object} p WHERE EXISTS "
     "(SELECT 1 FROM customers AS p)", "classified column|not a declared column"),
    ("a whole row through an output alias", "SELECT MAX(CAST(p AS VARCHAR)) AS p FROM {object} p",
     "as a value|whole row|output alias"),
    ("a whole row by a table's name", "SELECT MAX(CAST(p AS VARCHAR)) FROM {object} p", "as a value|whole row"),
    ("an output alias named like the classified column", "SELECT MAX(LENGTH(ssn)) AS ssn FROM {object}",
     "classified column"),
    ("an output alias used in WHERE", "SELECT COUNT(*) AS n FROM {object} WHERE n > 0", "outside ORDER BY"),
    ("an output alias over an undeclared column", "SELECT COUNT(*) AS secret FROM {object} WHERE secret LIKE '9%'",
     "outside ORDER BY"),
    # an alias read outside its subquery or CTE is its column only as the one source of its name there
    ("an alias read in a correlated subquery", "SELECT COUNT(*) FROM (SELECT amount AS x FROM {object}) q WHERE "
     "EXISTS (SELECT 1 FROM customers c WHERE x > 0)", "outside ORDER BY"),
    ("an alias beside a table of that column", "SELECT MAX(amount) FROM (SELECT id AS amount FROM customers) q, "
     "{object}", "outside ORDER BY"),
    ("an alias beside another of that name", "SELECT MAX(x) FROM (SELECT amount AS x FROM {object}) q, (SELECT id "
     "AS x FROM customers) r", "outside ORDER BY"),
    ("an alias named like its subquery", "SELECT MAX(CAST(q AS VARCHAR)) FROM (SELECT amount AS q FROM {object}) q",
     "outside ORDER BY|as a value"),
    ("an own alias in a window's ORDER BY", "SELECT COUNT(*) FROM (SELECT id AS secret, ROW_NUMBER() OVER (ORDER BY "
     "secret) AS n FROM {object}) q WHERE q.n = 1", "outside ORDER BY"),
    ("an own alias in an ORDER BY expression", "SELECT COUNT(*) FROM (SELECT id AS secret FROM {object} ORDER BY "
     "secret + 0 LIMIT 1) q", "outside ORDER BY"),
    ("the classified column through a CTE's alias", "WITH q AS (SELECT ssn AS x FROM {object}) SELECT MAX(x) FROM q",
     "classified column"),
    # JSON reads and ordered-set aggregates of the classified column: it is only counted
    ("the classified column's JSON member", "SELECT MAX(ssn ->> 'k') FROM {object}", "classified column"),
    ("the classified column's json_extract_string", "SELECT COUNT(*) FROM {object} WHERE json_extract_string(ssn, "
     "'$.k') = '9'", "classified column|json_extract_string"),
    ("the classified column's JSON key", "SELECT COUNT(*) FROM {object} WHERE CAST(ssn AS VARCHAR) -> 'k' IS NULL",
     "classified column"),
    ("the classified column in a percentile", "SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY ssn) FROM {object}",
     "classified column"),
    ("the classified column in a mode", "SELECT mode() WITHIN GROUP (ORDER BY ssn) FROM {object}",
     "classified column"),
    ("a JSON path filter", "SELECT COUNT(*) FROM {object} WHERE json_extract(doc, '$[?(@.n > 1)]') IS NULL",
     "JSONPATH|does not parse|cannot be rendered"),
    ("a cast to JSON", "SELECT COUNT(*) FROM {object} WHERE CAST(region AS JSON) IS NULL", "plain value type"),
    # writing, locking, session forms
    ("delete", "DELETE FROM orders", "not a SELECT"),
    ("cte update", "WITH u AS (UPDATE orders SET amount = 0 RETURNING id) SELECT COUNT(*) FROM u", "UPDATE"),
    ("select into", "SELECT COUNT(*) INTO t2 FROM {object}", "INTO"),
    ("for update", "SELECT COUNT(*) FROM (SELECT id FROM {object} FOR UPDATE) s", "LOCK"),
    ("two statements", "SELECT 1; DROP TABLE orders", "2 statements"),
    ("set", "SET search_path = other_schema", "SELECT"),
    ("pragma", "PRAGMA enable_profiling", "SELECT"),
    ("unlisted function", "SELECT pg_sleep(0)", "pg_sleep"),
    ("set_config", "SELECT set_config('default_transaction_read_only', 'off', false)", "set_config"),
    # refused by the engine's own catalog (odcs/sql_catalogs/): volatile, the session, the server, the catalog
    ("volatile random()", "SELECT COUNT(*) FROM {object} WHERE random() < 2", "random()"),
    ("sleep_ms", "SELECT COUNT(*) FROM {object} WHERE sleep_ms(10) IS NULL", "sleep_ms"),
    ("a setting", "SELECT COUNT(*) FROM {object} WHERE current_setting('search_path') = ''", "current_setting"),
    ("a session variable", "SELECT COUNT(*) FROM {object} WHERE getvariable('x') IS NULL", "getvariable"),
    ("the server's files", "SELECT COUNT(*) FROM {object} WHERE pg_ls_dir('.') IS NULL", "pg_ls_dir"),
    ("a catalog lookup by name", "SELECT COUNT(*) FROM {object} WHERE to_regclass('pg_authid') IS NOT NULL",
     "to_regclass"),
    ("a view's definition", "SELECT COUNT(*) FROM {object} WHERE pg_get_viewdef('v') IS NOT NULL", "pg_get_viewdef"),
    ("SQL text as XML", "SELECT COUNT(*) FROM {object} WHERE query_to_xml('SELECT 1', true, true, '') IS NOT NULL",
     "query_to_xml"),
    ("a cast to an array of lookups", "SELECT COUNT(*) FROM {object} WHERE CAST(NULL AS regclass[]) IS NULL",
     "regclass|does not parse"),
    ("a classified column in a list", "SELECT COUNT(*) FROM {object} WHERE list_contains([ssn], '9')",
     "classified column|does not parse"),
    ("a classified column in a lambda", "SELECT COUNT(*) FROM {object} WHERE len(list_filter([1], x -> ssn > '5')) "
     "> 0", "classified column|list_filter"),
    ("a classified column in an array", "SELECT COUNT(*) FROM {object} WHERE '9' = ANY(ARRAY[ssn])",
     "classified column"),
    # a result as large as an argument asks: memory outside the engine's limits (size set by an argument)
    ("repeat", "SELECT COUNT(*) FROM {object} WHERE length(repeat('x', 3000000000)) > 0", "size is set"),
    ("lpad", "SELECT COUNT(*) FROM {object} WHERE length(lpad('x', 3000000000, 'y')) > 0", "size is set"),
    ("rpad", "SELECT COUNT(*) FROM {object} WHERE length(rpad(region, 3000000000)) > 0", "size is set"),
    ("list_resize", "SELECT COUNT(*) FROM {object} WHERE len(list_resize([1], 3000000000)) > 0",
     "size is set|resize"),
    ("array_resize", "SELECT COUNT(*) FROM {object} WHERE len(array_resize([1], 3000000000)) > 0",
     "size is set|resize"),
    ("array_fill", "SELECT COUNT(*) FROM {object} WHERE cardinality(array_fill(1, ARRAY[300000000])) > 0",
     "size is set|array_fill"),
    ("a format width", "SELECT COUNT(*) FROM {object} WHERE length(format('%3000000000s', region)) > 0",
     "size is set"),
    ("a printf width", "SELECT COUNT(*) FROM {object} WHERE length(printf('%3000000000d', amount)) > 0",
     "size is set|printf"),
    ("range as a value", "SELECT COUNT(*) FROM {object} WHERE len(range(3000000000)) > 0", "as a value"),
    ("generate_series as a value", "SELECT COUNT(*) FROM {object} WHERE cardinality(generate_series(1, 3000000000))"
     " > 0", "as a value"),
    ("generate_series in the select list", "SELECT COUNT(*) FROM (SELECT generate_series(1, 3000000000) AS n) g",
     "as a value"),
    ("to_base's width", "SELECT COUNT(*) FROM {object} WHERE length(to_base(amount, 2, 300000000)) > 0",
     "size is set|to_base"),
    # SQL, or a name of the database, given as text: bound by the engine outside the judge
    ("json_serialize_plan", "SELECT COUNT(*) FROM {object} WHERE json_serialize_plan('SELECT * FROM "
     "other_schema.orders') IS NOT NULL", "sql given as text|json_serialize_plan"),
    ("json_serialize_sql", "SELECT COUNT(*) FROM {object} WHERE json_serialize_sql('SELECT 1') IS NOT NULL",
     "sql given as text|json_serialize_sql"),
    ("json_deserialize_sql", "SELECT COUNT(*) FROM {object} WHERE json_deserialize_sql('{}') IS NOT NULL",
     "sql given as text|json_deserialize_sql"),
    ("a text-search configuration by name", "SELECT COUNT(*) FROM {object} WHERE to_tsvector('other_schema.nosuch', "
     "region) IS NOT NULL", "name of the database as text|to_tsvector"),
    ("a text-search query by name", "SELECT COUNT(*) FROM {object} WHERE plainto_tsquery('other_schema.x', region) "
     "IS NOT NULL", "name of the database as text|plainto_tsquery"),
    ("a type by name", "SELECT COUNT(*) FROM {object} WHERE make_type('other_schema.nosuch') IS NOT NULL",
     "type up in the catalog|make_type"),
    ("type names by identifier", "SELECT COUNT(*) FROM {object} WHERE oidvectortypes('16 23') IS NOT NULL",
     "by its identifier|oidvectortypes"),
    ("a text-search parser by name", "SELECT COUNT(*) FROM {object} WHERE (SELECT COUNT(*) FROM (SELECT "
     "ts_token_type('default') AS t) x) > 0", "parser or configuration|ts_token_type"),
    # a cast of any kind names its type as a type, never as a name a CTE column stands for
    ("J_S_O_N_CAST to a CTE column", "WITH c(regclass) AS (SELECT 1) SELECT COUNT(*) FROM {object}, c WHERE "
     "length(CAST(J_S_O_N_CAST('other_schema.t', regclass) AS TEXT)) > 0", "plain value type"),
    ("J_S_O_N_CAST to a qualified name", "WITH other_schema(d) AS (SELECT 1) SELECT COUNT(J_S_O_N_CAST('x', "
     "other_schema.d)) FROM other_schema", "plain value type"),
    ("to_variant's cast", "SELECT COUNT(*) FROM {object} WHERE to_variant(amount) IS NOT NULL", "VARIANT|to_variant"),
    ("a qualified collation", "WITH other_schema(nope) AS (SELECT 1) SELECT COUNT(*) FROM {object}, other_schema "
     "WHERE region COLLATE other_schema.nope = 'a'", "collation name"),
    # every call of what runs, not only the first name of each rendered call
    ("uniform renders RANDOM()", "SELECT COUNT(*) FROM {object} WHERE uniform(1, 2) = 1", "random()|uniform"),
    ("generate_date_array as a value", "SELECT COUNT(*) FROM {object} WHERE len(generate_date_array(DATE "
     "'1970-01-01', DATE '1972-01-01', INTERVAL 1 SECOND)) > 0", "as a value|generate_date_array"),
    # text that grows by a factor the query sets (judged here; never run on the code before the fix)
    ("nested replace", f"SELECT COUNT(*) FROM {{object}} WHERE length({NESTED_REPLACE}) > 0", "grow text"),
    ("regexp_replace chained through a CTE", "WITH a AS (SELECT regexp_replace(region, '', 'xx', 'g') AS v FROM "
     "{object}) SELECT COUNT(*) FROM a WHERE length(regexp_replace(a.v, '', 'yy', 'g')) > 0", "grow text|output of a cte"),
    ("replace inserting a column", "SELECT COUNT(*) FROM {object} WHERE length(replace(region, 'e', region)) > 0",
     "not a string literal"),
    ("|| doubling per lambda step", "SELECT COUNT(*) FROM {object} WHERE length(list_reduce(['x', 'x', 'x'], "
     "(a, b) -> a || a)) > 0", "in a lambda|list_reduce"),
    ("|| doubling per CTE", "WITH a AS (SELECT region || region AS v FROM {object}), b AS (SELECT a.v || a.v AS v "
     "FROM a) SELECT COUNT(*) FROM b WHERE length(b.v) > 0", "output of a cte"),
]

ACCEPTED = [
    # (id, query, mustBe, observed) on the rows below
    ("negative amounts", "SELECT COUNT(*) FROM {object} WHERE amount < 0", 0, 1),
    ("join of two objects", "SELECT COUNT(*) FROM {object} o JOIN customers c ON o.customer_id = c.id "
     "WHERE c.name = 'Ann'", 2, 2),
    ("count of a classified column", "SELECT COUNT(DISTINCT ssn) + COUNT(ssn) FROM {object} WHERE ssn IS NOT NULL",
     6, 6),
    ("a comment is dropped", "SELECT COUNT(*) FROM {object} /* ; DROP TABLE orders */ -- ; DROP", 4, 4),
    ("a colon in a literal", "SELECT COUNT(*) FROM {object} WHERE region <> ':x'", 4, 4),
    ("the property", "SELECT COUNT(*) FROM {object} WHERE {property} >= 10", 2, 2),
    ("a generator of numbers", "SELECT COUNT(*) FROM {object}, generate_series(1, 2) g", 8, 8),
    # an output alias read outside its subquery or CTE, unqualified: the one source of that name there
    ("an alias read outside its subquery", "SELECT MAX(x) FROM (SELECT amount AS x FROM {object}) q", 20, 20),
    ("a CTE's row number filtered outside", "WITH q AS (SELECT ROW_NUMBER() OVER (PARTITION BY customer_id ORDER BY "
     "id) AS rn FROM {object}) SELECT COUNT(*) FROM q WHERE rn > 1", 0, 1),
    ("a CTE's alias as a join key", "WITH c AS (SELECT id AS cid FROM customers) SELECT COUNT(*) FROM {object} o "
     "JOIN c ON o.customer_id = cid", 3, 3),
    ("an alias grouped and ordered outside", "SELECT MAX(n) FROM (SELECT x, COUNT(*) AS n FROM (SELECT customer_id "
     "AS x FROM {object}) a GROUP BY x ORDER BY x) b", 1, 2),
    # a plain timestamp however spelt (DuckDB's TIMESTAMP is sqlglot's TIMESTAMPNTZ), an interval with fields
    ("a cast to TIMESTAMP", "SELECT COUNT(*) FROM {object} WHERE day < CAST('2026-06-02' AS TIMESTAMP)", 1, 1),
    ("a TIMESTAMP literal", "SELECT COUNT(*) FROM {object} WHERE day < TIMESTAMP '2026-06-02 00:00:00'", 1, 1),
    ("a ::timestamp", "SELECT COUNT(*) FROM {object} WHERE day < '2026-06-02'::timestamp", 1, 1),
    ("a timestamp without time zone", "SELECT COUNT(*) FROM {object} WHERE CAST(day AS timestamp without time zone) "
     "< TIMESTAMP '2026-06-02'", 1, 1),
    ("an interval day to second", "SELECT COUNT(*) FROM {object} WHERE day + CAST('1 day' AS INTERVAL DAY TO SECOND) "
     "> TIMESTAMP '2026-06-02'", 3, 3),
    # ordered-set aggregates
    ("percentile_cont within group", "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY amount) FROM {object}",
     5.5, 5.5),
    ("percentile_disc within group", "SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY amount) FROM {object}",
     1, 1),
    ("mode within group", "SELECT mode() WITHIN GROUP (ORDER BY customer_id) FROM {object}", 1, 1),
]

# Read-only rules of one dialect's own functions (its catalog's, odcs/sql_catalogs/): list and array
# literals, subscripts, lambdas, ANY/ALL over arrays. (id, dialect, query, mustBe, observed) on the rows below
DIALECT_RULES = [
    ("list_contains over a list", "duckdb", "SELECT COUNT(*) FROM {object} WHERE NOT list_contains([10, 20], amount)",
     0, 2),
    ("a lambda", "duckdb", "SELECT COUNT(*) FROM {object} WHERE len(list_filter([1, 5, 10], x -> x > amount)) = 3",
     1, 1),
    ("a subscript", "duckdb", "SELECT COUNT(*) FROM {object} WHERE [10, 20][2] = amount", 1, 1),
    ("list_has_any", "duckdb", "SELECT COUNT(*) FROM {object} WHERE list_has_any([customer_id], [1, 3])", 3, 3),
    ("a list macro", "duckdb", "SELECT list_sum([COUNT(*), 1]) FROM {object}", 4, 5),
    ("a cast to a list", "duckdb", "SELECT COUNT(*) FROM {object} WHERE list_contains(CAST(['1', '20'] AS "
     "INTEGER[]), amount)", 2, 2),
    ("date_diff to a TIMESTAMP", "duckdb", "SELECT COUNT(*) FROM {object} WHERE date_diff('day', day, TIMESTAMP "
     "'2026-06-03') = 1", 3, 3),
    ("a cast to DATETIME", "duckdb", "SELECT COUNT(*) FROM {object} WHERE CAST(day AS DATETIME) > "
     "TIMESTAMP '2026-06-01'", 3, 3),
    ("a cast to a list of TIMESTAMP", "duckdb", "SELECT COUNT(*) FROM {object} WHERE list_contains(CAST(['2026-06-01']"
     " AS TIMESTAMP[]), CAST(day AS TIMESTAMP))", 1, 1),
    ("->> of a JSON path", "duckdb", "SELECT COUNT(*) FROM {object} WHERE doc ->> '$.k' = 'eu'", 1, 1),
    ("->> of a key", "duckdb", "SELECT COUNT(*) FROM {object} WHERE doc ->> 'k' = 'us'", 1, 1),
    ("-> of a key", "duckdb", "SELECT COUNT(*) FROM {object} WHERE doc -> 'tags' IS NOT NULL", 2, 2),
    ("-> of an index", "duckdb", "SELECT COUNT(*) FROM {object} WHERE doc -> 'tags' -> 0 IS NOT NULL", 1, 1),
    ("json_extract_string", "duckdb", "SELECT COUNT(*) FROM {object} WHERE json_extract_string(doc, 'k') = 'eu'", 1, 1),
    ("json_extract of a path", "duckdb", "SELECT SUM(CAST(json_extract(doc, '$.n') AS INTEGER)) FROM {object}", 7, 7),
    ("quantile_cont", "duckdb", "SELECT quantile_cont(amount, 0.5) FROM {object}", 5.5, 5.5),
    ("a quote in a JSON key stays in its literal", "duckdb", "SELECT COUNT(*) FROM {object} WHERE doc ->> 'x'' OR "
     "ssn IS NULL OR ''' = 'x'", 0, 0),
    ("= ANY(ARRAY[…])", "postgres", "SELECT COUNT(*) FROM {object} WHERE amount = ANY(ARRAY[10, 20])", 2, 2),
    ("<> ALL(ARRAY[…])", "postgres", "SELECT COUNT(*) FROM {object} WHERE amount <> ALL(ARRAY[10, 20])", 0, 2),
    ("array_position", "postgres", "SELECT COUNT(*) FROM {object} WHERE array_position(ARRAY['eu', 'us'], region) "
     "IS NULL", 0, 0),
    ("array_remove", "postgres", "SELECT COUNT(*) FROM {object} WHERE cardinality(array_remove(ARRAY[1, 2, 3], "
     "customer_id)) = 2", 4, 4),
    ("an array overlap", "postgres", "SELECT COUNT(*) FROM {object} WHERE ARRAY[customer_id] && ARRAY[1, 3]", 3, 3),
    ("a subscript of an array", "postgres", "SELECT COUNT(*) FROM {object} WHERE (ARRAY[10, 20])[2] = amount", 1, 1),
    ("a cast to an array", "postgres", "SELECT COUNT(*) FROM {object} WHERE amount = ANY(CAST('{1,20}' AS "
     "INTEGER[]))", 1, 2),
    ("num_nonnulls", "postgres", "SELECT COUNT(*) FROM {object} WHERE num_nonnulls(amount, region) = 2", 4, 4),
    ("->> of a key", "postgres", "SELECT COUNT(*) FROM {object} WHERE doc ->> 'k' = 'eu'", 1, 1),
    ("-> of a key", "postgres", "SELECT COUNT(*) FROM {object} WHERE doc -> 'tags' IS NOT NULL", 2, 2),
    ("-> of an index", "postgres", "SELECT COUNT(*) FROM {object} WHERE doc -> 'tags' -> 0 IS NOT NULL", 1, 1),
    ("#>> of a path", "postgres", "SELECT COUNT(*) FROM {object} WHERE doc #>> '{tags,0}' = 'a'", 1, 1),
    ("? of a key", "postgres", "SELECT COUNT(*) FROM {object} WHERE doc ? 'k'", 2, 2),
    ("?| of keys", "postgres", "SELECT COUNT(*) FROM {object} WHERE doc ?| ARRAY['k', 'n']", 3, 3),
    ("->> cast to a number", "postgres", "SELECT SUM(CAST(doc ->> 'n' AS INTEGER)) FROM {object}", 7, 7),
    ("a quote in a JSON key stays in its literal", "postgres", "SELECT COUNT(*) FROM {object} WHERE doc ->> 'x'' OR "
     "ssn IS NULL OR ''' = 'x'", 0, 0),
]

ROWS = [  # id, customer_id, amount, ssn, region, day, doc (JSON)
    (1, 1, 10, PLANTED, "eu", "2026-06-01", '{"k": "eu", "n": 1, "tags": ["a"]}'),
    (2, 1, -5, "123456789", "eu", "2026-06-02", '{"k": "us", "n": 2, "tags": []}'),
    (3, 2, 20, None, "us", "2026-06-02", None),
    (4, 3, 1, "555", "us", "2026-06-02", '{"n": 4}'),
]
JSON_TYPES = {"duckdb": "JSON", "postgresql": "JSONB"}  # the doc column's type on each engine


def contract(rules: list[tuple[str, str, int]], server: dict, partitions: dict | None = None) -> dict:
    orders = {"name": "orders", "properties": [
        {"name": "id", "logicalType": "integer"},
        {"name": "customer_id", "logicalType": "integer"},
        {"name": "amount", "logicalType": "integer", "quality": [
            {"type": "sql", "name": name, "query": query, "mustBe": must} for name, query, must in rules]},
        {"name": "ssn", "logicalType": "string", "classification": "restricted"},
        {"name": "region", "logicalType": "string"},
        {"name": "day", "logicalType": "date"},
        {"name": "doc", "logicalType": "object"},
    ]}
    if partitions:
        orders["customProperties"] = [{"property": "dagsterPartitions", "value": partitions}]
    return {"apiVersion": "v3.1.0", "kind": "DataContract", "id": "sqlrules", "version": "1.0.0", "status": "active",
            "servers": [server], "schema": [orders, {"name": "customers", "properties": [
                {"name": "id", "logicalType": "integer"}, {"name": "name", "logicalType": "string"}]}]}


def fill(engine: sa.Engine, other_schema: str) -> None:
    with engine.begin() as c:
        c.exec_driver_sql(f"CREATE SCHEMA IF NOT EXISTS {other_schema}")
        json = JSON_TYPES[engine.dialect.name]
        c.exec_driver_sql("CREATE TABLE orders (id INTEGER, customer_id INTEGER, amount INTEGER, ssn VARCHAR(16), "
                          f"region VARCHAR(8), day DATE, doc {json})")
        for row in ROWS:
            c.execute(sa.text(f"INSERT INTO orders VALUES (:a, :b, :c, :d, :e, CAST(:f AS DATE), CAST(:g AS {json}))"),
                      dict(zip("abcdefg", row)))
        c.exec_driver_sql("CREATE TABLE customers (id INTEGER, name VARCHAR(16))")
        c.exec_driver_sql("INSERT INTO customers VALUES (1, 'Ann'), (2, 'Bob')")
        c.exec_driver_sql("CREATE TABLE stranger (secret VARCHAR(16))")
        c.exec_driver_sql(f"INSERT INTO stranger VALUES ('{PLANTED}')")
        c.exec_driver_sql(f"CREATE TABLE {other_schema}.t (secret VARCHAR(16))")
        c.exec_driver_sql(f"CREATE TABLE {other_schema}.orders (secret VARCHAR(16))")


@dataclasses.dataclass
class Warehouse:
    name: str
    engine: sa.Engine
    server: dict
    schema: str
    folder: object

    def rows(self) -> list[tuple]:
        with self.engine.connect() as c:
            return [tuple(r) for r in c.exec_driver_sql("SELECT id, amount FROM orders ORDER BY id")]


@pytest.fixture(scope="module", params=["duckdb", pytest.param("postgres", marks=pytest.mark.postgres)])
def warehouse(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp(request.param)
    if request.param == "duckdb":
        path = folder / "wh.duckdb"
        engine = sa.create_engine(f"duckdb:///{path}")
        fill(engine, "other_schema")
        (folder / "x.csv").write_text(f"secret\n{PLANTED}\n")
        server = {"server": "wh", "type": "duckdb", "database": str(path), "schema": "main"}
        yield Warehouse("duckdb", engine, server, "main", folder)
    else:
        import uuid

        postgres = request.getfixturevalue("postgres")
        name = "t_" + uuid.uuid4().hex[:12]
        admin = sa.create_engine(postgres.url(), isolation_level="AUTOCOMMIT")
        with admin.connect() as c:
            c.exec_driver_sql(f'CREATE DATABASE "{name}"')
        admin.dispose()
        engine = sa.create_engine(postgres.url(name), poolclass=sa.pool.NullPool)
        fill(engine, "other_schema")
        with engine.begin() as c:
            c.exec_driver_sql("CREATE FUNCTION sneaky() RETURNS bigint LANGUAGE sql "
                              "AS 'UPDATE public.orders SET amount = 0 RETURNING 0'")
        parsed = engine.url
        server = {"server": "wh", "type": "postgres", "host": parsed.host, "port": parsed.port,
                  "database": name, "schema": "public"}
        yield Warehouse("postgres", engine, server, "public", folder)
    engine.dispose()


def load(folder, document: dict, name: str = "c.odcs.yaml"):
    path = folder / name
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return load_contracts([path])


def run(warehouse: Warehouse, plan, obj_name: str = "orders", **kwargs) -> dict:
    obj = plan.object(obj_name)
    return {r.name: r for r in run_object(plan, obj, warehouse.engine, schema=warehouse.schema, **kwargs)}


def without_refusals(plan):
    """The plan as if every refusal made when it was compiled were lost."""
    return dataclasses.replace(plan, objects=tuple(
        dataclasses.replace(o, checks=tuple(dataclasses.replace(c, params=dataclasses.replace(c.params, refusal=None))
                                            for c in o.checks)) for o in plan.objects))


@pytest.fixture(scope="module")
def attacked(warehouse):
    """Every attack of the table in one contract, loaded and run once on this warehouse."""
    rules = [(f"r{n}", query, 0) for n, (_, query, _) in enumerate(ATTACKS)]
    before = warehouse.rows()
    loaded = load(warehouse.folder, contract(rules, warehouse.server), "attacks.odcs.yaml")
    plan = loaded.plans[0]
    results = run(warehouse, plan)
    # and once more with every refusal of the plan lost: the judge where it runs refuses again
    unguarded = run(warehouse, without_refusals(plan))
    return loaded, plan, results, unguarded, before, warehouse.rows()


@pytest.mark.parametrize("n", range(len(ATTACKS)), ids=[a[0] for a in ATTACKS])
def test_an_attack_is_refused_when_compiled_and_where_it_would_run(attacked, n):
    loaded, plan, results, unguarded, before, after = attacked
    _, query, reason = ATTACKS[n]
    check = next(c for c in plan.object("orders").checks if c.name == f"r{n}")
    refusal = check.params["refusal"] or ""
    words = reason.lower().split("|")
    assert any(w in refusal.lower() for w in words), refusal
    problems = [p for p in loaded.problems if p.path.endswith(f"quality[{n}].query")]
    # a name the contract does not declare is a warning (a clause that cannot run as written), the rest errors
    undeclared = "not an object of this contract" in refusal or "not a declared column" in refusal
    assert problems and problems[0].line is not None, loaded.problems
    assert problems[0].severity == ("warning" if undeclared else "error"), problems[0]
    for result in (results[f"r{n}"], unguarded[f"r{n}"]):
        assert not result.passed and result.observed is None
        assert result.error and result.error.startswith("not run:"), result.error
        assert any(w in result.error.lower() for w in words), result.error
        assert PLANTED not in json.dumps(result.to_json(), default=str)
    assert after == before  # nothing was written


@pytest.fixture(scope="module")
def accepted(warehouse):
    rules = [(f"ok{n}", query, must) for n, (_, query, must, _) in enumerate(ACCEPTED)]
    loaded = load(warehouse.folder, contract(rules, warehouse.server), "accepted.odcs.yaml")
    assert loaded.problems == [], loaded.problems
    return run(warehouse, loaded.plans[0])


@pytest.mark.parametrize("n", range(len(ACCEPTED)), ids=[a[0] for a in ACCEPTED])
def test_an_accepted_rule_runs_and_is_judged_on_its_value(accepted, n):
    _, query, must, observed = ACCEPTED[n]
    result = accepted[f"ok{n}"]
    assert result.error is None, result.error
    assert result.observed == observed and result.passed is (observed == must)
    assert "--" not in result.sql and "/*" not in result.sql  # what ran, and is shown, has no comment
    assert "{" not in result.sql  # every placeholder became a quoted name


@pytest.fixture(scope="module")
def dialect_rules(warehouse):
    rules = [(f"d{n}", query, must) for n, (_, dialect, query, must, _) in enumerate(DIALECT_RULES)
             if dialect == warehouse.name]
    loaded = load(warehouse.folder, contract(rules, warehouse.server), "dialect.odcs.yaml")
    assert loaded.problems == [], loaded.problems
    return run(warehouse, loaded.plans[0])


@pytest.mark.parametrize("n", range(len(DIALECT_RULES)), ids=[r[0] for r in DIALECT_RULES])
def test_a_rule_of_the_dialects_own_read_only_functions_runs(warehouse, request, n):
    _, dialect, query, must, observed = DIALECT_RULES[n]
    if dialect != warehouse.name:
        pytest.skip(f"a rule of {dialect}'s functions")
    result = request.getfixturevalue("dialect_rules")[f"d{n}"]
    assert result.error is None, result.error
    assert result.observed == observed and result.passed is (observed == must)


@pytest.mark.parametrize("declaration,key,count", [
    ({"type": "daily", "start": "2026-06-01", "column": "day"}, "2026-06-02", 3),
    ({"type": "static", "values": ["eu", "us", "x' OR '1'='1"], "column": "region"}, "us", 2),
    ({"type": "static", "values": ["eu", "us", "x' OR '1'='1"], "column": "region"}, "x' OR '1'='1", 0),
])
def test_a_partition_rule_binds_its_values(warehouse, declaration, key, count):
    rules = [("per_partition", "SELECT COUNT(*) FROM {object} WHERE {partition}", count)]
    loaded = load(warehouse.folder, contract(rules, warehouse.server, declaration), "parts.odcs.yaml")
    assert loaded.problems == [], loaded.problems
    orders = loaded.plans[0].object("orders")
    sent: list[str] = []
    listener = lambda conn, cursor, statement, *rest: sent.append(statement)  # noqa: E731
    sa.event.listen(warehouse.engine, "before_cursor_execute", listener)
    try:
        result = run(warehouse, loaded.plans[0], selected=["per_partition"],
                     partition=partition_for(orders.partitioning, key))["per_partition"]
    finally:
        sa.event.remove(warehouse.engine, "before_cursor_execute", listener)
    assert result.error is None and result.observed == count and result.passed, result.error
    assert key.replace("'", "''") in result.sql  # people read the value...
    ran = [s for s in sent if "orders" in s]
    assert ran and not any(key in s for s in ran), ran  # ...the query ran it bound


def test_what_the_ui_shows_cannot_be_broken_out_of():
    from dq_contracts.engine.sentences import code_block

    sql = "SELECT COUNT(*) FROM t WHERE a = '```\n# not a heading'"
    block = code_block(sql)
    fence = block.splitlines()[0][:-3]
    assert block.startswith(fence + "sql\n") and block.endswith("\n" + fence)
    assert fence not in sql and set(fence) == {"`"}  # no run of backticks in the text closes it


# Every spelling of a plain date, time, timestamp or interval type, in each dialect a server may have,
# that sqlglot reads as one of its date and time types is a plain type to cast to (DuckDB's TIMESTAMP
# is sqlglot's TIMESTAMPNTZ; `INTERVAL DAY TO SECOND` a type of its own).
TIME_SPELLINGS = ["TIMESTAMP", "timestamp without time zone", "TIMESTAMP WITH TIME ZONE", "TIMESTAMPTZ",
                  "TIMESTAMP(3)", "TIMESTAMP WITH LOCAL TIME ZONE", "DATETIME", "DATETIME(3)", "DATE", "TIME",
                  "TIME(6)", "TIME WITH TIME ZONE", "TIME WITHOUT TIME ZONE", "TIMETZ", "INTERVAL",
                  "INTERVAL DAY TO SECOND", "INTERVAL YEAR TO MONTH", "INTERVAL DAY", "TIMESTAMP_S", "TIMESTAMP_MS",
                  "TIMESTAMP_NS", "TIMESTAMP_US", "TIME_NS", "TIMESTAMPLTZ", "TIMESTAMPNTZ", "TIMESTAMP_LTZ",
                  "TIMESTAMP_NTZ", "TIMESTAMP_TZ", "DATETIME64", "DATETIME64(3)", "DATE32", "SMALLDATETIME",
                  "DATETIME2", "DATETIMEOFFSET"]


def _sqlglot_dialects() -> list[str]:
    from dq_contracts.odcs.servers import SERVER_TYPES

    return sorted({row.sqlglot for row in SERVER_TYPES if row.sqlglot})


@pytest.mark.parametrize("dialect", _sqlglot_dialects())
def test_every_spelling_of_a_plain_date_or_time_type_may_be_cast_to(dialect):
    import sqlglot
    from sqlglot import exp

    from dq_contracts.odcs.sqlrules import judge_sql_rule

    refused = {}
    for spelling in TIME_SPELLINGS:
        query = f"SELECT COUNT(*) FROM {{object}} WHERE CAST(NULL AS {spelling}) IS NULL"
        try:
            to = sqlglot.parse_one(query.replace("{object}", "t"), read=dialect).find(exp.Cast).args["to"]
        except sqlglot.errors.SqlglotError:
            continue  # not a type of this dialect
        read_as = to.this.name if isinstance(to.this, exp.DataType.Type) else "INTERVAL"
        if not any(word in read_as for word in ("DATE", "TIME", "INTERVAL")) or read_as.endswith("RANGE"):
            continue  # read as another type (T-SQL's TIMESTAMP is ROWVERSION) or as no type of the dialect
        verdict = judge_sql_rule(query, dialect=dialect, own="t", column=None, tables={"t": {"a": False}})
        if verdict.refusal:
            refused[spelling] = (read_as, verdict.refusal)
    assert refused == {}


# --- each lock alone (reviews/tests.md 2.6) ---------------------------------------------------------

WRITES = [
    # named with its schema: a check session resolves names in pg_catalog alone, a third lock
    ("a function that writes", "SELECT public.sneaky()"),
    ("a CTE that updates", "WITH u AS (UPDATE orders SET amount = 0 RETURNING id) SELECT COUNT(*) FROM u"),
]


@pytest.mark.postgres
@pytest.mark.parametrize("query", [q for _, q in WRITES], ids=[n for n, _ in WRITES])
def test_with_the_judge_off_the_read_only_transaction_stops_a_write(warehouse, monkeypatch, query):
    if warehouse.name != "postgres":
        pytest.skip("the read-only transaction is PostgreSQL's")
    from dq_contracts.odcs import sqlrules

    monkeypatch.setattr(sqlrules._Checker, "refusal", lambda self: None)  # every tree accepted
    monkeypatch.setattr(sqlrules, "_scoped", lambda *args: None)
    before = warehouse.rows()
    loaded = load(warehouse.folder, contract([("write", query, 0)], warehouse.server), "write.odcs.yaml")
    result = run(warehouse, loaded.plans[0], selected=["write"])["write"]
    # SQLSTATE 25006: read_only_sql_transaction (a SQL rule's error is told by its class and SQLSTATE)
    assert not result.passed and "SQLSTATE 25006" in (result.error or ""), result.error
    assert warehouse.rows() == before


@pytest.mark.postgres
@pytest.mark.parametrize("query", [q for _, q in WRITES], ids=[n for n, _ in WRITES])
def test_with_the_read_only_transaction_off_the_judge_stops_a_write(warehouse, monkeypatch, query):
    if warehouse.name != "postgres":
        pytest.skip("the read-only transaction is PostgreSQL's")
    from dq_contracts.engine import sessions

    monkeypatch.setattr(sessions, "_begin", lambda engine, timeout: engine.connect())  # a plain transaction
    before = warehouse.rows()
    loaded = load(warehouse.folder, contract([("write", query, 0)], warehouse.server), "write.odcs.yaml")
    assert any(c.params.get("refusal") for c in loaded.plans[0].object("orders").checks)  # refused when compiled
    result = run(warehouse, without_refusals(loaded.plans[0]), selected=["write"])["write"]  # and where it runs
    assert not result.passed and (result.error or "").startswith("not run:"), result.error
    assert warehouse.rows() == before
