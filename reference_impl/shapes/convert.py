"""Moving a parsed request from one shape to another, saying what could not come along.

``parse`` keeps every top-level request option in ``Transcript.params`` under that shape's own
names, and provider item ids (``fc_…``, ``msg_…``) on parts. Those mean nothing to another provider,
so ``convert`` maps the generation options every shape has (output cap, temperature, top-p, stop
sequences) to the target's names and takes the rest out, listing each in ``Conversion.dropped``.
Nothing is dropped silently: callers print the list (``ctxconf convert`` writes it to stderr), and
a part the target cannot carry at all still raises ``UnsupportedPartError`` at render time.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Final

from reference_impl.shapes import get_shape
from reference_impl.transcript import (
    Message,
    Part,
    ShapeName,
    ToolCallPart,
    ToolResultPart,
    Transcript,
    canonical_json,
)

__all__ = ["Conversion", "convert", "lossy_drops"]

# The options every shape has, in the order a conversion names them; where each shape keeps them
# is the shape's own fact (``ShapeAdapter.options``).
_OPTIONS: Final = ("max_output", "temperature", "top_p", "stop")


def _place(target: ShapeName | str, option: str) -> str | tuple[str, str] | None:
    """Where ``target``'s request keeps ``option``: a top-level key, (container key, nested key),
    or None when it has no such option."""
    options = get_shape(target).options
    key: str | None = getattr(options, option)
    if key is None or options.container is None:
        return key
    return (options.container, key)


@dataclass(frozen=True, slots=True)
class Conversion:
    """The converted transcript and what did not come along (``params.temperature``, ``item ids``...)."""

    transcript: Transcript
    dropped: tuple[str, ...]


def _read_options(params: dict[str, Any], source: str) -> tuple[dict[str, Any], set[str]]:
    """The portable options found in ``params`` and the param keys (or sub-keys) they used."""
    found: dict[str, Any] = {}
    used: set[str] = set()
    for option in _OPTIONS:
        place = _place(source, option)
        if isinstance(place, str) and place in params:
            found[option] = params[place]
            used.add(place)
        elif isinstance(place, tuple):
            container = params.get(place[0])
            if isinstance(container, dict) and place[1] in container:
                found[option] = container[place[1]]
                used.add(f"{place[0]}.{place[1]}")
    for key in get_shape(source).options.max_output_aliases:
        if key in params and "max_output" not in found:
            found["max_output"] = params[key]
            used.add(key)
    return found, used


def _leftovers(params: dict[str, Any], used: set[str]) -> list[str]:
    out: list[str] = []
    for key, value in params.items():
        if key in used:
            continue
        if isinstance(value, dict) and any(f"{key}.{sub}" in used for sub in value):
            out.extend(f"{key}.{sub}" for sub in value if f"{key}.{sub}" not in used)
            continue
        out.append(key)
    return out


def _write_options(options: Mapping[str, Any], target: str) -> tuple[dict[str, Any], list[str]]:
    out: dict[str, Any] = {}
    unplaced: list[str] = []
    for option, value in options.items():
        place = _place(target, option)
        if place is None:
            unplaced.append(option)
        elif isinstance(place, str):
            out[place] = value
        else:
            out.setdefault(place[0], {})[place[1]] = value
    return out, unplaced


def _strip_ids(message: Message) -> tuple[Message, bool]:
    changed = message.wire_id is not None
    parts: list[Part] = []
    for part in message.parts:
        if isinstance(part, ToolCallPart | ToolResultPart) and part.item_id is not None:
            parts.append(replace(part, item_id=None))
            changed = True
        else:
            parts.append(part)
    if not changed:
        return message, False
    return replace(message, parts=tuple(parts), wire_id=None), True


def convert(transcript: Transcript, source: ShapeName, target: ShapeName) -> Conversion:
    """Prepare ``transcript`` (parsed from ``source``) for rendering as ``target``."""
    if source == target:
        return Conversion(transcript, ())
    params = {key: json.loads(value) for key, value in transcript.params}
    options, used = _read_options(params, source)
    dropped = [f"params.{key}" for key in _leftovers(params, used)]
    new_params, unplaced = _write_options(options, target)
    dropped.extend(f"params.{option} (no {target} equivalent)" for option in unplaced)
    messages: list[Message] = []
    stripped = 0
    for message in transcript.messages:
        clean, changed = _strip_ids(message)
        stripped += changed
        messages.append(clean)
    if stripped:
        dropped.append(f"provider item ids on {stripped} message(s)")
    converted = replace(
        transcript,
        messages=tuple(messages),
        params=tuple(sorted((k, canonical_json(v)) for k, v in new_params.items())),
        model=None if get_shape(target).model_in_url else transcript.model,
    )
    if transcript.model is not None and converted.model is None:
        dropped.append(f"model {transcript.model!r} ({target} names the model in the URL)")
    return Conversion(converted, tuple(dropped))


def lossy_drops(transcript: Transcript, target: ShapeName) -> tuple[Transcript, tuple[str, ...]]:
    """What ``target`` cannot carry that can be taken out without changing anything else, and
    the transcript without it: today the ``is_error`` flag of tool results (OpenAI Chat
    Completions has none; the result's text stays byte-exact). ``ctxconf convert`` refuses such
    a conversion unless ``--lossy`` asks for exactly these drops; parts a shape cannot carry at
    all (an attachment in a tool result, a foreign reasoning artifact) stay named errors."""
    if get_shape(target).capabilities.tool_result_errors:
        return transcript, ()
    dropped: list[str] = []
    messages: list[Message] = []
    for i, message in enumerate(transcript.messages):
        parts: list[Part] = []
        for j, part in enumerate(message.parts):
            if isinstance(part, ToolResultPart) and part.is_error:
                dropped.append(
                    f"messages[{i}].parts[{j}]: the is_error flag of the result of {part.call_id} "
                    f"({target} has no error flag on tool results; the text stays)"
                )
                part = replace(part, is_error=False)  # noqa: PLW2901
            parts.append(part)
        messages.append(replace(message, parts=tuple(parts)))
    if not dropped:
        return transcript, ()
    return replace(transcript, messages=tuple(messages)), tuple(dropped)
