"""The demo code location (`workspace.yaml` loads it): four assets that build the demo shop's tables
in an embedded DuckDB file, and the bundled contracts' checks attached to them.

The tables are written to the DuckDB file the contracts' server names (`../demo_data/warehouse.duckdb`,
relative to the contract files, as every relative DuckDB path is). Set DQ_CONTRACTS_DIR to read
contracts from another folder (default: `contracts/` of the working directory, which
`workspace.yaml` sets to the repository root).
"""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg

from dq_contracts.engine.contracts import ServerChoiceError, choose_server
from dq_contracts.engine.connections import connection_for
from dq_contracts.odcs.load import load_contracts
from dq_contracts.dagster_defs.definitions import build_contract_defs
from dq_contracts.demo import DEFAULT_DATABASE, TABLES, write_tables
from dq_contracts.odcs.plans import ContractPlan

CONTRACTS_DIR = Path(os.environ.get("DQ_CONTRACTS_DIR", "contracts"))


def demo_database(plans: list[ContractPlan]) -> Path:
    """The DuckDB file the contracts check: the server the first contract's checks use, when it is a
    DuckDB file the operator's declaration lets it open (else the default file: a contract's other
    servers, or one it may not open, neither choose where the demo writes nor take the code location
    down)."""
    for plan in sorted(plans, key=lambda p: p.file):
        try:
            server = choose_server(plan)
            if str(server.get("type")).lower() != "duckdb" or not server.get("database"):
                continue
            database = connection_for(server, None, plan.folder, plan.root).url.database
        except (ServerChoiceError, ValueError):
            continue
        if database and database != ":memory:":
            return Path(database)
    return DEFAULT_DATABASE


# The lineage the data has (each item and payment is of an order), so that the asset graph draws it.
# Not orders on customers: customers fails ERROR clauses, which block, so orders would never build.
UPSTREAM = {"order_items": ["orders"], "payments": ["orders"]}


def demo_asset(name: str, database: Path) -> dg.AssetsDefinition:
    # no description of its own: the asset shows its contract's. Its table's name, as the contract's
    # asset names it, says that this asset builds the table the checks read: their ERROR clauses block
    # it even once the operator binds folders
    @dg.asset(name=name, kinds={"duckdb"}, deps=UPSTREAM.get(name, []),
              metadata={"dagster/table_name": f"{database.stem}.analytics.{name}"})
    def build_table(context):
        written = write_tables(database, [name])
        context.log.info(f"wrote {written[name]} rows to {database} analytics.{name}")
        return dg.MaterializeResult(metadata={"dagster/row_count": written[name]})

    return build_table


DATABASE = demo_database(load_contracts([CONTRACTS_DIR]).usable_plans)

# One process for the demo run: DuckDB lets one process write a file, and the checks open it
# read-only right after each table is written. The automation sensor starts running here, so a
# table rebuilt on its own gets its checks run by Dagster (see README: what runs when).
defs = dg.Definitions.merge(
    build_contract_defs(CONTRACTS_DIR, assets=[demo_asset(name, DATABASE) for name in TABLES],
                        automation_sensor=dg.DefaultSensorStatus.RUNNING),
    dg.Definitions(executor=dg.in_process_executor),
)
