"""A contract's text reaches people through Dagster (asset and check descriptions, metadata labels and
values, jobs and schedules, check results and run logs) and through the command line. A character that
hides or reorders text (a bidirectional override, a zero-width space, a control) never reaches any of
them as itself: it is escaped visibly (`\\u202e`), and kept out of every name (odcs/test_names.py)."""

from __future__ import annotations

import re

import duckdb
import pytest
import yaml
from dagster_shared.record import as_dict, is_record

from dq_contracts import build_contract_defs
from dq_contracts.cli import main
from dq_contracts_tests.support import run_checks

# each a character that hides or reorders text, one per place of the contract
RLO, ZWSP, LRI, PDI, BEL, LSEP = "\u202e", "\u200b", "\u2066", "\u2069", "\x07", "\u2028"
HIDDEN = (RLO, ZWSP, LRI, PDI, BEL, LSEP)


def contract(database: str) -> dict:
    return {
        "apiVersion": "v3.2.0", "kind": "DataContract", "id": f"urn:orders{RLO}", "version": "1.0.0",
        "status": "active", "name": f"sales{ZWSP}", "domain": f"shop{RLO}",
        "description": {"purpose": f"Orders{RLO} of the day", "usage": f"reports{LSEP}"},
        "team": {"name": f"data{RLO}", "members": [{"username": f"ana{ZWSP}@example.com", "role": "owner"}]},
        "authoritativeDefinitions": [{"type": f"docs{RLO}", "url": f"https://example.com/{RLO}x"}],
        "servers": [{"server": "local", "type": "duckdb", "database": database, "schema": "main"}],
        "schema": [{
            "name": f"orders{ZWSP}", "physicalName": "orders", "description": f"The orders{RLO} table",
            "properties": [
                {"name": f"amount{RLO}", "physicalName": "amount", "logicalType": "number",
                 "physicalType": f"DOUBLE{ZWSP}", "description": f"Total{LRI}in euros{PDI}", "required": True,
                 "logicalTypeOptions": {"minimum": 0},
                 "classification": f"internal{RLO}"},
                {"name": f"status{ZWSP}", "physicalName": "status", "logicalType": "string",
                 "enum": [{"value": f"ok{RLO}"}, {"value": "shipped"}],
                 "logicalTypeOptions": {"pattern": f"^[a-z]+{BEL}?$", "format": f"weird{RLO}"},
                 "relationships": [{"to": "orders.nope"}],
                 "quality": [{"metric": "invalidValues", "arguments": {"validValues": [f"ok{RLO}"]}, "mustBe": 0,
                              "name": f"valid{RLO}", "description": f"only ok{RLO}"}]},
            ],
            "quality": [{"type": "sql", "name": f"no_bad{RLO}", "description": f"none{ZWSP} bad",
                         "query": f"SELECT COUNT(*) FROM {{object}} WHERE status = 'bad{RLO}'", "mustBe": 0},
                        {"type": "text", "description": f"prose{RLO}"}],
        }],
        "slaProperties": [{"property": f"retention{RLO}", "value": 3, "unit": "y"}],
    }


def texts(value, depth=0):
    """Every string inside a Dagster object: its fields (named tuples, records, plain objects), mappings
    and sequences."""
    if depth > 14 or value is None or isinstance(value, (bool, int, float, bytes)) or callable(value):
        return
    if isinstance(value, str):
        yield value
    elif is_record(value):
        yield from texts(as_dict(value), depth + 1)
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from texts(k, depth + 1)
            yield from texts(v, depth + 1)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for v in value:
            yield from texts(v, depth + 1)
    elif hasattr(value, "__dict__"):
        yield from texts(vars(value), depth + 1)


def hidden_in(strings) -> list[str]:
    return [s for s in strings if any(h in s for h in HIDDEN)]


@pytest.fixture
def folder(tmp_path):
    database = tmp_path / "w.duckdb"
    with duckdb.connect(str(database)) as c:
        c.execute("CREATE TABLE orders (amount DOUBLE, status VARCHAR)")
        c.execute("INSERT INTO orders VALUES (-1, ?), (2, 'ok'), (NULL, 'bad')", [f"z{RLO}"])
    (tmp_path / "contracts").mkdir()
    (tmp_path / "contracts" / "c.odcs.yaml").write_text(
        yaml.safe_dump(contract(str(database)), allow_unicode=True), encoding="utf-8")
    return tmp_path / "contracts"


def test_no_hidden_character_reaches_dagster(folder):
    defs = build_contract_defs(folder, contract_jobs=True)
    shown = []
    for spec in defs.resolve_all_asset_specs():
        shown += [spec.description, *texts(spec.metadata), *texts(spec.tags), *spec.owners, spec.group_name or ""]
    checks = [s for c in defs.asset_checks or [] for s in c.check_specs]
    for spec in checks:
        shown += [spec.name, spec.description or "", *texts(spec.metadata)]
    for definition in [*(defs.jobs or []), *(defs.schedules or []), *(defs.sensors or [])]:
        shown += [definition.name, getattr(definition, "description", None) or ""]
    for op in defs.asset_checks or []:
        shown += [op.node_def.name, op.node_def.description or ""]
    assert len(checks) >= 6
    assert hidden_in(shown) == []

    result = run_checks(defs)
    evaluations = result.get_asset_check_evaluations()
    assert len(evaluations) == len(checks) and not all(e.passed for e in evaluations)
    said = [*(t for e in evaluations for t in (e.description or "", *texts(e.metadata))),
            *(e.message or "" for e in result.all_events)]
    assert hidden_in(said) == []
    assert any("\\u202e" in s for s in said)  # escaped, not dropped: a person sees it is there


@pytest.mark.parametrize("command", [["validate"], ["plan"], ["check"], ["check", "--format", "json"],
                                     ["plan", "--format", "json"]])
def test_no_hidden_character_reaches_the_command_line(folder, capsys, command):
    main([*command, str(folder)])
    out, err = capsys.readouterr()
    assert hidden_in([out, err]) == []
    assert re.search(r"\\u(202e|200b)", out)  # escaped, not dropped


# Markdown that would load remote content, or be HTML, when a person opens a page of Dagster's UI:
# (id, the contract's text); row n points at evil<n>.example, so what reaches a page is told apart
MARKUP = [
    ("an image", "![t](https://evil0.example/track.png)"),
    ("a reference image", "![t][r]\n\n[r]: https://evil1.example/r.png"),
    ("an image in a link", "[![t](https://evil2.example/i.png)](https://example.com)"),
    ("a raw img tag", '<img src="https://evil3.example/i.png">'),
    ("an HTML block", '<div>\n<iframe src="https://evil4.example/"></iframe>\n</div>'),
    ("an svg image", '<svg><image href="https://evil5.example/s.png"/></svg>'),
    ("a picture source", '<picture><source srcset="https://evil6.example/p.png"></picture>'),
    ("an escaped bracket before", "\\![t](https://evil7.example/e.png) and !![t](https://evil7.example/f.png)"),
]
SAFE_TAGS = {"p", "code", "pre", "em", "strong", "br", "ul", "ol", "li", "blockquote", "hr", "a",
             *(f"h{n}" for n in range(1, 7))}


@pytest.fixture(scope="module")
def markup_pages(tmp_path_factory):
    """Every description Dagster renders as Markdown, of a contract with each MARKUP text in each
    place a contract's prose reaches one (its purpose, an object's, a property's, a clause's), rendered
    as CommonMark with HTML on (what a page shows)."""
    from markdown_it import MarkdownIt

    folder = tmp_path_factory.mktemp("markup")
    database = folder / "w.duckdb"
    with duckdb.connect(str(database)) as c:
        c.execute("CREATE TABLE orders (amount DOUBLE)")
        c.execute("INSERT INTO orders VALUES (-1), (2)")
    every = "\n\n".join(text for _, text in MARKUP)
    document = {
        "apiVersion": "v3.1.0", "kind": "DataContract", "id": "markup", "version": "1.0.0", "status": "active",
        "description": {"purpose": every}, "servers": [{"server": "local", "type": "duckdb",
                                                        "database": str(database), "schema": "main"}],
        "schema": [{"name": "orders", "description": every, "properties": [
            {"name": "amount", "logicalType": "number", "description": every, "required": True,
             "quality": [{"metric": "nullValues", "mustBe": 0, "name": f"q{n}", "description": text}
                         for n, (_, text) in enumerate(MARKUP)]}]}],
    }
    (folder / "contracts").mkdir()
    (folder / "contracts" / "m.odcs.yaml").write_text(yaml.safe_dump(document, allow_unicode=True), encoding="utf-8")
    defs = build_contract_defs(folder / "contracts", contract_jobs=True)
    shown = []
    for spec in defs.resolve_all_asset_specs():
        shown.append(spec.description or "")
        schema = spec.metadata.get("dagster/column_schema")
        shown += [c.description or "" for c in getattr(schema, "schema", schema).columns] if schema else []
    checks = [s for c in defs.asset_checks or [] for s in c.check_specs]
    shown += [spec.description or "" for spec in checks]
    shown += [getattr(d, "description", None) or "" for d in [*(defs.jobs or []), *(defs.schedules or [])]]
    shown += [op.node_def.description or "" for op in defs.asset_checks or []]
    shown += [e.description or "" for e in run_checks(defs).get_asset_check_evaluations()]
    assert len(checks) >= len(MARKUP)
    markdown = MarkdownIt("commonmark")
    return [markdown.render(text) for text in shown if text]


@pytest.mark.parametrize("n", range(len(MARKUP)), ids=[m[0] for m in MARKUP])
def test_no_contract_text_loads_or_is_html_on_a_dagster_page(markup_pages, n):
    pages = "\n".join(markup_pages)
    assert f"evil{n}.example" in pages  # the text is there, shown as text:
    holding = [t for t in re.findall(r"<[A-Za-z][^>]*>", pages) if f"evil{n}.example" in t]
    assert all(t.startswith("<a href=") for t in holding), holding  # a link at most: nothing loads by itself


def test_no_tag_but_markdowns_own_is_on_a_dagster_page(markup_pages):
    tags = {t.lower() for page in markup_pages for t in re.findall(r"<([A-Za-z][A-Za-z0-9]*)", page)}
    assert tags <= SAFE_TAGS, tags - SAFE_TAGS
