"""One read-only, time-limited session per object checked.

On PostgreSQL `BEGIN READ ONLY` and one settings statement (timeout, UTC, names resolved in
pg_catalog); DuckDB engines are opened read-only (connections.engine_for) and a timer interrupts a
query that runs past the timeout.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Callable, Iterator, TypeVar

import sqlalchemy as sa

from dq_contracts.engine.results import StatementTimeout

T = TypeVar("T")


DEFAULT_TIMEOUT_SECONDS = 300



def _settings(timeout_seconds: float) -> sa.TextClause:
    # one statement, local to the transaction: the timeout; every timestamp literal and comparison in
    # UTC whatever the role's or database's time zone; and names resolved in pg_catalog alone, since
    # PostgreSQL weighs a function of every schema on the search path equally and an exact type match
    # wins (a `public.length(varchar)` would answer our `length(code)`). Tables are always named with
    # their schema (connections.connection_for). set_config is refused in contracts' SQL.
    return sa.text("SELECT set_config('statement_timeout', :ms, true), set_config('TimeZone', 'UTC', true), "
                   "set_config('search_path', 'pg_catalog', true)").bindparams(ms=str(int(timeout_seconds * 1000)))



class _Deadline:
    """DuckDB has no statement timeout: a timer interrupts the connection's query instead."""

    def __init__(self, connection: sa.Connection, timeout_seconds: float) -> None:
        self.fired = threading.Event()
        self.timer: threading.Timer | None = None
        if connection.dialect.name == "duckdb":
            driver = connection.connection.driver_connection

            def interrupt() -> None:
                self.fired.set()
                driver.interrupt()

            self.timer = threading.Timer(timeout_seconds, interrupt)
            self.timer.daemon = True
            self.timer.start()

    def cancel(self) -> None:
        if self.timer is not None:
            self.timer.cancel()



def _begin(engine: sa.Engine, timeout_seconds: float) -> sa.Connection:
    """A connection in a read-only transaction with the timeout set: on PostgreSQL `BEGIN READ ONLY`
    and one settings statement; DuckDB engines are opened read-only (connections.engine_for)."""
    if engine.dialect.name == "postgresql":
        connection = engine.execution_options(postgresql_readonly=True).connect()
        try:
            connection.execute(_settings(timeout_seconds))
        except BaseException:
            connection.close()
            raise
        return connection
    return engine.connect()



def _server_timeout(exc: BaseException) -> bool:
    """PostgreSQL cancelled the statement at its statement_timeout (SQLSTATE 57014, and not an
    administrator's cancel): said as our own timeout, whose words hold nothing of the data."""
    orig = getattr(exc, "orig", None)
    return getattr(orig, "pgcode", None) == "57014" and "statement timeout" in str(orig)



def _timed_out(timeout_seconds: float) -> StatementTimeout:
    return StatementTimeout(f"the query ran longer than the {timeout_seconds:g} s statement timeout and was "
                            "cancelled")



@contextlib.contextmanager
def read_only(engine: sa.Engine, timeout_seconds: float) -> Iterator[sa.Connection]:
    """A connection in a read-only transaction with a statement timeout, rolled back at the end."""
    connection = _begin(engine, timeout_seconds)
    deadline = _Deadline(connection, timeout_seconds)
    try:
        yield connection
    except Exception as exc:
        if deadline.fired.is_set() or _server_timeout(exc):
            raise _timed_out(timeout_seconds) from exc
        raise
    finally:
        deadline.cancel()
        try:
            connection.rollback()
        finally:
            connection.close()



class Session:
    """One connection and one read-only transaction for every statement of an object: on PostgreSQL
    `BEGIN READ ONLY`, one settings statement, the work, `ROLLBACK`; no ping per statement. A
    statement that fails ends the transaction (both engines abort it), and the next one begins anew,
    so one check's error never costs the others."""

    def __init__(self, engine: sa.Engine, timeout_seconds: float) -> None:
        self.engine, self.timeout_seconds = engine, timeout_seconds
        self._connection: sa.Connection | None = None

    def run(self, work: Callable[[sa.Connection], T]) -> T:
        """`work` on the session's connection; whatever it fetches, it fetches before returning."""
        if self._connection is None:
            self._connection = _begin(self.engine, self.timeout_seconds)
        deadline = _Deadline(self._connection, self.timeout_seconds)
        try:
            return work(self._connection)
        except Exception as exc:
            self.close()
            if deadline.fired.is_set() or _server_timeout(exc):
                raise _timed_out(self.timeout_seconds) from exc
            raise
        finally:
            deadline.cancel()

    def close(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            try:
                connection.rollback()
            except Exception:  # noqa: BLE001 - a connection already lost has nothing to roll back
                pass
            finally:
                connection.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


TRANSIENT = (StatementTimeout, sa.exc.OperationalError, sa.exc.InterfaceError)
