"""Write the README's reference of every clause kind from the clause table and the check kinds.

    python scripts/clause_reference.py          # rewrites the marked region of README.md
    python scripts/clause_reference.py --check  # exit 1 when the README's region differs

One row below per clause of `CLAUSES` (dq_contracts/odcs/clauses) and for `primaryKey`: what the
clause checks, in a sentence, and a short example. Everything else the reference says is computed:
each example is placed in the minimal contract `BASE` and compiled by the same loader `dq-contracts
validate` uses, and the check kind, the check's name, or the reason it is not enforced are read from
that plan. So an example that is wrong, or a clause that compiles otherwise than the README says,
changes the region, and `dq_contracts_tests/odcs/test_clause_reference.py` fails until it is written
again.
"""

from __future__ import annotations

import argparse
import copy
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from a clone
    sys.path.insert(0, str(ROOT))

from dq_contracts.odcs.check_kinds import CHECK_KINDS, PRIMARY_KEY  # noqa: E402
from dq_contracts.odcs.clauses import CLAUSES  # noqa: E402
from dq_contracts.odcs.clauses.vocabulary import FORMAT_PATTERNS  # noqa: E402
from dq_contracts.odcs.load import LoadResult, load_contracts, not_enforced_problems  # noqa: E402
from dq_contracts.odcs.problems import Problem  # noqa: E402

README = ROOT / "README.md"
BEGIN = "<!-- clause reference: written by scripts/clause_reference.py from the clause table; do not edit -->"
END = "<!-- end of clause reference -->"

# The contract every example is a fragment of (the README shows it above the region): a CSV file
# per object, as in "Your first contract".
BASE_TEXT = """\
apiVersion: v3.2.0
kind: DataContract
id: urn:example:shop
version: 1.0.0
status: active
servers:
  - {server: files, type: local, format: csv, path: "data/{object}.csv"}
schema:
  - name: orders
    properties:
      - {name: order_id, logicalType: integer}
      - {name: customer_id, logicalType: integer}
      - {name: amount, logicalType: number}
      - {name: status, logicalType: string}
      - {name: email, logicalType: string}
      - {name: created_at, logicalType: timestamp}
  - name: customers
    properties:
      - {name: customer_id, logicalType: integer}
"""
BASE = yaml.safe_load(BASE_TEXT)

PROPERTY, OBJECT, SLA, WHOLE_OBJECT = "schema[].properties[]", "schema[]", "slaProperties[]", "schema[] (the object)"


@dataclass(frozen=True)
class Row:
    clause: str  # a key of CLAUSES, or PRIMARY_KEY
    written: str  # the clause as a contract writes it
    what: str  # what it checks, for people
    where: str  # where the example goes: PROPERTY, OBJECT, SLA or WHOLE_OBJECT
    example: str  # a YAML flow mapping
    api: str = "v3.2.0"


ROWS = [
    Row("schema", "the object's `properties`", "the table (or files) exists with every declared column, of its "
        "declared `physicalType`, else of its `logicalType`'s family; an undeclared column is reported, "
        "not failed", WHOLE_OBJECT,
        "{name: customers, properties: [{name: customer_id, logicalType: integer, physicalType: BIGINT}]}"),
    Row("required", "`required: true`", "no NULL in the column", PROPERTY,
        "{name: order_id, logicalType: integer, required: true}"),
    Row("unique", "`unique: true`", "no non-NULL value twice (NULLs are ignored)", PROPERTY,
        "{name: email, logicalType: string, unique: true}"),
    Row(PRIMARY_KEY, "`primaryKey: true`", "no NULL and no value twice; several properties with "
        "`primaryKeyPosition` are one compound key (check `primary_key`)", PROPERTY,
        "{name: order_id, logicalType: integer, primaryKey: true}"),
    Row("option:minimum", "`logicalTypeOptions.minimum`", "every non-NULL value ≥ the bound (numbers, dates, "
        "timestamps; a NaN is outside every bound)", PROPERTY,
        "{name: amount, logicalType: number, logicalTypeOptions: {minimum: 0}}"),
    Row("option:maximum", "`logicalTypeOptions.maximum`", "every non-NULL value ≤ the bound", PROPERTY,
        "{name: amount, logicalType: number, logicalTypeOptions: {maximum: 10000}}"),
    Row("option:exclusiveMinimum", "`logicalTypeOptions.exclusiveMinimum`", "every non-NULL value > the bound",
        PROPERTY, "{name: amount, logicalType: number, logicalTypeOptions: {exclusiveMinimum: 0}}"),
    Row("option:exclusiveMaximum", "`logicalTypeOptions.exclusiveMaximum`", "every non-NULL value < the bound",
        PROPERTY, "{name: created_at, logicalType: timestamp, logicalTypeOptions: {exclusiveMaximum: "
        "'2030-01-01T00:00:00Z'}}"),
    Row("option:minLength", "`logicalTypeOptions.minLength`", "every non-NULL value has at least that many "
        "characters", PROPERTY, "{name: status, logicalType: string, logicalTypeOptions: {minLength: 2}}"),
    Row("option:maxLength", "`logicalTypeOptions.maxLength`", "every non-NULL value has at most that many "
        "characters", PROPERTY, "{name: status, logicalType: string, logicalTypeOptions: {maxLength: 20}}"),
    Row("option:pattern", "`logicalTypeOptions.pattern`", "every non-NULL value matches the regular expression "
        "(found anywhere in the value: anchor it with `^…$`)", PROPERTY,
        "{name: status, logicalType: string, logicalTypeOptions: {pattern: '^[a-z_]+$'}}"),
    Row("option:format", "`logicalTypeOptions.format`", "every non-NULL value has the form named: "
        + ", ".join(f"`{f}`" for f in FORMAT_PATTERNS) + "; another format is not enforced", PROPERTY,
        "{name: email, logicalType: string, logicalTypeOptions: {format: email}}"),
    Row("option:multipleOf", "`logicalTypeOptions.multipleOf`", "every non-NULL value is a whole multiple of the "
        "number (exactly, to 10 decimal places)", PROPERTY,
        "{name: amount, logicalType: number, logicalTypeOptions: {multipleOf: 0.01}}"),
    Row("option:*", "any other `logicalTypeOptions` key", "nothing: it describes the type", PROPERTY,
        "{name: created_at, logicalType: timestamp, logicalTypeOptions: {timezone: true}}"),
    Row("enum", "`enum` (v3.2)", "every non-NULL value is one of the list", PROPERTY,
        "{name: status, logicalType: string, enum: [{value: open}, {value: paid}, {value: shipped}]}"),
    Row("relationship", "`relationships`", "every non-NULL value is found in the referenced column (of this "
        "contract, or of another contract of the folder on the same server)", PROPERTY,
        "{name: customer_id, logicalType: integer, relationships: [{to: customers.customer_id}]}"),
    Row("metric:nullValues", "`quality` metric `nullValues`", "the count (or `unit: percent`, the percent of "
        "all rows) of NULLs, against the rule's operator (its fail level); a `customProperties` entry "
        "`warnThreshold` on any quality rule adds a warn level (see \"Warn and fail levels\")", PROPERTY,
        "{name: email, logicalType: string, quality: [{metric: nullValues, mustBeLessThan: 5, unit: percent, "
        "customProperties: [{property: warnThreshold, value: {mustBeLessThan: 1}}]}]}"),
    Row("metric:missingValues", "`quality` metric `missingValues`", "the rows holding one of "
        "`arguments.missingValues` (NULL only if listed; with no list, NULL; an empty list, nothing), against the operator", PROPERTY,
        "{name: status, logicalType: string, quality: [{metric: missingValues, arguments: {missingValues: "
        "[null, '', n/a]}, mustBe: 0}]}"),
    Row("metric:invalidValues", "`quality` metric `invalidValues`", "the non-NULL values outside "
        "`arguments.validValues` or not matching `arguments.pattern`, against the operator", PROPERTY,
        "{name: status, logicalType: string, quality: [{metric: invalidValues, arguments: {validValues: "
        "[open, paid, shipped]}, mustBe: 0}]}"),
    Row("metric:duplicateValues", "`quality` metric `duplicateValues`", "the extra copies of a non-NULL value "
        "(on an object, of the tuple of `arguments.properties`), against the operator", PROPERTY,
        "{name: email, logicalType: string, quality: [{metric: duplicateValues, mustBe: 0}]}"),
    Row("metric:rowCount", "`quality` metric `rowCount`", "the table's number of rows, against the operator",
        OBJECT, "{quality: [{metric: rowCount, mustBeGreaterThan: 0}]}"),
    Row("quality:sql", "`quality` `type: sql`", "the one value the query returns, against the operator (one "
        "read-only SELECT of the contract's own tables, judged by sqlglot before it runs)", OBJECT,
        "{quality: [{type: sql, query: 'SELECT COUNT(*) FROM {object} WHERE amount < 0', mustBe: 0}]}"),
    Row("quality:text", "`quality` `type: text`", "nothing: it is prose for people", OBJECT,
        "{quality: [{type: text, description: Refunds are approved by finance.}]}"),
    Row("quality:custom", "`quality` `type: custom`", "nothing: it runs in the engine it names", OBJECT,
        "{quality: [{type: custom, engine: soda, implementation: 'row_count > 0'}]}"),
    Row("quality:v30_rule", "a v3.0 `rule` with no v3.1 metric", "nothing; v3.0's known rules "
        "(`duplicateCount`, `validValues`, …) become the v3.1 metrics above", OBJECT,
        "{quality: [{rule: averageValue, mustBeGreaterThan: 10}]}", api="v3.0.0"),
    Row("sla:latency", "SLA `latency` (or `freshness`) with an `element`", "the newest value of the column is "
        "at most that old (also Dagster's freshness policy of the asset)", SLA,
        "{property: latency, value: 1, unit: d, element: orders.created_at}"),
    Row("sla:*", "any other SLA property", "nothing: it describes the service", SLA,
        "{property: retention, value: 3, unit: y}"),
]


def document_of(row: Row) -> dict:
    """The base contract with the row's example in place (a property replaces the one of its name)."""
    doc = copy.deepcopy(BASE)
    doc["apiVersion"] = row.api
    if row.api.startswith("v3.0"):  # `timestamp` is v3.1 vocabulary
        for obj in doc["schema"]:
            obj["properties"] = [{**p, "logicalType": "date"} if p["logicalType"] == "timestamp" else p
                                 for p in obj["properties"]]
    fragment = yaml.safe_load(row.example)
    orders = doc["schema"][0]
    if row.where == PROPERTY:
        orders["properties"] = [fragment if p["name"] == fragment["name"] else p for p in orders["properties"]]
    elif row.where == OBJECT:
        orders.update(fragment)
    elif row.where == SLA:
        doc["slaProperties"] = [fragment]
    else:
        doc["schema"] = [orders if o["name"] != fragment["name"] else fragment for o in doc["schema"]]
    return doc


def compiled(row: Row) -> tuple[LoadResult, list[Problem]]:
    """The row's contract as `dq-contracts validate` loads it, from a file in a folder of its own:
    the load, and every problem `validate` would print (its not-enforced warnings too)."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "contracts" / "shop.odcs.yaml"
        path.parent.mkdir()
        path.write_text(yaml.safe_dump(document_of(row), sort_keys=False))
        result = load_contracts([path])
        return result, [*result.problems, *not_enforced_problems(result)]  # read while the file is there


def outcome(row: Row, result: LoadResult) -> str:
    """What the example compiles to, as the README says it: `kind`: `name`, or not enforced."""
    plan = result.plans[0]
    if row.clause == "schema":  # every object has one; the example's is the customers object's
        found = [c for o in plan.objects if o.name == "customers" for c in o.checks if c.kind == "schema"]
    else:
        found = [c for o in plan.objects for c in o.checks if c.kind != "schema"]
    if found:
        return "; ".join(f"`{c.kind}` → `{c.name}`" for c in found)
    return "; ".join(f"not enforced, `{n.code}`: {n.reason}" for n in plan.not_enforced)


def kind_of(clause: str) -> str | None:
    """The check kind the clause compiles to, by the check kinds' table."""
    return next((k.name for k in CHECK_KINDS.values() if clause in k.clauses), None)


def region() -> str:
    missing = sorted({*CLAUSES, PRIMARY_KEY} - {row.clause for row in ROWS})
    if missing:  # a new clause is documented before its reference is written
        raise SystemExit(f"no reference row for clause(s) {', '.join(missing)}: add a Row to {__file__}")
    lines = [BEGIN, "", "Each example is a fragment of this contract: a property replaces the one of its name,",
             "an object the object of its name, object keys go into `orders`, an SLA into `slaProperties`:",
             "", "```yaml", BASE_TEXT.rstrip(),
             "```", "", "| clause | what it checks | where | example | check kind → default name |",
             "|---|---|---|---|---|"]
    for row in ROWS:
        lines.append(f"| {row.written} | {row.what} | `{row.where}` | `{row.example}`"
                     f"{' (in a v3.0 contract)' if row.api.startswith('v3.0') else ''} | "
                     f"{outcome(row, compiled(row)[0])} |")
    lines += ["", END]
    return "\n".join(lines)


def readme_region(text: str) -> str:
    start, end = text.index(BEGIN), text.index(END) + len(END)
    return text[start:end]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when README.md's region differs")
    args = parser.parse_args(argv)
    text = README.read_text()
    fresh = region()
    if args.check:
        return 0 if readme_region(text) == fresh else 1
    README.write_text(text.replace(readme_region(text), fresh))
    return 0


if __name__ == "__main__":
    sys.exit(main())
