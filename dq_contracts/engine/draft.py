"""What `dq-contracts init` measures of an existing table: its columns as the catalog spells their
types (the schema check's read, engine/dialects.py `catalog_columns`) and, in one aggregate scan per
table on the read-only, time-limited session `check` uses (engine/sessions.py): rows, and per column
its NULLs, exact distinct count, range (numbers, dates, timestamps; a number's of its finite values,
its NaNs and infinities counted) and longest text. A column whose name suggests personal data, or
that the contract compared with (or any contract loaded with it) classifies, has its counts alone
measured. Only a text column with
few distinct values and neither has its values read (one bounded DISTINCT query): nothing else of
the data leaves the warehouse. Files (a file server's
Files) are read as `check` reads them: their columns as DuckDB's reader types them, scanned by that
reader in the same one query. odcs/draft.py writes the document."""

from __future__ import annotations

import contextlib
import datetime as dt
from dataclasses import dataclass, field
from typing import Any, Collection, Mapping

import sqlalchemy as sa

from dq_contracts.engine.connections import Connection, endpoint_of, engine_for
from dq_contracts.engine.results import StatementTimeout, scrub
from dq_contracts.engine.results import withheld as kind_of_error
from dq_contracts.engine.dialects import dialect_of
from dq_contracts.engine.other_names import ANY_COLUMN, classified_read
from dq_contracts.engine.schema_check import DESCRIBE_FILES, family_of, logical_mismatch, resolve_types, type_differs
from dq_contracts.odcs.drift import column_of
from dq_contracts.engine.sessions import DEFAULT_TIMEOUT_SECONDS, read_only
from dq_contracts.odcs.draft import FEW_VALUES, few_values, withheld

# the families whose values compare (a range is measured) and whose distinct values can be counted
RANGED = ("integer", "number", "date", "timestamp")
COUNTED = ("integer", "number", "string", "boolean", "date", "timestamp", "time")


@dataclass
class ColumnMeasure:
    name: str
    type_text: str
    family: str | None
    nulls: int = 0
    distinct: int | None = None
    minimum: Any = None
    maximum: Any = None
    max_length: int | None = None
    values: list[str] | None = None  # a low-cardinality text column's values (never a personal one's)
    nans: int = 0  # a number column's NaNs, -Infinity and +Infinity: its range is of its finite values
    below: int = 0
    above: int = 0
    withheld: str | None = None  # why nothing but counts is read of it (odcs/draft.withheld)


@dataclass
class TableMeasure:
    name: str
    rows: int
    columns: list[ColumnMeasure] = field(default_factory=list)
    # init --against: per property key, whether its declared (physicalType, logicalType) differ from the column's
    verdicts: dict[str, tuple[bool, bool]] = field(default_factory=dict)
    measured_at: dt.datetime = field(default_factory=lambda: dt.datetime.now(dt.timezone.utc))


def _measures(column: ColumnMeasure, value: sa.ColumnElement, row: Any) -> list[tuple[str, Any]]:
    """(what, SQL expression) of one column, as labels of the table's one scan: of a withheld one
    (personal, classified), counts alone."""
    out = [("count", sa.func.count(value))]
    if column.family in COUNTED:
        out.append(("distinct", sa.func.count(sa.distinct(value))))
    if column.withheld:
        return out
    if column.family == "number" and row.nan is not None:
        # x - x is 0 for every finite number, NaN for NaN and ±Infinity (as check_kinds' multipleOf):
        # the range is of the finite values, and the others are counted, since each fails a bound
        finite, nan = (value - value) == 0, row.nan(value)
        odd = sa.and_(sa.not_(finite), sa.not_(nan))
        return out + [("minimum", sa.func.min(sa.case((finite, value)))),
                      ("maximum", sa.func.max(sa.case((finite, value)))),
                      ("nans", sa.func.count(sa.case((nan, 1)))),
                      ("below", sa.func.count(sa.case((sa.and_(odd, value < 0), 1)))),
                      ("above", sa.func.count(sa.case((sa.and_(odd, value > 0), 1))))]
    if column.family in RANGED:
        out += [("minimum", sa.func.min(value)), ("maximum", sa.func.max(value))]
    if column.family == "string":
        # as the maxLength check measures it: the value cast to text (a uuid has no length of its own)
        out.append(("max_length", sa.func.max(row.length(sa.cast(value, sa.String)))))
    return out


def _source(connection: sa.Connection, name: str, schema: str | None, files: Any) -> tuple[list[dict], Any]:
    """The table's columns as its catalog spells their types (files: as DuckDB's reader types them,
    as the schema check reads them), and the table to scan."""
    from dq_contracts.engine.sql import table_for

    if hasattr(files, "attach"):
        raise LookupError("init reads csv, parquet or json files, not Delta or Iceberg tables")
    if files is not None:
        try:
            path = files.path_of(name)
        except FileNotFoundError as exc:  # no file of the object's left: gone, as a table dropped
            raise TableGone(str(exc)) from None
        try:
            rows = connection.execute(DESCRIBE_FILES[files.format], {"path": path}).fetchall()
        except sa.exc.DBAPIError as exc:
            raise LookupError(f"the files {files.pattern_of(name)} cannot be read as {files.format}: "
                              f"{str(exc.orig).splitlines()[0]}") from exc
        catalog = [{"name": column, "type_text": str(type_text), "resolved": str(type_text)}
                   for column, type_text, *_ in rows]
        return catalog, table_for(name, None, [str(c["name"]) for c in catalog], files=files)
    parts = name.split(".")
    *prefix, table_name = parts if len(parts) > 1 or not schema else [schema, name]
    catalog = dialect_of(connection.dialect.name).catalog_columns(connection, prefix, table_name)
    if not catalog:
        raise TableGone(f"table {name} does not exist (or has no columns)")
    return catalog, sa.table(table_name, *(sa.column(str(c["name"])) for c in catalog),
                             schema=".".join(prefix) or None)


def _verdicts(connection: sa.Connection, catalog: list[dict], columns: list[ColumnMeasure],
              declared: Mapping[str, tuple[Any, Any]]) -> dict[str, tuple[bool, bool]]:
    """Per declared property, whether its physicalType and logicalType differ from its column's, judged
    as the schema check judges them (the engine's own type names where it resolves them)."""
    by_name = {str(c["name"]): c for c in catalog}
    resolved = resolve_types(connection, [str(physical) for physical, _ in declared.values() if physical])
    verdicts = {}
    for key, (physical, logical) in declared.items():
        column = column_of(columns, key)
        if column is not None:
            verdicts[key] = (bool(physical) and type_differs(connection, by_name[column.name], str(physical),
                                                             resolved[str(physical)]),
                             bool(logical) and logical_mismatch(logical, column.type_text))
    return verdicts


def measure_table(connection: sa.Connection, name: str, schema: str | None, files: Any = None,
                  declared: Mapping[str, tuple[Any, Any]] | None = None,
                  classified: Collection[str] = ()) -> TableMeasure:
    """`classified`: the columns (as the contract names them) the contract compared with classifies."""
    row = dialect_of(connection.dialect.name)
    catalog, table = _source(connection, name, schema, files)
    columns = [ColumnMeasure(str(c["name"]), str(c["type_text"]), family_of(str(c["type_text"]))) for c in catalog]
    for key in classified:
        for column in columns if key == ANY_COLUMN else [column_of(columns, key)]:
            if column is not None:
                column.withheld = "a contract of its table classifies it"
    for column in columns:
        column.withheld = withheld(column)
    labels: list[sa.ColumnElement] = [sa.func.count().label("rows")]
    for i, column in enumerate(columns):
        labels += [expr.label(f"c{i}_{what}") for what, expr in _measures(column, table.c[column.name], row)]
    found = connection.execute(sa.select(*labels).select_from(table)).mappings().one()
    measured = TableMeasure(name, int(found["rows"]), columns)
    for i, column in enumerate(columns):
        column.nulls = measured.rows - int(found[f"c{i}_count"])
        for what in ("distinct", "minimum", "maximum", "max_length", "nans", "below", "above"):
            if f"c{i}_{what}" in found:
                setattr(column, what, found[f"c{i}_{what}"])
        if column.family == "string" and few_values(column.distinct, measured.rows) and not column.withheld:
            value = table.c[column.name]
            query = sa.select(value).where(value.isnot(None)).distinct().limit(FEW_VALUES + 1)
            column.values = sorted(str(v) for v in connection.execute(query).scalars())
    if declared:
        measured.verdicts = _verdicts(connection, catalog, columns, declared)
    return measured


def url_connection(url: sa.URL, schema: str | None) -> Connection:
    """The connection of an operator's URL given on the command line."""
    return Connection(url, schema, tuple(s for s in (url.password,) if s))


class TableGone(LookupError):
    """A table the catalog does not have (or has no column of)."""


def _classified_read(plan: Any, tables: list[str], connection: Connection, timeout_seconds: float) -> dict:
    """other_names.classified_read on an engine of the connection's own, disposed after."""
    if not plan.classified_tables or connection.files is not None:
        return {}
    engine = engine_for(connection)
    try:
        return classified_read(plan, tables, engine, connection.schema, connection.files, timeout_seconds)
    finally:
        engine.dispose()


def measure(connection: Connection, tables: list[str], timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
            declared: Mapping[str, Mapping[str, tuple[Any, Any]]] | None = None,
            classified: Mapping[str, Collection[str]] | None = None,
            gone: list[str] | None = None) -> list[TableMeasure]:
    """Each table measured on one read-only, time-limited session of the connection's engine; with
    `declared` (per table, its properties' declared types: odcs/drift.declared_types), each judged;
    `classified`: per table, the columns the contract classifies (counted only, as personal ones).
    With `gone`, a table that does not exist is put there and the others are measured; else TableGone."""
    schema, files, url, secrets = connection.schema, connection.files, connection.url, connection.secrets
    try:
        engine = engine_for(connection)
    except ImportError as exc:  # the URL's driver is not installed
        raise Unreachable(f"cannot connect to {endpoint_of(url)}: its driver {url.drivername} needs the Python "
                          f"module {exc.name}, which is not installed here") from None
    measured: list[TableMeasure] = []
    try:
        with contextlib.ExitStack() as stack:
            try:
                session = stack.enter_context(read_only(engine, timeout_seconds))
            except (sa.exc.DBAPIError, ImportError) as exc:
                # connecting and beginning read no data: the driver's first line says what failed
                said = scrub(str(getattr(exc, "orig", None) or exc), secrets) or type(exc).__name__
                raise Unreachable(f"cannot connect to {endpoint_of(url)}: {said}") from None
            for name in tables:
                try:
                    measured.append(measure_table(session, name, schema, files, (declared or {}).get(name),
                                                  (classified or {}).get(name, ())))
                except TableGone:  # found so by a catalog query that failed nothing: the session goes on
                    if gone is None:
                        raise
                    gone.append(name)
            return measured
    except StatementTimeout as exc:
        raise Unreachable(f"table {tables[len(measured) + len(gone or ())]} on {endpoint_of(url)}: {exc}") from None
    except sa.exc.DBAPIError as exc:  # a scan the database refused (a grant, a bad value): its message may quote data
        raise Unreachable(f"table {tables[len(measured) + len(gone or ())]} on {endpoint_of(url)} cannot be measured: "
                          f"{kind_of_error(exc, 'its scan', 'it may quote a value of the data')}") from None
    finally:
        engine.dispose()


class Unreachable(LookupError):
    """The endpoint cannot be reached, or its session begun: said with the endpoint, never a password."""


@dataclass
class Drift:
    """`init --against`'s answer: the diff for the tables still there, and each object whose table is gone."""

    diff: str
    gone: list[tuple[str, str, str]]  # (the object's name, its table or files, where they are gone from)


class ContractRefused(ValueError):
    """`init --against`: a contract `check` refuses (its problems, as check says them); nothing is measured."""

    def __init__(self, file: str, problems: tuple) -> None:
        super().__init__(f"--against {file}: check refuses this contract")
        self.problems = problems


@dataclass
class Checked:
    """A contract as `check CONTRACTS` loads it: its plan (classifications shared), and every plan
    loaded with it (what they classify applies to its tables)."""

    plan: Any
    plans: list


def as_checked(file: str, contracts: str | None = None, server_name: str | None = None) -> Checked:
    """The contract `file` loaded as `check CONTRACTS [--server NAME]` loads it (CONTRACTS: default,
    the file's own folder): the same schema validation, operator's refusals (binding, roots,
    `_SCHEMAS`) and default root (the folder holding CONTRACTS), before anything connects.
    ContractRefused when check would refuse it."""
    import os

    from dq_contracts.odcs.load import load_contracts

    if not os.path.isfile(file):  # said at once: no folder is read for it
        raise ValueError(f"--against {file}: {'not a regular file' if os.path.exists(file) else 'no such file'}")
    folder = contracts or os.path.dirname(file) or "."
    if not os.path.isdir(folder):
        raise ValueError(f"--contracts {folder}: no such folder")
    real = os.path.realpath(file)
    if not real.startswith(os.path.realpath(folder).rstrip(os.sep) + os.sep):
        raise ValueError(f"--against {file} is not inside --contracts {folder}: give the folder check reads it in")

    def mine(path: str) -> bool:
        return os.path.realpath(path) == real

    loaded = load_contracts([folder], server=server_name)
    if not any(mine(p.file) for p in (*loaded.plans, *loaded.problems)):  # a name the folder's walk passes over
        loaded = load_contracts([folder, file], server=server_name)
    refused = next((r for r in loaded.rejected if mine(r.file)), None)
    if refused is not None:
        raise ContractRefused(file, refused.problems)
    plan = next((p for p in loaded.plans if mine(p.file)), None)
    if plan is None:
        raise ValueError(f"--against {file}: not a contract")
    return Checked(plan, loaded.plans)


def drift(connection: Connection | None, file: str, tables: list[str] | None,
          timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS, object_type: str = "table",
          server_name: str | None = None, checked: Checked | None = None) -> Drift:
    """`init --against FILE`: the unified diff from the contract to the contract as its tables are
    now (odcs/drift.py), for the tables still there; empty when nothing changed. The file is loaded
    as `check` loads it (`checked`: default, `as_checked(file)`), never written. `tables`: default,
    every object's; `connection`: default, the contract's first server a check can run against,
    connected as `check` connects it. A column any contract loaded with it classifies is counted only."""
    from pathlib import Path

    from dq_contracts.engine.connections import connection_for
    from dq_contracts.odcs.classification import classified_by_table
    from dq_contracts.odcs.declaration import server_name as name_of
    from dq_contracts.odcs.drift import classified_keys, declared_types, drift_diff, objects_of, table_of
    from dq_contracts.odcs.loader import read_document
    from dq_contracts.odcs.servers import checkable, is_file_server

    checked = checked or as_checked(file, None, server_name)
    plan = checked.plan
    document, problems = read_document(Path(file), explicit=True)
    if document is None or not isinstance(document.data, dict):
        raise ValueError(f"--against {file}: {problems[0].message if problems else 'not a contract'}")
    if connection is None:
        server = next((s for s in plan.servers if checkable(s)), None)
        if server is None:
            raise ValueError(f"--against {file}: no server a check can run against; give --url, --server or --path")
        connection = connection_for(server, folder=plan.folder, root=plan.root)  # as check connects it
        object_type = "file" if is_file_server(dict(server)) else "table"
        server_name = name_of(server)
    tables = tables or [table_of(o) for o in objects_of(document.data) if table_of(o)]
    if not tables:
        raise ValueError(f"--against {file}: no schema object names a table; give --table NAME")
    declared = {t: declared_types(document.data, t) for t in tables}
    # classified by its own object (nested fields, files shared), or by any contract of that table
    of_table = classified_by_table(checked.plans)
    own = {o.physical_name: {c.physical_name for c in o.columns if c.classified} for o in plan.objects}
    classified = {t: classified_keys(document.data, t) | own.get(t, set()) | of_table(t) for t in tables}
    # and through a classified table it reads under another name (a partition, a view: the catalog says)
    for table, columns in _classified_read(plan, tables, connection, timeout_seconds).items():
        classified[table] = classified[table] | columns
    gone: list[str] = []
    measured = measure(connection, tables, timeout_seconds, declared, classified, gone)
    diff = drift_diff(document.text, document.data, measured, {t.name: t.verdicts for t in measured}, file,
                      object_type, document.is_json) if measured else ""
    objects = {table_of(o): str(o.get("name") or table_of(o)) for o in objects_of(document.data)}
    server = f" (server {server_name})" if server_name else ""  # the endpoint, and its name when the contract's

    def where(table: str) -> str:
        return (f"files {connection.files.pattern_of(table)}" if connection.files
                else endpoint_of(connection.url)) + server

    return Drift(diff, [(objects.get(t, t), f"{object_type} {t}", where(t)) for t in gone])
