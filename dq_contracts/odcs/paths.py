"""Two ways of naming a place in a contract.

* A JSON Pointer (`/schema/0/properties/1/required`) identifies a clause exactly, as written.
* A named path (`schema.orders.properties.customer_id.required`) is what a person reads in an
  error message: list items that carry a `name` are shown by it.

With the file and the clause's line, a named path is where a person finds it (`clause_location`).
"""

from __future__ import annotations

from typing import Any, Sequence

Parts = Sequence[str | int]

_NAMED_LISTS = {"schema", "properties"}


def pointer(parts: Parts) -> str:
    if not isinstance(parts, (list, tuple)):
        parts = list(parts)
    text = "/".join(map(str, parts))
    if "~" in text or text.count("/") != len(parts) - 1:  # a part to escape: "~" or "/" in it
        return "".join(pointer_step(p) for p in parts)
    return "/" + text if parts else ""


def pointer_step(part: str | int) -> str:
    """What one part adds to a pointer."""
    text = str(part)
    if "~" in text or "/" in text:
        text = text.replace("~", "~0").replace("/", "~1")
    return "/" + text


def clause_location(file: str, line: int | None, where: str) -> str:
    """Where a person finds a clause: `contracts/orders.odcs.yaml:42 schema.orders.properties…`."""
    return f"{file}:{line} {where}" if line else f"{file} {where}"


def parts_of(pointer_text: str) -> list[str | int]:
    if not pointer_text:
        return []
    out: list[str | int] = []
    for raw in pointer_text.lstrip("/").split("/"):
        token = raw.replace("~1", "/").replace("~0", "~")
        out.append(int(token) if token.isdigit() else token)
    return out


def named_path(document: Any, parts: Parts) -> str:
    text = ""
    node = document
    parent_key: str | int | None = None
    for part in parts:
        text, node = named_step(text, node, parent_key, part)
        parent_key = part
    return text


def named_step(text: str, node: Any, parent_key: str | int | None, part: str | int) -> tuple[str, Any]:
    """One part of a named path: (the text so far, the node at it), `node` being the node before it
    and `parent_key` the part before it."""
    if isinstance(node, list) and isinstance(part, int):
        item = node[part] if 0 <= part < len(node) else None
        name = item.get("name") if isinstance(item, dict) else None
        if parent_key in _NAMED_LISTS and isinstance(name, str) and name:
            return f"{text}.{name}", item
        return f"{text}[{part}]", item
    return f"{text}.{part}" if text else str(part), node.get(part) if isinstance(node, dict) else None
