"""The table an asset's `dagster/table_name` names is the table its checks read (on the Spark servers,
where a Hive server's `database` is the schema its bare names are read in, and Databricks reads a
table in the operator's catalog, which the contract's `catalog` must agree with)."""

from __future__ import annotations

import pytest

from dq_contracts.dagster_defs.translator import qualified_table, server_uri
from dq_contracts.engine.connections import connection_for
from dq_contracts.engine.dialects import dialect_of
from dq_contracts.engine.sql import qualified_parts

HIVE = "hive://127.0.0.1:10000"
# the URL names the schema the contracts name: one naming another is refused (test_chosen_names.py)
DATABRICKS = "databricks://token:t@h.cloud?http_path=/sql/1&catalog=main&schema=sales"
# (the server entry, the object's physicalName, the operator's URL, the name shown)
NAMES = [
    ({"type": "hive", "host": "127.0.0.1", "database": "sales"}, "orders", HIVE, "sales.orders"),
    ({"type": "hive", "host": "127.0.0.1", "database": "sales"}, "orders", HIVE + "/sales", "sales.orders"),
    ({"type": "hive", "host": "127.0.0.1", "database": "sales"}, "other.orders", HIVE, "other.orders"),
    ({"type": "hive", "host": "127.0.0.1", "database": "sales"}, "spark_catalog.other.orders", HIVE,
     "spark_catalog.other.orders"),
    ({"type": "databricks", "catalog": "main", "schema": "sales"}, "orders", DATABRICKS, "main.sales.orders"),
    ({"type": "databricks", "catalog": "main", "schema": "sales"}, "other.orders", DATABRICKS, "main.other.orders"),
    # a catalog's bare name is in the type's default schema where the server and the URL name none
    ({"type": "databricks", "catalog": "main"}, "orders", "databricks://token:t@h.cloud?http_path=/s&catalog=main",
     "main.default.orders"),
    # a URL naming no catalog reads the contract's (connections._with_catalog), not the session's default
    ({"type": "databricks", "catalog": "prod", "schema": "sales"}, "orders", "databricks://token:t@h.cloud?http_path=/s",
     "prod.sales.orders"),
]


def read_by_the_checks(server: dict, physical_name: str, url: str) -> str:
    """The table the checks read: the name's parts in the connection's schema, in the URL's catalog."""
    connection = connection_for({"server": "w", **server}, {"DQ_CONTRACTS_W_URL": url,
                                                            "DQ_CONTRACTS_W_READ_ONLY": "true"})
    parts = qualified_parts(physical_name, connection.schema)
    catalog = dialect_of(connection.url.get_backend_name()).url_catalog(connection.url)
    return ".".join([catalog, *parts] if catalog and len(parts) < 3 else parts)


@pytest.mark.parametrize("server, physical_name, url, shown", NAMES,
                         ids=[f"{s['type']} {p}" + (" url names it" if u.endswith("/sales") else "")
                              for s, p, u, _ in NAMES])
def test_the_table_name_shown_is_the_table_the_checks_read(server, physical_name, url, shown):
    assert qualified_table({"server": "w", **server}, physical_name) == shown
    assert read_by_the_checks(server, physical_name, url) == shown


# (the server entry, the object's physicalName, the `dagster/uri` shown): where the table lives, its path the
# table the checks read (a Hive server's `database` is the URL's database, which a two-part name replaces)
URIS = [
    ({"type": "postgres", "host": "db", "port": 5432, "database": "shop", "schema": "sales"}, "orders",
     "postgresql://db:5432/shop/sales.orders"),
    ({"type": "duckdb", "database": "shop.duckdb"}, "orders", "duckdb:shop.duckdb/orders"),
    ({"type": "databricks", "host": "h", "schema": "s"}, "o.t", "databricks://h/o.t"),
    ({"type": "postgres", "host": "db", "database": "shop", "schema": "sales"}, "hr.t", "postgresql://db/shop/hr.t"),
    ({"type": "hive", "host": "h", "port": 10000, "database": "sales"}, "orders", "hive://h:10000/sales/orders"),
    ({"type": "hive", "host": "h", "port": 10000, "database": "sales"}, "other.orders", "hive://h:10000/other/orders"),
    ({"type": "hive", "host": "h", "port": 10000}, "orders", "hive://h:10000/orders"),
]


@pytest.mark.parametrize("server, physical_name, uri", URIS, ids=[f"{s['type']} {p}" for s, p, _ in URIS])
def test_the_uri_shown_names_the_table_the_checks_read(server, physical_name, uri):
    assert server_uri({"server": "w", **server}, physical_name) == uri
