"""DuckDB, as the `duckdb` row of engine/dialects.py reaches it: a check session's settings and
its database opened read-only with no extension installed or loaded (`options`), the file's lock
waited for while another process writes it (`waiting_for_lock`), the session confined to its
database or its file server's folder (`prepare`), a warehouse file that redefines what the checks
call refused (`refuse_redefinitions`, its verdict kept per file), `begin`, `interrupt` and the
regex; the schema check's catalog (`duckdb_columns()`), types as DuckDB spells them, and a declared
type resolved by DuckDB itself; and its statements' values sent as literals (`literal_values`)."""

from __future__ import annotations

import functools
import math
import os
import shutil
import tempfile
import threading
import time
import weakref
from typing import Any, Callable, TypeVar

import sqlalchemy as sa
from sqlalchemy.sql import sqltypes
from sqlalchemy.sql.elements import ColumnElement

from dq_contracts.engine.dialect_postgres import RedefinitionError
from dq_contracts.odcs.type_names import split_arguments

# DuckDB settings of a check session: (setting, the declaration's field, default)
SETTINGS = (
    ("memory_limit", "memory_limit", lambda: "1GB"),
    ("temp_directory", "temp_directory", lambda: os.path.join(tempfile.gettempdir(), "dq_contracts_spill")),
    ("threads", "threads", lambda: None),
    # the spill's bound on disk (DuckDB's own default: 90 % of the free disk), so that one rule
    # cannot fill the disk the host and other runs need; a statement that would spill past it fails
    ("max_temp_directory_size", "max_temp_directory_size", lambda: MAX_SPILL),
)
MAX_SPILL = "4GB"
# taken at open, DuckDB 1.5 shows max_temp_directory_size but spilled past it (hundreds of MB under
# a bound of 8MB, measured); SET once the session is open, it holds: so these are SET in `confine`
SET_WHEN_OPEN = {"max_temp_directory_size": sa.text("SET max_temp_directory_size = :value")}
# set when a DuckDB database opens, before anything is read: no extension is installed or loaded
# because of what a contract (or a warehouse file's views) call
NO_EXTENSIONS = (("autoinstall_known_extensions", False), ("autoload_known_extensions", False),
                 ("allow_community_extensions", False))
# DuckDB's readers of a file server's formats: the checks' tables and the schema check's DESCRIBE
READERS = {"csv": "read_csv", "parquet": "read_parquet", "json": "read_json"}


def options(connection: Any) -> dict[str, Any]:
    # set when the database opens: no statement, and nothing a contract's SQL could change; a
    # database is opened read-only (a file server's :memory: holds nothing to write)
    at_open = {name: value for name, value in connection.duckdb if name not in SET_WHEN_OPEN}
    connect_args: dict[str, Any] = {"config": {**dict(NO_EXTENSIONS), **at_open}}
    if connection.files is None:
        connect_args["read_only"] = True
    return {"connect_args": connect_args}


# How long opening a DuckDB file waits while another process writes it (DuckDB lets one process write
# a file, or any number read it): a pipeline rebuilding a table holds it for as long as that takes
LOCK_WAIT_SECONDS = 60
T = TypeVar("T")


def duckdb_locked(exc: BaseException) -> bool:
    """Whether DuckDB refused to open a file because another process holds its lock."""
    return "Could not set lock on file" in str(getattr(exc, "orig", None) or exc)


def waiting_for_lock(open_file: Callable[[], T], seconds: float = LOCK_WAIT_SECONDS) -> T:
    """`open_file()`, again while another process holds the file's lock, for up to `seconds`; then
    DuckDB's own error (it names the file and the process, nothing of the data)."""
    deadline, pause = time.monotonic() + seconds, 0.05
    while True:
        try:
            return open_file()
        except Exception as exc:
            if not duckdb_locked(exc) or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 1.0)


class SpillFolder:
    """An engine's own spill folder below the spill root (the operator's `_TEMP_DIRECTORY` or the
    default): DuckDB names its spill files alike in every process (duckdb_temp_storage_DEFAULT-0.tmp),
    so two processes spilling into one folder overwrite each other's files (corrupt reads, crashes).
    Its name is random and DuckDB makes it only when it spills, as it made the root before (a root
    that cannot be written fails a spill, not a check that never spills); it is removed when the
    engine is disposed (or collected, or the process exits)."""

    def __init__(self, root: str) -> None:
        self.root, self.path, self._lock = root, None, threading.Lock()

    def folder(self) -> str:
        with self._lock:
            if self.path is None:
                try:
                    os.makedirs(self.root, exist_ok=True)  # DuckDB makes one folder, not its parents
                except OSError:
                    pass  # DuckDB says why when it spills
                self.path = os.path.join(self.root, f"run-{os.getpid()}-{os.urandom(6).hex()}")
                self._finalizer = weakref.finalize(self, shutil.rmtree, self.path, True)
            return self.path

    def remove(self) -> None:
        with self._lock:
            if self.path is not None:
                self._finalizer()  # rmtree, once; a session opened after dispose gets a new folder
                self.path = None


def prepare(engine: sa.Engine, connection: Any) -> None:
    allowed = connection.files.allowed() if connection.files is not None else None
    allowed_files = connection.files.allowed_files() if connection.files is not None else []
    root = dict(connection.duckdb).get("temp_directory")
    spill = SpillFolder(root) if root else None
    when_open = [_value_setting(name, value, engine.dialect) for name, value in connection.duckdb
                 if name in SET_WHEN_OPEN]

    @sa.event.listens_for(engine, "do_connect")
    def wait_for_writer(dialect, _record, cargs, cparams):
        if spill is not None:  # config is set when the database opens (`options`), the folder with it
            cparams["config"] = {**cparams["config"], "temp_directory": spill.folder()}
        return waiting_for_lock(lambda: dialect.connect(*cargs, **cparams))

    if spill is not None:
        sa.event.listen(engine, "engine_disposed", lambda _engine: spill.remove())

    @sa.event.listens_for(engine, "connect")
    def confine(dbapi_connection, _record) -> None:
        # A contract may come from another team: its session reads its own database (or, for a
        # file server, the server's folder) and nothing else of the host, and no statement can
        # change that (DuckDB takes these settings only after connecting).
        # the lists as literals (SQLAlchemy's quoting), as every DuckDB statement: a bound one would
        # import pandas (literal_values)
        if allowed is not None:
            dbapi_connection.execute(_paths_setting("allowed_directories", allowed, engine.dialect))
        if allowed_files:
            dbapi_connection.execute(_paths_setting("allowed_paths", allowed_files, engine.dialect))
        for statement in when_open:
            dbapi_connection.execute(statement)
        dbapi_connection.execute("SET TimeZone = 'UTC'")  # timestamps compared in UTC, whatever the host's
        dbapi_connection.execute("SET enable_external_access = false")
        dbapi_connection.execute("SET lock_configuration = true")
        if allowed is None:
            refuse_redefinitions(dbapi_connection, connection.url.database)

    if hasattr(connection.files, "attach"):  # a lake server: its tables registered before each statement
        connection.files.attach(engine)


_SETTINGS_OF_PATHS = {"allowed_directories": sa.text("SET allowed_directories = :paths"),
                      "allowed_paths": sa.text("SET allowed_paths = :paths")}


def _paths_setting(name: str, paths: list[str], dialect: Any) -> str:
    """`SET <name> = ARRAY['…', …]`, the paths quoted by SQLAlchemy's literal rendering."""
    statement = _SETTINGS_OF_PATHS[name].bindparams(sa.bindparam("paths", list(paths), type_=sa.ARRAY(sa.String)))
    return str(statement.compile(dialect=dialect, compile_kwargs={"literal_binds": True}))


def _value_setting(name: str, value: str, dialect: Any) -> str:
    """`SET <name> = '<value>'` for a setting of SET_WHEN_OPEN, the value quoted by SQLAlchemy."""
    statement = SET_WHEN_OPEN[name].bindparams(sa.bindparam("value", str(value), sa.String))
    return str(statement.compile(dialect=dialect, compile_kwargs={"literal_binds": True}))


# What a warehouse file may not hold: anything that would change what a check's SQL means. A macro
# in the file's catalog (any schema) takes the place of the built-in of its name (`length`,
# `count`, `regexp_matches`, even the `~~` behind LIKE), and a type named like a built-in one could
# take its place in a cast. The catalog is read through `system.main`, which no file can shadow.
REDEFINITIONS = """
SELECT function_type || ' ' || schema_name || '.' || function_name
FROM system.main.duckdb_functions() WHERE NOT internal AND database_name = current_database()
UNION ALL
SELECT 'type ' || schema_name || '.' || type_name
FROM system.main.duckdb_types() AS t WHERE NOT internal AND database_name = current_database()
  AND lower(type_name) IN (SELECT lower(type_name) FROM system.main.duckdb_types() WHERE internal)
ORDER BY 1
"""


# The verdicts of the files this process judged, by what each file was (file_identity): the
# catalog query costs 40 to 60 ms (duckdb_functions() lists every built-in), more than a clean
# check of 200,000 rows, and an engine opens one connection per run, so the verdict is kept for
# the process, not the engine. The oldest go first beyond VERDICTS_KEPT.
VERDICTS_KEPT = 256
_VERDICTS: dict[tuple, str | None] = {}
_VERDICTS_LOCK = threading.Lock()

# A file changed this recently may change again within the same tick of the file system's clock,
# keeping its identity: its verdict is not remembered (git's "racy" rule).
RACY_NS = 2_000_000_000


def file_identity(database: str | None) -> tuple | None:
    """What a DuckDB file is now, with its write-ahead log (DuckDB replays it when opening): device,
    inode, size, mtime and ctime of each. Any rename, link or write changes the ctime, which no
    one but root can set back. None when the file cannot be read or changed within RACY_NS: then
    nothing is remembered."""
    if not database:
        return None
    parts: list[Any] = []
    for path in (database, database + ".wal"):
        try:
            found = os.stat(path)
        except FileNotFoundError:
            parts.append(None)  # no log: a log written later is another identity
            continue
        except OSError:
            return None
        if time.time_ns() - max(found.st_ctime_ns, found.st_mtime_ns) < RACY_NS:
            return None
        parts.append((found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns))
    return None if parts[0] is None else tuple(parts)


def refuse_redefinitions(dbapi_connection: Any, database: str | None) -> None:
    """Refuse the file if it redefines what the checks call (REDEFINITIONS). The verdict is kept by
    the file's real path and identity (file_identity) read after DuckDB opened it and again after
    the query: a file swapped or written in between, or just before, is judged again on its next
    connection, and a verdict is only ever reused for a file no one has touched since."""
    key = _verdict_key(database)
    if key is not None:
        with _VERDICTS_LOCK:
            known = _VERDICTS.get(key, False)
        if known is not False:
            _raise_if_found(known, database)
            return
    found = [row[0] for row in dbapi_connection.execute(REDEFINITIONS).fetchall()]
    shown = (", ".join(found[:10]) + (f" and {len(found) - 10} more" if len(found) > 10 else "")) if found else None
    if key is not None and _verdict_key(database) == key:
        with _VERDICTS_LOCK:
            _VERDICTS[key] = shown
            while len(_VERDICTS) > VERDICTS_KEPT:
                del _VERDICTS[next(iter(_VERDICTS))]
    _raise_if_found(shown, database)


def _verdict_key(database: str | None) -> tuple | None:
    identity = file_identity(database)
    return None if identity is None or not database else (os.path.realpath(database), identity)


def _raise_if_found(shown: str | None, database: str | None) -> None:
    if shown:
        raise RedefinitionError(f"the DuckDB file {database} defines {shown}: a warehouse file cannot redefine "
                                "what the checks call, so none of its checks runs (drop them from the file, or "
                                "check a copy without them)")


def begin(engine: sa.Engine, timeout_seconds: float) -> sa.Connection:
    """The engine opened the database read-only (`options`); DuckDB has no statement timeout,
    so `interrupt` stops a statement at it."""
    return engine.connect()


def interrupt(connection: sa.Connection) -> Callable[[], None]:
    return connection.connection.driver_connection.interrupt


def regex(column: ColumnElement, pattern: str) -> ColumnElement:
    return sa.func.regexp_matches(column, sa.bindparam(None, pattern, type_=sa.String), type_=sa.Boolean)


# read through `system.main`, which no warehouse file can shadow (REDEFINITIONS)
COLUMNS = sa.func.system.main.duckdb_columns().table_valued(
    "database_name", "schema_name", "table_name", "column_name", "data_type", "is_nullable", "column_index")


def catalog_columns(connection: sa.Connection, prefix: list[str], name: str) -> list[dict[str, Any]]:
    """The table's (or view's) columns as DuckDB names their types (`VARCHAR`, `DECIMAL(12,2)`,
    `BIGINT[]`, `UUID`); names match in any case, as DuckDB's do."""
    c = COLUMNS.c
    database = sa.bindparam(None, prefix[-2], type_=sa.String) if len(prefix) == 2 else sa.func.current_database()
    schema = sa.bindparam(None, prefix[-1], type_=sa.String) if prefix else sa.func.current_schema()
    rows = connection.execute(sa.select(c.column_name, c.data_type, c.is_nullable).where(
        sa.func.lower(c.database_name) == sa.func.lower(database), sa.func.lower(c.schema_name) == sa.func.lower(schema),
        sa.func.lower(c.table_name) == sa.func.lower(sa.bindparam(None, name, type_=sa.String)))
        .order_by(c.column_index)).fetchall()
    return [{"name": n, "type_text": t, "resolved": t, "nullable": bool(nullable)} for n, t, nullable in rows]


class TypeName(sa.types.UserDefinedType):
    """A type name judged by odcs.type_names (words, numbers, argument brackets only), written as is."""

    cache_ok = True

    def __init__(self, name: str) -> None:
        self.name = name

    def get_col_spec(self, **kw: Any) -> str:
        return self.name


def resolve_types(connection: sa.Connection, names: list[str]) -> dict[str, str | None]:
    """`typeof(CAST(NULL AS <name>))` of each name's type (its numeric arguments kept from the name:
    a bare DECIMAL is DECIMAL(18,3) there); all in one statement, each alone if one is unknown. DuckDB
    keeps its transaction through a binder error."""
    parts = {n: split_arguments(n) for n in names}

    def typeof(base: str) -> Any:
        return sa.func.typeof(sa.cast(sa.null(), TypeName(base)))

    try:
        row = connection.execute(sa.select(*(typeof(b).label(f"t{i}") for i, (b, _) in enumerate(parts.values())))).one()
        found = dict(zip(parts, row))
    except sa.exc.DBAPIError:
        found = {}
        for n, (base, _) in parts.items():
            try:
                found[n] = connection.execute(sa.select(typeof(base))).scalar()
            except sa.exc.DBAPIError:
                found[n] = None
    return {n: None if found[n] is None else split_arguments(found[n])[0] + args for n, (_, args) in parts.items()}


def literal_values(engine: sa.Engine) -> None:
    """The engine's statements carry their values as literals, so none binds a parameter: DuckDB's
    Python client imports pandas and numpy (0.3 s) at the first statement that does. Its dialect
    compiles every bound value as `literal_execute`, SQLAlchemy's own post-compile rendering: a
    statement is compiled once (and cached) and its values rendered at execution by their types'
    literal forms (quotes doubled), as values given at execution are too. Only this engine's
    dialect instance is changed, never DuckDB's dialect for the process."""
    engine.dialect.statement_compiler = _literal_compiler(type(engine.dialect).statement_compiler)


@functools.cache
def _literal_compiler(base: type) -> type:
    class LiteralValues(base):  # type: ignore[misc, valid-type]
        def visit_bindparam(self, bindparam: Any, literal_execute: bool = False, **kw: Any) -> str:
            return super().visit_bindparam(bindparam, literal_execute=True, **kw)

        def render_literal_value(self, value: Any, type_: Any) -> str:
            if isinstance(value, float) and not math.isfinite(value):  # repr `nan` would be a name
                return f"CAST('{value!r}' AS DOUBLE)"
            if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
                type_ = sa.ARRAY(sa.String)  # a file server's paths, bound as one String: DuckDB's list
            elif type_._isnull and value is not None:  # a text's value given at execution: typed by itself
                type_ = sqltypes._resolve_value_to_type(value)
            return super().render_literal_value(value, type_)

    return LiteralValues
