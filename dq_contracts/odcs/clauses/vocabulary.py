"""The closed sets of the clause table: reasons a clause is not enforced, SLA units, formats."""

from __future__ import annotations

from dq_contracts.odcs.closed_sets import StrEnum
from typing import Any

from dq_contracts.odcs.plans import Severity


class Reason(StrEnum):
    """Why a clause is not enforced: a closed set of codes, each with its sentence (`text`)."""

    text: str

    def __new__(cls, code: str, text: str) -> Reason:
        member = str.__new__(cls, code)
        member._value_ = code
        member.text = text
        return member

    NOT_DATA_QUALITY = "not_data_quality", "describes the service, not the data"
    PROSE = "prose", "a text rule is prose for people; nothing to execute"
    CUSTOM_ENGINE = "custom_engine", "a custom rule runs in another engine"
    UNKNOWN_V30_RULE = "unknown_v30_rule", "a v3.0 rule name with no v3.1 metric equivalent"
    UNSUPPORTED_OPTION = "unsupported_option", "this logicalTypeOptions key has no check"
    UNKNOWN_FORMAT = "unknown_format", "a format this tool has no pattern for"
    NESTED_PROPERTY = "nested_property", "this clause is not checked on a nested property"
    NESTED_UNADDRESSABLE = ("nested_unaddressable",
                            "the server holds no nested values its engine here can address (a struct field, "
                            "an array's items)")
    NO_SQL_SERVER = ("no_sql_server", "none of the contract's servers is a SQL database or files DuckDB can read "
                     "(local, s3, gcs, azure with format csv, parquet or json and a path)")
    NO_COLUMNS = "no_columns", "the object declares no columns"
    NEEDS_PROPERTY = "needs_property", "the metric needs a property (column)"
    TARGET_ELSEWHERE = ("target_elsewhere", "the referenced table is neither in this contract nor in another "
                        "contract of the folder on the same server")
    TARGET_OTHER_SERVER = ("target_other_server",
                           "the referenced table is in another contract of the folder, on another server")
    TARGET_AMBIGUOUS = ("target_ambiguous",
                        "several other contracts of the folder on the same server declare the referenced table")
    UNKNOWN_ELEMENT = "unknown_element", "the SLA element names no declared column"
    UNKNOWN_UNIT = "unknown_unit", "the unit is not a time unit this tool knows"
    AMBIGUOUS_UNIT = "ambiguous_unit", "the unit is ambiguous"
    SQL_NOT_READ_ONLY = "sql_not_read_only", "the SQL rule is not one read-only SELECT"
    UNSUPPORTED_UNIT = "unsupported_unit", "the rule's unit is neither rows nor percent"
    NOT_COMPARABLE = "not_comparable", "the operator's value cannot be compared with a number"
    V30_MODIFIER = "v30_modifier", "a v3.0 exclusive flag with no bound to modify"
    INVALID_PATTERN = "invalid_pattern", "the pattern is not a valid regular expression"
    DUPLICATE_OBJECT = "duplicate_object", "another schema object of the contract has the same name"



# Time units for SLA latency, in seconds. A bare `m` is refused: it means minutes in some tools
# and months in others.
TIME_UNITS = {
    **dict.fromkeys(["ms", "millisecond", "milliseconds"], 0.001),
    **dict.fromkeys(["s", "sec", "secs", "second", "seconds"], 1),
    **dict.fromkeys(["min", "mins", "minute", "minutes"], 60),
    **dict.fromkeys(["h", "hr", "hrs", "hour", "hours"], 3600),
    **dict.fromkeys(["d", "day", "days"], 86400),
    **dict.fromkeys(["w", "wk", "week", "weeks"], 7 * 86400),
    **dict.fromkeys(["mo", "month", "months"], 30 * 86400),
    **dict.fromkeys(["y", "yr", "yrs", "year", "years"], 365 * 86400),
}



AMBIGUOUS_UNITS = {"m": "minutes or months? write `min` or `mo`"}



LATENCY_PROPERTIES = {"latency", "ly", "freshness"}



SLA_REASONS = {
    "frequency": "a cadence of updates is not a ceiling on staleness; use latency for freshness",
    "fy": "a cadence of updates is not a ceiling on staleness; use latency for freshness",
    "retention": "a retention period governs deletion, not data quality",
    "re": "a retention period governs deletion, not data quality",
    "availability": "a platform availability target, not a property of the data",
    "throughput": "a platform throughput target, not a property of the data",
    "errorrate": "a platform error rate, not a property of the data",
    "generalavailability": "a lifecycle date, not a data check",
    "endofsupport": "a lifecycle date, not a data check",
    "endoflife": "a lifecycle date, not a data check",
    "timeofavailability": "a time of day for delivery, not a staleness ceiling",
    "timetodetect": "an incident-response target, not a data check",
    "timetonotify": "an incident-response target, not a data check",
    "timetorepair": "an incident-response target, not a data check",
}



# Patterns for well-known string formats, written for both POSIX (PostgreSQL) and RE2 (DuckDB).
FORMAT_PATTERNS = {
    "email": r"^[^@[:space:]]+@[^@[:space:]]+\.[^@[:space:]]+$",
    "uuid": r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$",
    "ipv4": r"^((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])$",
    "hostname": r"^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$",
    "uri": r"^[A-Za-z][A-Za-z0-9+.-]*:[^[:space:]]+$",
}



def severity_of(rule: dict[str, Any]) -> Severity:
    """ODCS `severity` → Dagster severity: info/warning(s) → WARN; anything else → ERROR."""
    value = str(rule.get("severity") or "").strip().lower()
    return Severity.WARN if value in ("info", "warning", "warn", "warnings", "information") else Severity.ERROR



_UNITS = {"rows": "rows", "row": "rows", "percent": "percent", "%": "percent", "percentage": "percent"}



NOT_TEMPORAL = {"integer", "number", "boolean", "object", "array", "time", "map", "vector"}
