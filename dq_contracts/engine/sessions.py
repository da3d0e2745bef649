"""One read-only, time-limited session per object checked, as the dialect's row makes it
(engine/dialects.py): on PostgreSQL `BEGIN READ ONLY` and one settings statement (timeout, UTC,
names resolved in pg_catalog); DuckDB engines are opened read-only (connections.engine_for) and a
timer interrupts a query that runs past the timeout.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Callable, Iterator, TypeVar

import sqlalchemy as sa

from dq_contracts.engine.dialects import dialect_of, read_only_refusal
from dq_contracts.engine.results import StatementTimeout

T = TypeVar("T")


DEFAULT_TIMEOUT_SECONDS = 300



class _Deadline:
    """Where the server has no statement timeout (the row's `interrupt`), a timer stops the statement."""

    def __init__(self, connection: sa.Connection, timeout_seconds: float) -> None:
        self.fired = threading.Event()
        self.timer: threading.Timer | None = None
        interrupt = dialect_of(connection.dialect.name).interrupt
        if interrupt is not None:
            stop = interrupt(connection)

            def fire() -> None:
                self.fired.set()
                stop()

            self.timer = threading.Timer(timeout_seconds, fire)
            self.timer.daemon = True
            self.timer.start()

    def cancel(self) -> None:
        if self.timer is not None:
            self.timer.cancel()



# set on an engine (connections.engine_for) whose operator declared its credentials read-only
CREDENTIALS_READ_ONLY = "dq_contracts_credentials_read_only"


class ReadOnlyRefused(RuntimeError):
    """The dialect's row cannot make a session read-only and time-limited, and nobody vouched for it."""


def _begin(engine: sa.Engine, timeout_seconds: float) -> sa.Connection:
    """A connection in a read-only transaction with the timeout set, as the dialect's row makes it
    (engine/dialects.py); a dialect whose row cannot is refused, unless the operator declared its
    credentials read-only."""
    row = dialect_of(engine.dialect.name)
    refusal = read_only_refusal(engine.dialect.name)
    if refusal and not engine.get_execution_options().get(CREDENTIALS_READ_ONLY):
        raise ReadOnlyRefused(refusal)
    # a row that cannot make the session read-only may still time-limit it (Snowflake, MySQL)
    return row.begin(engine, timeout_seconds) if row.begin is not None else engine.connect()



def _server_timeout(connection_or_engine: sa.Connection | sa.Engine, exc: BaseException) -> bool:
    """The server cancelled the statement at its timeout: said as our own timeout, whose words hold
    nothing of the data."""
    return dialect_of(connection_or_engine.dialect.name).server_timeout(exc)



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
        if deadline.fired.is_set() or _server_timeout(engine, exc):
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
            if deadline.fired.is_set() or _server_timeout(self.engine, exc):
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
