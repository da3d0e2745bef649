"""The demo shop's tables (orders, order_items, customers, payments) in a DuckDB file, with exactly
the violations the bundled contracts' comments list:

* orders.status_is_known (WARN): one order has the status 'lost';
* order_items.order_id__references_orders (ERROR): one item points at an order that does not exist;
* customers.email__format (ERROR): one customer has the email 'not-an-email';
* customers.segment__accepted_values (ERROR): one customer is in the segment 'vip' (so in a run that
  builds customers, orders.customer_id__references_customers, which reads customers, is skipped:
  Dagster's blocking checks at work);
* payments.payment_id_unique (ERROR): one payment id appears twice;
* payments.amount__exclusive_minimum (ERROR): one payment has amount 0.

Everything else passes. Timestamps are relative to `now`, so the freshness clauses pass on the day
the tables are written. The data is the same for the same `now` (a fixed random seed).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import random
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from dq_contracts.engine.dialect_duckdb import waiting_for_lock

SCHEMA = "analytics"
DEFAULT_DATABASE = Path("demo_data") / "warehouse.duckdb"

metadata = sa.MetaData(schema=SCHEMA)
ORDERS = sa.Table(
    "orders", metadata,
    sa.Column("order_id", sa.BigInteger), sa.Column("customer_id", sa.String), sa.Column("order_ts", sa.DateTime),
    sa.Column("order_date", sa.Date), sa.Column("order_total", sa.Numeric(12, 2)), sa.Column("currency", sa.String),
    sa.Column("status", sa.String), sa.Column("discount_code", sa.String),
)
ORDER_ITEMS = sa.Table(
    "order_items", metadata,
    sa.Column("order_id", sa.BigInteger), sa.Column("line_no", sa.Integer), sa.Column("sku", sa.String),
    sa.Column("quantity", sa.Integer),
)
CUSTOMERS = sa.Table(
    "customers", metadata,
    sa.Column("customer_id", sa.String), sa.Column("email", sa.String), sa.Column("phone", sa.String),
    sa.Column("country_code", sa.String(2)), sa.Column("segment", sa.String), sa.Column("signup_date", sa.Date),
    sa.Column("lifetime_value", sa.Double),
)
PAYMENTS = sa.Table(
    "payments", metadata,
    sa.Column("payment_id", sa.String), sa.Column("order_id", sa.BigInteger), sa.Column("method", sa.String),
    sa.Column("amount", sa.Numeric(12, 2)), sa.Column("card_last4", sa.String), sa.Column("paid_at", sa.DateTime),
)

N_CUSTOMERS = 50
N_ORDERS = 120
STATUSES = ["placed", "paid", "shipped", "delivered", "cancelled"]


def _naive_utc(now: dt.datetime) -> dt.datetime:
    return now.astimezone(dt.timezone.utc).replace(tzinfo=None, microsecond=0)


def customers_rows(now: dt.datetime) -> list[dict[str, Any]]:
    rng = random.Random(1)
    today = _naive_utc(now).date()
    rows = []
    for i in range(1, N_CUSTOMERS + 1):
        rows.append({
            "customer_id": f"C{i:05d}", "email": f"customer{i}@example.com",
            "phone": f"+49 30 {rng.randint(1000000, 9999999)}" if i % 5 else None,
            "country_code": rng.choice(["DE", "FR", "NL", "US"]),
            "segment": rng.choice(["consumer", "business", "partner"]),
            "signup_date": today - dt.timedelta(days=(N_CUSTOMERS - i) * 30),
            "lifetime_value": round(rng.uniform(0, 5000), 2),
        })
    rows[6]["email"] = "not-an-email"
    rows[11]["segment"] = "vip"
    return rows


def orders_rows(now: dt.datetime) -> list[dict[str, Any]]:
    rng = random.Random(2)
    newest = _naive_utc(now) - dt.timedelta(minutes=5)
    rows = []
    for i in range(1, N_ORDERS + 1):
        ts = newest - dt.timedelta(hours=(N_ORDERS - i) * 3)
        rows.append({
            "order_id": i, "customer_id": f"C{rng.randint(1, N_CUSTOMERS):05d}", "order_ts": ts,
            "order_date": ts.date(), "order_total": Decimal(rng.randint(100, 50000)) / 100,
            "currency": rng.choice(["EUR", "USD"]), "status": rng.choice(STATUSES),
            "discount_code": rng.choice(["SPRING10", "WELCOME", None, ""]) if i % 3 else "SUMMER5",
        })
    rows[20]["status"] = "lost"
    return rows


def order_items_rows(now: dt.datetime) -> list[dict[str, Any]]:
    rng = random.Random(3)
    rows = []
    for order_id in range(1, N_ORDERS + 1):
        skus = rng.sample([f"SKU-{n:03d}" for n in range(1, 40)], rng.randint(1, 3))
        for line_no, sku in enumerate(skus, start=1):
            rows.append({"order_id": order_id, "line_no": line_no, "sku": sku, "quantity": rng.randint(1, 5)})
    rows.append({"order_id": 9999, "line_no": 1, "sku": "SKU-001", "quantity": 1})  # an orphan
    return rows


def payments_rows(now: dt.datetime) -> list[dict[str, Any]]:
    rng = random.Random(4)
    newest = _naive_utc(now) - dt.timedelta(minutes=30)
    rows = []
    for i in range(1, 101):
        method = rng.choice(["card", "paypal", "invoice", "voucher"])
        rows.append({
            "payment_id": f"P{i:05d}", "order_id": rng.randint(1, N_ORDERS), "method": method,
            "amount": Decimal(rng.randint(100, 50000)) / 100,
            "card_last4": f"{rng.randint(0, 9999):04d}" if method == "card" else None,
            "paid_at": newest - dt.timedelta(hours=(100 - i) * 4),
        })
    rows[41]["payment_id"] = rows[40]["payment_id"]
    rows[60]["amount"] = Decimal("0.00")
    return rows


TABLES: dict[str, tuple[sa.Table, Callable[[dt.datetime], list[dict[str, Any]]]]] = {
    "orders": (ORDERS, orders_rows),
    "order_items": (ORDER_ITEMS, order_items_rows),
    "customers": (CUSTOMERS, customers_rows),
    "payments": (PAYMENTS, payments_rows),
}


def write_tables(database: str | Path, names: list[str] | None = None, now: dt.datetime | None = None) -> dict[str, int]:
    """(Re)create the named demo tables in the DuckDB file; returns rows written per table.

    The engine is disposed before returning: DuckDB refuses read-only connections (the checks') to a
    file that this process still holds open for writing.
    """
    now = now or dt.datetime.now(dt.timezone.utc)
    Path(database).parent.mkdir(parents=True, exist_ok=True)
    engine = sa.create_engine(f"duckdb:///{database}")
    written = {}
    try:
        with _writing(engine) as connection:
            connection.execute(sa.schema.CreateSchema(SCHEMA, if_not_exists=True))
            for name in names or list(TABLES):
                table, rows_of = TABLES[name]
                table.drop(connection, checkfirst=True)
                table.create(connection)
                rows = rows_of(now)
                connection.execute(table.insert(), rows)
                written[name] = len(rows)
    finally:
        engine.dispose()
    return written


@contextlib.contextmanager
def _writing(engine: sa.Engine):
    """A transaction on the demo file, waiting while another process reads it (a check run the
    automation sensor started while this run rebuilds a table): DuckDB lets one process write a file
    or any number read it."""
    with waiting_for_lock(engine.connect) as connection, connection.begin():
        yield connection
