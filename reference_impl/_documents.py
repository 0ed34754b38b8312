"""Strict reading of user-written JSON and YAML: nothing a reader would lose goes unnoticed.

Both ``json.loads`` and ``yaml.safe_load`` keep the *last* of two equal keys in one mapping and
drop the first without a word (``budget: 8000`` then ``budget: 10`` silently means 10). A config,
scenario or session file with a duplicated key is almost always an editing mistake, so these
readers refuse it with the key and (for YAML) its line. Merge keys (``<<: *anchor``) are YAML's
documented way to override and stay allowed.

Both parsers recurse once per nesting level; a document nested deeper than the interpreter's
stack (``[[[[...`` ten thousand deep) raises ``RecursionError``. Callers catch
:class:`DocumentTooDeepError` (raised for either parser) and name the file.
"""

from __future__ import annotations

import json
from collections.abc import Hashable
from typing import Any, Final

import yaml

__all__ = [
    "DocumentTooDeepError",
    "DuplicateKeyError",
    "StrictYamlLoader",
    "load_json_strict",
    "load_yaml_strict",
]

_MERGE_TAG: Final = "tag:yaml.org,2002:merge"
_BaseLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class DuplicateKeyError(ValueError):
    """A JSON object with the same key twice (``json`` would keep only the last value)."""

    def __init__(self, key: str) -> None:
        super().__init__(f"duplicate key {key!r} in one object (the first value would be lost)")
        self.key = key


class DocumentTooDeepError(ValueError):
    """The document nests deeper than the parser's recursion allows."""

    def __init__(self) -> None:
        super().__init__("nested too deeply to read (thousands of levels of [ or {)")


class StrictYamlLoader(_BaseLoader):  # type: ignore[misc]
    """A safe YAML loader that refuses a mapping with the same key twice."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        """A mapping, refusing a key given twice (YAML would keep the last silently)."""
        seen: dict[Hashable, yaml.Mark] = {}
        for key_node, _ in node.value:
            if key_node.tag == _MERGE_TAG:
                continue
            key = self.construct_object(key_node, deep=True)
            if not isinstance(key, Hashable):
                continue  # the base constructor reports an unhashable key
            if key in seen:
                first = seen[key]
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    f"duplicate key {key!r} (first at line {first.line + 1}); "
                    "the first value would be lost",
                    key_node.start_mark,
                )
            seen[key] = key_node.start_mark
        mapping: dict[Any, Any] = super().construct_mapping(node, deep=deep)
        return mapping


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKeyError(key)
        out[key] = value
    return out


def load_json_strict(text: str) -> Any:
    """``json.loads`` that refuses duplicate keys and reports over-deep nesting by name.

    Raises ``json.JSONDecodeError`` for text that is not JSON, :class:`DuplicateKeyError` and
    :class:`DocumentTooDeepError`.
    """
    try:
        return json.loads(text, object_pairs_hook=_unique_pairs)
    except RecursionError:
        raise DocumentTooDeepError from None


def load_yaml_strict(text: str) -> Any:
    """``yaml.safe_load`` that refuses duplicate keys and reports over-deep nesting by name.

    Raises ``yaml.YAMLError`` (with ``problem_mark``) and :class:`DocumentTooDeepError`.
    """
    try:
        return yaml.load(text, Loader=StrictYamlLoader)  # noqa: S506 - a safe loader subclass
    except RecursionError:
        raise DocumentTooDeepError from None
