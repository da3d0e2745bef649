"""The ODCS side of the check kinds: one row per kind, with what the contract and the plan say of it.

A row names the clauses that compile to the kind, the class of its typed parameters, what it reads
of a partitioned table (its reach), what its observed value counts, and its ODCS dimension. The
engine's row of the same kind (how it is measured, sampled, judged and worded) is
`engine.check_kinds.KINDS`, keyed alike; a test holds the two tables to the same keys. Every field
is stated in every row: a missing one is an error where the row is written, never a silent default.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dq_contracts.odcs.params import (
    FreshnessParams,
    InvalidParams,
    KeyParams,
    LengthParams,
    MultipleParams,
    Params,
    PatternParams,
    RangeParams,
    RelationshipParams,
    SchemaParams,
    SqlParams,
    ValuesParams,
)


# A kind's reach: what a check of a partitioned object reads. PER_PARTITION: the partition's rows
# alone; TABLE_WIDE: the clause is about the whole table and runs unpartitioned, with the reason;
# PLACEHOLDER: a SQL rule reads one partition only if its query says where with `{partition}`.
PER_PARTITION, TABLE_WIDE, PLACEHOLDER = "partition", "table", "placeholder"
REACHES = (PER_PARTITION, TABLE_WIDE, PLACEHOLDER)


# The clause the compiler joins itself: the `primaryKey` flags of an object's properties, one check.
PRIMARY_KEY = "primaryKey"

OFFENDING_ROWS = "rows that break the clause"
ROWS_OF_THE_PARTITION = "the partition's rows"
PERCENT_OF_THE_PARTITION = "the partition's rows; a percent is of the partition's rows"
ROWS = "rows"
# the observed units that are whole numbers of rows: diff compares their thresholds on whole numbers
COUNTED = (OFFENDING_ROWS, ROWS)


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckKind:
    name: str
    clauses: tuple[str, ...]  # the clause kinds (keys of clauses.CLAUSES, or PRIMARY_KEY) compiled to it
    params: type[Params]  # its typed parameters
    reach: str  # one of REACHES: what it reads of a partitioned table
    reach_why: str  # why, as `plan` says it
    observed_unit: str  # what its observed value counts, for people (a percent aside)
    dimension: str | None  # its ODCS dimension when the clause names none; None: the clause's own, if any
    # its clause may hold a warn level beside its fail level (a quality rule's `warnThreshold`,
    # clauses/levels.py); a flag's rule is "no offending row", and nothing is reached before that
    warn_level: bool
    # its measure on clean data (no offending row: 0 NULLs, 0 %), where it has one: a warn level that
    # value breaks would warn on every run (a row count, a SQL rule's result, have none)
    clean: int | None


CHECK_KINDS: dict[str, CheckKind] = {k.name: k for k in [
    CheckKind(name="schema", clauses=("schema",), params=SchemaParams, reach=TABLE_WIDE,
              reach_why="the catalog has one set of columns for the whole table",
              observed_unit="columns that differ", dimension=None, warn_level=False, clean=None),
    CheckKind(name="not_null", clauses=("required",), params=Params, reach=PER_PARTITION,
              reach_why=ROWS_OF_THE_PARTITION, observed_unit=OFFENDING_ROWS, dimension=None, warn_level=False, clean=None),
    CheckKind(name="null_values", clauses=("metric:nullValues",), params=Params, reach=PER_PARTITION,
              reach_why=PERCENT_OF_THE_PARTITION, observed_unit=OFFENDING_ROWS, dimension=None, warn_level=True, clean=0),
    CheckKind(name="unique", clauses=("unique",), params=KeyParams, reach=PER_PARTITION,
              reach_why="no duplicate within the partition (one across partitions is not seen)",
              observed_unit=OFFENDING_ROWS, dimension=None, warn_level=False, clean=None),
    CheckKind(name="primary_key", clauses=(PRIMARY_KEY,), params=KeyParams, reach=PER_PARTITION,
              reach_why="no NULL and no duplicate within the partition", observed_unit=OFFENDING_ROWS,
              dimension=None, warn_level=False, clean=None),
    CheckKind(name="duplicate_values", clauses=("metric:duplicateValues",), params=KeyParams,
              reach=PER_PARTITION, reach_why="duplicates within the partition", observed_unit=OFFENDING_ROWS,
              dimension=None, warn_level=True, clean=0),
    CheckKind(name="range", clauses=("option:minimum", "option:maximum", "option:exclusiveMinimum",
                                     "option:exclusiveMaximum"), params=RangeParams, reach=PER_PARTITION,
              reach_why=ROWS_OF_THE_PARTITION, observed_unit=OFFENDING_ROWS, dimension=None, warn_level=False, clean=None),
    CheckKind(name="length", clauses=("option:minLength", "option:maxLength"), params=LengthParams,
              reach=PER_PARTITION, reach_why=ROWS_OF_THE_PARTITION, observed_unit=OFFENDING_ROWS,
              dimension=None, warn_level=False, clean=None),
    CheckKind(name="pattern", clauses=("option:pattern", "option:format"), params=PatternParams,
              reach=PER_PARTITION, reach_why=ROWS_OF_THE_PARTITION, observed_unit=OFFENDING_ROWS,
              dimension=None, warn_level=False, clean=None),
    CheckKind(name="accepted_values", clauses=("enum",), params=ValuesParams, reach=PER_PARTITION,
              reach_why=ROWS_OF_THE_PARTITION, observed_unit=OFFENDING_ROWS, dimension=None, warn_level=False, clean=None),
    CheckKind(name="missing_values", clauses=("metric:missingValues",), params=ValuesParams,
              reach=PER_PARTITION, reach_why=PERCENT_OF_THE_PARTITION, observed_unit=OFFENDING_ROWS,
              dimension=None, warn_level=True, clean=0),
    CheckKind(name="invalid_values", clauses=("metric:invalidValues",), params=InvalidParams,
              reach=PER_PARTITION, reach_why=PERCENT_OF_THE_PARTITION, observed_unit=OFFENDING_ROWS,
              dimension=None, warn_level=True, clean=0),
    CheckKind(name="multiple_of", clauses=("option:multipleOf",), params=MultipleParams, reach=PER_PARTITION,
              reach_why=ROWS_OF_THE_PARTITION, observed_unit=OFFENDING_ROWS, dimension=None, warn_level=False, clean=None),
    CheckKind(name="row_count", clauses=("metric:rowCount",), params=Params, reach=PER_PARTITION,
              reach_why="the bounds apply to each partition's rows", observed_unit=ROWS, dimension=None, warn_level=True, clean=None),
    CheckKind(name="freshness", clauses=("sla:latency",), params=FreshnessParams, reach=TABLE_WIDE,
              reach_why="the newest value of the whole table: an old partition would always be stale",
              observed_unit="seconds of age", dimension="timeliness", warn_level=False, clean=None),
    CheckKind(name="relationship", clauses=("relationship",), params=RelationshipParams, reach=PER_PARTITION,
              reach_why="the partition's rows point into the whole target table", observed_unit=OFFENDING_ROWS,
              dimension=None, warn_level=False, clean=None),
    CheckKind(name="sql", clauses=("quality:sql",), params=SqlParams, reach=PLACEHOLDER,
              reach_why="per partition where the query says `{partition}`, else the whole table",
              observed_unit="value the SQL rule returned", dimension=None, warn_level=True, clean=None),
]}


def reach_of(kind: str, query: Any = None) -> tuple[str, str]:
    """(PER_PARTITION or TABLE_WIDE, why) for a check of `kind` on a partitioned object."""
    row = CHECK_KINDS[kind]
    if row.reach == PLACEHOLDER:
        if "{partition}" in str(query or ""):
            return PER_PARTITION, "the query's `{partition}` is the partition's filter"
        return TABLE_WIDE, "the query has no `{partition}` placeholder, so it reads the whole table"
    return row.reach, row.reach_why
