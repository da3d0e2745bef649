"""The draft contract `dq-contracts init` writes (engine/draft.py measures the tables): ODCS v3.1.0
YAML with one schema object per table, each property's `physicalType` as the engine spells it and its
`logicalType` from the type's family, and suggested clauses, each marked by a comment saying what was
measured. Every value is written by yaml.safe_dump (never quoted by hand); the server entry has the
URL's endpoint, never its user or password. Pure: it reads the measures as plain attributes."""

from __future__ import annotations

import datetime as dt
import math
import os
import re
from typing import Any, Iterable

import yaml

from dq_contracts.odcs.declaration import is_remote
from dq_contracts.odcs.servers import ENDPOINT, FORMAT_EXTENSIONS
from dq_contracts.odcs.servers import server_type as server_type_row

MARK = "# suggested by dq-contracts init:"
FEW_VALUES = 10  # a text column with at most this many distinct values gets its validValues
# a column whose name holds one of these has no value of it written (nor read: engine/draft.py)
PERSONAL_WORDS = ("mail", "name", "phone", "address", "ssn", "birth", "card", "passport", "iban", "account",
                  "password", "secret", "token", "street", "postcode", "salary", "tax")
PERSONAL_TOKENS = ("ip", "dob", "zip", "city", "tel", "mobile", "gender", "age", "pan", "cvv", "user")
KEY_FAMILIES = ("integer", "string")


def few_values(distinct: int | None, rows: int) -> bool:
    """Values repeated, and few of them: a set of valid values, not a key (each value once)."""
    return distinct is not None and 0 < distinct <= FEW_VALUES and distinct < rows


def personal(name: str) -> bool:
    lowered = name.lower()
    tokens = set(re.split(r"[^a-z0-9]+", re.sub(r"(?<=[a-z])(?=[A-Z])", "_", name).lower()))
    return any(w in lowered for w in PERSONAL_WORDS) or bool(tokens & set(PERSONAL_TOKENS))


def _y(value: Any) -> str:
    """One YAML scalar or flow sequence on one line, as yaml.safe_dump writes it: a text that is not
    all printable (a newline, a tab) double-quoted, so its escapes keep it on its line."""
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_y(v) for v in value) + "]"
    style = '"' if isinstance(value, str) and not value.isprintable() else None
    text = yaml.safe_dump(value, default_flow_style=True, allow_unicode=False, width=1 << 20, default_style=style)
    return text.removesuffix("\n").removesuffix("\n...").strip()


def _round(value: Any, outward: Any) -> int | float:
    """`value` to a round number (its leading digit), floor or ceil: 1234 → 1000 / 2000, 0.37 → 0.3 / 0.4."""
    number = float(value)
    if number == 0 or not math.isfinite(number):
        return 0 if number == 0 else number
    step = 10.0 ** math.floor(math.log10(abs(number)))
    rounded = outward(number / step) * step
    rounded = float(f"{rounded:.12g}")
    return int(rounded) if rounded.is_integer() else rounded


def _is_key(column: Any) -> bool:
    name = column.name.lower()
    return column.family in KEY_FAMILIES and (name == "id" or name.endswith("_id"))


def _age_days(newest: Any, now: dt.datetime) -> float:
    if isinstance(newest, dt.datetime):
        newest = newest if newest.tzinfo else newest.replace(tzinfo=dt.timezone.utc)
    elif isinstance(newest, dt.date):
        newest = dt.datetime(newest.year, newest.month, newest.day, tzinfo=dt.timezone.utc)
    else:
        return 0.0
    return max(0.0, (now - newest).total_seconds() / 86400)


def _property(column: Any, rows: int, table: Any) -> list[str]:
    out = [f"      - name: {_y(column.name)}", f"        physicalName: {_y(column.name)}",
           f"        physicalType: {_y(column.type_text)}"]
    if column.family in ("integer", "number", "string", "boolean", "date", "timestamp", "time", "array", "object"):
        out.append(f"        logicalType: {column.family}")
    if rows and column.nulls == 0:
        out.append(f"        required: true  {MARK} no NULL in {rows} row(s)")
    unique = rows and column.distinct == rows and column.nulls == 0
    if unique and _is_key(column) and sum(1 for c in table.columns if c.distinct == rows and _is_key(c)) == 1:
        out.append(f"        primaryKey: true  {MARK} {rows} distinct non-NULL value(s) in {rows} row(s), "
                   "named as a key")
    elif unique:
        out.append(f"        unique: true  {MARK} {column.distinct} distinct value(s) in {rows} row(s)")
    options = []
    if column.family in ("integer", "number") and column.minimum is not None:
        low, high = _round(column.minimum, math.floor), _round(column.maximum, math.ceil)
        seen = f"observed {column.minimum} to {column.maximum}, rounded outward"
        options += [f"          minimum: {_y(low)}  {MARK} {seen}", f"          maximum: {_y(high)}  {MARK} {seen}"]
    if column.family == "date" and isinstance(column.minimum, dt.date):  # no maximum: new rows are newer
        low = dt.date(column.minimum.year, 1, 1).isoformat()
        options.append(f"          minimum: {_y(low)}  {MARK} earliest {column.minimum.isoformat()}, "
                       "rounded down to its year")
    if column.family == "string" and column.max_length is not None:
        options.append(f"          maxLength: {_y(int(column.max_length))}  {MARK} longest value "
                       f"{int(column.max_length)} character(s)")
    if options:
        out += ["        logicalTypeOptions:", *options]
    quality = []
    if column.values and not personal(column.name):
        quality += [f"          {MARK} {len(column.values)} distinct value(s) in {rows} row(s)",
                    "          - metric: invalidValues", "            arguments:",
                    f"              validValues: {_y(list(column.values))}", "            mustBe: 0"]
    quality += _null_budget(column, rows)
    return out + (["        quality:", *quality] if quality else [])


def _null_budget(column: Any, rows: int) -> list[str]:
    """A column with some NULLs: a nullValues rule that warns above the share measured and fails above
    twice it (each rounded up to its leading digit), so the table passes both levels today; none when
    half the rows or more are NULL (a fail level of 100 % fails nothing)."""
    if not rows or not 0 < column.nulls < rows:
        return []
    share = 100.0 * column.nulls / rows
    warn, fail = _round(share, math.ceil), _round(2 * share, math.ceil)
    if not warn < fail < 100:
        return []
    return [f"          {MARK} {column.nulls} NULL(s) in {rows} row(s) ({share:.3g} %); warn above that, "
            "fail above twice it, rounded up", "          - metric: nullValues", "            unit: percent",
            f"            mustBeLessOrEqualTo: {_y(fail)}", "            customProperties:",
            "              - property: warnThreshold", f"                value: {{mustBeLessOrEqualTo: {_y(warn)}}}"]


def server_entry(url: Any, schema: str | None, server_type: str, database_path: str | None,
                 name: str = "warehouse") -> list[str]:
    """The servers entry of the URL: its type, endpoint (each part of the URL once, as the type's ODCS
    fields name it: Snowflake's host is its `account`) and schema, never its user or password."""
    fields: list[tuple[str, Any]] = [("server", name), ("type", server_type)]
    if database_path is not None:
        fields.append(("database", database_path))
    else:
        row = server_type_row(server_type)
        parts, used = {"host": url.host, "port": url.port, "database": url.database}, set()
        for key, part in (row.endpoint if row is not None else ENDPOINT):
            if parts[part] and part not in used:
                fields.append((key, parts[part]))
                used.add(part)
    if schema and "schema" in server_fields(server_type):
        fields.append(("schema", schema))
    return entry_lines(dict(fields))


def server_fields(server_type: str) -> set[str]:
    """The fields the official ODCS schema gives a server of the type (a Hive server has no `schema`:
    its `database` is one); every field where the schema says nothing of the type."""
    from dq_contracts.odcs.validate import official_schema

    defs = official_schema().get("$defs", {})
    for branch in defs.get("Server", {}).get("allOf", []):
        if (branch.get("if") or {}).get("properties", {}).get("type", {}).get("const") == server_type:
            found = defs
            for part in str((branch.get("then") or {}).get("$ref", "")).split("/")[2:]:
                found = found.get(part, {})
            return set(found.get("properties") or {}) or {"schema"}
    return {"schema"}


def entry_lines(server: dict[str, Any]) -> list[str]:
    """One `servers` entry, a field a line."""
    first, *rest = server.items()
    return [f"  - {first[0]}: {_y(first[1])}", *(f"    {k}: {_y(v)}" for k, v in rest)]


def file_server(path: str, fmt: str | None, server_type: str | None, tables: list[str], folder: str,
                name: str = "files") -> dict[str, Any]:
    """The file server of `init --path`: its format (default: the files' extension's), and the path
    as `check` reads it, relative to the contract's folder (a remote location as written)."""
    if fmt is None:
        fmt = next((f for f, ends in FORMAT_EXTENSIONS.items() if path.lower().endswith(ends)), None)
        if fmt is None:
            raise ValueError(f"--path {path}: say --format csv, parquet or json (the files' extension does not)")
    if len(tables) > 1 and not any(mark in path for mark in ("{object}", "{model}")):
        raise ValueError(f"--path {path} names the files of one table; for several, put {{object}} where "
                         "each table's name goes")
    if not is_remote(path):
        path = os.path.relpath(os.path.abspath(os.path.expanduser(path)), folder)
    return {"server": name, "type": server_type or "local", "format": fmt, "path": path}


def property_lines(column: Any, table: Any) -> list[str]:
    """One column's property, its suggestions marked (a list item indented as in a draft: 6 spaces)."""
    return _property(column, table.rows, table)


def object_lines(table: Any, object_type: str = "table") -> list[str]:
    """One table's schema object, its properties' suggestions marked (a list item indented 2 spaces)."""
    lines = [f"  - name: {_y(table.name.split('.')[-1])}", f"    physicalName: {_y(table.name)}",
             f"    physicalType: {object_type}", "    logicalType: object", "    properties:"]
    for column in table.columns:
        lines += _property(column, table.rows, table)
    return lines


def draft_text(tables: Iterable[Any], server: list[str], contract_id: str, object_type: str = "table") -> str:
    """The whole draft document."""
    tables = list(tables)
    lines = [f"# A draft drawn by dq-contracts init from {len(tables)} table(s): review every suggested clause.",
             "apiVersion: v3.1.0", "kind: DataContract", f"id: {_y(contract_id)}", "name: draft",
             "version: 0.1.0", "status: draft", "servers:", *server, "schema:"]
    newest: tuple[float, str, str] | None = None
    for table in tables:
        name = table.name.split(".")[-1]
        lines += object_lines(table, object_type)
        for column in table.columns:
            if column.family == "timestamp" and column.maximum is not None:
                age = _age_days(column.maximum, table.measured_at)
                if newest is None or age < newest[0]:
                    newest = (age, name, column.name)
    if newest is not None:
        days = max(1, math.ceil(newest[0] * 2))
        element = _y(newest[1] + "." + newest[2])  # a name in a comment is dumped too: no newline gets in
        lines += ["slaProperties:", f"  {MARK} newest {element} was {newest[0]:.2f} d old; "
                  "twice that, at least 1 d",
                  "  - property: latency", f"    value: {days}", "    unit: d", f"    element: {element}"]
    return "\n".join(lines) + "\n"
