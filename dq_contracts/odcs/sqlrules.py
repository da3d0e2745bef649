"""Judge a contract's raw SQL rule as a syntax tree, and render the SQL that runs from that tree.

A `type: sql` rule is the only SQL text that does not come from SQLAlchemy expressions. Its
placeholders (`{object}`, `{property}`, `{partition}`) are replaced by reserved names before it is
parsed, so they stand in the tree as names, never as pasted text. The query is parsed with sqlglot in
the server's dialect, every node of the tree is checked, and what runs is the checked tree rendered
again (comments gone, placeholders as quoted names built as nodes, partition values as bound
parameters). The read-only transaction the runner opens is the second, independent lock.

The rules, each holding for any input:

| rule                 | holds because                                                                   |
|----------------------|---------------------------------------------------------------------------------|
| one read             | one statement whose root is a SELECT, a set operation or a parenthesised SELECT  |
| node types           | every node's type is on `ALLOWED_NODES`; any other type (writes, locks, SET,     |
|                      | PRAGMA, COPY, ATTACH, attribute notation `(t).f`, custom operators, `@@`) is     |
|                      | refused, whatever sqlglot calls it (a TABLESAMPLE / USING SAMPLE is allowed)     |
| functions            | every call (`exp.Func`) is a read-only function of the dialect (sql_functions:   |
|                      | DuckDB's and PostgreSQL's own catalogs, else `ALLOWED_FUNCTIONS`), by the name  |
|                      | the rendered SQL calls; no function but a number generator is a table source,   |
|                      | and a number generator is nothing else (its size is an argument's)              |
| casts                | a cast's (any kind's) target is a data type on `ALLOWED_TYPES` or an interval    |
|                      | (no `regclass`, `xml`…), never a column or qualified name; a collation plain     |
| what runs            | the rendered SQL, parsed again, renders to itself and passes the node, call and  |
|                      | cast rules itself; it holds at most one call that grows text (sql_functions)     |
| tables               | a table is a CTE of the query, the contract's own object, another object of the  |
|                      | contract on that server, or a name the operator allowed; nothing else (no other  |
|                      | schema, catalog, file or table function)                                        |
| columns              | a column is a declared column of a table the query reads, or a name the query    |
|                      | defines (an alias, a CTE's column); `t.f` with `f` not a column of `t` is refused |
|                      | (PostgreSQL's attribute notation for calling `f(t)`), so is a table used as a    |
|                      | value (`to_json(t)`, `t::text`)                                                  |
| whole rows           | `*` only as `COUNT(*)`; `t.*`, `ROW(t.*)`, `SELECT *` are refused                 |
| classified columns   | only `COUNT(c)`, `COUNT(DISTINCT c)`, `c IS [NOT] NULL`: forms whose result      |
|                      | cannot return or encode a value                                                 |
| placeholders         | a placeholder stands alone as a name: inside a string (any quoting), a quoted    |
|                      | name or a comment it is refused; the reserved prefix may not appear in a query   |
"""

from __future__ import annotations

import dataclasses
import functools
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from dq_contracts.odcs.servers import sqlglot_dialect
from dq_contracts.odcs.sql_scopes import alias_refusal
from dq_contracts.odcs.sql_functions import (  # noqa: F401  (the allow-list's names, as before)
    ALLOWED_FUNCTIONS, FUNCTION_FAMILIES, GENERATORS, call_refusal, collation_refusal, growth_refusal, sqlglot_name)

_PLACEHOLDER = re.compile(r"\$?\{([A-Za-z_][A-Za-z0-9_]*)\}")
PLACEHOLDER = _PLACEHOLDER  # `{object}`, `${property}`: diff_clauses reads a query's placeholders too
TABLE_PLACEHOLDERS = {"object", "table", "model"}
COLUMN_PLACEHOLDERS = {"property", "column", "field"}
PARTITION_PLACEHOLDER = "partition"  # `{partition}`: the rows of the partition checked; TRUE for the whole table
RESERVED = "dq_placeholder_"  # the names placeholders and bound values take in the tree: never in a query
_OBJECT, _PROPERTY, _PARTITION = RESERVED + "object", RESERVED + "property", RESERVED + "partition"

# Every node type (other than calls, judged by name above) a rule's tree may hold: the shapes of a
# read, its predicates and arithmetic. A type not listed is refused, whatever it is.
ALLOWED_NODES = (
    "Select", "Union", "Intersect", "Except", "Subquery", "With", "CTE", "TableAlias", "From", "Join", "Where",
    "Group", "Having", "Qualify", "Order", "Ordered", "Limit", "Offset", "Fetch", "Distinct", "Alias", "Column",
    "Identifier", "Table", "Star", "Literal", "RawString", "UnicodeString", "ByteString", "National", "HexString",
    "BitString", "Null", "Boolean", "Paren", "Neg", "Not", "And", "Or", "Xor",
    "EQ", "NEQ", "GT", "GTE", "LT", "LTE", "NullSafeEQ", "NullSafeNEQ", "Is", "In", "Between", "Like", "ILike",
    "Escape", "Add", "Sub", "Mul", "Div", "Mod", "IntDiv", "DPipe", "Case", "DataType", "DataTypeParam", "Interval",
    "Var", "TableSample", "Window", "WindowSpec", "Filter", "Exists", "Any", "All", "Tuple",
    "Bracket", "Lambda",  # a subscript `l[1]`; `x -> x > 1` (its variables are names, not columns; its body is judged as the rest)
    "WithinGroup",  # `percentile_cont(0.5) WITHIN GROUP (ORDER BY a)`; then a JSON path of constants only
    "JSONPath", "JSONPathRoot", "JSONPathKey", "JSONPathSubscript",  # `j ->> 'k'`, `j -> 0`: no filter, script
)
# Cast targets: plain value types. Not the types whose input function looks names up or parses
# documents (regclass, regproc, xml, json paths…), nor user-defined ones.
ALLOWED_TYPES = (
    "BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINT", "UBIGINT",
    "FLOAT", "DOUBLE", "DECIMAL", "BIGDECIMAL", "MONEY", "CHAR", "NCHAR", "VARCHAR", "NVARCHAR", "TEXT", "NAME",
    "DATE", "TIME", "TIMETZ", "TIMESTAMP", "TIMESTAMPTZ", "TIMESTAMPLTZ", "TIMESTAMP_S", "TIMESTAMP_MS",
    "TIMESTAMP_NS", "DATETIME", "INTERVAL", "UUID", "ARRAY", "LIST",  # a list or array of these types
    # plain date and time types as sqlglot reads some dialects' spellings (DuckDB's TIMESTAMP is TIMESTAMPNTZ;
    # ClickHouse's DATE32, DATETIME64; T-SQL's DATETIME2); an INTERVAL with fields (DAY TO SECOND) too
    "TIMESTAMPNTZ", "TIME_NS", "DATE32", "DATETIME64", "DATETIME2", "SMALLDATETIME",
)
CLASSIFIED_FORMS = "COUNT(c), COUNT(DISTINCT c) and c IS [NOT] NULL"


@functools.cache
def _node_types() -> tuple[tuple[type, ...], frozenset]:
    """sqlglot's node classes of the allow-list and its cast types. sqlglot is imported on the first
    SQL rule judged, not with the package: it costs a tenth of a second or more of every process's
    start-up, and most contracts hold no SQL rule."""
    from sqlglot import exp

    nodes = tuple(getattr(exp, name) for name in ALLOWED_NODES if hasattr(exp, name))
    types = frozenset(getattr(exp.DataType.Type, name) for name in ALLOWED_TYPES if hasattr(exp.DataType.Type, name))
    return nodes, types


Tables = Mapping[str, Mapping[str, bool]]  # physical table name -> {physical column: classified}


@dataclass(frozen=True)
class SqlVerdict:
    tree: Any = None  # the checked sqlglot tree, placeholders still reserved names; None when refused
    refusal: str | None = None
    unresolved: tuple[str, ...] = field(default_factory=tuple)
    dialect: str | None = None
    own: str = ""  # the physical name `{object}` stands for
    column: str | None = None  # the physical column `{property}` stands for
    partitioned: bool = False  # whether the query holds `{partition}`
    undeclared: bool = False  # refused for a table or column the contract does not declare
    names: dict[str, str] = field(default_factory=dict)  # each readable table's name in lower case -> as declared


def judge_sql_rule(query: str, *, dialect: str | None, own: str, column: str | None, tables: Tables,
                   allowed_tables: Iterable[str] = ()) -> SqlVerdict:
    """The verdict on a rule of the object `own` (its `{property}` is `column`): `tables` are the
    contract's objects on that server with their declared columns (the rule's own object among them),
    `allowed_tables` further names the operator allows. Refused: `refusal` says why."""
    dialect = sqlglot_dialect(dialect) or dialect
    unresolved: list[str] = []
    partitioned = False

    def replace(match: re.Match) -> str:
        nonlocal partitioned
        name = match.group(1)
        if name == PARTITION_PLACEHOLDER:
            partitioned = True
            return _PARTITION
        if name in TABLE_PLACEHOLDERS:
            return _OBJECT
        if name in COLUMN_PLACEHOLDERS and column is not None:
            return _PROPERTY
        unresolved.append(match.group(0))
        return match.group(0)

    def refused(why: str) -> SqlVerdict:
        return SqlVerdict(None, why, dialect=dialect, own=own, column=column, partitioned=partitioned)

    query = str(query or "")
    if not query.strip():
        return refused("the query is empty")
    if RESERVED in query.lower():
        return refused(f"the query holds {RESERVED!r}, a prefix reserved for placeholders")
    text = _PLACEHOLDER.sub(replace, query)
    if unresolved:
        return SqlVerdict(None, None, tuple(dict.fromkeys(unresolved)), dialect, own, column, partitioned)
    try:
        root = _parsed(text, dialect)
    except _Refused as why:
        return refused(str(why))
    lowered = {name.lower(): {c.lower(): bool(k) for c, k in cols.items()} for name, cols in tables.items()}
    lowered.setdefault(own.lower(), {})
    if column is not None:
        lowered[own.lower()].setdefault(column.lower(), False)
    checker = _Checker(root, own.lower(), column, lowered, {t.lower() for t in allowed_tables}, dialect or None)
    why = checker.refusal()
    if why:
        return dataclasses.replace(refused(why), undeclared=checker.undeclared)
    try:
        _scoped(root, lowered, own.lower(), column, dialect, {t.lower() for t in allowed_tables})
    except _Refused as why:
        return dataclasses.replace(refused(str(why)), undeclared=isinstance(why, _Undeclared))
    names = {name.lower(): name for name in [*allowed_tables, *tables, own]}
    return SqlVerdict(root, None, (), dialect, own, column, partitioned, names)


class _Refused(Exception):
    pass


def _rendered_refusal(checker: "_Checker", root: Any, dialect: str | None) -> str | None:
    """The checked tree rendered, as it runs, parsed again and judged node by node: sqlglot renders
    some calls as others (`uniform` as `FLOOR(… RANDOM() …)`, `generate_date_array` as a
    `GENERATE_SERIES` cast, `to_variant` as a cast), and every call and cast of what runs is judged,
    not the first name alone. The rendering must be its own fixed point, so what is judged is what
    runs; text-growing calls are counted there."""
    import sqlglot

    try:
        text = root.sql(dialect=dialect)
        again = sqlglot.parse_one(text, read=dialect)
        if again.sql(dialect=dialect) != text:
            return "the query renders differently each time it is rendered; the judge cannot tell what runs"
        for node in again.walk():
            checker.check(node)
        return growth_refusal(again)
    except _Refused as why:
        return str(why)
    except sqlglot.errors.SqlglotError as exc:
        return f"the query as rendered does not parse again ({str(exc).splitlines()[0][:120] if str(exc) else ''})"


def _scoped(root: Any, tables: dict[str, dict[str, bool]], own: str, column: str | None, dialect: str | None,
            allowed: set[str]) -> None:
    """The names of the tree resolved as the database resolves them, scope by scope (sqlglot's
    `qualify` and `traverse_scope`): USING and NATURAL joins become the columns they compare, an
    alias means what it means where it stands, a CTE is one only where it is visible. Then every
    table a scope reads is a table of the contract (or one the operator allows), every column a
    declared column of the table it comes from, and every classified column used only in a counted
    form. A name the judge cannot resolve is refused: what it cannot see, it does not run."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import OptimizeError
    from sqlglot.optimizer.qualify import qualify
    from sqlglot.optimizer.scope import traverse_scope

    tree = root.copy()
    real = dict(tables)
    real[_OBJECT] = tables.get(own, {})
    for cte in tree.find_all(exp.CTE):  # a CTE named like a table would read that table where it is not seen
        if cte.alias_or_name.lower() in real or cte.alias_or_name.lower() in allowed:
            raise _Refused(f"the query defines a CTE {cte.alias_or_name!r} named like a table; give it another name")
    for alias in tree.find_all(exp.TableAlias):  # a column list renames a table's columns by a position unknown here
        if alias.columns and isinstance(alias.parent, exp.Table) and not isinstance(alias.parent.this, exp.Func):
            raise _Refused(f"the query renames a table's columns ({alias.sql()}); name the columns as declared")

    def plain(node: Any) -> Any:
        if isinstance(node, exp.Table) and isinstance(node.this, exp.Identifier):  # one flat name: a.b.c
            flat = exp.Table(this=exp.Identifier(this=".".join(
                p.name.lower() for p in (node.args.get("catalog"), node.args.get("db"), node.this) if p is not None)))
            if node.args.get("alias") is not None:
                flat.set("alias", node.args["alias"].copy())
            return flat
        if isinstance(node, exp.Column) and node.name.lower() == _PARTITION:
            return exp.true()
        if isinstance(node, exp.Column) and node.name.lower() == _PROPERTY and column is not None:
            return exp.Column(this=exp.Identifier(this=column.lower()), table=node.args.get("table"))
        return node

    tree = tree.transform(plain)
    if why := alias_refusal(tree, real):
        raise _Refused(why)
    schema = {name: {c: "text" for c in columns} or {RESERVED + "none": "text"}
              for name, columns in [*real.items(), *((a, {}) for a in allowed if a not in real)]}
    try:
        tree = qualify(tree, schema=schema, dialect=dialect, validate_qualify_columns=True, quote_identifiers=False,
                       identify=False, expand_stars=False)
        scopes = list(traverse_scope(tree))
    except (OptimizeError, sqlglot.errors.SqlglotError) as exc:
        raise _Undeclared(f"the query names something that is not a declared column of a table it reads, as "
                          f"the judge resolves names ({str(exc).splitlines()[0][:120]})") from None
    except Exception as exc:  # sqlglot's optimizer fails on some odd trees in other ways
        raise _Refused(f"the query could not be resolved name by name ({type(exc).__name__})") from None

    def table_name(node: Any) -> str:
        return node.name.lower()

    def source_of(scope: Any, qualifier: str) -> Any:
        while scope is not None:
            if qualifier in scope.sources:
                return scope.sources[qualifier]
            scope = scope.parent
        return None

    whole = next(tree.find_all(*(t for t in (getattr(exp, "TableColumn", None),) if t)), None)
    if whole is not None:  # what qualify reads as a table's name used as a value
        raise _Refused(f"the query uses the table {whole.name!r} as a value (a whole row)")
    for col in tree.find_all(exp.Column):  # unqualified after qualify: an output alias, or nothing it knows
        if not col.table:
            select = col.find_ancestor(exp.Select)
            aliases = {s.alias_or_name.lower() for s in select.selects} if select is not None else set()
            sources = {s.alias_or_name.lower() for s in tree.find_all(exp.Table)} | {
                s.alias_or_name.lower() for s in tree.find_all(exp.Subquery, exp.CTE)}
            if col.name.lower() in sources or col.find_ancestor(exp.Order) is None or col.name.lower() not in aliases:
                raise _Refused(f"the query uses {col.name!r} where it is not a column of a table it reads (a whole "
                               "row, or an output alias outside ORDER BY)")
    for scope in scopes:
        for source in scope.sources.values():
            if isinstance(source, exp.Table) and not isinstance(source.this, exp.Func):
                name = table_name(source)
                if name not in real and name not in allowed:
                    raise _Undeclared(f"the query reads {name!r} where no CTE of that name is visible, and it is "
                                      "not an object of this contract on this server")
        for col in scope.columns:
            qualifier = col.table.lower()
            if not qualifier:
                continue  # an output alias in ORDER BY (above)
            source = source_of(scope, qualifier)
            if not isinstance(source, exp.Table) or isinstance(source.this, exp.Func):
                continue  # a CTE's or subquery's output (judged in its own scope), or a generator's numbers
            declared = real.get(table_name(source))
            if declared is None:  # a table the operator allows: no column of it is known to be classified
                continue
            if col.name.lower() not in declared:
                raise _Undeclared(f"the query names {col.name!r}, which is not a declared column of "
                                  f"{table_name(source)!r}")
            if declared[col.name.lower()] and not _counted_only(col):
                raise _Refused(f"the query reads the classified column {col.name!r} in a form that could return "
                               f"or encode its values; only {CLASSIFIED_FORMS} are allowed")


def _counted_only(node: Any) -> bool:
    """Whether a column is used as COUNT(c), COUNT(DISTINCT c) or c IS [NOT] NULL."""
    from sqlglot import exp

    parent = node.parent
    if isinstance(parent, exp.Distinct) and parent.args.get("expressions") == [node]:
        node, parent = parent, parent.parent
    if isinstance(parent, exp.Count) and parent.this is node:
        return True
    return isinstance(parent, exp.Is) and parent.this is node and isinstance(parent.expression, exp.Null)


def _plain_type(node: Any) -> bool:
    """Whether a data type is on ALLOWED_TYPES, or an interval with fields (`INTERVAL DAY TO SECOND`)."""
    from sqlglot import exp

    this = node.this
    if isinstance(node, exp.IntervalSpan):  # `DAY TO SECOND` (to sqlglot a data type): two words
        return all(isinstance(part, exp.Var) for part in (this, node.expression))
    return isinstance(this, exp.Interval) and this.this is None and isinstance(
        this.args.get("unit"), (exp.Var, exp.IntervalSpan)) or this in _node_types()[1]


class _Undeclared(_Refused):
    """A name the contract does not declare: a clause that cannot run as written (a warning where
    the official schema accepts the document), refused all the same."""


def _parsed(text: str, dialect: str | None) -> Any:
    """The one statement of `text`, its placeholders standing alone as names; else _Refused."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.tokens import TokenType

    try:
        tokens = sqlglot.tokenize(text, read=dialect or None)
        statements = [s for s in sqlglot.parse(text, read=dialect or None) if s is not None]
    except sqlglot.errors.SqlglotError as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise _Refused(f"the query does not parse as {dialect or 'SQL'}: {first[:200]}") from None
    except Exception as exc:  # sqlglot raises a few non-SqlglotError types on odd input
        raise _Refused(f"the query does not parse: {type(exc).__name__}") from None
    for token in tokens:
        if any(RESERVED in c.lower() for c in token.comments):
            raise _Refused("a placeholder stands inside a comment; it may stand only for a name")
        if RESERVED in token.text.lower() and (token.token_type != TokenType.VAR or token.text.lower() not in
                                               (_OBJECT, _PROPERTY, _PARTITION)):
            raise _Refused("a placeholder stands inside a string or a quoted name; it may stand only for a "
                           "name, unquoted")
    if len(statements) != 1:
        raise _Refused(f"the query holds {len(statements)} statements; one SELECT is allowed")
    root = statements[0]
    if not isinstance(root, (exp.Select, exp.Union, exp.Intersect, exp.Except, exp.Subquery)):
        if isinstance(root, exp.Column):  # sqlglot reads bare words as a column
            raise _Refused("the query is not SQL (plain text?); one SELECT is allowed")
        kind = root.key.upper()
        raise _Refused(f"the query is {'an' if kind[0] in 'AEIOU' else 'a'} {kind}, not a SELECT")
    return root


_name = sqlglot_name


class _Checker:
    """Every node of one tree against the rules of the module's table."""

    def __init__(self, root: Any, own: str, column: str | None, tables: dict[str, dict[str, bool]],
                 allowed: set[str], dialect: str | None = None):
        from sqlglot import exp

        self.exp, self.root, self.own, self.column, self.dialect = exp, root, own, column, dialect
        self.tables, self.allowed = tables, allowed
        self.ctes = {cte.alias_or_name.lower() for cte in root.find_all(exp.CTE)}
        # the names the query itself defines: output aliases, CTE and derived-table column lists
        self.defined = {a.alias.lower() for a in root.find_all(exp.Alias) if a.alias}
        self.defined |= {c.name.lower() for t in root.find_all(exp.TableAlias) for c in t.columns}
        self.sources: dict[str, str | None] = {}  # a name or alias a column may be qualified by -> its table
        self.outputs: dict[str, set[str]] = {}  # a derived table (subquery, CTE, generator) -> its column names
        for derived in [*root.find_all(exp.Subquery), *root.find_all(exp.CTE)]:
            if derived.alias:
                self.derived(derived.alias, derived.args.get("alias"), getattr(derived.this, "named_selects", []))
        self.read: set[str] = set()  # the contract tables the query reads
        self.undeclared = False

    def derived(self, name: str, alias: Any, columns: list[str]) -> None:
        named = [c.name for c in alias.columns] if alias is not None else []
        self.sources[name.lower()] = None
        self.outputs.setdefault(name.lower(), set()).update(c.lower() for c in [*columns, *named] if c)

    def table_of(self, node: Any) -> str | None:
        """The contract table a table node reads, or None for a CTE; _Refused for anything else."""
        exp = self.exp
        if isinstance(node.this, exp.Func) and _name(node.this) in GENERATORS:
            # numbers made of checked expressions: no data read; its column is named after it or its alias
            self.derived(node.alias, node.args.get("alias"), [node.alias, _name(node.this)])
            return None
        if not isinstance(node.this, exp.Identifier):
            raise _Refused(f"the query reads from {node.this.sql()[:80]}, a table function; only tables of "
                           "the contract may be read")
        parts = [p.name for p in (node.args.get("catalog"), node.args.get("db"), node.this) if p is not None]
        name = ".".join(parts).lower()
        if len(parts) == 1 and name in self.ctes:
            return None
        if name == _OBJECT:
            return self.own
        if name in self.tables or name in self.allowed:
            return name
        raise _Undeclared(f"the query reads {'.'.join(parts)!r}, which is not an object of this contract on this "
                       "server")

    def refusal(self) -> str | None:
        exp = self.exp
        try:
            for node in self.root.walk():  # first the shapes (a write says so, whatever it names)
                self.check(node)
            for star in self.root.find_all(exp.Star):
                if not (isinstance(star.parent, exp.Count) and star.parent.this is star):
                    raise _Refused("the query reads whole rows (*); only COUNT(*) may use *")
            for table in self.root.find_all(exp.Table):
                name = self.table_of(table)
                if name is not None:
                    self.read.add(name)
                    self.sources[(table.alias or table.name).lower()] = name
                    if table.name.lower() == _OBJECT:
                        self.sources[self.own.split(".")[-1]] = name
            for column in self.root.find_all(exp.Column):  # then the names, once every source is known
                self.check_column(column)
        except _Refused as why:
            self.undeclared = isinstance(why, _Undeclared)
            return str(why)
        return _rendered_refusal(self, self.root, self.dialect)

    def check(self, node: Any) -> None:
        exp = self.exp
        nodes, parent = _node_types()[0], node.parent
        if isinstance(node, exp.Func):
            name = _name(node)
            why = call_refusal(node, self.dialect, source=isinstance(parent, (exp.From, exp.Join, exp.Table)))
            if why:
                raise _Refused(why)
            if isinstance(parent, (exp.From, exp.Join, exp.Table)) and name not in GENERATORS:
                raise _Refused(f"the query reads from {name}(), a table function; only tables of the contract "
                               "may be read")
            # every cast (TRY_CAST, J_S_O_N_CAST…: any subclass) names a type as a type, never a name a
            # column could stand for (`J_S_O_N_CAST(x, regclass)` with a CTE column `regclass`)
            to = node.args.get("to") if isinstance(node, exp.Cast) else None
            if isinstance(node, exp.Cast) and (not isinstance(to, exp.DataType) or to.find(exp.Column) is not None
                                               or not all(map(_plain_type, to.find_all(exp.DataType)))):
                raise _Refused(f"the query casts to {to.sql() if to is not None else 'nothing'}, which is not a "
                               "plain value type")
            if isinstance(node, exp.Collate) and (why := collation_refusal(node)):
                raise _Refused(why)
        elif not isinstance(node, nodes):
            raise _Refused(f"the query holds {node.key.upper()} ({node.sql()[:60]!r}), which a rule may not use")
        elif isinstance(node, exp.Var) and not (isinstance(parent, (exp.Interval, exp.DataType, exp.DataTypeParam,
                                                                   exp.TableSample, exp.Extract))
                                                or parent.args.get("unit") is node):  # a unit: DATEADD(day, …)
            raise _Refused(f"the query holds the bare word {node.name!r}")

    def check_column(self, node: Any) -> None:
        exp = self.exp
        name, qualifier = node.name.lower(), node.table.lower()
        if isinstance(node.this, exp.Star):
            raise _Refused(f"the query reads whole rows ({node.sql()}); only COUNT(*) may use *")
        if node.args.get("db") is not None or node.args.get("catalog") is not None:
            raise _Refused(f"the query names {node.sql()!r}; a column is named as column or table.column")
        if name == _PARTITION:
            if qualifier or not isinstance(node.parent, (exp.Where, exp.And, exp.Or, exp.Paren, exp.Having, exp.Join,
                                                        exp.Not, exp.Filter)):
                raise _Refused("{partition} stands for a condition: use it as one (WHERE … AND {partition})")
            return
        if name == _OBJECT:
            raise _Refused("{object} stands for a table and is used as a value")
        if name == _PROPERTY:
            name = self.column.lower()
        if qualifier == _OBJECT:
            qualifier = self.own.split(".")[-1]
        if qualifier:
            if qualifier not in self.sources:
                raise _Refused(f"the query names {node.sql()!r}, but reads no table {node.table!r}")
            table = self.sources[qualifier]
            known = self.tables.get(table, {}) if table is not None else self.outputs.get(qualifier, set())
            if name not in known:
                raise _Undeclared(f"the query names {node.sql()!r}, and {node.name!r} is not a declared column of "
                               f"{node.table!r} (a function called in attribute notation?)")
            classified = self.tables[table].get(name, False) if table is not None else self.any_classified(name)
        else:
            declared = any(name in self.tables[t] for t in self.read)
            if not declared and name not in self.defined:
                if name in self.sources:
                    raise _Refused(f"the query uses the table {node.name!r} as a value (a whole row)")
                raise _Undeclared(f"the query names {node.name!r}, which is not a declared column of a table it reads")
            classified = self.any_classified(name)
        if classified and not self.counted_only(node):
            shown = self.column if node.name.lower() == _PROPERTY else node.name
            raise _Refused(f"the query reads the classified column {shown!r} in a form that could return or encode "
                           f"its values; only {CLASSIFIED_FORMS} are allowed")

    def any_classified(self, name: str) -> bool:
        return any(self.tables[t].get(name, False) for t in self.read)

    def counted_only(self, node: Any) -> bool:
        return _counted_only(node)




