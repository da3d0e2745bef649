"""The demo code location (`workspace.yaml` loads it): four assets that build the demo shop's tables
in an embedded DuckDB file, and the bundled contracts' checks attached to them.

Run from the repository root: the contracts' DuckDB path (`demo_data/warehouse.duckdb`) is
relative to the working directory. Set DQ_CONTRACTS_DIR to read contracts from another folder.
"""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg

from dq_contracts.definitions import build_contract_defs
from dq_contracts.demo import DEFAULT_DATABASE, TABLES, write_tables

CONTRACTS_DIR = Path(os.environ.get("DQ_CONTRACTS_DIR", "contracts"))


def demo_asset(name: str) -> dg.AssetsDefinition:
    @dg.asset(name=name, kinds={"duckdb"}, description=f"Builds the demo table analytics.{name}")
    def build_table(context):
        written = write_tables(DEFAULT_DATABASE, [name])
        context.log.info(f"wrote {written[name]} rows to {DEFAULT_DATABASE} analytics.{name}")
        return dg.MaterializeResult(metadata={"dagster/row_count": written[name]})

    return build_table


# One process for the demo run: DuckDB lets one process write a file, and the checks open it
# read-only right after each table is written. Checks-only jobs still fan out (see README).
defs = dg.Definitions.merge(
    build_contract_defs(CONTRACTS_DIR, assets=[demo_asset(name) for name in TABLES]),
    dg.Definitions(executor=dg.in_process_executor),
)
