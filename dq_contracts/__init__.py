"""dq_contracts: ODCS v3 data contracts as Dagster asset checks, freshness policies and schedules.

The core (load, validate, normalise, compile, SQL) never imports Dagster; the Dagster names below
are imported on first use, so `dq-contracts validate` starts fast.
"""

from dq_contracts.odcs.load import LoadResult, load_contracts
from dq_contracts.odcs.plans import CheckPlan, ContractPlan, ObjectPlan
from dq_contracts.odcs.problems import ContractError, Problem

__version__ = "0.1.0"

_DAGSTER_NAMES = {
    "build_contract_defs": "dq_contracts.dagster_defs.definitions",
    "DqContractsTranslator": "dq_contracts.dagster_defs.translator",
    "ContractsComponent": "dq_contracts.dagster_defs.component",
    "WarehouseResource": "dq_contracts.dagster_defs.resource",
    "ServerSettings": "dq_contracts.dagster_defs.resource",
    "ContractObjectData": "dq_contracts.dagster_defs.translator",
    "ContractCheckData": "dq_contracts.dagster_defs.translator",
}

__all__ = [
    "CheckPlan",
    "ContractError",
    "ContractPlan",
    "LoadResult",
    "ObjectPlan",
    "Problem",
    "load_contracts",
    "build_contract_defs",
    "DqContractsTranslator",
    "ContractsComponent",
    "WarehouseResource",
    "ServerSettings",
    "ContractObjectData",
    "ContractCheckData",
]


def __getattr__(name: str):
    module = _DAGSTER_NAMES.get(name)
    if module is None:
        raise AttributeError(f"module 'dq_contracts' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    # `dg list components` discovers components with dir(): show the lazy names too
    return sorted(set(globals()) | set(_DAGSTER_NAMES))
