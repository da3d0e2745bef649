"""Bad inputs of the loader, one row each, shared by the in-process and the command-line tests."""

from __future__ import annotations


BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(8)
)


GOOD = """\
apiVersion: v3.1.0
kind: DataContract
id: {id}
version: 1.0.0
status: active
schema:
  - name: {table}
    properties:
      - name: a
        logicalType: string
"""


CASES = {
    "broken_yaml.odcs.yaml": ("apiVersion: v3.1.0\nkind: [DataContract\n", "invalid YAML"),
    "wrong_type.odcs.yaml": (GOOD.format(id="x", table="t") + "        required: yes-please\n", "is not of type"),
    "unknown_metric.odcs.yaml": (GOOD.format(id="x", table="t") + "        quality:\n          - metric: freshness\n            mustBe: 0\n", "is not one of"),
    "two_operators.odcs.yaml": (GOOD.format(id="x", table="t") + "        quality:\n          - metric: nullValues\n            mustBe: 0\n            mustBeLessThan: 3\n", "give exactly one operator"),
    "v2.odcs.yaml": ("apiVersion: 2.2.2\nkind: DataContract\nid: x\nversion: 1\n", "migrate the contract to v3"),
    "v4.odcs.yaml": ("apiVersion: v4.0.0\nkind: DataContract\nid: x\nversion: 1\n", "newer major version"),
    "bomb.odcs.yaml": (BOMB, "alias bomb"),
    "deep.odcs.yaml": ("a: " + "[" * 5000 + "]" * 5000 + "\n", "nesting is deeper"),
    "binary.odcs.yaml": (b"\x89PNG\r\n\x1a\n\x00\x00\x00", "not a text file"),
    "empty.odcs.yaml": ("", "the file is empty"),
    "list.odcs.yaml": ("- a\n- b\n", "a mapping of keys"),
    "bad_cron.odcs.yaml": (GOOD.format(id="x", table="t") + "slaProperties:\n  - property: frequency\n    value: 1\n    scheduler: cron\n    schedule: '61 * * * *'\n", "invalid cron expression"),
    "sla_element.odcs.yaml": (GOOD.format(id="x", table="t") + "slaProperties:\n  - property: latency\n    value: 1\n    unit: d\n    element: t.missing\n", "declares no column 'missing'"),
    "sql_write.odcs.yaml": (GOOD.format(id="x", table="t") + "        quality:\n          - type: sql\n            query: WITH d AS (DELETE FROM t RETURNING *) SELECT COUNT(*) FROM d\n            mustBe: 0\n", "SQL rule refused"),
    "sql_two.odcs.yaml": (GOOD.format(id="x", table="t") + "        quality:\n          - type: sql\n            query: SELECT 1; DROP TABLE t\n            mustBe: 0\n", "2 statements"),
    "placeholder.odcs.yaml": (GOOD.format(id="x", table="t") + "        quality:\n          - type: sql\n            query: SELECT COUNT(*) FROM {schema}.{object}\n            mustBe: 0\n", "unresolved placeholder"),
}


