"""Delta Lake and Iceberg tables, read through their own libraries (`deltalake`, `pyiceberg`) as
Arrow and scanned by DuckDB in the check session: DuckDB's projections and filters reach the
reader, and no table is loaded whole into memory.

A lake table is registered in the session's in-memory DuckDB under its physical name just before
each statement that names it (`attach`), so every check kind, SQL rules too, reads it as a table:

* **Delta**: the table's Arrow dataset (`DeltaTable.to_pyarrow_dataset()`), opened once per engine,
  so every statement of a run reads one version. DuckDB pushes comparisons on its columns into the
  scan (a partition's `day >= :start AND day < :end` prunes the other partitions' files; a column
  under a cast, such as a text window compared byte by byte, is not pushed).
* **Iceberg**: an Arrow dataset of the data files pyiceberg's scan of one snapshot plans, read by
  the table's current schema. DuckDB's WHERE does not reach pyiceberg's planning, so one partition's
  rows are registered under `name@key` from a scan whose `row_filter` is the partition: pyiceberg
  prunes the files by their partition values and statistics. A batch reader would be wrong here: one
  scan spends it, and a second (the same statement's anti-join, the next statement) sees no rows.
  A snapshot with delete files, or a column renamed since older files were written, is refused.

Trust: the table's folder (Delta) and every file its log or metadata lists must be inside the
operator's roots, or under a remote prefix the operator declared (`_REMOTE`); a table that lists a
file elsewhere fails every check, naming it. The catalog is the operator's (`_CATALOG_URL`), never
the contract's `catalogUrl`, built from the operator's properties alone (never pyiceberg's
configuration of the catalog's name); a SQLite catalog is opened read-only. `opened` keeps the data files each
registration lists, for a person (and a test) to see what a check read.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from dq_contracts.odcs.chosen_names import under_prefix
from dq_contracts.odcs.declaration import inside, is_regular, is_remote


class LakeRefusal(ValueError):
    """A lake table lists a file outside the operator's roots, or its catalog is not declared."""


@dataclass
class _State:
    """The relations a lake's SQL names (by name: the table, and a partition), and the files the
    last registration of each listed."""

    wanted: dict[str, tuple[str, Any]]
    opened: dict[str, list[str]]
    lock: threading.Lock


@dataclass
class _Opened:
    """One engine's tables and datasets, each opened once: every statement of a run reads one
    version (Delta) or snapshot (Iceberg); the next run's engine reads anew."""

    tables: dict[str, Any]
    datasets: dict[str, Any]
    lock: threading.Lock


_STATES: dict[Lake, _State] = {}
_STATES_LOCK = threading.Lock()


@dataclass(frozen=True)
class Lake:
    """The tables of one lake server: `format` delta (`location`: a folder, `{model}` or `{object}`
    standing for the physical name) or iceberg (`location`: the namespace in `catalog`)."""

    format: str
    location: str
    roots: tuple[str, ...] = ()  # real paths every file must be inside
    remote: tuple[str, ...] = ()  # remote prefixes the operator declared
    catalog: tuple[tuple[str, str], ...] = ()  # iceberg: pyiceberg's catalog properties

    # -- what the SQL names ----------------------------------------------------------------------

    def table(self, physical_name: str, columns: list[str], partition: Any = None) -> sa.TableClause:
        """The table as the session names it: the whole table by its physical name; with a
        partition, on Iceberg, that partition's rows (a scan filtered by it) as `name@key`."""
        if "." in physical_name or "@" in physical_name:
            raise LakeRefusal(f"{physical_name}: a lake table is named by one part, without '.' or '@' (its "
                              "server says where it is)")
        name = physical_name
        if partition is not None and self.format == "iceberg":
            name = f"{physical_name}@{partition.key}"
        state = self._state()
        with state.lock:
            state.wanted[name] = (physical_name, partition if name != physical_name else None)
        return sa.table(sa.sql.quoted_name(name, quote=True),
                        *(sa.column(sa.sql.quoted_name(c, quote=True)) for c in dict.fromkeys(columns)))

    def attach(self, engine: sa.Engine) -> None:
        """Register, before each statement, the lake tables it names."""

        cache = _Opened({}, {}, threading.Lock())

        @sa.event.listens_for(engine, "before_cursor_execute")
        def register(conn, cursor, statement, parameters, context, executemany) -> None:
            state = self._state()
            with state.lock:
                wanted = [n for n in state.wanted if '"' + n.replace('"', '""') + '"' in statement]
            driver = conn.connection.driver_connection
            for name in wanted:
                driver.register(name, self.relation(name, cache))

    def allowed(self) -> list[str]:
        return []  # DuckDB reads no file itself: the lake's reader does, inside the roots

    def allowed_files(self) -> list[str]:
        return []

    # -- the readers ------------------------------------------------------------------------------

    def relation(self, name: str, cache: _Opened) -> Any:
        """What DuckDB scans for a registered name: an Arrow dataset, which DuckDB may scan several
        times in one statement (an anti-join reads its table twice; a batch reader would be spent by
        the first scan and give the second no rows)."""
        state = self._state()
        with state.lock:
            physical_name, partition = state.wanted[name]
        with cache.lock:
            known = cache.datasets.get(name)
        if known is not None:
            return known
        table = self._opened(physical_name, cache)
        if self.format == "delta":
            dataset = table.to_pyarrow_dataset()
        else:
            import pyarrow.dataset as pds

            tasks = list(table.scan(row_filter=_iceberg_filter(partition, table.schema())).plan_files())
            if any(task.delete_files for task in tasks):
                raise LakeRefusal(f"table {physical_name} has delete files at this snapshot, which this reader does "
                                  "not apply; not reading it (compact the table)")
            files = [self._inside(task.file.file_path, physical_name) for task in tasks]
            # the files the scan kept, read by the table's current schema (an added column is NULL in
            # older files, as Iceberg says; renamed columns are refused in _opened)
            dataset = pds.dataset(files, schema=table.schema().as_arrow(), format="parquet")
            with state.lock:
                state.opened[name] = files
        with cache.lock:
            return cache.datasets.setdefault(name, dataset)

    def opened(self, name: str) -> list[str]:
        """The data files the last registration of `name` listed (Delta: the table's; Iceberg: the scan's)."""
        state = self._state()
        with state.lock:
            return list(state.opened.get(name, []))

    def location_of(self, physical_name: str) -> str:
        """The folder the table's files are below: a Delta table's, an Iceberg table's location as
        its catalog says (reading its metadata, no row)."""
        if self.format == "delta":
            return self.location.replace("{model}", physical_name).replace("{object}", physical_name)
        return str(self._opened(physical_name, _Opened({}, {}, threading.Lock())).location())

    def columns(self, physical_name: str, driver: Any) -> list[tuple[str, str, bool]]:
        """(name, DuckDB type, nullable) of each column, from the table's own schema: the Delta log,
        the Iceberg metadata. DuckDB names the Arrow types, reading no row."""
        import pyarrow as pa

        table = self._opened(physical_name, _Opened({}, {}, threading.Lock()))
        if self.format == "delta":
            arrow = pa.schema(table.to_pyarrow_dataset().schema)
            nullable = {f.name: f.nullable for f in table.schema().fields}
        else:
            arrow = table.schema().as_arrow()
            nullable = {f.name: not f.required for f in table.schema().fields}
        types = driver.from_arrow(arrow.empty_table()).types
        return [(f.name, str(t), nullable.get(f.name, True)) for f, t in zip(arrow, types)]

    def _opened(self, physical_name: str, cache: _Opened) -> Any:
        """The table, opened once per engine (one version or snapshot for the whole run), every file
        it lists checked against the operator's roots."""
        with cache.lock:
            found = cache.tables.get(physical_name)
        if found is not None:
            return found
        if self.format == "delta":
            from deltalake import DeltaTable

            location = self.location.replace("{model}", physical_name).replace("{object}", physical_name)
            table = DeltaTable(location)
            # the files the dataset reads, as the log lists them (relative to the table, or any URI)
            files = [self._inside(f if os.path.isabs(f) or is_remote(f) else os.path.join(location, f), physical_name)
                     for f in table.to_pyarrow_dataset().files]
        else:
            table = self._catalog().load_table((*self.location.split("."), physical_name))
            files = [self._inside(table.metadata_location, physical_name)]
            _refuse_renames(table, physical_name)
        state = self._state()
        with state.lock:
            state.opened[physical_name] = files
        with cache.lock:
            return cache.tables.setdefault(physical_name, table)

    def _catalog(self) -> Any:
        """The operator's catalog, built from its properties alone: pyiceberg's load_catalog would merge
        in the configuration of the catalog's name (PYICEBERG_CATALOG__<NAME>__*, ~/.pyiceberg.yaml), a
        name the contract chooses, and send another catalog's token to this endpoint."""
        from pyiceberg.catalog import AVAILABLE_CATALOGS, CatalogType

        properties = dict(self.catalog)
        name = properties.pop("name", "dq_contracts")
        kind = properties.setdefault("type", "sql")
        uri = properties.get("uri", "")
        if uri.startswith("sqlite:///") and "mode=ro" not in uri:
            # the catalog is read, never written: SQLite's own read-only mode
            properties["uri"] = "sqlite:///file:" + uri[len("sqlite:///"):] + "?mode=ro&uri=true"
        try:
            build = AVAILABLE_CATALOGS[CatalogType(kind.lower())]
        except (KeyError, ValueError):
            raise LakeRefusal(f"catalog type {kind!r} is not one pyiceberg builds "
                              f"({', '.join(t.value for t in AVAILABLE_CATALOGS)})") from None
        return build(name, properties)

    def _inside(self, uri: str, physical_name: str) -> str:
        """A file a table lists, if the operator lets the server open it; else LakeRefusal."""
        path = uri[len("file://"):] if uri.startswith("file://") else uri
        if is_remote(path):
            if under_prefix(path, self.remote):
                return path
            raise LakeRefusal(f"table {physical_name} lists {uri}, a remote location the operator did not declare "
                              "(_REMOTE); not reading it")
        real = os.path.realpath(path)
        if not inside(real, self.roots):
            raise LakeRefusal(f"table {physical_name} lists {uri}, outside the operator's roots "
                              f"({', '.join(self.roots) or 'none'}); not reading it")
        if os.path.lexists(real) and not is_regular(real):
            raise LakeRefusal(f"table {physical_name} lists {uri}, which is not a regular file; not reading it")
        return real

    def _state(self) -> _State:
        with _STATES_LOCK:
            return _STATES.setdefault(self, _State({}, {}, threading.Lock()))


def _refuse_renames(table: Any, physical_name: str) -> None:
    """Files are read by column name: a column renamed since (one field id, two names) would read
    NULLs from the older files, so such a table is refused rather than misread."""
    names: dict[int, str] = {}
    for schema in table.metadata.schemas:
        for field in schema.fields:
            if names.setdefault(field.field_id, field.name) != field.name:
                raise LakeRefusal(f"table {physical_name}: column {names[field.field_id]!r} was renamed to "
                                  f"{field.name!r}; files are read by name here, so it is not read")


def _iceberg_filter(partition: Any, schema: Any) -> Any:
    """The partition as pyiceberg's row filter (values as ISO text, which it binds to the column's
    type); AlwaysTrue for the whole table, or when it cannot be bound (DuckDB's WHERE still selects
    the rows, reading every file)."""
    from pyiceberg.expressions import AlwaysTrue, And, EqualTo, GreaterThanOrEqual, In, LessThan
    from pyiceberg.expressions.visitors import bind

    def one(p: Any) -> Any:
        if p.time_window:
            date = p.logical_type == "date"
            start, end = ((m.date().isoformat() if date else m.isoformat()) for m in (p.start, p.end))
            return And(GreaterThanOrEqual(p.column, start), LessThan(p.column, end))
        if p.values:
            return In(p.column, set(p.values))
        return EqualTo(p.column, p.value)

    if partition is None:
        return AlwaysTrue()
    parts = partition.parts or (partition,)
    expression = one(parts[0])
    for p in parts[1:]:
        expression = And(expression, one(p))
    try:
        bind(schema, expression, case_sensitive=True)
    except Exception:  # noqa: BLE001 - an unbindable filter only costs pruning, never a row
        return AlwaysTrue()
    return expression
