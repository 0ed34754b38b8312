"""Tool schemas as the model reads them: the "TypeScript namespace" text (token-counting.md 3b).

OpenAI does not send JSON Schema to the model. Its harmony guide for gpt-oss ([vendor]
openai-cookbook ``articles/openai-harmony.md``, "Defining available tools") and the community
reconstructions ([community] hmarr/openai-chat-tokens, [lib] litellm ``_format_function_definitions``)
describe the same rendering, which we produce here so it can be counted:

    namespace functions {

    // <function description>
    type <name> = (_: {
    // <property description>
    <property>?: <type>, // default: <default>
    }) => any;

    } // namespace functions

A property listed in ``required`` has no ``?``; ``enum`` values become a union of literals,
``integer`` becomes ``number``, arrays ``T[]``, nested objects are inlined with two more spaces of
indentation. Keywords the rendering has no place for (``additionalProperties``, ``strict``,
``$schema``, ``title`` …) are not shown to the model and cost nothing. A function without
properties is ``type <name> = () => any;``.

The rendering never raises: a schema that is not an object (or not valid JSON) is shown as its JSON
text, so a malformed schema is never free.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

from reference_impl.transcript import ToolSpec

__all__ = ["render_function", "render_namespace"]

_INDENT: Final = "  "
_LINE_END: Final = re.compile(r"\r\n|\r|\n")
"""Where a description's comment lines end. Not :meth:`str.splitlines`, which ends one at
U+2028, U+0085 or U+001C too: a description holding one is one line to the renderers, and a
``// `` we added there would be counted as if the model read it."""
# Nesting deeper than this is shown as ``object``: a pathological (or recursive) schema must not
# make counting exponential; real tool schemas are a few levels deep.
_MAX_DEPTH: Final = 12


def _comment_lines(text: str) -> list[str]:
    """The lines of a description, each to be a ``//`` comment: ended at CR, LF or CRLF, a
    last line end closing a line rather than opening an empty one (``"a\n"`` is one line)."""
    lines = _LINE_END.split(text)
    if not lines[-1]:
        lines.pop()
    return lines


def _literal(value: object) -> str:
    return json.dumps(value, ensure_ascii=False) if isinstance(value, str) else str(value)


def _union(types: Iterable[str]) -> str:
    seen: list[str] = []
    for t in types:
        if t and t not in seen:
            seen.append(t)
    return " | ".join(seen) if seen else "any"


def _type(schema: object, depth: int) -> str:
    """The TypeScript type of ``schema``, a property at nesting ``depth`` (1 = top level)."""
    if not isinstance(schema, Mapping):
        return "any"
    if "const" in schema:
        return _literal(schema["const"])
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return _union(_literal(v) for v in enum)
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            return _union(_type(o, depth) for o in options)
    kind = schema.get("type")
    if isinstance(kind, list):
        return _union(_type({**schema, "type": k}, depth) for k in kind)
    if kind in ("integer", "number"):
        return "number"
    if kind in ("string", "boolean", "null"):
        return str(kind)
    if kind == "array":
        items = schema.get("items")
        return f"{_type(items, depth)}[]" if isinstance(items, Mapping) else "any[]"
    properties = schema.get("properties")
    if isinstance(properties, Mapping) and properties and depth < _MAX_DEPTH:
        inner = _properties(schema, depth + 1)
        return "{\n" + inner + "\n" + _INDENT * (depth - 1) + "}"
    return "object" if kind == "object" else "any"


def _properties(schema: Mapping[str, Any], depth: int) -> str:
    properties = schema.get("properties")
    required = schema.get("required")
    # names only: a schema's ``required`` of other values (a provider refuses it) names none
    needed = {r for r in required if isinstance(r, str)} if isinstance(required, list) else set()
    pad = _INDENT * (depth - 1)
    lines: list[str] = []
    if not isinstance(properties, Mapping):
        return ""
    for name, spec in properties.items():
        description = spec.get("description") if isinstance(spec, Mapping) else None
        if isinstance(description, str) and description:
            lines.extend(f"{pad}// {line}" for line in _comment_lines(description))
        optional = "" if name in needed else "?"
        line = f"{pad}{name}{optional}: {_type(spec, depth)},"
        if isinstance(spec, Mapping) and "default" in spec:
            default = spec["default"]
            shown = default if isinstance(default, str) else _literal(default)
            line += f" // default: {shown}"  # as in the harmony guide: ``// default: celsius``
        lines.append(line)
    return "\n".join(lines)


def render_function(tool: ToolSpec) -> str:
    """One ``type <name> = …;`` block with its description comment."""
    lines: list[str] = []
    if tool.description:
        lines.extend(f"// {line}" for line in _comment_lines(tool.description))
    try:
        schema: object = json.loads(tool.parameters)
    except ValueError:
        schema = None
    if not isinstance(schema, Mapping):
        # Not a JSON object: show its text so it is counted rather than free.
        lines.append(f"type {tool.name} = (_: {tool.parameters}) => any;")
    elif isinstance(schema.get("properties"), Mapping) and schema["properties"]:
        lines.append(f"type {tool.name} = (_: {{")
        lines.append(_properties(schema, 1))
        lines.append("}) => any;")
    else:
        lines.append(f"type {tool.name} = () => any;")
    return "\n".join(lines)


def render_namespace(tools: Iterable[ToolSpec]) -> str:
    """All function tools in one ``namespace functions { … }`` block (empty line after each)."""
    blocks = [render_function(t) + "\n" for t in tools]
    return "namespace functions {\n\n" + "\n".join(blocks) + "\n} // namespace functions"
