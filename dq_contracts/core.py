"""The pure pipeline: files → documents → validated contracts → plans, with every problem collected."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Iterable

from dq_contracts.compiler import compile_contract
from dq_contracts.loader import load_documents
from dq_contracts.paths import named_path
from dq_contracts.plans import ContractPlan
from dq_contracts.problems import Problem, errors_of
from dq_contracts.validate import validate_document


@dataclass
class LoadResult:
    plans: list[ContractPlan] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    files_read: int = 0

    @property
    def errors(self) -> list[Problem]:
        return errors_of(self.problems)


def load_contracts(paths: Iterable[str | os.PathLike[str]]) -> LoadResult:
    documents, problems = load_documents(paths)
    # files that could not even be parsed count as read too
    result = LoadResult(problems=problems, files_read=len(documents) + len({p.file for p in problems}))
    compiled: list[tuple[ContractPlan, object]] = []
    for document in documents:
        validated, found = validate_document(document)
        result.problems.extend(found)
        if validated is None:
            continue
        plan, found = compile_contract(validated)
        result.problems.extend(found)
        compiled.append((plan, document))

    # across files: the same (id, version) twice; the same asset claimed twice
    seen_ids: dict[tuple[str, str], ContractPlan] = {}
    seen_assets: dict[tuple[str, ...], tuple[ContractPlan, str]] = {}
    for plan, document in compiled:
        key = (plan.id, plan.version)
        if key in seen_ids:
            other = seen_ids[key]
            result.problems.append(Problem(plan.file, f"contract id {plan.id!r} version {plan.version} is also "
                                           f"defined in {other.file}", "id", document.line_of(["id"])))
            continue
        seen_ids[key] = plan
        clash = False
        for obj in plan.objects:
            if obj.asset_key in seen_assets:
                other, other_object = seen_assets[obj.asset_key]
                parts = ["schema", int(obj.pointer.split("/")[2])]
                result.problems.append(Problem(
                    plan.file,
                    f"asset {'/'.join(obj.asset_key)} is also claimed by {other.file} (object {other_object!r}"
                    f" of contract {other.id!r} {other.version}); give one of them another physicalName "
                    "or a dagsterAssetKey custom property",
                    named_path(document.data, parts), document.line_of(parts)))
                clash = True
            else:
                seen_assets[obj.asset_key] = (plan, obj.name)
        if not clash:
            result.plans.append(plan)
    result.problems.sort(key=lambda p: (p.file, p.line or 0))
    return result
