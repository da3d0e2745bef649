"""An operator's URL holds its password where SQLAlchemy reads it, and drivers take passwords as query
parameters: odcs/url_secrets.py (pure, no SQLAlchemy) finds each as SQLAlchemy's own parser does, so
declared_secrets and a connection's secrets mask what the driver is sent. One row per URL form."""

from __future__ import annotations

from urllib.parse import parse_qsl

import pytest
import sqlalchemy as sa
import yaml

from dq_contracts.engine.connections import connection_for
from dq_contracts.engine.contracts import Warehouses, run_contract
from dq_contracts.odcs.declaration import declared_secrets
from dq_contracts.odcs.load import load_contracts
from dq_contracts.odcs.url_secrets import PASSWORD_PARAMETERS, endpoint, url_secrets
from dq_contracts_tests.support import contract, duckdb_with, plan_of

# (the operator's URL, the secret the driver is sent: SQLAlchemy's password, or a query parameter)
URLS = [
    ("postgresql://checker:s3cr/et#pw@db.internal/wh", "s3cr/et#pw"),  # raw `/` and `#`: urlsplit finds `s3cr`
    ("postgresql://checker:s3cr?etpw@db.internal/wh", "s3cr?etpw"),  # raw `?`: urlsplit finds no password
    ("postgresql://checker:s3:cr:etpw@db.internal:5432/wh", "s3:cr:etpw"),  # raw `:`
    ("postgresql://checker:s3cr%2Fet%23pw@db.internal/wh", "s3cr/et#pw"),  # percent-encoded
    ("postgresql://checker:s3cr%40etpw@db.internal/wh", "s3cr@etpw"),  # an encoded `@`
    ("postgresql+psycopg2://checker:plainPW99@db.internal/wh", "plainPW99"),
    ("postgresql://checker@db.internal/wh?password=tok3nABCD", "tok3nABCD"),  # psycopg2 takes it
    ("postgresql://checker@db.internal/wh?sslmode=require&PASSWORD=tok3n%2FABCD", "tok3n/ABCD"),
    ("mysql+pymysql://checker@db.internal/wh?passwd=myPassw0rd", "myPassw0rd"),
    ("mssql+pyodbc://checker@dsn?pwd=odbcPassw0rd", "odbcPassw0rd"),
    ("mssql+pyodbc:///?odbc_connect=DRIVER%3D%7Bx%7D%3BUID%3Dc%3BPWD%3D%7BodbcP%3Bw0rd%7D", "odbcP;w0rd"),
    ("databricks://token:dapiABCDEF012345@adb.net/?http_path=/sql/1&catalog=main", "dapiABCDEF012345"),
    ("databricks://adb.net/?access_token=dapiABCDEF012345", "dapiABCDEF012345"),
    ("snowflake://checker@acct/db?private_key_passphrase=keyPhrase99", "keyPhrase99"),
    ("trino://checker@db.internal:443/hive?token=eyJhbGciOi.jwt", "eyJhbGciOi.jwt"),
]
NONE = ["postgresql://checker@db.internal/wh", "postgresql://db.internal/wh?sslmode=require",
        "duckdb:///wh.duckdb", "postgresql://checker:@db.internal/wh"]


def sqlalchemys(url: str) -> str | None:
    """What SQLAlchemy sends as the password: the URL's, else a password-like query parameter's value."""
    parsed = sa.make_url(url)
    if parsed.password:
        return parsed.password
    return next((v for k, v in parsed.query.items() if k.lower() in {n for n, _ in PASSWORD_PARAMETERS}), None)


@pytest.mark.parametrize("url, secret", URLS)
def test_declared_secrets_finds_what_sqlalchemy_reads_as_the_password(url, secret):
    if "odbc_connect" not in url:  # SQLAlchemy hands an ODBC string to the driver whole
        assert sqlalchemys(url) == secret
    assert secret in url_secrets(url)
    assert secret in declared_secrets({"DQ_CONTRACTS_PROD_URL": url})
    assert secret in declared_secrets({"DQ_ALERTS_WEBHOOK_HOSTS": f"hooks.slack.com, {url}"})


@pytest.mark.parametrize("url", NONE)
def test_a_url_with_no_password_holds_no_secret(url):
    assert sa.make_url(url).password in (None, "")
    assert not any(k.lower() in {n for n, _ in PASSWORD_PARAMETERS} for k, _ in parse_qsl(url.partition("?")[2]))
    assert url_secrets(url) == () and declared_secrets({"DQ_CONTRACTS_PROD_URL": url}) == ()


@pytest.mark.parametrize("url, secret", [(u, s) for u, s in URLS if u.startswith("postgresql")])
def test_a_connections_secrets_hold_its_urls_password_wherever_it_is(url, secret):
    connection = connection_for({"server": "prod", "type": "postgres"}, {"DQ_CONTRACTS_PROD_URL": url})
    assert secret in connection.secrets


@pytest.mark.parametrize("url, secret", URLS)
def test_a_table_holding_the_secret_shows_it_masked(tmp_path, url, secret):
    """The samples of a check on another server's table that holds the operator's secret."""
    held = secret.replace("'", "''")
    duckdb_with(tmp_path / "wh.duckdb", "CREATE TABLE t (key VARCHAR)", f"INSERT INTO t VALUES ('user={held}')")
    plan, _ = plan_of(tmp_path, contract({"server": "local", "type": "duckdb", "database": "wh.duckdb"}, [
        {"name": "key", "logicalType": "string", "logicalTypeOptions": {"pattern": "^$"}}]))
    with Warehouses({"DQ_CONTRACTS_PROD_URL": url}) as warehouses:
        result = next(r for r in run_contract(plan, warehouses) if r.name == "key__pattern")
    assert not result.passed and result.samples == ["user=***"], result.samples
    assert secret not in repr(result.to_json())


ENDPOINTS = [u for u, _ in URLS] + NONE + [
    "postgresql://checker:pw@[::1]:5433/wh", "postgresql://checker:pw@db.internal:5432/w%2Fh",
    "postgresql://checker:s3cr/et#pw@db.internal:5432/wh#x", "postgresql+psycopg2://db.internal/wh?password=a/b@c"]


@pytest.mark.parametrize("url", ENDPOINTS)
def test_the_load_reads_the_operators_endpoint_as_sqlalchemy_does(url):
    parsed = sa.make_url(url)
    assert endpoint(url) == (parsed.host or None, parsed.port, parsed.database or None)


def test_a_password_with_a_raw_slash_is_no_port_at_load(tmp_path):
    """urlsplit read `checker:s3cr` as host and port: validate and check stopped on `Port could not be cast`."""
    server = {"server": "prod", "type": "postgres", "host": "db.internal", "port": 5432, "database": "wh",
              "schema": "public"}
    path = tmp_path / "c.odcs.yaml"
    path.write_text(yaml.safe_dump(contract(server, [{"name": "a", "logicalType": "integer"}])))
    for url, problems in [("postgresql://checker:s3cr/et#pw@db.internal:5432/wh", []),
                          ("postgresql://checker:s3cr/et#pw@other.internal:5432/wh", [
                              "servers[0].host: server 'prod': the contract says host 'db.internal', the operator "
                              "declared 'other.internal'; not connecting (make them agree, or leave host out of the "
                              "contract)"])]:
        loaded = load_contracts([path], environ={"DQ_CONTRACTS_PROD_URL": url})
        assert [f"{p.path}: {p.message}" for p in loaded.problems] == problems
