"""The objects of the whole folder, so a relationship may reference another contract's table."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterable

from dq_contracts.odcs.plans import CLASSIFIED
from dq_contracts.odcs.servers import checkable, server_identity
from dq_contracts.odcs.validate import ValidatedContract


@dataclass(frozen=True)
class IndexedObject:
    """A schema object of some contract of the folder, as a relationship elsewhere sees it."""

    contract_id: str
    server: tuple | None
    name: str
    physical_name: str
    columns: dict[str, str]  # property name and physicalName -> the column's physical name
    classified: bool



class FolderIndex:
    """Every schema object of the contracts loaded together, by name and by physicalName, so that a
    relationship may reference a table that another contract on the same server declares."""

    def __init__(self, contracts: Iterable[ValidatedContract] = ()):
        from dq_contracts.odcs.clauses.nested import any_classified  # here: the clauses import this module
        self._by_name: dict[str, list[IndexedObject]] = {}
        for validated in contracts:
            doc = validated.document
            folder = os.path.dirname(os.path.abspath(validated.file))
            servers = [s for s in doc.get("servers") or [] if isinstance(s, dict) and checkable(s)]
            server = server_identity(servers[0], folder) if servers else None
            for obj in doc.get("schema") or []:
                if not isinstance(obj, dict) or not obj.get("name"):
                    continue
                props = [p for p in obj.get("properties") or [] if isinstance(p, dict) and p.get("name")]
                columns: dict[str, str] = {}
                for prop in props:
                    physical = str(prop.get("physicalName") or prop.get("name"))
                    columns.setdefault(str(prop["name"]), physical)
                    columns.setdefault(physical, physical)
                entry = IndexedObject(str(doc.get("id")), server, str(obj["name"]),
                                      str(obj.get("physicalName") or obj["name"]), columns,
                                      any(any_classified(p, CLASSIFIED) for p in props))
                for key in {entry.name, entry.physical_name}:
                    self._by_name.setdefault(key, []).append(entry)

    def find(self, object_ref: str, contract_id: str, server: tuple | None) -> tuple[IndexedObject | None, str]:
        """The object another contract declares under that name on the same server, or why not."""
        others = [o for o in self._by_name.get(object_ref, []) if o.contract_id != contract_id]
        same = [o for o in others if server is not None and o.server == server]
        if len(same) == 1:
            return same[0], ""
        if same:
            return None, "target_ambiguous"
        return None, "target_other_server" if others else "target_elsewhere"
