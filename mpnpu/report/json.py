"""JSON reports: a result's plain-data form (``to_dict()``), or a document a command composed from
several results, indented, with sets, bytes and numpy scalars made plain."""

from __future__ import annotations

import json
from typing import IO, Any

from mpnpu.errors import InvalidTypeError


class JsonReport:
    """The JSON of a result (anything with ``to_dict()``) or of a mapping."""

    binary = False

    def write(self, result: Any, out: IO[str]) -> None:
        data = result.to_dict() if hasattr(result, "to_dict") else result
        json.dump(data, out, indent=2, default=plain)
        out.write("\n")


def plain(value: Any) -> Any:
    """``json.dump``'s ``default``: sets as sorted lists, bytes as hex, numpy scalars as numbers."""
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    if isinstance(value, bytes):
        return value.hex()
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    raise InvalidTypeError(f"not JSON serialisable: {type(value).__name__}")
