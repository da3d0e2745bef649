"""Two ways of naming a place in a contract.

* A JSON Pointer (`/schema/0/properties/1/required`) identifies a clause exactly, as written.
* A named path (`schema.orders.properties.customer_id.required`) is what a person reads in an
  error message: list items that carry a `name` are shown by it.
"""

from __future__ import annotations

from typing import Any, Sequence

Parts = Sequence[str | int]

_NAMED_LISTS = {"schema", "properties"}


def pointer(parts: Parts) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


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
        if isinstance(node, list) and isinstance(part, int):
            item = node[part] if 0 <= part < len(node) else None
            name = item.get("name") if isinstance(item, dict) else None
            if parent_key in _NAMED_LISTS and isinstance(name, str) and name:
                text += f".{name}"
            else:
                text += f"[{part}]"
            node = item
        else:
            text += f".{part}" if text else str(part)
            node = node.get(part) if isinstance(node, dict) else None
        parent_key = part
    return text
