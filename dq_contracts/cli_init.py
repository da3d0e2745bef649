"""`dq-contracts init`: a draft contract from tables or files, or the diff from a contract to its
tables as they are now (`--against`); cli.py parses its arguments."""

from __future__ import annotations

import argparse
import sys

from dq_contracts.odcs.visible import one_line, say


def cmd_init(args: argparse.Namespace) -> int:
    import sqlalchemy as sa

    from dq_contracts.engine.draft import ContractRefused
    from dq_contracts.engine.sessions import ReadOnlyRefused

    sources = sum(map(bool, (args.url, args.server, args.path)))  # --against alone: the contract's own server
    if sources > 1 or not (sources or args.against):
        say("dq-contracts init: give either --url URL or --server NAME (its DQ_CONTRACTS_<NAME>_* endpoint) "
            "or --path FILES", file=sys.stderr)
        return 1
    if not args.table and not args.against:
        say("dq-contracts init: give --table NAME (repeat for more)", file=sys.stderr)
        return 1
    if args.contracts and not args.against:
        say("dq-contracts init: --contracts is for --against FILE", file=sys.stderr)
        return 1
    try:
        return _draw(args)
    except ContractRefused as refused:  # in check's own sentences, before anything connects
        for problem in refused.problems:
            say(one_line(problem.render()), file=sys.stderr)
        say(f"dq-contracts init: {one_line(args.against)}: not measured: check refuses this contract (the "
            "problems above); nothing was read of its tables", file=sys.stderr)
        return 1
    # a missing table or file, a refused endpoint or session, a malformed URL: said in our own words,
    # on one line (a table's or a file's name is the contract's text)
    except (LookupError, ValueError, OSError, ReadOnlyRefused, sa.exc.ArgumentError) as exc:
        say(f"dq-contracts init: {one_line(exc)}", file=sys.stderr)
        return 1


def _draw(args: argparse.Namespace) -> int:
    import os

    from dq_contracts.engine.connections import connection_for, operator_url
    from dq_contracts.engine.draft import as_checked, url_connection
    from dq_contracts.odcs.declaration import declaration_of
    from dq_contracts.odcs.draft import entry_lines, file_server, server_entry
    from dq_contracts.odcs.servers import server_type_of_dialect

    # loaded as check loads it, refused as check refuses it, before anything connects
    checked = as_checked(args.against, args.contracts, args.server) if args.against else None
    if args.against and not (args.url or args.server or args.path):
        return _against(args, None, "table", checked)
    written = args.output or args.against
    folder = os.path.dirname(os.path.abspath(written)) if written else os.getcwd()
    if args.path:  # files: a file server, opened as check opens it from the contract's folder
        server = file_server(args.path, args.file_format, args.server_type, args.table or [], folder)
        return _drawn(args, connection_for(server, folder=folder), entry_lines(server), "file",
                      checked)
    if args.server:  # the operator's endpoint, as check builds it
        kind = args.server_type or declaration_of(args.server).type
        server = {"server": args.server, "type": kind, **({"schema": args.schema} if args.schema else {})}
        connection = connection_for(server)
        url = connection.url
    else:
        url = operator_url(args.url)
        if url.get_backend_name() == "duckdb" and url.database in (None, "", ":memory:"):
            # read-only, DuckDB refuses an in-memory database with an error that reads as our own bug
            raise ValueError(f"{args.url}: init reads a DuckDB file, duckdb:///path/to/file.duckdb; "
                             "an in-memory database holds no table")
    row = server_type_of_dialect(url.get_backend_name())
    kind = args.server_type or (row.names[0] if row is not None else url.get_backend_name())
    schema = args.schema or (row.default_schema if row is not None else None)
    if args.url:
        connection = url_connection(url, schema)
    database_path = None
    if row is not None and row.database_file:  # a file: said from the output's folder, as check reads it
        database_path = os.path.relpath(os.path.abspath(url.database or ""), folder)
    entry = server_entry(url, connection.schema or schema, kind, database_path, args.server or "warehouse")
    return _drawn(args, connection, entry, "table", checked)


def _drawn(args: argparse.Namespace, connection, entry: list[str], object_type: str, checked=None) -> int:
    import os

    from dq_contracts.engine.draft import measure
    from dq_contracts.odcs.draft import draft_text

    if args.against:
        return _against(args, connection, object_type, checked)
    tables = measure(connection, args.table, args.timeout)
    text = draft_text(tables, entry, f"urn:dq-contracts:draft:{tables[0].name}", object_type)
    if args.output:
        # a reviewed contract drawn over is lost: say so, and how to see the change instead
        replaced = os.path.exists(args.output)
        with open(args.output, "w", encoding="utf-8") as out:
            out.write(text)
        said = ("; it replaced the file there (to see what the tables changed since a contract, run "
                "dq-contracts init --against FILE)" if replaced else "")
        say(f"dq-contracts init: wrote {args.output} ({len(tables)} table(s)){said}")
    else:
        sys.stdout.write(text)
    return 0


def _against(args: argparse.Namespace, connection, object_type: str, checked) -> int:
    """The diff from the contract to the contract as its tables are now, for the tables still there;
    a line for each object whose table is gone. The file is never written."""
    from dq_contracts.engine.draft import drift

    found = drift(connection, args.against, args.table, args.timeout, object_type, args.server, checked)
    sys.stdout.write(found.diff)
    file = one_line(args.against)  # every text of the contract (a name, a table, a path) on one line
    for obj, what, where in found.gone:  # its object is left as written: the diff is of the tables still there
        say(f"dq-contracts init: {file}: object {one_line(obj)}: {one_line(what)} is gone from {one_line(where)}; "
            "the diff leaves its object as written", file=sys.stderr)
    if not (found.diff or found.gone):  # a diff says nothing when nothing differs; a person is told what was compared
        say(f"dq-contracts init: {file}: nothing init compares has changed in its tables", file=sys.stderr)
    return 1 if found.diff or found.gone else 0
