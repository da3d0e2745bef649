"""The 20-check `orders` contract (19 clauses and the schema check) that the round-trip test and
`benchmarks/bench_engine.py` both check: one definition, each adding its own id and server."""

from __future__ import annotations

STATUSES = ["placed", "paid", "shipped", "delivered", "cancelled"]
EMAIL_PATTERN = r"^[^@[:space:]]+@[^@[:space:]]+\.[^@[:space:]]+$"  # what `format: email` compiles to
CURRENCY_PATTERN = "^[A-Z]{3}$"

# v3.2.0, not v3.1.0: `enum` is a v3.2 feature and the loader refuses it in a v3.1 document.
ORDERS = {
    "apiVersion": "v3.2.0", "kind": "DataContract", "version": "1.0.0", "status": "active",
    "schema": [{
        "name": "orders", "physicalName": "orders", "physicalType": "table",
        "properties": [
            {"name": "order_id", "logicalType": "integer", "physicalType": "BIGINT",
             "primaryKey": True, "required": True},
            {"name": "order_number", "logicalType": "string", "physicalType": "VARCHAR", "unique": True},
            {"name": "customer_id", "logicalType": "integer", "physicalType": "BIGINT", "required": True,
             "logicalTypeOptions": {"minimum": 1}},
            {"name": "status", "logicalType": "string", "physicalType": "VARCHAR",
             "enum": [{"value": s} for s in STATUSES],
             "quality": [{"metric": "invalidValues", "arguments": {"validValues": STATUSES}, "mustBe": 0,
                          "severity": "warning"}]},
            {"name": "order_total", "logicalType": "number", "physicalType": "DECIMAL(12,2)",
             "logicalTypeOptions": {"minimum": 0, "maximum": 100000},
             "quality": [{"metric": "nullValues", "mustBeLessThan": 1, "unit": "percent"}]},
            {"name": "currency", "logicalType": "string", "physicalType": "VARCHAR",
             "logicalTypeOptions": {"minLength": 3, "maxLength": 3, "pattern": CURRENCY_PATTERN}},
            {"name": "email", "logicalType": "string", "physicalType": "VARCHAR",
             "logicalTypeOptions": {"format": "email"}},
            {"name": "discount_code", "logicalType": "string", "physicalType": "VARCHAR",
             "quality": [{"metric": "missingValues", "arguments": {"missingValues": [None, "", "N/A"]},
                          "mustBeLessThan": 95, "unit": "percent"}]},
            {"name": "created_at", "logicalType": "timestamp", "physicalType": "TIMESTAMP", "required": True},
        ],
        "quality": [
            {"metric": "rowCount", "mustBeBetween": [1, 100_000_000]},
            {"metric": "duplicateValues", "arguments": {"properties": ["customer_id", "created_at"]}, "mustBe": 0},
        ],
    }],
    "slaProperties": [{"property": "latency", "value": 1, "unit": "d", "element": "orders.created_at"}],
}
