"""The draft contract `dq-contracts init` writes (engine/draft.py measures the tables): ODCS v3.1.0
YAML with one schema object per table, each property's `physicalType` as the engine spells it and its
`logicalType` from the type's family, and suggested clauses, each marked by a comment saying what was
measured. Every value is written by one YAML emitter (`_y`: yaml's, a list as one flow sequence,
read back before it is written; never quoted or joined by hand), every comment as printable ASCII;
the server entry has the URL's endpoint, never its user or password. Pure: it reads the measures as
plain attributes."""

from __future__ import annotations

import datetime as dt
import math
import os
import re
import sys
from typing import Any, Iterable

import yaml

from dq_contracts.odcs.declaration import is_remote
from dq_contracts.odcs.servers import ENDPOINT, FORMAT_EXTENSIONS
from dq_contracts.odcs.servers import server_type as server_type_row

MARK = "# suggested by dq-contracts init:"
FEW_VALUES = 10  # a text column with at most this many distinct values gets its validValues
# What a column's name says it holds, when it is about a person: such a column has no value of it
# read (engine/draft.py) nor written, nor its range, earliest date or longest length. Each row: the
# category, words the name holds whole (its snake_case or camelCase words: `ip` is not `zip`), and
# stems it holds anywhere once separators are dropped (`birth` in `dateOfBirth`, `nationalid` in
# `National_ID`). Erring wide costs a suggestion; erring narrow writes a person's data into a file.
PERSONAL = (
    ("contact", ("ip", "ipv4", "ipv6", "zip", "tel", "fax", "city", "mobile", "msisdn", "imei", "mac"),
     ("mail", "phone", "address", "ipaddr", "street", "postcode", "postal", "zipcode")),
    ("identity", ("age", "sex", "user", "login", "alias", "nick", "face"),
     ("name", "gender", "nationality", "citizenship", "maiden", "signature", "photo")),
    ("location", ("lat", "lon", "lng", "gps", "geo"), ("latitude", "longitude", "geoloc", "coordinate")),
    ("date of birth", ("dob", "born"), ("birth",)),
    ("government id", ("ssn", "sin", "nin", "tin", "nhs", "ein", "npi", "bsn", "cpf", "nric", "aadhaar", "visa", "dni",
      "vin"),
     ("passport", "nationalid", "nationalinsurance", "socialsecurity", "tax", "license", "licence", "idcard",
      "idnumber", "residency")),
    ("financial", ("pan", "cc", "cvv", "cvc", "bic", "swift", "pin", "wage", "wages", "bonus", "debt", "loan"),
     ("salary", "income", "iban", "account", "card", "credit", "earning", "payroll", "bank", "networth",
      "mortgage", "pension")),
    ("credentials", ("pwd", "otp", "salt", "hash"),
     ("password", "passwd", "secret", "token", "apikey", "credential", "privatekey")),
    ("criminal record", (), ("criminal", "conviction", "offence", "offense")),  # GDPR art. 10
    # the special categories of GDPR art. 9
    ("health", ("bmi", "icd", "hiv", "covid"),
     ("health", "medic", "diagnos", "disease", "illness", "disab", "pregnan", "symptom", "prescri", "allerg",
      "treatment", "patient", "clinic", "blood", "mental", "therap", "vaccin")),
    ("racial or ethnic origin", ("race", "races"), ("ethnic", "racial")),
    ("religion or belief", ("faith", "caste"), ("religio", "belief", "church", "denomination")),
    ("political opinion", ("vote", "voter"), ("politic",)),
    ("trade union membership", ("union",), ("tradeunion",)),
    ("sex life or sexual orientation", ("lgbt", "lgbtq"), ("sexual", "orientation")),
    ("biometric or genetic data", ("dna", "iris", "rna"),
     ("biometr", "fingerprint", "genetic", "genome", "genotype", "retina", "voiceprint", "faceprint")),
)
KEY_FAMILIES = ("integer", "string")


def few_values(distinct: int | None, rows: int) -> bool:
    """Values repeated, and few of them: a set of valid values, not a key (each value once)."""
    return distinct is not None and 0 < distinct <= FEW_VALUES and distinct < rows


def personal_category(name: str) -> str | None:
    """The category of personal data the column's name suggests (PERSONAL), None where none."""
    words = set(re.split(r"[^a-z0-9]+", re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()))
    compact = re.sub(r"[^a-z0-9]+", "", name.lower())
    return next((category for category, whole, stems in PERSONAL
                 if words & set(whole) or any(stem in compact for stem in stems)), None)


def personal(name: str) -> bool:
    return personal_category(name) is not None


def withheld(column: Any) -> str | None:
    """Why no value of the column is written (engine/draft.py read none either): its name suggests
    personal data, or the contract init compares with classifies it; None where nothing is withheld."""
    said = getattr(column, "withheld", None)
    category = personal_category(column.name)
    return said or (f"its name suggests personal data ({category})" if category else None)


class _OneLine(yaml.SafeDumper):
    """yaml.safe_dump's emitter, with text that is not all printable (a line break, a NUL, a lone
    surrogate) double-quoted: its escapes keep it on its line, and it is read back as it was."""


_OneLine.add_representer(str, lambda dumper, text: dumper.represent_scalar(
    "tag:yaml.org,2002:str", text, style=None if text.isprintable() else '"'))


def _y(value: Any) -> str:
    """One YAML scalar or flow sequence on one line, emitted by yaml as a whole (a list's items are
    quoted as items of a flow sequence: `a, b` or `x]` is one item), ASCII, never folded."""
    text = yaml.dump(value, Dumper=_OneLine, default_flow_style=True, allow_unicode=False, width=sys.maxsize)
    text = text.removesuffix("\n").removesuffix("\n...")
    if "\n" in text or not _same(_read_back(text), value):  # a lone surrogate: libyaml refuses its escape
        raise Unwritable(f"{_comment(repr(value))[:80]} cannot be written as YAML that reads back the same")
    return text


class Unwritable(ValueError):
    """A value the contract's YAML cannot hold as it is."""


def _read_back(text: str) -> Any:
    """The value as validate and check read it (odcs/loader.py's loader)."""
    from dq_contracts.odcs.loader import _NoTimestampLoader

    try:
        return yaml.load(text, Loader=_NoTimestampLoader)  # noqa: S506 (the safe loader's subclass)
    except yaml.YAMLError:
        return Unwritable


def _same(read: Any, value: Any) -> bool:
    if isinstance(value, (list, tuple)):
        return isinstance(read, list) and len(read) == len(value) and all(map(_same, read, value))
    if isinstance(value, float) and math.isnan(value):
        return isinstance(read, float) and math.isnan(read)
    return read == value and isinstance(read, str) == isinstance(value, str) \
        and isinstance(read, bool) == isinstance(value, bool)


def _comment(text: str) -> str:
    """Text for a comment, which ends at a line break: anything not printable ASCII escaped."""
    return "".join(c if c.isascii() and c.isprintable() else ascii(c)[1:-1] for c in text)


def _round(value: Any, outward: Any) -> int | float:
    """`value` to a round number (its leading digit), floor or ceil: 1234 → 1000 / 2000, 0.37 → 0.3 / 0.4."""
    if isinstance(value, int) and not isinstance(value, bool):  # exactly: a HUGEINT's bound is no float's
        step = 10 ** (len(str(abs(value))) - 1)
        return (value // step if outward is math.floor else -(-value // step)) * step
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


def _marked(text: str) -> str:
    """A suggestion's comment: what was measured, one line of printable ASCII."""
    return f"{MARK} {_comment(text)}"


def _property(column: Any, rows: int, table: Any) -> list[str]:
    out = [f"      - name: {_y(column.name)}", f"        physicalName: {_y(column.name)}",
           f"        physicalType: {_y(column.type_text)}"]
    if column.family in ("integer", "number", "string", "boolean", "date", "timestamp", "time", "array", "object"):
        out.append(f"        logicalType: {column.family}")
    hidden = withheld(column)
    if hidden:  # counts alone: no range, date, length or value of it
        out.append(f"        {_marked(f'no value, range or length of it is read or written: {hidden}')}")
        if personal(column.name):  # classified, check takes no sample of it either
            out.append(f"        classification: pii  {_marked('so that check shows no value of it')}")
    if rows and column.nulls == 0:
        out.append(f"        required: true  {_marked(f'no NULL in {rows} row(s)')}")
    unique = rows and column.distinct == rows and column.nulls == 0
    if unique and _is_key(column) and sum(1 for c in table.columns if c.distinct == rows and _is_key(c)) == 1:
        out.append(f"        primaryKey: true  {_marked(f'{rows} distinct non-NULL value(s) in {rows} row(s), named as a key')}")
    elif unique and column.family in KEY_FAMILIES:  # a timestamp or an amount unique today is chance, not a rule
        out.append(f"        unique: true  {_marked(f'{column.distinct} distinct value(s) in {rows} row(s)')}")
    if hidden:
        return out + _quality(_null_budget(column, rows))
    options = []
    if column.family in ("integer", "number"):
        bounds, said = _bounds(column)
        if _is_key(column) and any(key == "maximum" for key, _ in bounds):  # ids grow: tomorrow's is higher
            bounds = [(key, value) for key, value in bounds if key != "maximum"]
            said += "; no maximum: a key grows"
        out += [f"        {_marked(said)}"] if said and not bounds else []
        options += [f"          {key}: {_y(value)}  {_marked(said)}" for key, value in bounds]
    if column.family == "date" and isinstance(column.minimum, dt.date):  # no maximum: new rows are newer
        low = dt.date(column.minimum.year, 1, 1).isoformat()
        options.append(f"          minimum: {_y(low)}  "
                       f"{_marked(f'earliest {column.minimum.isoformat()}, rounded down to its year')}")
    if column.family == "string" and column.max_length is not None:
        options.append(f"          maxLength: {_y(int(column.max_length))}  "
                       f"{_marked(f'longest value {int(column.max_length)} character(s)')}")
    if options:
        out += ["        logicalTypeOptions:", *options]
    return out + _quality(_valid_values(column, rows) + _null_budget(column, rows))


def _quality(rules: list[str]) -> list[str]:
    """The property's quality list; comments alone are the property's (a `quality:` of none is null)."""
    if all(line.lstrip().startswith("#") for line in rules):
        return [line.replace("          #", "        #", 1) for line in rules]
    return ["        quality:", *rules]


def _valid_values(column: Any, rows: int) -> list[str]:
    if not column.values:
        return []
    try:
        listed = _y(list(column.values))
    except Unwritable:
        return [f"          {_marked('no validValues: a value cannot be written as YAML that reads back the same')}"]
    return [f"          {_marked(f'{len(column.values)} distinct value(s) in {rows} row(s)')}",
            "          - metric: invalidValues", "            arguments:", f"              validValues: {listed}",
            "            mustBe: 0"]


def _bounds(column: Any) -> tuple[list[tuple[str, Any]], str]:
    """A number column's (key, bound) suggestions and what they say was measured: the range of its
    finite values, rounded outward. A NaN fails every bound and -Infinity a minimum, +Infinity a
    maximum (as check judges them), so a bound one of those would fail on the table today is left
    out, and the comment says what was seen."""
    odd = [(getattr(column, what, 0) or 0, said) for what, said in
           (("nans", "NaN"), ("below", "-Infinity"), ("above", "+Infinity"))]
    seen = ", ".join(f"{n} {said}" for n, said in odd if n)
    if column.minimum is None:
        return [], f"no bound: every value is NaN or infinite ({seen})" if seen else ""
    said = f"observed {column.minimum} to {column.maximum}" + (f" (finite values; also {seen})" if seen else "")
    (nans, _), (below, _), (above, _) = odd
    bounds = [(key, _round(value, outward)) for key, value, outward, fails in
              (("minimum", column.minimum, math.floor, nans or below),
               ("maximum", column.maximum, math.ceil, nans or above)) if not fails]
    if len(bounds) < 2:
        said += "; no " + " or ".join(k for k in ("minimum", "maximum") if k not in dict(bounds)) + \
            ": a value seen fails it"
    return bounds, said + (", rounded outward" if bounds else "")


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
    return [f"          {_marked(f'{column.nulls} NULL(s) in {rows} row(s) ({share:.3g} %); warn above that, ')}"
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
    row = server_type_row(server_type)
    key = row.schema_key if row is not None else "schema"  # a Hive server's schema is its `database`
    entry = dict(fields)
    if schema and key in server_fields(server_type):
        entry[key] = schema
    return entry_lines(entry)


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
             "apiVersion: v3.1.0", "kind: DataContract", f"id: {_y(contract_id)}",
             f"name: {_y(tables[0].name)}",  # a name per draft: two drafts in one folder do not clash
             "version: 0.1.0", "status: draft", "servers:", *server, "schema:"]
    newest: tuple[float, str, str] | None = None
    for table in tables:
        name = table.name.split(".")[-1]
        lines += object_lines(table, object_type)
        for column in table.columns:
            if column.family == "timestamp" and column.maximum is not None and not withheld(column):
                age = _age_days(column.maximum, table.measured_at)
                if newest is None or age < newest[0]:
                    newest = (age, name, column.name)
    if newest is not None:
        days = max(1, math.ceil(newest[0] * 2))
        element = _y(newest[1] + "." + newest[2])  # a name in a comment is dumped too: no newline gets in
        lines += ["slaProperties:", f"  {_marked(f'newest {element} was {newest[0]:.2f} d old; twice that, at least 1 d')}",
                  "  - property: latency", f"    value: {days}", "    unit: d", f"    element: {element}"]
    return "\n".join(lines) + "\n"
