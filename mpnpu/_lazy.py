"""Package attributes imported on first use (PEP 562), for packages pytest imports in every run."""

from __future__ import annotations

import importlib
from typing import Any, Callable, Mapping


def lazy_attributes(package: str, namespace: dict[str, Any], table: Mapping[str, str],
                    public: list[str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``: ``table`` maps a name to the module holding it.

    A name is imported the first time it is looked up and then stored in ``namespace`` (the
    package's globals), so later lookups do not come back here.
    """

    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            # Imported here, not at the top: loading the pytest plugin must import nothing but it.
            from .errors import UnknownNameError

            raise UnknownNameError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(public))

    return __getattr__, __dir__
