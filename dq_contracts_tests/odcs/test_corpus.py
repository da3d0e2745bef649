"""The whole corpus of real contracts: official verdicts agree, and every clause is accounted for."""

from __future__ import annotations

import json

import jsonschema
import pytest
import yaml

from dq_contracts.odcs.load import load_contracts
from dq_contracts.odcs.loader import read_document
from dq_contracts_tests.support import CONTRACTS, CORPUS, SCHEMAS
from dq_contracts_tests.support import assert_accounted

INDEX = json.loads((CORPUS / "index.json").read_text()) if (CORPUS / "index.json").exists() else []
if not INDEX:
    pytest.skip("../shared/odcs/corpus is not beside the checkout", allow_module_level=True)


# what we say beyond the official schema about a document it accepts: warnings only, each naming a
# clause that cannot run as written (its check fails), never an error
BEYOND_THE_SCHEMA = ("declares no such column", "which is not an object of this contract",
                     "is not a declared column")


def semantic_warnings_only(result) -> bool:
    return all(p.severity == "warning" and p.reach == "clause" and any(w in p.message for w in BEYOND_THE_SCHEMA)
               for p in result.problems)


@pytest.mark.parametrize("row", INDEX, ids=[r["file"] for r in INDEX])
def test_corpus_file(row):
    result = load_contracts([CORPUS / row["file"]])
    if row["valid_matching"]:
        assert semantic_warnings_only(result), [p.render() for p in result.problems]
        assert len(result.plans) == 1
        document, _ = read_document(CORPUS / row["file"])
        assert_accounted(result.plans[0], document.data)
    else:
        assert result.problems, "an invalid file must yield at least one problem"
        assert all(p.file for p in result.problems)
        assert any(p.path for p in result.problems), [p.render() for p in result.problems]


class _NoDates(yaml.SafeLoader):
    pass


_NoDates.yaml_implicit_resolvers = {
    k: [(t, r) for t, r in v if t != "tag:yaml.org,2002:timestamp"]
    for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()
}

ORACLE = {
    "v3.0.0": "odcs-json-schema-v3.0.0.json",
    "v3.0.1": "odcs-json-schema-v3.0.1.json",
    "v3.0.2": "odcs-json-schema-v3.0.2.json",
    "v3.1.0": "odcs-json-schema-v3.1.0.json",
    "v3.2.0": "dev-branch/odcs-json-schema-v3.2.0.json",
}


@pytest.mark.parametrize("row", INDEX, ids=[r["file"] for r in INDEX])
def test_verdict_agrees_with_the_official_schema_of_its_version(row):
    """The oracle is the official file of the document's own version, run with `jsonschema`."""
    document = yaml.load((CORPUS / row["file"]).read_text(), Loader=_NoDates)
    oracle = json.loads((SCHEMAS / ORACLE[row["apiVersion"]]).read_text())
    official_valid = jsonschema.Draft201909Validator(oracle).is_valid(document)
    result = load_contracts([CORPUS / row["file"]])
    errors = [p for p in result.problems if p.severity == "error"]
    if official_valid:
        assert semantic_warnings_only(result), [p.render() for p in result.problems]
    elif row["apiVersion"].startswith("v3.0") and not errors:
        # a v3.0-labelled file written in v3.1 vocabulary: accepted, with a warning naming it
        assert any("v3.1 vocabulary" in p.message for p in result.problems)
    else:
        assert errors


def test_demo_contracts_are_valid_and_fully_accounted():
    result = load_contracts([CONTRACTS])
    assert result.problems == []
    assert len(result.plans) == 3
    for plan in result.plans:
        document, _ = read_document(CONTRACTS / plan.file.split("/")[-1])
        assert_accounted(plan, document.data)


def test_demo_contracts_use_every_row_of_the_clause_table():
    result = load_contracts([CONTRACTS])
    kinds = {c.kind for p in result.plans for o in p.objects for c in o.checks}
    assert kinds >= {
        "schema", "not_null", "unique", "primary_key", "range", "length", "pattern", "accepted_values",
        "null_values", "missing_values", "invalid_values", "duplicate_values", "row_count", "sql",
        "relationship", "multiple_of", "freshness",
    }
    pk = [c for p in result.plans for o in p.objects for c in o.checks if c.kind == "primary_key"]
    assert any(len(c.clauses) > 1 for c in pk), "a compound primary key"
    assert any(c.params.get("format") == "email" for p in result.plans for o in p.objects for c in o.checks)
    codes = {n.code for p in result.plans for n in p.not_enforced}
    assert codes >= {"prose", "custom_engine", "not_data_quality", "unknown_format"}
    assert any(p.schedules for p in result.plans) and any(p.freshness for p in result.plans)
    assert any(c.classified for p in result.plans for o in p.objects for c in o.columns)
